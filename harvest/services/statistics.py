"""Statistics of ended jobs: computed once from the site crawls' reports, stored for the reports.

Each site crawl ends with a report (harvest.crawler.site.SiteCrawl.report) that counts its stored
answers by MIME type and HTTP status; with the site's domain, stop reason and the collection it
was selected in, that is everything the reports need. :func:`job_statistics_compute` reads a job's
site crawls once (streamed: a broad crawl has millions) and replaces the job's
:class:`~harvest.models.JobStatistics` rows; it is idempotent, so a job can be recomputed at any
time (``manage.py compute_statistics``).
"""

from __future__ import annotations

import ipaddress
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from harvest.choices import StopReason
from harvest.models import Dimension, Job, JobConfiguration, JobStatistics, StatisticLine
from webarchive.tasks import enqueue

BUDGET_REASONS = frozenset(
    {
        StopReason.OBJECT_LIMIT,
        StopReason.BYTE_LIMIT,
        StopReason.CONFIG_OBJECT_LIMIT,
        StopReason.CONFIG_BYTE_LIMIT,
    }
)
SELECTION, OTHER = "selection", "other"
SEED_SOURCES = {SELECTION: _("Librarians' selection"), OTHER: _("Broad-crawl lists and planning")}
UNKNOWN = "unknown"
NO_ANSWER = "no answer"
IP_ADDRESS = "IP"


def size_classes(bounds: list[int] | None = None) -> list[tuple[str, float]]:
    """Every size class, smallest first, with the most URLs a domain of the class has."""
    bounds = bounds or settings.REPORT_SIZE_CLASSES
    classes = [(f"< {bounds[0]:,}", bounds[0] - 1)]
    classes += [(f"{low:,}-{high:,}", high) for low, high in itertools.pairwise(bounds)]
    return [*classes, (f"> {bounds[-1]:,}", math.inf)]


def size_class(urls: int, bounds: list[int] | None = None) -> str:
    """The size class of a domain that yielded ``urls`` URLs (bounds: ``REPORT_SIZE_CLASSES``)."""
    return next(label for label, most in size_classes(bounds) if urls <= most)


def status_class(code: int) -> str:
    return f"{code // 100}xx" if 100 <= code < 600 else NO_ANSWER


def tld_of(domain: str) -> str:
    """The top-level domain of a domain name (``IP`` for an address: sites crawled by address)."""
    try:
        ipaddress.ip_address(domain.strip("[]"))
    except ValueError:
        return domain.rstrip(".").rsplit(".", 1)[-1].lower()
    return IP_ADDRESS


@dataclass
class _Scope:
    """The running sums of one JobStatistics row (the whole job, or one collection's sites)."""

    urls: int = 0
    bytes: int = 0
    duplicate_urls: int = 0
    duplicate_bytes: int = 0
    errors: int = 0
    domains: int = 0
    sites: int = 0
    budget_stopped: int = 0
    lines: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0, 0]))

    def add(self, dimension: str, key: str, urls: int, size: int, domain: int = 1) -> None:
        line = self.lines[(dimension, key[:255])]
        line[0] += urls
        line[1] += size
        line[2] += domain


