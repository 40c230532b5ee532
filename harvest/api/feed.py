"""The crawl feed: what is due for crawling in a time window, in the style of W3ACT's feed.

The UK Web Archive's curation tool publishes its targets (id, title, seeds,
schedules, scope, depth, robots.txt) as JSON, and a separate launcher reads it
to decide what to crawl. This is the same for our planning side: one item per
(active selective harvest definition with a run in the window, domain
configuration it harvests), with our limits, template and traps added.

A definition's runs are its next run (``next_date``) and the runs of its
schedule after it, up to the schedule's end (a date, or its number of runs);
an overdue next run (before the window) is not in the window.

harvest.api.w3act gives the same plan exactly as W3ACT does, for a launcher written for it.
"""

from datetime import timedelta

from django.db.models import prefetch_related_objects
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView

from harvest.choices import DepthPolicy, EndKind, HarvestKind
from harvest.models import GlobalCrawlerTrapList, HarvestDefinition
from harvest.validators import seed_list
from webarchive.api.fields import CharField, DateTimeField
from webarchive.api.filters import PAGE_PARAMETERS, refuse_unknown_parameters
from webarchive.permissions import VIEW, Area, restrict

# Schedule.frequency's names.
FREQUENCIES = ("daily", "weekly", "monthly", "twice-yearly", "annual", "once", "custom")
DEFAULT_WINDOW = timedelta(days=1)
MAX_WINDOW = timedelta(days=366)
MAX_RUNS_LISTED = 100  # a schedule every minute has 1,440 runs a day; the crawler needs the first few


EMPTY_MESSAGE = _("Empty: give a value or leave the parameter out.")


class FeedQuerySerializer(serializers.Serializer):
    """A feed's query: a parameter given empty is refused, not taken for one left out (DRF's reading),
    which would quietly answer with the default window."""

    def to_internal_value(self, data):
        empty = [name for name in self.fields if name in data and not data.get(name)]
        if empty:
            raise serializers.ValidationError(
                {name: [self.fields[name].error_messages.get("invalid", EMPTY_MESSAGE)] for name in empty}
            )
        return super().to_internal_value(data)


class CrawlFeedQuerySerializer(FeedQuerySerializer):
    frequency = serializers.ChoiceField(
        choices=FREQUENCIES,
        required=False,
        error_messages={
            "invalid_choice": _(
                "“{input}” is not a frequency: use daily, weekly, monthly, twice-yearly, annual, "
                "once or custom."
            )
        },
        help_text=_("Only the definitions whose schedule has this frequency."),
    )
    start = DateTimeField(
        required=False,
        error_messages={"invalid": _("Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z.")},
        help_text=_("The window's start (ISO 8601); now by default."),
    )
    end = DateTimeField(
        required=False,
        error_messages={"invalid": _("Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z.")},
        help_text=_("The window's end (ISO 8601); one day after the start by default."),
    )

    def validate(self, attrs):
        start, end = feed_window(attrs)
        return {**attrs, "start": start, "end": end}


def feed_window(attrs, *, lead=timedelta(0), length=DEFAULT_WINDOW):
    """A feed's window from its query: by default from ``lead`` before now, ``length`` long; the end
    after the start, and at most MAX_WINDOW long (a 400 at ``end`` otherwise)."""
    start = attrs.get("start") or timezone.now() - lead
    end = attrs.get("end") or start + length
    if end <= start:
        raise serializers.ValidationError({"end": [_("The end must come after the start.")]})
    if end - start > MAX_WINDOW:
        raise serializers.ValidationError(
            {"end": [_("The window is at most %(days)d days long.") % {"days": MAX_WINDOW.days}]}
        )
    return start, end


# The feed's field names are camelCase, as in W3ACT's feed.


class FeedDefinitionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = CharField()


class FeedScheduleSerializer(serializers.Serializer):
    frequency = CharField(help_text=_("daily, weekly, monthly, twice-yearly, annual, once or custom."))
    startDate = DateTimeField()
    endDate = DateTimeField(allow_null=True, help_text=_("Null when the schedule has no end date."))
    nextRuns = serializers.ListField(
        child=DateTimeField(),
        help_text=_("The runs in the window (the first 100 at most)."),
    )


class FeedLimitsSerializer(serializers.Serializer):
    maxObjects = serializers.IntegerField(help_text=_("-1 for no limit."))
    maxBytes = serializers.IntegerField(help_text=_("-1 for no limit."))
    maxRequestRate = serializers.IntegerField(help_text=_("Requests per minute; 0 leaves it to politeness."))


class FeedTemplateSerializer(serializers.Serializer):
    name = CharField()
    version = serializers.IntegerField()


