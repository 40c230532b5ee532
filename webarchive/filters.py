"""Filters and form fields that refuse numbers the database cannot hold, with the reason.

Ids are signed 64-bit integers in the database. SQLite cannot even be asked about a
larger number (the driver raises ``OverflowError`` before the query runs), and a
filter that passed one through answered 500. The filters here refuse an id outside
1..2**63-1, or an integer outside the signed 64-bit range, as a form error: the
pages show it at the field, the API answers 400 with it.

:class:`FilterSet` is the base of every filter set: the filters it makes from model
fields (``Meta.fields``) are the bounded ones; declared filters use the classes here.
"""

from __future__ import annotations

import django_filters
import django_filters.rest_framework
from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _
from django_filters import fields as filter_fields
from django_filters.filterset import FILTER_FOR_DBFIELD_DEFAULTS
from drf_spectacular.drainage import set_override
from drf_spectacular.utils import extend_schema_field

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
ID_MIN = 1
ID_MAX = INT64_MAX

ID_SCHEMA = {"type": "integer", "format": "int64", "minimum": ID_MIN, "maximum": ID_MAX}

INTEGER_FIELDS = (models.AutoField, models.BigAutoField, models.IntegerField)


def id_range_error(value) -> ValidationError | None:
    """The error for a whole number that cannot be an id; ``None`` for an id, or for what is not a number."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None  # not a whole number: the field's own message says so
    if ID_MIN <= number <= ID_MAX:
        return None
    return ValidationError(
        _("“%(value)s” is not an id: ids are whole numbers from %(min)s to %(max)s."),
        code="out_of_range",
        params={"value": value, "min": ID_MIN, "max": ID_MAX},
    )


def _by_integer_id(field: forms.ModelChoiceField) -> bool:
    meta = field.queryset.model._meta
    target = meta.get_field(field.to_field_name) if field.to_field_name else meta.pk
    return isinstance(target, INTEGER_FIELDS)


class IdChoiceField(filter_fields.ModelChoiceField):
    """A choice of object by id; an id out of range is an error, not a query."""

    def to_python(self, value):
        if value not in self.empty_values and _by_integer_id(self) and (error := id_range_error(value)):
            raise error
        return super().to_python(value)


class IdMultipleChoiceField(filter_fields.ModelMultipleChoiceField):
    """Objects by id (repeatable); an id out of range is an error, not a query."""

    def _check_values(self, value):
        if _by_integer_id(self):
            errors = [error for v in value if (error := id_range_error(v))]
            if errors:
                raise ValidationError(errors)
        return super()._check_values(value)


class IntegerField(forms.IntegerField):
    """A form's whole number within the signed 64-bit range unless narrower bounds are given."""

    def __init__(self, *, min_value=INT64_MIN, max_value=INT64_MAX, **kwargs):
        super().__init__(min_value=min_value, max_value=max_value, **kwargs)


class IdIntegerField(IntegerField):
    """A form's id: a whole number from 1 to 2**63-1, the reason said when it is not."""

    def to_python(self, value):
        value = super().to_python(value)
        if value is not None and (error := id_range_error(value)):
            raise error
        return value


YES_NO_CHOICES = [("", _("any")), ("true", _("yes")), ("false", _("no"))]


class YesNoField(forms.NullBooleanField):
    """Yes, no or any (empty); anything else is an error, not "any" (which would answer everything)."""

    TRUE, FALSE = {True, "True", "true", "1"}, {False, "False", "false", "0"}

    def to_python(self, value):
        if value in self.TRUE:
            return True
        if value in self.FALSE:
            return False
        if value in self.empty_values:
            return None
        raise ValidationError(
            _("“%(value)s” is not yes or no: use true or false."), code="invalid", params={"value": value}
        )


class BooleanFilter(django_filters.BooleanFilter):
    """Yes, no or any, as a choice whose empty value reads "any"; another value is refused."""

    field_class = YesNoField

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", forms.Select(choices=YES_NO_CHOICES))
        super().__init__(*args, **kwargs)


class IntegerFilter(django_filters.NumberFilter):
    """A whole number within the signed 64-bit range (narrower with ``min_value``/``max_value``).

    The schema says the bounds: an integer parameter with this filter's minimum and maximum.
    """

    field_class = IntegerField
    default_bounds = (INT64_MIN, INT64_MAX)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("min_value", self.default_bounds[0])
        kwargs.setdefault("max_value", self.default_bounds[1])
        super().__init__(*args, **kwargs)
        schema = {"type": "integer", "minimum": kwargs["min_value"], "maximum": kwargs["max_value"]}
        if not all(-(2**31) <= bound < 2**31 for bound in (kwargs["min_value"], kwargs["max_value"])):
            schema["format"] = "int64"
        set_override(self, "field", schema)


class IdFilter(IntegerFilter):
    """An id (or a bound of a range of ids): a whole number from 1 to 2**63-1."""

    field_class = IdIntegerField
    default_bounds = (ID_MIN, ID_MAX)


@extend_schema_field(ID_SCHEMA)
class IdChoiceFilter(django_filters.ModelChoiceFilter):
    field_class = IdChoiceField


@extend_schema_field(ID_SCHEMA)
class IdMultipleChoiceFilter(django_filters.ModelMultipleChoiceFilter):
    field_class = IdMultipleChoiceField


def bounded_defaults(defaults: dict) -> dict:
    """django-filter's filters for model fields, with ids and integers bounded."""
    replace = {
        django_filters.BooleanFilter: BooleanFilter,
        django_filters.rest_framework.BooleanFilter: BooleanFilter,
        django_filters.ModelChoiceFilter: IdChoiceFilter,
        django_filters.ModelMultipleChoiceFilter: IdMultipleChoiceFilter,
    }
    bounded = {}
    for model_field, options in defaults.items():
        filter_class = options["filter_class"]
        if issubclass(model_field, (models.AutoField, models.BigAutoField)):
            filter_class = IdFilter
        elif issubclass(model_field, models.IntegerField):
            filter_class = IntegerFilter
        bounded[model_field] = {**options, "filter_class": replace.get(filter_class, filter_class)}
    bounded.setdefault(models.BigAutoField, {"filter_class": IdFilter})
    bounded.setdefault(models.BigIntegerField, {"filter_class": IntegerFilter})
    return bounded


class FilterSet(django_filters.FilterSet):
    """The base of the project's filter sets: model fields get bounded filters."""

    FILTER_DEFAULTS = bounded_defaults(FILTER_FOR_DBFIELD_DEFAULTS)


class Like(models.Lookup):
    """``Like(F("name"), pattern)``: SQL ``LIKE`` with ``\\`` as its escape character.

    The matching of both databases' ``LIKE`` takes time proportional to the text times the
    pattern; a regular expression made from what a user typed (``a*a*a*…b`` as ``^a.*a.*…b$``)
    backtracks for minutes in Python's ``re``, which Django's SQLite backend runs ``__regex`` with.
    """

    lookup_name = "like"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} LIKE {rhs} ESCAPE '\\'", [*lhs_params, *rhs_params]


def wildcard_match(field: str, text: str) -> Like:
    """Whether ``field`` matches ``text`` whole, ``*`` standing for any characters (none included)."""

    def literal(part: str) -> str:
        return part.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

    return Like(models.F(field), "%".join(literal(part) for part in text.split("*")))
