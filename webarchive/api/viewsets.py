"""Base viewsets: the queryset is always narrowed by webarchive.permissions.restrict."""

from rest_framework import mixins, viewsets

from webarchive.permissions import METHOD_ACTIONS, restrict


class RestrictedQuerysetMixin:
    """Serves only the rows the user may act on with this request's method."""

    area = None

    def get_queryset(self):
        action = METHOD_ACTIONS.get(self.request.method, "change")
        return restrict(super().get_queryset(), self.request.user, action)


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
    ``perform_create`` and ``perform_update`` by calling one service.
    """
