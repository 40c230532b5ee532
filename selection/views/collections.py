from selection.filtersets import CollectionFilterSet
from selection.models import Collection
from webarchive.permissions import Area
from webarchive.views import ObjectDetailView, ObjectListView


class CollectionListView(ObjectListView):
    area = Area.SELECTION
    queryset = Collection.objects.all()
    filterset_class = CollectionFilterSet
    columns = ["name", "kind", "is_active"]


class CollectionDetailView(ObjectDetailView):
    area = Area.SELECTION
    queryset = Collection.objects.prefetch_related("members")
    fields = ["name", "kind", "description", "is_active", "created_at"]
    template_name = "selection/collection_detail.html"
