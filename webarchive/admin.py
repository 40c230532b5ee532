"""The Django admin, for administrators (superusers) only."""

from functools import update_wrapper

from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext_lazy as _


class WebArchiveAdminSite(admin.AdminSite):
    """Admin site open to superusers; others get 403, and login is the application's."""

    site_header = _("Web archive administration")
    site_title = _("Web archive admin")

    def has_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def admin_view(self, view, cacheable=False):
        inner = super().admin_view(view, cacheable)

        def wrapper(request, *args, **kwargs):
            if not self.has_permission(request):
                raise PermissionDenied(_("The administration is for administrators only."))
            return inner(request, *args, **kwargs)

        return update_wrapper(wrapper, inner)

    def login(self, request, extra_context=None):
        next_url = request.GET.get("next", reverse("admin:index"))
        return redirect(f"{reverse(settings.LOGIN_URL)}?{urlencode({'next': next_url})}")
