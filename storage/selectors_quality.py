"""Reads for the curators' quality view of a job and for the harvests shown on a selection record.

A job's sites are flagged in the database (so that the page filters and paginates them there):

- *budget hit*: the site stopped at an object or byte limit, its own or the harvest's;
- *many errors*: its errors (4xx/5xx answers and URLs with no answer) are more than
  ``REPORT_ERROR_SHARE`` of its URLs;
- *few URLs*: it ended with fewer than ``REPORT_FEW_URLS`` URLs.

Each site carries the previous harvest of its domain (the latest HarvestInfo of an earlier job), read
by correlated subqueries: the whole page costs the same few queries whatever the number of sites.

When the crawl rendered pages in a browser, each site carries the render figures of its report and the
screenshots of its seeds (``urn:screenshot:`` resource records of the capture index), found for a whole
page of sites by one query.

Records and harvests meet through the registered domain: a record's site is crawled under the domain
named like its ``registered_domain``; a site crawl whose configuration was made by the transfer from a
collection is backed by that collection's records of the domain, any other (a snapshot, a
configuration made by hand) by every record of the domain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
from harvest.crawler.rendering import SCREENSHOT_PREFIX, SCREENSHOT_TYPE
from harvest.crawler.urls import canonicalize
from harvest.models import HarvestInfo, Job, JobConfiguration
from selection.models import Record
from storage.models import Capture, HarvestNote
from storage.replay import replay_url
from webarchive.urlnorm import url_host

# The stop reasons that say a site was cut by its budget (objects or bytes, its own or the harvest's).
BUDGET_REASONS = (
    StopReason.OBJECT_LIMIT,
    StopReason.BYTE_LIMIT,
    StopReason.CONFIG_OBJECT_LIMIT,
    StopReason.CONFIG_BYTE_LIMIT,
)
RECORD_HARVESTS = 10  # site crawls shown on a record's page
SCREENSHOTS_SHOWN = 12  # screenshots of one site on the quality view
SEEDS_LISTED = 12  # seeds of one site named as having no screenshot
RENDER_ERRORS_SHOWN = 5  # of the render errors a site's report keeps (the crawler keeps 20)
RENDER_FIGURES = ("pages_rendered", "render_failures", "render_errors")


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


def render_annotations() -> dict:
    """The render figures of a site crawl's report, as annotations (None when it rendered nothing)."""
    return {name: F(f"report__{name}") for name in RENDER_FIGURES}


