"""The Access pages (search the archive by URL, captures, WARC files), the deduplication pages and the
storage pages (nodes, replicas, history, alerts, statistics)."""

from storage.views import dedup, pages, storage_nodes

app_name = "storage"

urlpatterns = [*pages.urlpatterns, *dedup.urlpatterns, *storage_nodes.urlpatterns]
