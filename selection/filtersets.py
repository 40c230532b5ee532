"""Filters shared by the HTML lists, the REST API and CSV export."""

import django_filters
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from selection.models import Collection


class CollectionFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label=_("Search"))
    member = django_filters.CharFilter(
        method="filter_member", label=_("Member"), help_text=_("A username, or “me”.")
    )

    class Meta:
        model = Collection
        fields = ["q", "kind", "is_active", "member"]

    def search(self, queryset, name, value):
        return queryset.filter(Q(name__icontains=value) | Q(description__icontains=value))

    def filter_member(self, queryset, name, value):
        if value == "me" and self.request is not None:
            return queryset.filter(members=self.request.user)
        return queryset.filter(members__username=value)
