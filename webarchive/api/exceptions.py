"""Service errors become API errors: a model's ValidationError is a 400 with its messages."""

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.exceptions import ValidationError
from rest_framework.serializers import as_serializer_error
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(as_serializer_error(exc))
    return drf_exception_handler(exc, context)
