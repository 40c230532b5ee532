"""Service errors become API errors: a model's ValidationError is a 400 with its messages."""

from django.core.exceptions import NON_FIELD_ERRORS
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import as_serializer_error
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        detail = as_serializer_error(exc)
        if NON_FIELD_ERRORS in detail:  # Django's "__all__" is DRF's "non_field_errors"
            detail[api_settings.NON_FIELD_ERRORS_KEY] = detail.pop(NON_FIELD_ERRORS)
        exc = ValidationError(detail)
    return drf_exception_handler(exc, context)
