from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from selection import services
from selection.api.serializers import (
    CollectionSerializer,
    CompatibilityRuleSerializer,
    RecordSerializer,
    RecordStatusSerializer,
    RecordTransferSerializer,
    ThemeSerializer,
    UrlCheckRequestSerializer,
    UrlCheckResponseSerializer,
)
from selection.filtersets import CollectionFilterSet, RecordFilterSet
from selection.models import Collection, CompatibilityRule, Record, Theme
from selection.selectors import record_duplicates
from selection.urlcheck import check_url
from webarchive.api.viewsets import NoDeleteViewSet, ReadOnlyViewSet
from webarchive.permissions import Area
from webarchive.urlnorm import InvalidURL, normalise_url


class CollectionViewSet(NoDeleteViewSet):
    area = Area.SELECTION
    queryset = Collection.objects.prefetch_related("members")
    serializer_class = CollectionSerializer
    filterset_class = CollectionFilterSet

    def perform_create(self, serializer):
        serializer.instance = services.collection_create(user=self.request.user, **serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = services.collection_update(
            collection=serializer.instance,
            user=self.request.user,
            expected_version=serializer.expected_version,
            **serializer.validated_data,
        )


class ThemeViewSet(ReadOnlyViewSet):
    area = Area.SELECTION
    queryset = Theme.objects.all()
    serializer_class = ThemeSerializer
    filterset_fields = ["collection", "is_active"]


class CompatibilityRuleViewSet(ReadOnlyViewSet):
    area = Area.SELECTION
    queryset = CompatibilityRule.objects.all()
    serializer_class = CompatibilityRuleSerializer


def _duplicates_json(duplicates, collection=None):
    def rows(records):
        return [
            {"id": r.pk, "url": r.url, "collection": r.collection_id, "collection_name": r.collection.name}
            for r in records
        ]

    return {
        "same": rows(duplicates.same),
        "same_host": rows(duplicates.same_host),
        "same_domain": rows(duplicates.same_domain),
        "in_this_collection": bool(duplicates.in_collection(collection)),
    }


class RecordViewSet(NoDeleteViewSet):
    """Records: the same filters as the record list page; writes follow the same rules."""

    area = Area.SELECTION
    queryset = Record.objects.select_related(
        "collection", "responsible", "created_by", "modified_by"
    ).prefetch_related("keywords")
    serializer_class = RecordSerializer
    filterset_class = RecordFilterSet

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        if "theme" not in data:
            raise ValidationError({"theme": [_("This field is required.")]})
        serializer.instance = services.record_propose(user=self.request.user, **data)

    def perform_update(self, serializer):
        data = dict(serializer.validated_data)
        if "collection" in data and data.pop("collection") != serializer.instance.collection:
            raise ValidationError({"collection": [_("Use the transfer action to move a record.")]})
        serializer.instance = services.record_update(
            record=serializer.instance,
            user=self.request.user,
            expected_version=serializer.expected_version,
            **data,
        )

    @extend_schema(request=RecordStatusSerializer, responses=RecordSerializer)
    @action(detail=True, methods=["post"], url_path="status")
    def set_status(self, request, pk=None):
        """Validate, reject (with a reason) or send back a record. Curators only."""
        body = RecordStatusSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        record = services.record_set_status(
            record=self.get_object(),
            user=request.user,
            status=body.validated_data["status"],
            reason=body.validated_data["reason"],
            expected_version=body.validated_data["version"],
        )
        return Response(RecordSerializer(record, context={"request": request}).data)

    @extend_schema(request=RecordTransferSerializer, responses=RecordSerializer)
    @action(detail=True, methods=["post"])
    def transfer(self, request, pk=None):
        """Move a record to another collection (rights on both)."""
        body = RecordTransferSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        record = services.record_transfer(
            record=self.get_object(),
            user=request.user,
            collection=body.validated_data["collection"],
            theme=body.validated_data["theme"],
            expected_version=body.validated_data["version"],
        )
        return Response(RecordSerializer(record, context={"request": request}).data)

    @extend_schema(
        request=UrlCheckRequestSerializer,
        responses=UrlCheckResponseSerializer,
        description="Stage 1 of a proposal: the URL normalised, checked online, and the records "
        "that already hold it or a similar one.",
    )
    @action(detail=False, methods=["post"], url_path="check-url")
    def check_url(self, request):
        body = UrlCheckRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            url = normalise_url(body.validated_data["url"])
        except InvalidURL as error:
            raise ValidationError({"url": [str(error)]}) from error
        result = check_url(url)
        return Response(
            {
                "url": url,
                "check": result.as_dict(),
                "selectable": result.selectable,
                "duplicates": _duplicates_json(record_duplicates(url), body.validated_data.get("collection")),
            }
        )
