"""API views that are not about one model."""

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView


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


@extend_schema(exclude=True)
class NotFoundView(APIView):
    """Any other address under /api/ (an id that is not a number): a 404 in JSON, as the API speaks.

    An API view, so that the API's rules apply first: without credentials it is a 401.
    """

    def get(self, request, *args, **kwargs):
        raise NotFound()

    post = put = patch = delete = get
