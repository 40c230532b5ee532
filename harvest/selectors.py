"""Reads of the harvest side that are more than a filter, shared by the pages and the REST API."""

from pathlib import Path

from django.conf import settings
from django.db.models import BigIntegerField, Case, Count, FloatField, IntegerField, Q, Sum, Value, When
from django.db.models.functions import Coalesce

from harvest.choices import SiteState
from harvest.models import Job


def crawl_log_path(job_id: int) -> Path:
    """Where the crawl log of a job is written (one file per job, appended to by every site crawl)."""
    return Path(settings.HARVEST_SPOOL_DIR) / "jobs" / str(job_id) / "crawl.log"


def site_totals(prefix: str = "") -> dict:
    """Aggregates of site crawls: counts by state, summed progress (``prefix``: the relation from a Job)."""

    def count(state=None):
        condition = Q(**{f"{prefix}state": state}) if state else None
        return Count(f"{prefix}pk", filter=condition)

    def total(field):
        return Coalesce(Sum(f"{prefix}{field}"), Value(0), output_field=BigIntegerField())

    return {
        "sites_total": count(),
        "sites_queued": count(SiteState.QUEUED),
        "sites_running": count(SiteState.RUNNING),
        "sites_ended": count(SiteState.ENDED),
        "urls_done": total("urls_done"),
        "urls_queued": total("urls_queued"),
        "bytes_done": total("bytes_done"),
        "error_count": total("error_count"),
        "duplicates": total("duplicates"),
        "duplicate_bytes": total("duplicate_bytes"),
        # Only running sites fetch: an ended site's last rate is history.
        "rate": Coalesce(
            Sum(f"{prefix}rate", filter=Q(**{f"{prefix}state": SiteState.RUNNING})),
            Value(0.0),
            output_field=FloatField(),
        ),
    }


def job_totals(job: Job) -> dict:
    """The progress of a job summed over its sites, in one query."""
    return job.configurations.order_by().aggregate(**site_totals())


def job_sites(job: Job):
    """A job's site crawls with their progress: running ones first, then queued, then ended."""
    return (
        job.configurations.select_related("domain")
        .defer("seeds", "crawler_traps", "report")
        .annotate(
            state_rank=Case(
                When(state=SiteState.RUNNING, then=Value(0)),
                When(state=SiteState.QUEUED, then=Value(1)),
                default=Value(2),
                output_field=IntegerField(),
            )
        )
        .order_by("state_rank", "domain__name", "pk")
    )
