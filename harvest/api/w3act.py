"""The crawl feed as W3ACT writes it, for a crawl launcher made for the UK Web Archive's curation tool.

W3ACT (ukwa/w3act) answers ``GET /api/crawl/feed/ld/{frequency}`` with a bare
JSON array of targets: ``id``, ``title``, ``seeds``, ``depth``, ``scope``,
``ignoreRobotsTxt``, ``schedules`` (``startDate``, ``endDate`` in milliseconds
since 1970, ``frequency``), ``watched``, ``documentUrlScheme``, ``loginPageUrl``,
``logoutUrl`` and ``secretId``. Its launcher fetches the feed every hour and
launches a target when the hour matches its schedule: every day at the hour of
``startDate`` (DAILY), on its weekday (WEEKLY), on its day of the month
(MONTHLY), and so on, between ``startDate`` and ``endDate``. So this feed lists
the schedules that are *current* in the window, as W3ACT does (not only the runs
inside it, as our own feed does), and gives each the date its pattern is read
from. docs/api.md says how each of our concepts is mapped, and what is given
where we have no equivalent.

A target is one of our domain configurations; its schedules are those of the
active harvest definitions that harvest it: a selective definition's schedule
in W3ACT's vocabulary, a snapshot as DOMAINCRAWL (W3ACT's "domain crawl only").
A snapshot takes every active domain, so the array is streamed, read from the
database a chunk at a time, never held whole in memory.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.http import StreamingHttpResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.views import APIView

from harvest.api.feed import FeedQuerySerializer, feed_window
from harvest.choices import DepthPolicy, EndKind, Unit
from harvest.models import DomainConfiguration, HarvestDefinition
from harvest.models.domains import UNLIMITED
from harvest.services.launcher import candidate_configurations
from harvest.validators import seed_list
from webarchive.api.fields import CharField, DateTimeField
from webarchive.api.filters import refuse_unknown_parameters
from webarchive.permissions import VIEW, Area, restrict

# W3ACT's crawl frequencies, and what our schedules amount to in them: (unit, every) → frequency.
SCHEDULE_FREQUENCIES = {
    (Unit.DAY, 1): "DAILY",
    (Unit.WEEK, 1): "WEEKLY",
    (Unit.MONTH, 1): "MONTHLY",
    (Unit.MONTH, 3): "QUARTERLY",
    (Unit.MONTH, 6): "SIXMONTHLY",
    (Unit.MONTH, 12): "ANNUAL",
}
ONCE = "DAILY"  # a one-off run: a daily schedule that starts and ends at that run
DOMAINCRAWL = "DOMAINCRAWL"  # a snapshot (broad) harvest
NEVERCRAWL = "NEVERCRAWL"  # W3ACT's blocked targets: we have none
FREQUENCIES = ("DAILY", "WEEKLY", "MONTHLY", "QUARTERLY", "SIXMONTHLY", "ANNUAL", DOMAINCRAWL, NEVERCRAWL)
# W3ACT's two selections of several frequencies.
SELECTIONS = {
    "all": frozenset(FREQUENCIES) - {NEVERCRAWL},
    "frequent": frozenset(FREQUENCIES) - {NEVERCRAWL, DOMAINCRAWL},
}
# What the path takes: each, in capitals or in lower case (W3ACT ignores the case; its launchers
# write "daily", "all", "frequent").
FREQUENCY_VALUES = [
    *FREQUENCIES,
    *(f.lower() for f in FREQUENCIES),
    *SELECTIONS,
    *(s.upper() for s in SELECTIONS),
]

# W3ACT's tolerance around now (its EXPORT_TOLERANCE): the default window.
TOLERANCE = timedelta(hours=2)
# W3ACT's depths are byte caps: CAPPED (500 MB), CAPPED_LARGE (2 GB), DEEP (none).
CAPPED_BYTES = 500 * 10**6
CAPPED_LARGE_BYTES = 2 * 10**9
# A schedule ending after N runs ends at its last run; it is computed up to this many runs left.
MAX_RUNS_FOR_END = 1000
CHUNK = 500  # configurations read at a time
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

SCOPES = {
    DepthPolicy.PAGE: "resource",
    DepthPolicy.CLICKS: "plus1",
    DepthPolicy.PATH: "root",
    DepthPolicy.HOST: "root",
    DepthPolicy.DOMAIN: "subdomains",
}


class W3actQuerySerializer(FeedQuerySerializer):
    start = DateTimeField(
        required=False,
        error_messages={
            "invalid": gettext_lazy("Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z.")
        },
        help_text=gettext_lazy("The window's start (ISO 8601); two hours before now by default."),
    )
    end = DateTimeField(
        required=False,
        error_messages={
            "invalid": gettext_lazy("Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z.")
        },
        help_text=gettext_lazy("The window's end (ISO 8601); four hours after the start by default."),
    )

    def validate(self, attrs):
        start, end = feed_window(attrs, lead=TOLERANCE, length=2 * TOLERANCE)
        return {"start": start, "end": end}


# The schema of the answer (the view writes the same keys itself, streaming): W3ACT's names and types.


class W3actScheduleSerializer(serializers.Serializer):
    startDate = serializers.IntegerField(
        help_text=gettext_lazy(
            "Milliseconds since 1970-01-01 UTC: the run the schedule's pattern is read from."
        )
    )
    endDate = serializers.IntegerField(
        allow_null=True, help_text=gettext_lazy("Milliseconds since 1970-01-01 UTC; null when it has no end.")
    )
    frequency = CharField(
        help_text=gettext_lazy("DAILY, WEEKLY, MONTHLY, QUARTERLY, SIXMONTHLY, ANNUAL or DOMAINCRAWL.")
    )


class W3actTargetSerializer(serializers.Serializer):
    """One target: a domain configuration, with the schedules of the harvest definitions that harvest it."""

    id = serializers.IntegerField(help_text=gettext_lazy("The domain configuration's id."))
    title = CharField()
    seeds = serializers.ListField(child=CharField())
    depth = CharField(
        help_text=gettext_lazy("CAPPED, CAPPED_LARGE or DEEP, from the configuration's byte limit.")
    )
    scope = CharField(help_text=gettext_lazy("resource, plus1, root or subdomains, from the depth policy."))
    ignoreRobotsTxt = serializers.BooleanField()
    schedules = W3actScheduleSerializer(many=True)
    watched = serializers.BooleanField(help_text=gettext_lazy("Always false: no document harvesting."))
    documentUrlScheme = CharField(allow_null=True, help_text=gettext_lazy("Always null."))
    loginPageUrl = CharField(allow_null=True, help_text=gettext_lazy("Always null: no login settings."))
    logoutUrl = CharField(allow_null=True, help_text=gettext_lazy("Always null: no login settings."))
    secretId = serializers.IntegerField(
        allow_null=True, help_text=gettext_lazy("Always null: no login settings.")
    )


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since 1970-01-01 UTC, as W3ACT writes dates (exact: no floating point)."""
    return (moment - EPOCH) // timedelta(milliseconds=1)


