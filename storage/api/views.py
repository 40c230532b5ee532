"""REST endpoints of the archive: its files, and the storage nodes (crawl engineers). Captures are
served by the CDX API (``/cdx``)."""

from django.shortcuts import get_object_or_404
from rest_framework import generics

from harvest.models import Job
from storage import selectors_storage
from storage.api.serializers import StorageNodeSerializer, WarcFileSerializer
from storage.filtersets import StorageNodeFilterSet
from storage.models import WarcFile
from webarchive.api.filters import refuse_unknown_parameters
from webarchive.api.viewsets import ReadOnlyViewSet, RestrictedQuerysetMixin
from webarchive.permissions import VIEW, Area, restrict


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


class JobWarcFilesView(RestrictedQuerysetMixin, generics.ListAPIView):
    """The job's closed WARC files: name, size, records, SHA-256 (paginated, oldest first)."""

    # Whoever reads jobs reads their files: the permission checked is the job's (curators, engineers).
    area = Area.PLANNING
    queryset = Job.objects.all()
    serializer_class = WarcFileSerializer
    filter_backends = []

    def list(self, request, *args, **kwargs):
        refuse_unknown_parameters(request)
        return super().list(request, *args, **kwargs)

    def get_queryset(self):
        job = get_object_or_404(super().get_queryset(), pk=self.kwargs["pk"])
        return restrict(job.warc_files.order_by("created_at", "name"), self.request.user, VIEW)