class CrawlFeedItemSerializer(serializers.Serializer):
    """One target: a domain configuration of a harvest definition that runs in the window."""

    id = serializers.IntegerField(help_text=_("The domain configuration's id."))
    title = CharField()
    domain = CharField()
    harvestDefinition = FeedDefinitionSerializer()
    seeds = serializers.ListField(child=CharField())
    schedules = FeedScheduleSerializer(many=True)
    scope = CharField(help_text=_("The template's depth policy: page, clicks, path, host or domain."))
    depth = serializers.IntegerField(
        help_text=_(
            "Links away from a seed the crawl follows: the clicks of the “clicks” policy, else max hops."
        )
    )
    maxHops = serializers.IntegerField()
    ignoreRobotsTxt = serializers.BooleanField()
    limits = FeedLimitsSerializer()
    template = FeedTemplateSerializer()
    traps = serializers.ListField(
        child=CharField(),
        help_text=_("Regular expressions: the active global lists', the definition's and the domain's."),
    )


def _depth(template) -> int:
    return template.clicks if template.depth_policy == DepthPolicy.CLICKS else template.max_hops


class CrawlFeedView(GenericAPIView):
    """The targets due for crawling in a time window (now to one day later by default)."""

    area = Area.PLANNING
    queryset = HarvestDefinition.objects.all()  # RolePermission: reading harvest definitions
    serializer_class = CrawlFeedItemSerializer
    filter_backends = []

    @extend_schema(
        operation_id="crawl_feed",
        parameters=[CrawlFeedQuerySerializer],
        responses=CrawlFeedItemSerializer(many=True),
    )
    def get(self, request):
        refuse_unknown_parameters(request, PAGE_PARAMETERS | set(CrawlFeedQuerySerializer().fields))
        query = CrawlFeedQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["start"], query.validated_data["end"]
        frequency = query.validated_data.get("frequency")

        due = restrict(HarvestDefinition.objects.all(), request.user, VIEW).filter(
            kind=HarvestKind.SELECTIVE, is_active=True, next_date__isnull=False, next_date__lte=end
        )
        definitions, runs = {}, {}
        for definition in due.select_related("schedule"):
            if frequency and definition.schedule.frequency != frequency:
                continue
            dates = definition.upcoming_runs(MAX_RUNS_LISTED, start=start, end=end)
            if dates:
                definitions[definition.pk], runs[definition.pk] = definition, dates

        through = HarvestDefinition.configurations.through
        rows = (
            through.objects.filter(harvestdefinition_id__in=list(definitions))
            .select_related("domainconfiguration__domain", "domainconfiguration__template")
            .order_by(
                "harvestdefinition__name",
                "harvestdefinition_id",
                "domainconfiguration__domain__name",
                "domainconfiguration__name",
                "pk",
            )
        )
        page = self.paginate_queryset(rows)
        prefetch_related_objects([row.domainconfiguration for row in page], "seed_lists")
        global_traps = [
            trap for lst in GlobalCrawlerTrapList.objects.filter(is_active=True) for trap in lst.trap_list
        ]
        items = [
            self._item(row.domainconfiguration, definitions[row.harvestdefinition_id], runs, global_traps)
            for row in page
        ]
        return self.get_paginated_response(self.get_serializer(items, many=True).data)

    @staticmethod
    def _item(configuration, definition, runs, global_traps) -> dict:
        template, domain, schedule = configuration.template, configuration.domain, definition.schedule
        seeds: dict[str, None] = {}
        for lst in sorted(configuration.seed_lists.all(), key=lambda s: s.name):
            for url in seed_list(lst.seeds):
                seeds.setdefault(url)
        return {
            "id": configuration.pk,
            "title": str(configuration),
            "domain": domain.name,
            "harvestDefinition": {"id": definition.pk, "name": definition.name},
            "seeds": list(seeds),
            "schedules": [
                {
                    "frequency": schedule.frequency,
                    "startDate": schedule.start,
                    "endDate": schedule.end_date if schedule.end_kind == EndKind.UNTIL else None,
                    "nextRuns": runs[definition.pk],
                }
            ],
            "scope": template.depth_policy,
            "depth": _depth(template),
            "maxHops": template.max_hops,
            "ignoreRobotsTxt": not template.obey_robots,
            "limits": {
                "maxObjects": configuration.max_objects,
                "maxBytes": configuration.max_bytes,
                "maxRequestRate": configuration.max_request_rate,
            },
            "template": {"name": template.name, "version": template.version},
            "traps": list(dict.fromkeys(global_traps + definition.trap_list + domain.trap_list)),
        }
