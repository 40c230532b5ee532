"""Reads of the harvest side that are more than a filter, shared by the pages and the REST API."""

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db.models import (
    BigIntegerField,
    Case,
    Count,
    FloatField,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Sum,
    Value,
    When,
)
from django.db.models.functions import Coalesce

from harvest import hooks
from harvest.choices import SiteState
from harvest.models import Domain, HarvestInfo, Job, JobConfiguration
from harvest.models.jobs import SITE_PROGRESS_FIELDS


def crawl_log_dir(job_id: int) -> Path:
    """Where this machine's crawl processes write the parts of a job's crawl log not stored yet."""
    return Path(settings.HARVEST_SPOOL_DIR) / "jobs" / str(job_id)


def crawl_log_uri(job_id: int) -> str:
    """The target URI of the WARC metadata records that hold a job's crawl log."""
    return f"metadata://webarchive/job/{job_id}/crawl.log"


def crawl_log_sources(job_id: int) -> list[Callable[[], BinaryIO]]:
    """The parts of a job's crawl log, oldest first, each opened when called: those stored with the
    job's WARC files (read through storage, whichever machine crawled), then those this machine's crawl
    processes are writing now (a crawl on another machine shows them once they are rolled into a WARC
    file: HARVEST_CRAWL_LOG_ROLL_SECONDS)."""
    sources = list(hooks.crawl_log_segments.call(job_id=job_id))
    try:
        live = sorted(crawl_log_dir(job_id).glob("crawl*.log"), key=_modified)
    except OSError:
        live = []
    return sources + [partial(path.open, "rb") for path in live]


def crawl_log_lines(job_id: int) -> Iterator[str]:
    """A job's crawl log, line by line (without the newline), from :func:`crawl_log_sources`; a part
    that cannot be read raises OSError when it is reached."""
    for source in crawl_log_sources(job_id):
        with source() as stream:
            for line in io.TextIOWrapper(stream, encoding="utf-8", errors="replace"):
                yield line.rstrip("\n")


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def job_frozen_settings(job: Job) -> dict:
    """What a job froze when it was made (its template's settings and version, its traps and time
    limit), as its metadata WARC keeps it."""
    return {
        "job": job.pk,
        "harvest_definition": job.harvest_definition.name,
        "run": job.run_number,
        "channel": job.channel.name,
        "template_id": job.template_id,
        "template_version": job.template_version,
        "template_settings": job.template_settings,
        "crawler_traps": job.crawler_traps,
        "max_seconds": job.max_seconds,
        "created_at": job.created_at.isoformat(),
    }


def job_seeds_text(job: Job) -> str:
    """The seeds a job crawled, as a Heritrix seeds file: each domain configuration (by domain name)
    under a ``#`` line naming it and the limits it ran with, one seed a line."""
    lines = []
    entries = job.configurations.select_related("domain", "configuration").order_by("domain__name", "pk")
    for entry in entries.only(
        "seeds", "max_objects", "max_bytes", "domain__name", "configuration__name"
    ).iterator(chunk_size=2000):
        lines.append(
            f"# {entry.domain.name} {entry.configuration.name}"
            f" max-objects={entry.max_objects} max-bytes={entry.max_bytes}\n"
        )
        lines += [f"{seed}\n" for seed in entry.seed_urls]
    return "".join(lines)


def job_harvest_infos(job: Job) -> list[dict]:
    """What each domain configuration of a job yielded (its HarvestInfo rows), by domain name."""
    infos = (
        HarvestInfo.objects.filter(job=job)
        .select_related("domain", "configuration")
        .order_by("domain__name", "configuration_id")
    )
    return [
        {
            "domain": info.domain.name,
            "configuration": info.configuration_id,
            "configuration_name": info.configuration.name,
            "object_count": info.object_count,
            "byte_count": info.byte_count,
            "stop_reason": info.stop_reason,
            "recorded_at": info.created_at.isoformat(),
        }
        for info in infos.iterator(chunk_size=2000)
    ]


def running_totals(job_ids) -> dict[int, dict]:
    """The progress of the running sites of these jobs, by job id, in one query.

    Bounded by how many sites the crawlers run at once, whatever the size of the jobs, and read
    through the (job, state) index; the ended sites are counted on the job's row instead.
    """
    rows = (
        JobConfiguration.objects.filter(job_id__in=list(job_ids), state=SiteState.RUNNING)
        .order_by()
        .values("job_id")
        .annotate(
            sites_running=Count("pk"),
            rate=Coalesce(Sum("rate"), Value(0.0), output_field=FloatField()),
            **{
                field: Coalesce(Sum(field), Value(0), output_field=BigIntegerField())
                for field in SITE_PROGRESS_FIELDS
            },
        )
    )
    return {row.pop("job_id"): row for row in rows}


