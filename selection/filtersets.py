"""Filters shared by the HTML lists, the REST API and CSV export."""

import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from selection.choices import Budget, CheckStatus, Depth, Frequency, RecordStatus
from selection.models import Collection, Keyword, Record, Theme, record_text
from webarchive.filters import BooleanFilter, FilterSet, IdChoiceFilter, IdMultipleChoiceFilter


def yes_no_filter(label, **options):
    """A yes/no filter whose empty choice reads "any", not django-filter's "Unknown"."""
    return BooleanFilter(label=label, **options)


class UserOrMeFilter(django_filters.CharFilter):
    """A username, or ``me`` for the user asking."""

    def filter(self, qs, value):
        if not value:
            return qs
        request = getattr(self.parent, "request", None)
        if value == "me" and request is not None:
            return qs.filter(**{self.field_name: request.user})
        return qs.filter(**{f"{self.field_name}__username": value})


class CollectionFilterSet(FilterSet):
    q = django_filters.CharFilter(method="search", label=_("Search"))
    member = UserOrMeFilter(field_name="members", label=_("Member"), help_text=_("A username, or “me”."))
    is_active = yes_no_filter(_("Active"))

    class Meta:
        model = Collection
        fields = ["q", "kind", "is_active", "member"]

    def search(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))


class RecordFilterSet(FilterSet):
    q = django_filters.CharFilter(method="search", label=_("Text"), help_text=_("In the URL and the notes."))
    collection = IdMultipleChoiceFilter(queryset=Collection.objects.all(), label=_("Collection"))
    responsible = UserOrMeFilter(
        field_name="responsible", label=_("Responsible"), help_text=_("A username, or “me”.")
    )
    theme = IdChoiceFilter(queryset=Theme.objects.select_related("collection"), label=_("Theme"))
    keyword = django_filters.ModelChoiceFilter(
        field_name="keywords", queryset=Keyword.objects.all(), label=_("Keyword"), to_field_name="name"
    )
    budget = django_filters.MultipleChoiceFilter(choices=Budget.choices, label=_("Budget"))
    frequency = django_filters.MultipleChoiceFilter(choices=Frequency.choices, label=_("Frequency"))
    depth = django_filters.MultipleChoiceFilter(choices=Depth.choices, label=_("Depth"))
    needs_browser = yes_no_filter(_("Needs a browser"))
    status = django_filters.MultipleChoiceFilter(choices=RecordStatus.choices, label=_("Status"))
    check_status = django_filters.MultipleChoiceFilter(choices=CheckStatus.choices, label=_("URL check"))
    is_active = yes_no_filter(_("Active"))
    created_after = django_filters.DateFilter(
        field_name="created_at", lookup_expr="date__gte", label=_("Created from")
    )
    created_before = django_filters.DateFilter(
        field_name="created_at", lookup_expr="date__lte", label=_("Created until")
    )
    modified_after = django_filters.DateFilter(
        field_name="modified_at", lookup_expr="date__gte", label=_("Modified from")
    )
    modified_before = django_filters.DateFilter(
        field_name="modified_at", lookup_expr="date__lte", label=_("Modified until")
    )
    ordering = django_filters.OrderingFilter(
        fields=(
            ("url", "url"),
            ("collection__name", "collection"),
            ("responsible__username", "responsible"),
            ("budget", "budget"),
            ("frequency", "frequency"),
            ("depth", "depth"),
            ("status", "status"),
            ("created_at", "created"),
            ("modified_at", "modified"),
        ),
        label=_("Sort by"),
    )

    class Meta:
        model = Record
        fields = []

    def search(self, queryset, name, value):
        # The URL, the supplementary URLs and the notes as one text: its trigram index on PostgreSQL.
        return queryset.alias(record_text=record_text()).filter(record_text__icontains=value)
