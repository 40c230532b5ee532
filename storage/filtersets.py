"""Filters of the capture lists (a job's, a domain's captures), of the storage's history, of the nodes,
and of the access rules and exclusions."""

import django_filters
from django.utils.translation import gettext_lazy as _

from selection.filtersets import yes_no_filter
from storage.models import Capture, StorageEvent, StorageNode
from storage.models_access import AccessLevel, AccessRule, Exclusion, ExclusionKind
from webarchive.filters import FilterSet, IdChoiceFilter, IntegerFilter


class CaptureFilterSet(FilterSet):
    """Captures by HTTP status, MIME type and record type (exact values, as the counts show them)."""

    status = IntegerFilter(field_name="status", label=_("HTTP status"), min_value=0, max_value=999)
    mime = django_filters.CharFilter(field_name="mime", label=_("MIME type"))
    record_type = django_filters.ChoiceFilter(
        field_name="record_type", choices=Capture.RecordType.choices, label=_("Record type")
    )

    class Meta:
        model = Capture
        fields = ["status", "mime", "record_type"]


class StorageEventFilterSet(FilterSet):
    """The storage's history by kind of event, node, file, and alerts only."""

    kind = django_filters.ChoiceFilter(
        field_name="kind", choices=StorageEvent.Kind.choices, label=_("Event"), empty_label=_("any")
    )
    node = IdChoiceFilter(
        field_name="node",
        queryset=StorageNode.objects.order_by("name"),
        label=_("Node"),
        empty_label=_("any"),
    )
    file = django_filters.CharFilter(
        field_name="warc_file__name", lookup_expr="icontains", label=_("File name contains")
    )
    alerts = yes_no_filter(_("Alerts"), method="filter_alerts")

    class Meta:
        model = StorageEvent
        fields = ["kind", "node", "file", "alerts"]

    def filter_alerts(self, queryset, name, value):
        if value is None:
            return queryset
        alerts = {"kind__in": StorageEvent.ALERTS}
        return queryset.filter(**alerts) if value else queryset.exclude(**alerts)


class StorageNodeFilterSet(FilterSet):
    """Nodes by state, location and reachability (the REST list)."""

    state = django_filters.ChoiceFilter(
        field_name="state", choices=StorageNode.State.choices, label=_("State"), empty_label=_("any")
    )
    location = django_filters.CharFilter(field_name="location", label=_("Location"))
    reachable = yes_no_filter(_("Reachable"))

    class Meta:
        model = StorageNode
        fields = ["state", "location", "reachable"]


class AccessRuleFilterSet(FilterSet):
    """Access rules by access, and by what they are for."""

    level = django_filters.ChoiceFilter(
        field_name="level", choices=AccessLevel.choices, label=_("Access"), empty_label=_("any")
    )
    target = django_filters.ChoiceFilter(
        label=_("For"),
        choices=[("collection", _("collections")), ("definition", _("harvest definitions"))],
        method="filter_target",
        empty_label=_("any"),
    )

    class Meta:
        model = AccessRule
        fields = ["level", "target"]

    def filter_target(self, queryset, name, value):
        if value == "collection":
            return queryset.filter(collection__isnull=False)
        return queryset.filter(harvest_definition__isnull=False)


class ExclusionFilterSet(FilterSet):
    """Exclusions by state (in force, lifted, ended), kind, and what they exclude."""

    state = django_filters.ChoiceFilter(
        label=_("State"),
        choices=[("in-force", _("in force")), ("lifted", _("lifted")), ("ended", _("ended"))],
        method="filter_state",
        empty_label=_("any"),
    )
    kind = django_filters.ChoiceFilter(
        field_name="kind", choices=ExclusionKind.choices, label=_("Excludes"), empty_label=_("any")
    )
    target = django_filters.CharFilter(field_name="target", lookup_expr="icontains", label=_("URL contains"))

    class Meta:
        model = Exclusion
        fields = ["state", "kind", "target"]

    def filter_state(self, queryset, name, value):
        active = Exclusion.objects.active().values("pk")
        if value == "in-force":
            return queryset.filter(pk__in=active)
        if value == "lifted":
            return queryset.filter(lifted_at__isnull=False)
        return queryset.filter(lifted_at__isnull=True).exclude(pk__in=active)
