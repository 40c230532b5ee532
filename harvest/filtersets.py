"""Filters of the planning side, shared by the HTML lists and the REST API."""

import django_filters
from django.db.models import Q
from django.db.models.functions import Lower
from django.db.models.lookups import Contains
from django.utils.translation import gettext_lazy as _

from harvest.choices import HarvestKind, JobStatus, SiteState, StopReason
from harvest.models import (
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    HarvestTemplate,
    Job,
    JobConfiguration,
    JobStatistics,
    Schedule,
    SeedList,
    TransferReport,
)
from selection.filtersets import yes_no_filter
from selection.models import Collection
from webarchive.filters import FilterSet, IdChoiceFilter, IdFilter, IntegerFilter, wildcard_match


class DomainFilterSet(FilterSet):
    """Find domains by name, comment or crawler trap (NetarchiveSuite's "find domains")."""

    q = django_filters.CharFilter(
        method="search", label=_("Name"), help_text=_("Part of the name; * as wildcard.")
    )
    comments = django_filters.CharFilter(field_name="comments", lookup_expr="icontains", label=_("Comment"))
    trap = django_filters.CharFilter(
        field_name="crawler_traps", lookup_expr="icontains", label=_("Crawler trap")
    )
    is_active = yes_no_filter(_("Active"))
    is_alias = yes_no_filter(_("Alias"), field_name="alias_of", lookup_expr="isnull", exclude=True)

    class Meta:
        model = Domain
        fields = ["q", "comments", "trap", "is_active", "is_alias"]

    def search(self, queryset, name, value):
        # Names are stored in lower case. On PostgreSQL a pattern that starts with its text (exam*)
        # is found through the name's prefix (pattern) index; any other (*.fr, part of a name) through
        # the trigram index on lower(name) (migration harvest 0021), hence Lower(): the same names,
        # and the planner never takes the trigram index for a prefix.
        value = value.strip().lower()
        if "*" not in value:
            return queryset.filter(Contains(Lower("name"), value))
        if value.startswith("*"):
            return queryset.alias(lower_name=Lower("name")).filter(wildcard_match("lower_name", value))
        return queryset.filter(wildcard_match("name", value))


class SeedListFilterSet(FilterSet):
    domain = django_filters.CharFilter(field_name="domain__name", label=_("Domain"))

    class Meta:
        model = SeedList
        fields = ["domain", "name"]


class ConfigurationFilterSet(FilterSet):
    domain = django_filters.CharFilter(field_name="domain__name", lookup_expr="icontains", label=_("Domain"))
    name = django_filters.CharFilter(lookup_expr="icontains", label=_("Name"))
    template = IdChoiceFilter(queryset=HarvestTemplate.objects.all(), label=_("Template"))
    harvest_definition = IdChoiceFilter(
        field_name="harvest_definitions",
        queryset=HarvestDefinition.objects.all(),
        label=_("Harvest definition"),
    )
    source_collection = IdChoiceFilter(
        queryset=Collection.objects.all(), label=_("Transferred from collection")
    )

    class Meta:
        model = DomainConfiguration
        fields = ["domain", "name", "template", "harvest_definition", "source_collection"]


