"""REST API permissions: the page rules of webarchive.permissions, applied to viewsets."""

from rest_framework.permissions import BasePermission

from webarchive.permissions import METHOD_ACTIONS, can, can_enter


class RolePermission(BasePermission):
    """Logged-in users only; a viewset with an ``area`` needs that area's role and the model permission.

    A view without an ``area`` (the schema, the docs) is open to every logged-in user.
    """

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_authenticated and user.is_active):
            return False
        area = getattr(view, "area", None)
        if area is None or request.method not in view.allowed_methods:
            return True  # a method the view does not offer is a 405 for everyone
        if not can_enter(user, area):
            return False
        queryset = getattr(view, "queryset", None)
        if queryset is None:
            return True
        return can(user, METHOD_ACTIONS.get(request.method, "change"), queryset.model)
