"""The Access pages: search the archive by URL, captures, WARC files."""

from storage.views import pages

app_name = "storage"

urlpatterns = [*pages.urlpatterns]
