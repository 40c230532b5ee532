"""The API's filter backend: the filter sets it makes from ``filterset_fields`` bound ids and integers."""

from django_filters import rest_framework as filters

from webarchive.filters import bounded_defaults


class FilterSet(filters.FilterSet):
    """django-filter's REST filter set (true/false booleans) with the bounded filters."""

    FILTER_DEFAULTS = bounded_defaults(filters.FilterSet.FILTER_DEFAULTS)


class FilterBackend(filters.DjangoFilterBackend):
    """An invalid filter is a 400 with the reasons (django-filter's), never a query that fails."""

    filterset_base = FilterSet