def _add_site(scope: _Scope, site: dict) -> None:
    urls, size = site["urls_done"], site["bytes_done"]
    report = site["report"] or {}
    scope.urls += urls
    scope.bytes += size
    scope.duplicate_urls += site["duplicates"]
    scope.duplicate_bytes += site["duplicate_bytes"]
    scope.errors += site["error_count"]
    scope.sites += 1
    scope.domains += 1 if urls else 0
    scope.budget_stopped += 1 if site["stop_reason"] in BUDGET_REASONS else 0

    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for mime, (count, mime_bytes) in (report.get("mime_types") or {}).items():
        mime = mime.lower() or UNKNOWN
        scope.add(Dimension.MIME, mime, count, mime_bytes)
        family = families[mime.split("/", 1)[0] if mime != UNKNOWN else UNKNOWN]
        family[0] += count
        family[1] += mime_bytes
    for family, (count, family_bytes) in families.items():
        scope.add(Dimension.MIME_FAMILY, family, count, family_bytes)

    status_bytes = report.get("status_bytes") or {}
    classes: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for code, count in (report.get("status_codes") or {}).items():
        code_bytes = status_bytes.get(code, 0)
        scope.add(Dimension.STATUS, str(code), count, code_bytes)
        klass = classes[status_class(int(code))]
        klass[0] += count
        klass[1] += code_bytes
    for klass, (count, class_bytes) in classes.items():
        scope.add(Dimension.STATUS_CLASS, klass, count, class_bytes)

    scope.add(Dimension.TLD, tld_of(site["domain__name"]), urls, size)
    scope.add(Dimension.SIZE_CLASS, size_class(urls), urls, size)
    scope.add(Dimension.STOP_REASON, site["stop_reason"] or UNKNOWN, urls, size)
    source = SELECTION if site["configuration__source_collection_id"] else OTHER
    scope.add(Dimension.SEED_SOURCE, source, urls, size)


@transaction.atomic
def job_statistics_compute(*, job_id: int, refresh_periods: bool = True) -> JobStatistics | None:
    """Compute and store the statistics of an ended job (replacing earlier ones); None if it has not ended.

    Its year's and month's period statistics are then refreshed on a worker, unless
    ``refresh_periods`` is false (a caller recomputing many jobs refreshes their periods once).
    """
    job = Job.objects.select_related("harvest_definition").get(pk=job_id)
    if job.ended_at is None:
        return None
    scopes: dict[int | None, _Scope] = {None: _Scope()}
    sites = (
        JobConfiguration.objects.filter(job_id=job.pk)
        .values(
            "domain__name",
            "configuration__source_collection_id",
            "urls_done",
            "bytes_done",
            "duplicates",
            "duplicate_bytes",
            "error_count",
            "stop_reason",
            "report",
        )
        .order_by("pk")
    )
    for site in sites.iterator(chunk_size=2000):
        _add_site(scopes[None], site)
        collection_id = site["configuration__source_collection_id"]
        if collection_id is not None:
            _add_site(scopes.setdefault(collection_id, _Scope()), site)

    JobStatistics.objects.filter(job_id=job.pk).delete()
    duration = int((job.ended_at - job.started_at).total_seconds()) if job.started_at else 0
    common = {
        "job": job,
        "harvest_definition_id": job.harvest_definition_id,
        "run_id": job.run_id,
        "kind": job.harvest_definition.kind,
        "ended_at": job.ended_at,
        "year": timezone.localtime(job.ended_at).year,
        "duration_seconds": max(duration, 0),
    }
    whole = None
    for collection_id, scope in scopes.items():
        row = JobStatistics.objects.create(
            collection_id=collection_id,
            urls=scope.urls,
            bytes=scope.bytes,
            duplicate_urls=scope.duplicate_urls,
            duplicate_bytes=scope.duplicate_bytes,
            errors=scope.errors,
            domains=scope.domains,
            sites=scope.sites,
            budget_stopped=scope.budget_stopped,
            **common,
        )
        StatisticLine.objects.bulk_create(
            [
                StatisticLine(
                    statistics=row, dimension=dimension, key=key, urls=urls, bytes=size, domains=count
                )
                for (dimension, key), (urls, size, count) in scope.lines.items()
            ],
            batch_size=2000,
        )
        if collection_id is None:
            whole = row
    # The domain figures of its year and month, and of its definition's year
    # (harvest.services.period_statistics), on a worker.
    if refresh_periods:
        for month in (0, timezone.localtime(job.ended_at).month):
            enqueue("harvest.refresh_period_statistics", common["year"], month)
        enqueue("harvest.refresh_period_statistics", common["year"], 0, job.harvest_definition_id)
    return whole


def send_job_statistics(job_id: int) -> None:
    """Compute a job's statistics on a worker once the transaction that ended it has committed."""
    enqueue("harvest.compute_statistics", job_id)