class TemplateFilterSet(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", label=_("Name"))
    is_active = yes_no_filter(_("Active"))

    class Meta:
        model = HarvestTemplate
        fields = ["name", "is_active", "depth_policy", "render"]


class ScheduleFilterSet(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", label=_("Name"))

    class Meta:
        model = Schedule
        fields = ["name", "unit"]


class ChannelFilterSet(FilterSet):
    class Meta:
        model = HarvestChannel
        fields = ["is_snapshot", "queue"]


class HarvestDefinitionFilterSet(FilterSet):
    name = django_filters.CharFilter(lookup_expr="icontains", label=_("Name"))
    kind = django_filters.ChoiceFilter(choices=HarvestKind.choices, label=_("Kind"))
    is_active = yes_no_filter(_("Active"))
    channel = IdChoiceFilter(queryset=HarvestChannel.objects.all(), label=_("Channel"))

    class Meta:
        model = HarvestDefinition
        fields = ["name", "kind", "is_active", "channel", "schedule"]


class TrapListFilterSet(FilterSet):
    is_active = yes_no_filter(_("Active"))

    class Meta:
        model = GlobalCrawlerTrapList
        fields = ["is_active"]


class TransferReportFilterSet(FilterSet):
    class Meta:
        model = TransferReport
        fields = ["collection", "harvest_definition"]


class JobFilterSet(FilterSet):
    """Jobs by status, harvest definition, run, dates and id range."""

    status = django_filters.MultipleChoiceFilter(choices=JobStatus.choices, label=_("Status"))
    harvest_definition = IdChoiceFilter(
        queryset=HarvestDefinition.objects.all(), label=_("Harvest definition")
    )
    run = IntegerFilter(field_name="run_number", label=_("Run"))
    channel = IdChoiceFilter(queryset=HarvestChannel.objects.all(), label=_("Channel"))
    created_after = django_filters.DateFilter(
        field_name="created_at", lookup_expr="date__gte", label=_("Created from")
    )
    created_before = django_filters.DateFilter(
        field_name="created_at", lookup_expr="date__lte", label=_("Created until")
    )
    id_min = IdFilter(field_name="pk", lookup_expr="gte", label=_("From id"))
    id_max = IdFilter(field_name="pk", lookup_expr="lte", label=_("To id"))
    domain = django_filters.CharFilter(method="with_domain", label=_("Domain"))

    class Meta:
        model = Job
        fields = ["status", "harvest_definition", "run", "channel"]

    def with_domain(self, queryset, name, value):
        return queryset.filter(Q(configurations__domain__name=value.strip().lower())).distinct()


class SiteCrawlFilterSet(FilterSet):
    """The site crawls of one job by state, stop reason and domain (the job page and its API)."""

    state = django_filters.MultipleChoiceFilter(choices=SiteState.choices, label=_("State"))
    stop_reason = django_filters.ChoiceFilter(choices=StopReason.choices, label=_("Stop reason"))
    domain = django_filters.CharFilter(
        field_name="domain__name", lookup_expr="contains", label=_("Domain"), help_text=_("Part of the name.")
    )

    class Meta:
        model = JobConfiguration
        fields = ["state", "stop_reason", "domain"]

    def filter_queryset(self, queryset):
        # Domain names are stored in lower case.
        if self.form.cleaned_data.get("domain"):
            self.form.cleaned_data["domain"] = self.form.cleaned_data["domain"].strip().lower()
        return super().filter_queryset(queryset)


class StatisticsFilterSet(FilterSet):
    """Job statistics by period, harvest definition, collection and kind of crawl (reports, API, CSV).

    Without a collection, the rows are whole jobs; with one, the shares of the jobs' sites
    selected in that collection.
    """

    year = IntegerFilter(field_name="year", label=_("Year"), min_value=1990, max_value=9999)
    ended_after = django_filters.DateFilter(
        field_name="ended_at", lookup_expr="date__gte", label=_("Ended from")
    )
    ended_before = django_filters.DateFilter(
        field_name="ended_at", lookup_expr="date__lte", label=_("Ended until")
    )
    harvest_definition = IdChoiceFilter(
        queryset=HarvestDefinition.objects.order_by("name"),
        label=_("Harvest definition"),
        empty_label=_("any"),
    )
    collection = IdChoiceFilter(
        queryset=Collection.objects.order_by("name"),
        label=_("Collection"),
        empty_label=_("any (whole jobs)"),
    )
    kind = django_filters.ChoiceFilter(
        choices=HarvestKind.choices, label=_("Kind of crawl"), empty_label=_("any")
    )
    run = IntegerFilter(field_name="run__number", label=_("Run"), min_value=1)
    job = IdFilter(field_name="job", label=_("Job"))

    class Meta:
        model = JobStatistics
        fields = [
            "year",
            "ended_after",
            "ended_before",
            "harvest_definition",
            "collection",
            "kind",
            "run",
            "job",
        ]

    def __init__(self, *args, by_collection: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.by_collection = by_collection  # every collection's share instead of whole jobs

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        if self.form.cleaned_data.get("collection") is None:
            queryset = queryset.filter(collection__isnull=not self.by_collection)
        return queryset

    def error_text(self) -> str:
        """The form's errors in one line, each after its field's label."""
        return "; ".join(
            f"{self.form.fields[name].label if name in self.form.fields else name}: {' '.join(errors)}"
            for name, errors in self.errors.items()
        )