def job_quality(job: Job, *, flag: str = QualityFilter.ALL) -> QuerySet[JobConfiguration]:
    """A job's site crawls with their flags, previous harvest and render figures; ``flag`` keeps the
    flagged ones."""
    sites = (
        job.configurations.select_related("domain", "configuration__source_collection")
        .defer("crawler_traps", "report", "current_url")  # the seeds are matched with the screenshots
        .annotate(
            **quality_annotations(),
            **previous_harvest_annotations(),
            **render_annotations(),
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


# Rendering: figures and screenshots -----------------------------------------------------------


@dataclass
class Screenshot:
    """A seed page's screenshot in the capture index, and the seeds of the site that led to it."""

    capture_id: int
    page_url: str
    captured_at: datetime
    replay: str
    seeds: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RenderError:
    """A page whose rendering failed, as the site crawl's report keeps it (crawled text: never safe)."""

    url: str
    error: str


@dataclass
class SiteRender:
    """What the quality view shows of a site's rendering: the report's figures and the screenshots."""

    pages_rendered: int | None
    render_failures: int | None
    errors: list[RenderError]
    screenshots: list[Screenshot]
    more_screenshots: int
    unrendered_seeds: list[str]
    more_unrendered_seeds: int

    @property
    def shown(self) -> bool:
        """Whether the site was rendered at all: a report with render figures, or a screenshot."""
        return self.pages_rendered is not None or bool(self.screenshots)

    @property
    def more_errors(self) -> int:
        return max(0, (self.render_failures or 0) - len(self.errors))


def site_renders(job: Job, entries, captures: QuerySet[Capture]) -> dict[int, SiteRender]:
    """The render figures and screenshots of some sites of a job (from :func:`job_quality`), by site crawl.

    ``captures`` is what the user may see of the capture index. One query finds the job's screenshots
    whose page is on one of the sites' domains (or a subdomain). Each screenshot is given the seeds it
    stands for: a seed is rendered under its canonical address, or under the one it redirects to; a
    redirect to https or to or from ``www.`` is recognised, another one leaves the seed "without a
    screenshot" and its screenshot among the site's others.
    """
    entries = list(entries)
    shots = _screenshots(job, entries, captures)
    return {entry.pk: _site_render(entry, shots.get(entry.pk, {})) for entry in entries}


def _screenshots(job: Job, entries, captures: QuerySet[Capture]) -> dict[int, dict[str, Screenshot]]:
    """The latest screenshot of each rendered page of the sites, by site crawl and page address."""
    sites = {entry.domain.name: entry.pk for entry in entries}
    if not sites:
        return {}
    near = Q()
    for name in sites:  # a first cut in the database; the host is matched exactly below
        near |= Q(url__contains=f"//{name}") | Q(url__contains=f".{name}")
    rows = (
        captures.filter(
            job=job,
            # The (job, urlkey) index: the SURT key of a URN is the URN (lower-cased), prefix first.
            urlkey__gte=SCREENSHOT_PREFIX,
            urlkey__lt=SCREENSHOT_PREFIX[:-1] + chr(ord(SCREENSHOT_PREFIX[-1]) + 1),
            url__startswith=SCREENSHOT_PREFIX,
            record_type=Capture.RecordType.RESOURCE,
            mime=SCREENSHOT_TYPE,
        )
        .filter(near)
        .order_by("timestamp", "pk")
        .values_list("pk", "url", "timestamp")
    )
    found: dict[int, dict[str, Screenshot]] = {}
    for pk, url, timestamp in rows:
        page_url = url.removeprefix(SCREENSHOT_PREFIX)
        entry_id = _site_of(url_host(page_url), sites)
        if entry_id is not None:  # the latest of a page wins (a site crawled again after a failure)
            found.setdefault(entry_id, {})[page_url] = Screenshot(
                pk, page_url, timestamp, replay_url(page_url, _timestamp14(timestamp))
            )
    return found


def _site_of(host: str, sites: dict[str, int]) -> int | None:
    """The site whose domain is the host or a parent of it (the longest such domain)."""
    labels = host.split(".")
    for start in range(len(labels)):
        site = sites.get(".".join(labels[start:]))
        if site is not None:
            return site
    return None


def _loose(url: str) -> str:
    """An address without its scheme nor ``www.``: a seed and the page it redirected to often share it."""
    return url.partition("://")[2].removeprefix("www.")


def _site_render(entry: JobConfiguration, shots: dict[str, Screenshot]) -> SiteRender:
    loose: dict[str, Screenshot] = {}
    for shot in shots.values():
        loose.setdefault(_loose(shot.page_url), shot)
    unrendered, ordered = [], []
    for seed in entry.seed_urls:
        page_url = canonicalize(seed) or seed
        shot = shots.get(page_url) or loose.get(_loose(page_url))
        if shot is None:
            unrendered.append(seed)
            continue
        if not shot.seeds:
            ordered.append(shot)
        shot.seeds.append(seed)
    ordered += [shot for shot in shots.values() if not shot.seeds]
    return SiteRender(
        pages_rendered=_count(getattr(entry, "pages_rendered", None)),
        render_failures=_count(getattr(entry, "render_failures", None)),
        errors=_render_errors(getattr(entry, "render_errors", None)),
        screenshots=ordered[:SCREENSHOTS_SHOWN],
        more_screenshots=max(0, len(ordered) - SCREENSHOTS_SHOWN),
        unrendered_seeds=unrendered[:SEEDS_LISTED],
        more_unrendered_seeds=max(0, len(unrendered) - SEEDS_LISTED),
    )


def _count(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _render_errors(value) -> list[RenderError]:
    """The first render errors of a report, as text whatever the report holds."""
    if not isinstance(value, list):
        return []
    errors = [
        RenderError(str(item.get("url", "")), str(item.get("error", "")))
        for item in value
        if isinstance(item, dict)
    ]
    return errors[:RENDER_ERRORS_SHOWN]


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
