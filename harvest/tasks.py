"""Celery tasks of the harvest side: the launcher and its dispatch, the site crawls, the watchdog.

Tasks take ids, re-read the database and call one service; they are idempotent, so that
``acks_late`` redelivery after a killed worker is safe (a site already ended is not crawled again).
"""

from celery import shared_task
from django.db import OperationalError

from harvest.services.crawls import jobs_dispatch_submitted, jobs_fail_stalled
from harvest.services.launcher import launch_due


@shared_task(name="harvest.launch_due", ignore_result=True, time_limit=3600, soft_time_limit=3500)
def launch_due_task() -> list[int]:
    """Turn due harvest definitions into runs and jobs (safe if two run at once), then send them to crawl."""
    runs = [run.pk for run in launch_due()]
    jobs_dispatch_submitted()
    return runs


@shared_task(name="harvest.dispatch_submitted", ignore_result=True, time_limit=600)
def dispatch_submitted_task() -> int:
    """Send the site crawls of every submitted job not sent yet (after "run now" or a resubmission)."""
    return jobs_dispatch_submitted()


@shared_task(
    name="harvest.crawl_site",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=10,
    max_retries=5,
    bind=True,
)
def crawl_site(self, entry_id: int) -> str:
    """Crawl one domain configuration of a job (a JobConfiguration) to its end."""
    from harvest.worker import run_site_crawl  # the crawler is loaded by crawl workers only

    redelivered = bool((self.request.delivery_info or {}).get("redelivered"))
    return run_site_crawl(entry_id, redelivered=redelivered)


# Statistics are recomputed whole, so a task lost or run twice does no harm; a busy database is retried.
STATISTICS_TASK = {
    "ignore_result": True,
    "acks_late": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": 10,
    "max_retries": 5,
    "time_limit": 3600,
}


@shared_task(name="harvest.compute_statistics", **STATISTICS_TASK)
def compute_statistics(job_id: int) -> None:
    """Compute (again) the statistics of an ended job (idempotent: they are replaced)."""
    from harvest.services.statistics import job_statistics_compute

    job_statistics_compute(job_id=job_id)


@shared_task(name="harvest.refresh_period_statistics", **STATISTICS_TASK)
def refresh_period_statistics(year: int, month: int, definition: int = 0) -> None:
    """Compute a period's domain figures again if its job statistics have changed since (once for a
    burst of jobs ending together: the first task counts them all, the others find it right);
    ``definition``: the period of that harvest definition's jobs only."""
    from harvest.services.period_statistics import Period, period_statistics_current

    period_statistics_current(Period(year, month, definition), wait=True)


@shared_task(name="harvest.preload", ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def preload(run_id: int) -> None:
    """Run or resume a broad-crawl preparation to its end (every stage resumes where it was)."""
    from harvest.services.preload import preload_run

    preload_run(run_id)


@shared_task(name="harvest.discover_sites", ignore_result=True, time_limit=3600, expires=3600)
def discover_sites_task() -> int:
    """Count the external links of the site crawls ended since the last run in the discovered sites."""
    from harvest.services.discovery import discovered_sites_fold

    return discovered_sites_fold()


@shared_task(name="harvest.fail_stalled", ignore_result=True, time_limit=600)
def fail_stalled_task() -> list[int]:
    """Fail the started jobs that have made no progress while their queue's workers are gone."""
    return [job.pk for job in jobs_fail_stalled()]


@shared_task(name="harvest.gather_broker", ignore_result=True, time_limit=120, expires=60)
def gather_broker() -> None:
    """What the broker says of the workers and queues, for the monitoring page (every
    MONITORING_BROKER_INTERVAL seconds, from the beat)."""
    from harvest.services.monitoring import broker_snapshot_take

    broker_snapshot_take()
