"""Serializer fields that refuse what the database or the date arithmetic cannot take, with the reason.

* Text is a JSON string (not a number that would be stored as its digits).
* A name naming an object (a domain, a user) is text without NUL characters.
* Ids are whole numbers from 1 to 2**63-1 (SQLite cannot be asked about a larger one).
* Dates and date-times are between 1900-01-01 and 2999-12-31: a schedule or a window is
  computed by adding days, months and years, which overflows at the calendar's ends
  (years 1 and 9999).
* A date-time is written with a whole-minute UTC offset, as RFC 3339 requires: before
  1911 the Paris time zone was the local mean time (+00:09:21), which is then written
  in UTC instead.
* A version is a whole number from 1 to 2**31-1.

:class:`ModelSerializer` is the base of the API's model serializers: its model fields
and related fields are these. :class:`VersionedModelSerializer` is the base of the
archival objects' (``version``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time

from django.db import models
from django.utils import timezone
from django.utils.functional import lazy
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from webarchive.filters import ID_MAX, ID_MIN, ID_SCHEMA, id_range_error
from webarchive.versioning import VERSION_MAX

DATE_MIN = date(1900, 1, 1)
DATE_MAX = date(2999, 12, 31)
DATETIME_MIN = datetime.combine(DATE_MIN, time.min, tzinfo=UTC)
DATETIME_MAX = datetime.combine(DATE_MAX, time.max, tzinfo=UTC)


def _date_range_message() -> str:
    return _("Dates go from %(min)s to %(max)s.") % {"min": DATE_MIN, "max": DATE_MAX}


# Translated when it is shown, not once at import (``%`` on a lazy string would do it then).
DATE_RANGE_MESSAGE = lazy(_date_range_message, str)()


class IdField(serializers.IntegerField):
    """An id in a request body: a whole number from 1 to 2**63-1."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", ID_MIN)
        kwargs.setdefault("max_value", ID_MAX)
        super().__init__(**kwargs)


@extend_schema_field(ID_SCHEMA)
class IdRelatedField(serializers.PrimaryKeyRelatedField):
    """An object by its id; an id out of range is refused before any query."""

    def to_internal_value(self, data):
        if not isinstance(data, bool) and (error := id_range_error(data)):
            raise serializers.ValidationError(error.messages, code="out_of_range")
        return super().to_internal_value(data)


class NameRelatedField(serializers.SlugRelatedField):
    """An object by its name (a domain, a user): text without NUL characters, refused before any
    query (PostgreSQL cannot compare a text with one: the lookup would fail with an error 500)."""

    default_error_messages = {
        **serializers.SlugRelatedField.default_error_messages,
        "null_characters": _("Null characters are not allowed."),
    }

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        if "\x00" in data:
            self.fail("null_characters")
        return super().to_internal_value(data)


class CharField(serializers.CharField):
    """Text, given as a JSON string: a number is refused (DRF's own field would store 12 as "12")."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class DateTimeField(serializers.DateTimeField):
    """A date-time between 1900-01-01 and 2999-12-31, written with a whole-minute offset."""

    default_error_messages = {"out_of_range": DATE_RANGE_MESSAGE, "overflow": DATE_RANGE_MESSAGE}

    def to_internal_value(self, value):
        try:
            parsed = super().to_internal_value(value)
        except OverflowError:  # a naive time at the calendar's end made aware
            self.fail("out_of_range")
        if not DATETIME_MIN <= parsed <= DATETIME_MAX:
            self.fail("out_of_range")
        return parsed

    def enforce_timezone(self, value):
        try:
            value = super().enforce_timezone(value)
        except OverflowError:
            self.fail("out_of_range")
        offset = value.utcoffset() if timezone.is_aware(value) else None
        if offset is not None and offset.total_seconds() % 60:
            return value.astimezone(UTC)
        return value


class DateField(serializers.DateField):
    """A date between 1900-01-01 and 2999-12-31."""

    default_error_messages = {"out_of_range": DATE_RANGE_MESSAGE}

    def to_internal_value(self, value):
        parsed = super().to_internal_value(value)
        if not DATE_MIN <= parsed <= DATE_MAX:
            self.fail("out_of_range")
        return parsed


class ModelSerializer(serializers.ModelSerializer):
    """The base of the API's model serializers: bounded ids and dates."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.CharField: CharField,
        models.TextField: CharField,
        models.DateTimeField: DateTimeField,
        models.DateField: DateField,
    }
    serializer_related_field = IdRelatedField


class VersionField(serializers.IntegerField):
    """The version of an object as it was read: sent back with a change of it (PUT, PATCH)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", VERSION_MAX)
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            _(
                "Raised by every save. Required to change the object: send the version you read; "
                "if someone saved it since, the change is refused (409) and the answer says what they "
                "changed. Ignored at creation."
            ),
        )
        super().__init__(**kwargs)


class VersionedModelSerializer(ModelSerializer):
    """An archival object: read with its ``version``, changed only with the version the change was made on.

    The version a PUT or PATCH sends is not a field to write: it is taken out of
    ``validated_data`` into ``expected_version``, which the viewset gives the
    service (webarchive.versioning checks it). Subclasses list ``version`` in
    ``Meta.fields``.
    """

    version = VersionField()

    expected_version: int | None = None

    def validate(self, attrs):
        self.expected_version = attrs.pop(self.fields["version"].source, None)
        if self.instance is not None and self.expected_version is None:
            raise serializers.ValidationError(
                {"version": [_("Send the version you read, so that no one else's change is lost.")]}
            )
        return super().validate(attrs)
