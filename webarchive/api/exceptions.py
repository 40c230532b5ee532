"""Service errors become API errors: a model's ValidationError is a 400 with its messages, a change
made over a version someone has saved since (webarchive.versioning) is a 409 saying what they changed."""

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from webarchive.api.fields import DateTimeField
from webarchive.versioning import ConcurrentEditError


def conflict_body(error: ConcurrentEditError) -> dict:
    """The 409's body: the message, the version stored now, and each change since the one sent."""
    date = DateTimeField()
    return {
        "detail": error.messages[0],
        "version": error.version,
        "changes": [
            {
                "field": change["name"],
                "label": str(change["field"]),
                "old": str(change["old"]),
                "new": str(change["new"]),
                "user": change["user"].get_username() if change["user"] else None,
                "date": date.to_representation(change["date"]),
            }
            for change in error.changes
        ],
    }


def exception_handler(exc, context):
    if isinstance(exc, ConcurrentEditError):
        set_rollback()
        return Response(conflict_body(exc), status=status.HTTP_409_CONFLICT)
    if isinstance(exc, DjangoValidationError):
        detail = as_serializer_error(exc)
        if NON_FIELD_ERRORS in detail:  # Django's "__all__" is DRF's "non_field_errors"
            detail[api_settings.NON_FIELD_ERRORS_KEY] = detail.pop(NON_FIELD_ERRORS)
        exc = ValidationError(detail)
    return drf_exception_handler(exc, context)
