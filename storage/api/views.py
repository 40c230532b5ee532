"""REST endpoints of the archive: its files, and the storage nodes (crawl engineers). Captures are
served by the CDX API (``/cdx``)."""

from storage import selectors_storage
from storage.api.serializers import StorageNodeSerializer, WarcFileSerializer
from storage.filtersets import StorageNodeFilterSet
from storage.models import WarcFile
from webarchive.api.viewsets import ReadOnlyViewSet
from webarchive.permissions import Area


class WarcFileViewSet(ReadOnlyViewSet):
    """WARC/ARC files: name, where the file is, size, SHA-256, the job it came from."""

    area = Area.ACCESS
    queryset = WarcFile.objects.all()
    serializer_class = WarcFileSerializer
    filterset_fields = ["job", "origin", "name", "recovered"]


class StorageNodeViewSet(ReadOnlyViewSet):
    """Storage nodes: state, reachability, capacity and free space, replicas ok and not, bytes stored."""

    area = Area.OPERATIONS
    queryset = selectors_storage.nodes_with_counts()
    serializer_class = StorageNodeSerializer
    filterset_class = StorageNodeFilterSet
