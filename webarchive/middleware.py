"""Anonymous users are sent to the login page everywhere but the login page itself."""

from django.conf import settings
from django.contrib.auth import middleware as auth_middleware
from django.shortcuts import resolve_url
from rest_framework.views import APIView


class LoginRequiredMiddleware(auth_middleware.LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, leaving REST API views to their own authentication.

    API clients authenticate with a token inside the view (DRF), which this
    middleware cannot see; the API's permission classes refuse anonymous
    requests with 401 instead of a redirect a script cannot follow.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):
        view_class = getattr(view_func, "cls", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    def get_login_url(self, view_func):
        # One login page for everything, the admin included (it would send to its own).
        return resolve_url(settings.LOGIN_URL)