def job_totals(job: Job, running: dict | None = None) -> dict:
    """The progress of a job: the counters of its ended sites (on its row) plus its running sites
    (``running``: its entry of :func:`running_totals`, read here when not given).

    Counts by state (sites_total, sites_queued, sites_running, sites_ended) and sums (urls_done,
    urls_queued, bytes_done, error_count, duplicates, duplicate_bytes, and the rate of the running
    sites).
    """
    if running is None:
        running = running_totals([job.pk]).get(job.pk, {})
    totals = {field: getattr(job, f"ended_{field}") + running.get(field, 0) for field in SITE_PROGRESS_FIELDS}
    sites_running = running.get("sites_running", 0)
    return {
        "sites_total": job.domain_count,
        "sites_queued": max(0, job.domain_count - job.sites_ended - sites_running),
        "sites_running": sites_running,
        "sites_ended": job.sites_ended,
        **totals,
        "rate": running.get("rate", 0.0),
    }


def jobs_with_totals(jobs) -> list[Job]:
    """The jobs (a page of them) with their :func:`job_totals` set as attributes, in one query more."""
    jobs = list(jobs)
    running = running_totals(job.pk for job in jobs)
    for job in jobs:
        for name, value in job_totals(job, running.get(job.pk, {})).items():
            setattr(job, name, value)
    return jobs


def job_sites(job: Job):
    """A job's site crawls with their progress: running ones first, then queued, then ended.

    The domain's name, the sort key, is read by key for each site (a subquery), and the domains
    of a page's rows after them: joined to the domains, the sites were read either by 10,000
    lookups or by a scan of every domain (400 ms at 3,000,000), as PostgreSQL's estimate of the
    job's sites went.
    """
    name = Domain.objects.filter(pk=OuterRef("domain_id")).order_by().values("name")[:1]
    return (
        job.configurations.prefetch_related("domain")
        .defer("seeds", "crawler_traps", "report")
        .annotate(
            state_rank=Case(
                When(state=SiteState.RUNNING, then=Value(0)),
                When(state=SiteState.QUEUED, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            ),
            domain_name=Subquery(name),
        )
        .order_by("state_rank", "domain_name", "pk")
    )


# The order of a job's sites: running ones first, then queued, then ended; by domain name in each.
SITE_STATE_ORDER = (SiteState.RUNNING, SiteState.QUEUED, SiteState.ENDED)


@dataclass(frozen=True)
class SitePage:
    """One page of a job's sites, read by keyset (no count, no offset): ``previous`` and ``next``
    are the keys to ask for the pages around it (None where there is none)."""

    sites: list[JobConfiguration]
    previous: str | None
    next: str | None


def site_key(entry: JobConfiguration) -> str:
    """Where a site stands in :func:`job_sites`' order, as a URL parameter: ``rank.pk.domain``."""
    return f"{SITE_STATE_ORDER.index(entry.state)}.{entry.pk}.{entry.domain.name}"


def _parse_site_key(key: str) -> tuple[int, int, str] | None:
    rank, _, rest = key.partition(".")
    pk, _, name = rest.partition(".")
    if not (rank.isdigit() and pk.isdigit() and name) or int(rank) >= len(SITE_STATE_ORDER):
        return None
    return int(rank), int(pk), name


def _beyond(key: tuple[int, int, str], *, after: bool) -> Q:
    """The sites after (or before) ``key`` in :func:`job_sites`' order."""
    rank, pk, name = key
    later = "gt" if after else "lt"
    others = SITE_STATE_ORDER[rank + 1 :] if after else SITE_STATE_ORDER[:rank]
    state = SITE_STATE_ORDER[rank]
    return (
        Q(state__in=others)
        | Q(state=state, **{f"domain_name__{later}": name})
        | Q(state=state, domain_name=name, **{f"pk__{later}": pk})
    )


def job_sites_page(sites, *, after: str = "", before: str = "", size: int) -> SitePage:
    """A page of ``size`` sites of :func:`job_sites` (filtered or not): the first, or the one after
    the key ``after``, or the one before the key ``before``. A key that cannot be read gives the
    first page. Each page costs one bounded query, however deep it is, and no count."""
    key_after, key_before = _parse_site_key(after), _parse_site_key(before)
    if key_before is not None:
        rows = list(sites.filter(_beyond(key_before, after=False)).reverse()[: size + 1])
        more_before = len(rows) > size
        rows = rows[:size][::-1]
        return SitePage(
            rows,
            previous=site_key(rows[0]) if more_before else None,
            next=site_key(rows[-1]) if rows else None,
        )
    if key_after is not None:
        sites = sites.filter(_beyond(key_after, after=True))
    rows = list(sites[: size + 1])
    more_after = len(rows) > size
    rows = rows[:size]
    return SitePage(
        rows,
        previous=site_key(rows[0]) if key_after is not None and rows else None,
        next=site_key(rows[-1]) if more_after else None,
    )
