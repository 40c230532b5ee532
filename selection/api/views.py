from selection import services
from selection.api.serializers import CollectionSerializer
from selection.filtersets import CollectionFilterSet
from selection.models import Collection
from webarchive.api.viewsets import NoDeleteViewSet
from webarchive.permissions import Area


class CollectionViewSet(NoDeleteViewSet):
    area = Area.SELECTION
    queryset = Collection.objects.prefetch_related("members")
    serializer_class = CollectionSerializer
    filterset_class = CollectionFilterSet

    def perform_create(self, serializer):
        serializer.instance = services.collection_create(**serializer.validated_data)

    def perform_update(self, serializer):
        serializer.instance = services.collection_update(
            collection=serializer.instance, **serializer.validated_data
        )
