"""The API's filter backend: the filter sets it makes from ``filterset_fields`` bound ids and integers,
and a list refuses a query parameter it does not take (a 400 naming those it takes)."""

from django.forms import MultiWidget
from django_filters import rest_framework as filters

from webarchive.filters import bounded_defaults


class FilterSet(filters.FilterSet):
    """django-filter's REST filter set (true/false booleans) with the bounded filters."""

    FILTER_DEFAULTS = bounded_defaults(filters.FilterSet.FILTER_DEFAULTS)


PAGE_PARAMETERS = frozenset({"page", "format"})  # what every paginated list takes


class FilterBackend(filters.DjangoFilterBackend):
    """An invalid filter is a 400 with the reasons (django-filter's), never a query that fails; so is a
    parameter a list does not take (``/api/domains/?search=…`` would otherwise answer with every
    domain: the filter is ``q``)."""

    filterset_base = FilterSet

    def filter_queryset(self, request, queryset, view):
        if _reads_a_list(request, view):
            filterset_class = self.get_filterset_class(view, queryset)
            refuse_unknown_parameters(request, PAGE_PARAMETERS | parameter_names(filterset_class))
            refuse_empty_values(request, filterset_class)
        return super().filter_queryset(request, queryset, view)


def refuse_empty_values(request, filterset_class) -> None:
    """A 400 for a filter given empty whose value is not text (an id, a number, a choice, a date):
    django-filter takes it for one left out and answers with everything (``?harvest_definition=``
    would list every definition's mappings), where the schema says it is not a value."""
    from django import forms
    from django.utils.translation import gettext as _
    from rest_framework.exceptions import ValidationError

    if filterset_class is None:
        return
    given = request.query_params
    empty = [
        name
        for name, declared in filterset_class.base_filters.items()
        if name in given and not given.get(name) and not isinstance(declared.field, forms.CharField)
    ]
    if empty:
        raise ValidationError(
            {name: [_("Empty: give a value or leave the parameter out.")] for name in sorted(empty)}
        )


def _reads_a_list(request, view) -> bool:
    """Whether the request reads a view's list (not one object, nor an action of the view's own)."""
    if request.method not in ("GET", "HEAD"):
        return False
    action = getattr(view, "action", None)
    if action is not None:
        return action == "list"
    lookup = getattr(view, "lookup_url_kwarg", None) or getattr(view, "lookup_field", "pk")
    return lookup not in getattr(view, "kwargs", {})


def parameter_names(filterset_class) -> set[str]:
    """The query parameters a filter set class reads: each filter's name, or the names of its parts
    (a range's ``_min`` and ``_max``, a date range's ``_after`` and ``_before``)."""
    if filterset_class is None:
        return set()
    names: set[str] = set()
    for name, declared in filterset_class.base_filters.items():
        widget = declared.field.widget
        suffixes = getattr(widget, "suffixes", None)
        if suffixes:
            names.update(f"{name}_{suffix}" if suffix else name for suffix in suffixes)
        elif isinstance(widget, MultiWidget):
            names.update(f"{name}_{index}" for index in range(len(widget.widgets)))
        else:
            names.add(name)
    return names


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
