"""The API's filter backend: the filter sets it makes from ``filterset_fields`` bound ids and integers."""

from django_filters import rest_framework as filters

from webarchive.filters import bounded_defaults


class FilterSet(filters.FilterSet):
    """django-filter's REST filter set (true/false booleans) with the bounded filters."""

    FILTER_DEFAULTS = bounded_defaults(filters.FilterSet.FILTER_DEFAULTS)


class FilterBackend(filters.DjangoFilterBackend):
    """An invalid filter is a 400 with the reasons (django-filter's), never a query that fails."""

    filterset_base = FilterSet


PAGE_PARAMETERS = frozenset({"page", "format"})  # what every paginated list takes


def refuse_unknown_parameters(request, allowed=PAGE_PARAMETERS) -> None:
    """A 400 naming the parameters that exist, for a query parameter the endpoint does not take: a
    filter it would silently ignore answers with everything, which a script would take for an answer."""
    from django.utils.translation import gettext as _
    from rest_framework.exceptions import ValidationError

    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise ValidationError(
            {
                "detail": _("Unknown query parameter(s): %(unknown)s. This endpoint takes: %(allowed)s.")
                % {"unknown": ", ".join(unknown)[:500], "allowed": ", ".join(sorted(allowed))}
            }
        )
