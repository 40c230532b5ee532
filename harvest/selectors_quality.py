"""Reads for the curators' quality view of a job and for the harvests shown on a selection record.

A job's sites are flagged in the database (so that the page filters and paginates them there):

- *budget hit*: the site stopped at an object or byte limit, its own or the harvest's;
- *many errors*: its errors (4xx/5xx answers and URLs with no answer) are more than
  ``REPORT_ERROR_SHARE`` of its URLs;
- *few URLs*: it ended with fewer than ``REPORT_FEW_URLS`` URLs.

Each site carries the previous harvest of its domain (the latest HarvestInfo of an earlier job), read
by correlated subqueries: the whole page costs the same few queries whatever the number of sites.

Records and harvests meet through the registered domain: a record's site is crawled under the domain
named like its ``registered_domain``; a site crawl whose configuration was made by the transfer from a
collection is backed by that collection's records of the domain, any other (a snapshot, a
configuration made by hand) by every record of the domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import (
    BooleanField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Cast, Greatest
from django.db.models.lookups import IsNull
from django.utils.translation import gettext_lazy as _

from harvest.choices import SiteState, StopReason
from harvest.models import HarvestInfo, Job, JobConfiguration
from selection.models import HarvestNote, Record
from storage.replay import replay_url

# The stop reasons that say a site was cut by its budget (objects or bytes, its own or the harvest's).
BUDGET_REASONS = (
    StopReason.OBJECT_LIMIT,
    StopReason.BYTE_LIMIT,
    StopReason.CONFIG_OBJECT_LIMIT,
    StopReason.CONFIG_BYTE_LIMIT,
)
RECORD_HARVESTS = 10  # site crawls shown on a record's page


class QualityFilter:
    """The filters of the quality view: the value in the address and its label."""

    ALL = "all"
    BUDGET = "budget"
    ERRORS = "errors"
    FEW = "few"
    CHOICES = (
        (ALL, _("All sites")),
        (BUDGET, _("Budget hit")),
        (ERRORS, _("Many errors")),
        (FEW, _("Few URLs")),
    )
    FIELDS = {BUDGET: "budget_hit", ERRORS: "many_errors", FEW: "few_urls"}


def _flag(condition: Q):
    return Case(When(condition, then=Value(True)), default=Value(False), output_field=BooleanField())


def quality_annotations(*, error_share: float | None = None, few_urls: int | None = None) -> dict:
    """The flags and the error share of a site crawl, as annotations of JobConfiguration."""
    error_share = settings.REPORT_ERROR_SHARE if error_share is None else error_share
    few_urls = settings.REPORT_FEW_URLS if few_urls is None else few_urls
    # Errors counted against the URLs done, or against themselves when a site answered nothing.
    base = Greatest(F("urls_done"), F("error_count"))
    share = ExpressionWrapper(
        Cast("error_count", FloatField()) / Cast(Greatest(base, Value(1)), FloatField()),
        output_field=FloatField(),
    )
    return {
        "error_share": share,
        "budget_hit": _flag(Q(stop_reason__in=BUDGET_REASONS)),
        "many_errors": _flag(Q(error_count__gt=0) & Q(error_count__gt=base * Value(error_share))),
        "few_urls": _flag(Q(state=SiteState.ENDED, urls_done__lt=few_urls)),
    }


def previous_harvest_annotations() -> dict:
    """The previous harvest of each site's domain: what the latest earlier job collected of it."""
    earlier = HarvestInfo.objects.filter(
        domain=OuterRef("domain_id"), job_id__lt=OuterRef("job_id")
    ).order_by("-created_at", "-pk")
    return {
        f"previous_{name}": Subquery(earlier.values(field)[:1])
        for name, field in (
            ("job_id", "job_id"),
            ("urls", "object_count"),
            ("bytes", "byte_count"),
            ("stop_reason", "stop_reason"),
        )
    }


