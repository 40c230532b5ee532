"""API views that are not about one model."""

from django.utils.translation import gettext as _
from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response


class ObtainTokenView(ObtainAuthToken):
    """Username and password for an API token; locked out like the login page after repeated failures."""

    def post(self, request, *args, **kwargs):
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            # django-axes marks the request it was given (DRF's) when the pair is locked.
            if getattr(request, "axes_locked_out", False):
                return Response(
                    {"detail": _("Too many failed logins: this account is locked for a while.")},
                    status=status.HTTP_429_TOO_MANY_REQUESTS,
                )
            raise
