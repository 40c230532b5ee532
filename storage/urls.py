"""The Access pages (search the archive by URL, captures, WARC files) and the deduplication pages."""

from storage.views import dedup, pages

app_name = "storage"

urlpatterns = [*pages.urlpatterns, *dedup.urlpatterns]