def frequency_selected(value: str) -> frozenset[str]:
    """The W3ACT frequencies a path's frequency asks for; a 400 at ``frequency`` for any other."""
    if value in FREQUENCY_VALUES:
        return SELECTIONS.get(value.lower()) or frozenset({value.upper()})
    raise ValidationError(
        {
            "frequency": [
                _(
                    "“%(frequency)s” is not a W3ACT frequency: use DAILY, WEEKLY, MONTHLY, "
                    "QUARTERLY, SIXMONTHLY, ANNUAL, DOMAINCRAWL, NEVERCRAWL, all or frequent "
                    "(in capitals or in lower case)."
                )
                % {"frequency": value[:100]}
            ]
        }
    )


def selective_schedule(definition: HarvestDefinition, start: datetime, end: datetime) -> dict | None:
    """A selective definition's schedule as W3ACT's, if W3ACT can say it and it is current in the window.

    ``startDate`` is the run the launcher reads the hour, weekday and day from: the schedule's first
    run, or for a schedule of N runs, the definition's next run (the earlier ones are done).
    ``endDate`` is the schedule's end date, or the definition's last run.
    """
    schedule = definition.schedule
    if definition.next_date is None:
        return None  # ended
    if schedule.frequency == "once":
        frequency = ONCE
    else:
        frequency = SCHEDULE_FREQUENCIES.get((Unit(schedule.unit), schedule.every))
    if frequency is None:
        return None  # every N minutes, hours or days…: W3ACT has no word for it
    if schedule.end_kind == EndKind.RUNS:
        left = schedule.max_runs - definition.runs_done
        first = definition.next_date
        last = None
        if left <= MAX_RUNS_FOR_END:
            runs = definition.upcoming_runs(left)
            if not runs:
                return None
            last = runs[-1]
    else:
        first = schedule.next_run(schedule.start)
        if first is None:
            return None
        last = schedule.end_date if schedule.end_kind == EndKind.UNTIL else None
    if first > end or (last is not None and last < start):
        return None
    return {
        "startDate": epoch_ms(first),
        "endDate": None if last is None else epoch_ms(last),
        "frequency": frequency,
    }


