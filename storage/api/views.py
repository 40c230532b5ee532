"""REST endpoints of the archive: its files. Captures are served by the CDX API (``/cdx``)."""

from storage.api.serializers import WarcFileSerializer
from storage.models import WarcFile
from webarchive.api.viewsets import ReadOnlyViewSet
from webarchive.permissions import Area


class WarcFileViewSet(ReadOnlyViewSet):
    """WARC/ARC files: name, where the file is, size, SHA-256, the job it came from."""

    area = Area.ACCESS
    queryset = WarcFile.objects.all()
    serializer_class = WarcFileSerializer
    filterset_fields = ["job", "origin", "name", "recovered"]
