"""REST API permissions: the page rules of webarchive.permissions, applied to viewsets."""

from rest_framework.permissions import BasePermission

from webarchive.permissions import METHOD_ACTIONS, can, can_enter


class RolePermission(BasePermission):
    """Logged-in users only; a viewset with an ``area`` needs that area's role and the model permission.

    A view without an ``area`` (the schema, the docs) is open to every logged-in user.
    Some actions need another permission than their HTTP method's: a viewset
    lists them in ``action_permissions``, action name → (permission, model or
    ``None`` for the viewset's own). Resubmitting a job is a POST that *changes*
    a job; running a transfer changes harvest definitions.
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
        needed = getattr(view, "action_permissions", {}).get(getattr(view, "action", None))
        if needed is not None:
            permission, model = needed
            return can(user, permission, model or queryset.model)
        if queryset is None:
            return True
        return can(user, METHOD_ACTIONS.get(request.method, "change"), queryset.model)
