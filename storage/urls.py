"""The Access pages (the reading room, search the archive by URL and by words, captures, WARC files,
replay, access rules and exclusions), the deduplication pages and the storage pages (nodes, replicas, history,
alerts, statistics)."""

from storage.views import (
    access_rules,
    change_rates,
    dedup,
    fulltext,
    pages,
    reading_room,
    replay_entry,
    storage_nodes,
    wacz,
)

app_name = "storage"

urlpatterns = [
    *pages.urlpatterns,
    *fulltext.urlpatterns,
    *replay_entry.urlpatterns,
    *reading_room.urlpatterns,
    *access_rules.urlpatterns,
    *dedup.urlpatterns,
    *storage_nodes.urlpatterns,
    *wacz.urlpatterns,
    *change_rates.urlpatterns,
]