def snapshot_schedule(definition: HarvestDefinition, end: datetime) -> dict | None:
    """An active snapshot as W3ACT's "domain crawl only": from its creation, without end."""
    if definition.created_at > end:
        return None
    return {"startDate": epoch_ms(definition.created_at), "endDate": None, "frequency": DOMAINCRAWL}


def depth(configuration: DomainConfiguration) -> str:
    """W3ACT's depth, a byte cap, from the configuration's byte limit (a larger one than 2 GB is DEEP)."""
    limit = configuration.max_bytes
    if limit == UNLIMITED or limit > CAPPED_LARGE_BYTES:
        return "DEEP"
    return "CAPPED" if limit <= CAPPED_BYTES else "CAPPED_LARGE"


def scope(template) -> str:
    if template.depth_policy == DepthPolicy.CLICKS and template.clicks == 0:
        return "resource"
    return SCOPES[DepthPolicy(template.depth_policy)]


def target(configuration: DomainConfiguration, schedules: list[dict]) -> dict:
    """One target of the feed, in W3ACT's field order."""
    seeds: dict[str, None] = {}
    for lst in sorted(configuration.seed_lists.all(), key=lambda s: s.name):
        for url in seed_list(lst.seeds):
            seeds.setdefault(url)
    template = configuration.template
    return {
        "id": configuration.pk,
        "title": str(configuration),
        "seeds": list(seeds),
        "depth": depth(configuration),
        "scope": scope(template),
        "ignoreRobotsTxt": not template.obey_robots,
        "schedules": schedules,
        "watched": False,
        "documentUrlScheme": None,
        "loginPageUrl": None,
        "logoutUrl": None,
        "secretId": None,
    }


