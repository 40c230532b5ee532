"""REST endpoints of the archive: its files, and the storage nodes (crawl engineers). Captures are
served by the CDX API (``/cdx``)."""

from pathlib import Path

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from harvest.models import Job
from storage import selectors_storage
from storage.api.serializers import OutsideWarcFileSerializer, StorageNodeSerializer, WarcFileSerializer
from storage.filtersets import StorageNodeFilterSet
from storage.models import Capture, WarcFile
from storage.services.outside_index import OutsideFileRefused, allowed_roots, warc_file_register_outside
from webarchive.api.filters import refuse_unknown_parameters
from webarchive.api.viewsets import ReadOnlyViewSet, RestrictedQuerysetMixin
from webarchive.permissions import ADD, VIEW, Area, restrict


class WarcFileViewSet(ReadOnlyViewSet):
    """WARC/ARC files: name, where the file is, size, SHA-256, the job it came from."""

    area = Area.ACCESS
    queryset = WarcFile.objects.all()
    serializer_class = WarcFileSerializer
    filterset_fields = ["job", "origin", "name", "recovered"]
    # Registering an outside crawler's file is for those who may add its captures (POST /api/cdx/).
    action_permissions = {"register": (ADD, Capture)}

    @extend_schema(
        request=OutsideWarcFileSerializer, responses={201: WarcFileSerializer, 200: WarcFileSerializer}
    )
    @action(detail=False, methods=["post"])
    def register(self, request):
        """Register a WARC file an outside crawler wrote (read whole, checked); its lines come next."""
        body = OutsideWarcFileSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        known = WarcFile.objects.filter(name=Path(body.validated_data["path"]).name).exists()
        try:
            warc = warc_file_register_outside(**body.validated_data, roots=allowed_roots())
        except OutsideFileRefused as refusal:
            raise ValidationError({"path": [str(refusal)]}) from refusal
        answer = status.HTTP_200_OK if known else status.HTTP_201_CREATED
        return Response(WarcFileSerializer(warc).data, status=answer)


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