def job_quality(job: Job, *, flag: str = QualityFilter.ALL) -> QuerySet[JobConfiguration]:
    """A job's site crawls with their flags and previous harvest; ``flag`` keeps the flagged ones."""
    sites = (
        job.configurations.select_related("domain", "configuration__source_collection")
        .defer("seeds", "crawler_traps", "report", "current_url")
        .annotate(
            **quality_annotations(),
            **previous_harvest_annotations(),
            record_count=records_behind_sites_count(),
            flag_count=Cast(F("budget_hit"), IntegerField())
            + Cast(F("many_errors"), IntegerField())
            + Cast(F("few_urls"), IntegerField()),
        )
    )
    field = QualityFilter.FIELDS.get(flag)
    if field:
        sites = sites.filter(**{field: True})
    return sites.order_by("-flag_count", "domain__name", "pk")


def job_quality_counts(job: Job) -> dict[str, int]:
    """How many sites of the job carry each flag, and how many sites it has (one query)."""
    annotated = job.configurations.order_by().annotate(**quality_annotations())
    return annotated.aggregate(
        all=Count("pk"),
        budget=Count("pk", filter=Q(budget_hit=True)),
        errors=Count("pk", filter=Q(many_errors=True)),
        few=Count("pk", filter=Q(few_urls=True)),
    )


def percent_change(now: int | None, before: int | None) -> float | None:
    """The change from ``before`` to ``now`` in percent; None when there is nothing to compare with."""
    if now is None or not before:
        return None
    return (now - before) * 100.0 / before


@dataclass(frozen=True)
class NoteShown:
    """A note as the quality view shows it: once per site, although it is kept on each record."""

    domain_id: int | None
    author: str
    text: str
    created_at: datetime
    records: int


def site_notes(job: Job, domain_ids) -> dict[int | None, list[NoteShown]]:
    """The notes written on the given sites of a job, newest first, grouped by domain (one query)."""
    rows = (
        HarvestNote.objects.filter(job=job, domain_id__in=list(domain_ids))
        .values("domain_id", "author__username", "text", "created_at")
        .annotate(records=Count("pk"))
        .order_by("-created_at", "domain_id")
    )
    notes: dict[int | None, list[NoteShown]] = {}
    for row in rows:
        notes.setdefault(row["domain_id"], []).append(
            NoteShown(
                row["domain_id"], row["author__username"], row["text"], row["created_at"], row["records"]
            )
        )
    return notes


# Records and site crawls ----------------------------------------------------------------------


def records_behind_site(entry: JobConfiguration) -> QuerySet[Record]:
    """The selection records a site crawl harvested: its domain's, in its configuration's collection."""
    records = Record.objects.filter(registered_domain=entry.domain.name)
    collection_id = entry.configuration.source_collection_id
    if collection_id is not None:
        records = records.filter(collection_id=collection_id)
    return records


def records_behind_sites_count() -> Subquery:
    """How many records are behind each site crawl, as an annotation of JobConfiguration."""
    records = (
        Record.objects.filter(registered_domain=OuterRef("domain__name"))
        .filter(
            Q(collection_id=OuterRef("configuration__source_collection_id"))
            | Q(IsNull(OuterRef("configuration__source_collection_id"), True))
        )
        .order_by()
        .values("registered_domain")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Subquery(records, output_field=IntegerField())


@dataclass(frozen=True)
class RecordHarvest:
    """One site crawl of a record's domain, as the record's page lists it."""

    entry: JobConfiguration
    replay: str


def record_harvests(record: Record, *, limit: int = RECORD_HARVESTS) -> list[RecordHarvest]:
    """The latest ended site crawls of the record's domain, each with a replay address of the record's URL."""
    entries = (
        JobConfiguration.objects.filter(domain__name=record.registered_domain, state=SiteState.ENDED)
        .select_related("job__harvest_definition")
        .defer("seeds", "crawler_traps", "report", "job__template_settings", "job__crawler_traps")
        .order_by("-ended_at", "-pk")[:limit]
    )
    return [
        RecordHarvest(entry, replay_url(record.url, _timestamp14(entry.started_at or entry.ended_at)))
        for entry in entries
    ]


def _timestamp14(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y%m%d%H%M%S")