class W3actFeed:
    """The feed's plan (which definitions, with which schedule), then its targets, a chunk at a time."""

    def __init__(self, definitions, *, frequencies: frozenset[str], start: datetime, end: datetime):
        self.schedules: dict[int, dict] = {}  # definition id → its schedule, in the definitions' order
        self.selective: list[int] = []
        self.snapshots = []  # (id, the configurations it takes)
        now = timezone.now()
        for definition in (
            definitions.filter(is_active=True).select_related("schedule").order_by("name", "pk")
        ):
            if definition.is_selective:
                schedule = selective_schedule(definition, start, end)
            else:
                schedule = snapshot_schedule(definition, end)
            if schedule is None or schedule["frequency"] not in frequencies:
                continue
            self.schedules[definition.pk] = schedule
            if definition.is_selective:
                self.selective.append(definition.pk)
            else:
                self.snapshots.append((definition.pk, candidate_configurations(definition, now)))
        self.order = {pk: index for index, pk in enumerate(self.schedules)}

    def _next_ids(self, last: int) -> tuple[list[int], dict[int, list[int]]]:
        """The next CHUNK targets' ids after ``last``, and the snapshots that take each.

        Each source (the selective definitions' configurations, each snapshot's) gives its next
        CHUNK ids, an index range scan however large it is; the smallest CHUNK of them all are the
        next targets, and each source's list holds all of its own among them.
        """
        through = HarvestDefinition.configurations.through
        selective = list(
            through.objects.filter(harvestdefinition_id__in=self.selective, domainconfiguration_id__gt=last)
            .order_by("domainconfiguration_id")
            .values_list("domainconfiguration_id", flat=True)
            .distinct()[:CHUNK]
        )
        taken_by = defaultdict(list)
        for definition_id, candidates in self.snapshots:
            for pk in candidates.filter(pk__gt=last).order_by("pk").values_list("pk", flat=True)[:CHUNK]:
                taken_by[pk].append(definition_id)
        return sorted({*selective, *taken_by})[:CHUNK], taken_by

    def chunks(self):
        """Lists of targets, in the order of their ids."""
        if not self.schedules:
            return
        through = HarvestDefinition.configurations.through
        last = 0
        while True:
            ids, harvested_by = self._next_ids(last)
            if not ids:
                return
            last = ids[-1]
            chunk = list(
                DomainConfiguration.objects.filter(pk__in=ids)
                .select_related("domain", "template")
                .prefetch_related("seed_lists")
                .order_by("pk")
            )
            for configuration_id, definition_id in through.objects.filter(
                domainconfiguration_id__in=ids, harvestdefinition_id__in=self.selective
            ).values_list("domainconfiguration_id", "harvestdefinition_id"):
                harvested_by[configuration_id].append(definition_id)
            yield [
                target(
                    configuration,
                    [self.schedules[pk] for pk in sorted(harvested_by[configuration.pk], key=self.order.get)],
                )
                for configuration in chunk
            ]

    def json(self):
        """The feed as one JSON array, written a chunk at a time."""
        yield "["
        first = True
        for chunk in self.chunks():
            text = ",".join(json.dumps(item, ensure_ascii=False, separators=(",", ":")) for item in chunk)
            yield text if first else "," + text
            first = False
        yield "]"


class W3actCrawlFeedView(APIView):
    """The targets scheduled in a time window (two hours either side of now by default), as W3ACT's
    crawl feed gives them: a JSON array, not paginated."""

    area = Area.PLANNING
    queryset = HarvestDefinition.objects.all()  # RolePermission: reading harvest definitions

    @extend_schema(
        operation_id="crawl_feed_w3act",
        parameters=[
            OpenApiParameter(
                "frequency",
                str,
                OpenApiParameter.PATH,
                enum=FREQUENCY_VALUES,
                description=gettext_lazy(
                    "A W3ACT frequency, or all (every one but NEVERCRAWL) or frequent (neither "
                    "DOMAINCRAWL nor NEVERCRAWL)."
                ),
            ),
            W3actQuerySerializer,
        ],
        responses=W3actTargetSerializer(many=True),
    )
    def get(self, request, frequency: str):
        refuse_unknown_parameters(request, set(W3actQuerySerializer().fields))
        frequencies = frequency_selected(frequency)
        query = W3actQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        feed = W3actFeed(
            restrict(HarvestDefinition.objects.all(), request.user, VIEW),
            frequencies=frequencies,
            start=query.validated_data["start"],
            end=query.validated_data["end"],
        )
        return StreamingHttpResponse(feed.json(), content_type="application/json")
