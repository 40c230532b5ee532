"""Base viewsets: the queryset is always narrowed by webarchive.permissions.restrict."""

from rest_framework import mixins, viewsets

from webarchive.permissions import VIEW, restrict


class RestrictedQuerysetMixin:
    """Serves only the rows the user may see.

    Whether the user may *change* a row they can see (a librarian outside the
    record's collection) is the service's decision, which answers 403 with a
    reason rather than pretending the row does not exist.
    """

    area = None

    def get_queryset(self):
        return restrict(super().get_queryset(), self.request.user, VIEW)


class ReadOnlyViewSet(RestrictedQuerysetMixin, viewsets.ReadOnlyModelViewSet):
    """List and retrieve."""


class NoDeleteViewSet(
    RestrictedQuerysetMixin,
    mixins.CreateModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.ListModelMixin,
    viewsets.GenericViewSet,
):
    """List, retrieve, create and update: archival objects are never deleted through the API.

    Writes go through the app's services: subclasses implement
    ``perform_create`` and ``perform_update`` by calling one service. An
    archival object's serializer is a ``VersionedModelSerializer``: ``perform_update``
    gives the service ``serializer.expected_version``, and the service refuses a
    change made over a version saved since (a 409, see webarchive.versioning).
    """
