"""Site crawls as the database sees them: dispatch, start, progress, end, stop, and the end of a job.

A job is a database row; the queue is only transport. A submitted job is
dispatched once (one ``harvest.crawl_site`` task per domain configuration on
the job's queue); each site crawl moves its JobConfiguration from queued to
running to ended, writing its progress there every few seconds; the site that
ends last ends the job. A step that changes the job's state (its start, a stop,
its end) holds the job's row lock, so that two sites ending together, or a stop
arriving while a site starts, cannot both act; the start and end of a site of a
job under way lock only that site's row until the end's last statements (the
job's counters), so that the thousands of sites of a snapshot start and end
side by side.
Redelivered tasks (a worker killed mid-crawl) find their site running and
crawl it again from the start; a site already ended is not crawled twice.
"""

from __future__ import annotations

import errno
import json
import logging
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import SITE_CRAWL_TRANSITIONS, JobFailure, JobStatus, SiteState, StopReason
from harvest.models import ExternalLink, HarvestInfo, Job, JobConfiguration
from harvest.models.jobs import SITE_PROGRESS_FIELDS
from harvest.services.jobs import job_transition
from harvest.services.news import news_articles_record
from webarchive.history import save_as
from webarchive.permissions import CHANGE, require
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)

# Crawler stop reasons that name a limit: which of the two limits applied is decided here.
_LIMIT_REASONS = {
    "object-limit": (
        "max_objects",
        "max_objects_per_domain",
        StopReason.OBJECT_LIMIT,
        StopReason.CONFIG_OBJECT_LIMIT,
    ),
    "byte-limit": ("max_bytes", "max_bytes_per_domain", StopReason.BYTE_LIMIT, StopReason.CONFIG_BYTE_LIMIT),
}


@transaction.atomic
def job_dispatch(*, job_id: int) -> int:
    """Send the site crawls of a submitted job to its queue, once; returns how many were sent."""
    job = Job.objects.select_for_update().get(pk=job_id)
    if job.status != JobStatus.SUBMITTED or job.dispatched_at is not None:
        return 0
    job.dispatched_at = timezone.now()
    job.save(update_fields=["dispatched_at"])
    ids = list(job.configurations.filter(state=SiteState.QUEUED).order_by("pk").values_list("pk", flat=True))
    for entry_id in ids:
        enqueue("harvest.crawl_site", entry_id, queue=job.queue)
    return len(ids)


def jobs_dispatch_submitted() -> int:
    """Dispatch every submitted job not sent yet (launched or resubmitted); returns the sites sent."""
    ids = Job.objects.filter(status=JobStatus.SUBMITTED, dispatched_at=None).values_list("pk", flat=True)
    return sum(job_dispatch(job_id=job_id) for job_id in list(ids))


@transaction.atomic
def site_crawl_begin(*, entry_id: int, worker: str, redelivered: bool = False) -> JobConfiguration | None:
    """Mark a site crawl running and return it, or None when there is nothing (more) to crawl.

    A site already running is crawled again only when the broker says the task is redelivered
    (its worker died) or its heartbeat has stopped; a second copy of a task whose crawl is
    alive elsewhere does nothing.
    """
    job = Job.objects.filter(configurations__pk=entry_id).first()
    if job is None:
        raise JobConfiguration.DoesNotExist(f"no site crawl {entry_id}")
    if job.status != JobStatus.STARTED or job.stop_requested_at is not None:
        job = Job.objects.select_for_update().get(pk=job.pk)  # the job may change state: its lock first
    # Otherwise, the usual case (a site of a job under way), only the site's row is locked, so that
    # the sites of one job (a snapshot has thousands) start side by side. A stop arriving meanwhile
    # either ends this site while it is still queued (it is then seen ended below) or finds it
    # running and stops it at its next progress report.
    entry = JobConfiguration.objects.select_for_update().select_related("domain").get(pk=entry_id)
    if not SITE_CRAWL_TRANSITIONS.may(entry.state, SiteState.RUNNING):
        return None  # it has ended: a site is not crawled twice
    if job.status not in (JobStatus.SUBMITTED, JobStatus.STARTED):
        return None
    if entry.state == SiteState.RUNNING and not redelivered and _alive(entry):
        logger.warning(
            "site crawl %s is already running on %s: this copy does nothing", entry.pk, entry.worker
        )
        return None
    if job.stop_requested_at is not None:
        _end_entry(job, entry, stop_reason=StopReason.OPERATOR)
        _end_job_if_complete(job)
        return None
    if job.status == JobStatus.SUBMITTED:
        job = job_transition(job=job, status=JobStatus.STARTED)
    now = timezone.now()
    SITE_CRAWL_TRANSITIONS.apply(entry, SiteState.RUNNING)
    entry.attempts += 1
    entry.worker = worker[:200]
    entry.started_at = now
    entry.progress_at = now
    # A redelivered site (its worker died) starts over: what the last attempt counted is gone.
    entry.urls_done = entry.urls_queued = entry.bytes_done = entry.error_count = 0
    entry.duplicates = entry.duplicate_bytes = 0
    entry.rate = 0.0
    entry.current_url = entry.stop_reason = entry.error = ""
    entry.save()
    entry.job = job
    return entry


def _alive(entry: JobConfiguration) -> bool:
    """Whether a running site's worker wrote its progress recently (three intervals and some)."""
    grace = timedelta(seconds=3 * settings.HARVEST_PROGRESS_INTERVAL + 10)
    return entry.progress_at is not None and entry.progress_at > timezone.now() - grace


def site_crawl_progress(*, entry_id: int, job_id: int, progress) -> bool:
    """Store a running site's progress; True when the site should stop (operator, or its job has ended)."""
    return entry_id in site_crawls_progress([(entry_id, job_id, progress)])


PROGRESS_BATCH = 500  # sites written per statement


def site_crawls_progress(reports) -> set[int]:
    """Store the progress of many running sites at once (``(entry_id, job_id, progress)`` each) in a
    few statements; returns the entries that should stop (operator, or their job has ended).

    A crawl worker holding thousands of sites reports them all every HARVEST_PROGRESS_INTERVAL: one
    UPDATE per batch of sites and one read of their jobs, not two statements per site. A site that
    has ended meanwhile (its row is no longer running) is left as it is.
    """
    reports = sorted(reports, key=lambda report: report[0])  # the rows locked in key order
    if not reports:
        return set()
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    running = SiteState.RUNNING.value
    rows = [
        (
            progress.urls_done,
            progress.urls_queued,
            progress.bytes,
            progress.errors,
            progress.duplicates,
            progress.duplicate_bytes,
            progress.rate,
            progress.current_url[:2000],
            json.dumps(getattr(progress, "biggest_queues", None) or {}),
            now,
            entry_id,
            running,
        )
        for entry_id, _job_id, progress in reports
    ]
    # One plain statement, sent for every site at once (psycopg pipelines executemany): the ORM's
    # bulk_update builds a CASE of 500 branches per field, which cost a worker holding a thousand
    # sites more CPU than crawling them.
    statement = _progress_statement()
    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(rows), PROGRESS_BATCH):
            cursor.executemany(statement, rows[start : start + PROGRESS_BATCH])
    stopping = jobs_stopping({job_id for _e, job_id, _p in reports})
    return {entry_id for entry_id, job_id, _progress in reports if job_id in stopping}


def jobs_stopping(job_ids) -> set[int]:
    """The jobs among ``job_ids`` whose sites should stop: a stop was asked, or the job has ended."""
    return {
        pk
        for pk, status, stop_requested_at in Job.objects.filter(pk__in=set(job_ids))
        .values_list("pk", "status", "stop_requested_at")
        .iterator()
        if stop_requested_at is not None or status != JobStatus.STARTED
    }


PROGRESS_FIELDS = [
    "urls_done",
    "urls_queued",
    "bytes_done",
    "error_count",
    "duplicates",
    "duplicate_bytes",
    "rate",
    "current_url",
    "biggest_queues",
    "progress_at",
]


def _progress_statement() -> str:
    """UPDATE of one running site's progress fields (in PROGRESS_FIELDS' order), by id and state."""
    meta = JobConfiguration._meta
    name = connection.ops.quote_name
    assignments = ", ".join(f"{name(meta.get_field(field).column)} = %s" for field in PROGRESS_FIELDS)
    return (
        f"UPDATE {name(meta.db_table)} SET {assignments}"  # noqa: S608 (names from the model, values bound)
        f" WHERE {name(meta.pk.column)} = %s AND {name(meta.get_field('state').column)} = %s"
    )


def site_crawls_abandon(entry_ids) -> int:
    """Running sites this worker lets go unfinished (it is shutting down): their tasks go back to the
    broker, and the next worker to receive one starts it over at once instead of taking it for alive."""
    return JobConfiguration.objects.filter(pk__in=list(entry_ids), state=SiteState.RUNNING).update(
        progress_at=None
    )


@transaction.atomic
def site_crawl_end(
    *,
    entry_id: int,
    stop_reason: str,
    progress,
    report: dict,
    external_links: dict[str, int],
    broken: bool = False,
    external_sources: dict[str, list[str]] | None = None,
) -> bool:
    """Record how a site crawl ended (HarvestInfo, report, external links); True if that ended the job."""
    # The site's row is locked first and the job's last, for its counters and its end only: the
    # sites of one job end side by side, and whoever takes the job's lock last sees every other
    # site's end committed (each releases that lock only when it commits), so exactly one ends the
    # job. Those that lock the job first (a stop, the watchdog) lock only queued sites, or skip
    # the sites locked here.
    entry = JobConfiguration.objects.select_for_update().get(pk=entry_id)
    if not SITE_CRAWL_TRANSITIONS.may(entry.state, SiteState.ENDED):
        return False  # ended already (a task delivered twice, or the job was stopped)
    job = Job.objects.select_related("harvest_definition").get(pk=entry.job_id)
    entry.urls_done = progress.urls_done
    # A site stopped by an operator keeps what it still had queued: its bar shows how far it got.
    entry.urls_queued = progress.urls_queued if stop_reason == StopReason.OPERATOR else 0
    entry.bytes_done = progress.bytes
    entry.error_count = progress.errors
    entry.duplicates = progress.duplicates
    entry.duplicate_bytes = progress.duplicate_bytes
    entry.rate = progress.rate
    entry.error = progress.error
    entry.report = {**report, "broken": broken}
    entry.biggest_queues = {}
    news_articles_record(job=job, entry=entry, urls=report.get("new_pages", ()))
    sources = external_sources or {}
    _end_entry(job, entry, stop_reason=_stop_reason(job, entry, stop_reason), count=False)
    ExternalLink.objects.bulk_create(  # a site ends once: it has none yet
        [
            ExternalLink(
                entry=entry,
                url=url[:4000],
                count=count,
                sources=[page[:4000] for page in sources.get(url, ())],
            )
            for url, count in external_links.items()
        ],
        batch_size=2000,
    )
    job = Job.objects.select_for_update().get(pk=job.pk)
    _count_ended(job, [entry])
    return _end_job_if_complete(job)


def _stop_reason(job: Job, entry: JobConfiguration, crawler_reason: str) -> str:
    """The crawler's reason in the model's words: which limit (the harvest's or the configuration's)."""
    if crawler_reason not in _LIMIT_REASONS:
        return StopReason(crawler_reason)
    field, harvest_field, harvest_reason, config_reason = _LIMIT_REASONS[crawler_reason]
    definition = job.harvest_definition
    harvest_limit = getattr(definition, harvest_field, -1) if not definition.is_selective else -1
    config_limit = getattr(entry.configuration, field)
    if (
        harvest_limit >= 0
        and getattr(entry, field) == harvest_limit
        and not 0 <= config_limit <= harvest_limit
    ):
        return harvest_reason
    return config_reason


def _end_entry(job: Job, entry: JobConfiguration, *, stop_reason: str, count: bool = True) -> None:
    """End a site crawl (the caller holds the site's lock) and, unless ``count`` is False (the caller
    counts with :func:`_count_ended`), add its progress to the job's counters (the caller holds
    the job's lock)."""
    SITE_CRAWL_TRANSITIONS.apply(entry, SiteState.ENDED)
    entry.stop_reason = stop_reason
    entry.ended_at = timezone.now()
    entry.current_url = ""
    entry.save()
    figures = {
        "domain_id": entry.domain_id,
        "object_count": entry.urls_done,
        "byte_count": entry.bytes_done,
        "stop_reason": stop_reason,
    }
    # Usually none exists yet (an engineer may have recorded one by hand): one INSERT, not
    # update_or_create's savepoints and locking read, at every site's end.
    infos = HarvestInfo.objects.filter(job=job, configuration_id=entry.configuration_id)
    if not infos.update(**figures):
        HarvestInfo.objects.create(job=job, configuration_id=entry.configuration_id, **figures)
    if count:
        _count_ended(job, [entry])


def _count_ended(job: Job, entries: list[JobConfiguration]) -> None:
    """Add the progress of sites that have just ended to their job's counters, in the transaction
    that ended them: the counters are exact, and a job's progress is read from its row plus its
    running sites only (harvest.selectors.job_totals)."""
    if not entries:
        return
    added = {"sites_ended": len(entries)}
    for field in SITE_PROGRESS_FIELDS:
        added[f"ended_{field}"] = sum(getattr(entry, field) for entry in entries)
    Job.objects.filter(pk=job.pk).update(**{name: F(name) + value for name, value in added.items()})
    for name, value in added.items():  # the caller's copy, read under the same lock, stays true
        setattr(job, name, getattr(job, name) + value)


def _metadata_failure(error: OSError) -> str:
    """Why the job's metadata could not be written, from the error number (not its words)."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return JobFailure.METADATA_NO_SPACE
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return JobFailure.METADATA_PERMISSION
    return JobFailure.METADATA


def _end_job_if_complete(job: Job) -> bool:
    """End a started job whose sites have all ended (the caller holds the job's lock)."""
    if job.status != JobStatus.STARTED or job.configurations.exclude(state=SiteState.ENDED).exists():
        return False
    from harvest.worker import write_job_metadata  # the WARC side; imported late (crawler package)

    try:
        write_job_metadata(job)
    except OSError as error:
        job_transition(
            job=job,
            status=JobStatus.FAILED,
            error=_("The job's metadata could not be written: %s") % error,
            failure=_metadata_failure(error),
        )
        return True
    broken = [
        f"{entry.domain.name}: {entry.error}"
        for entry in job.configurations.select_related("domain").filter(report__broken=True)
    ]
    if broken:
        job_transition(
            job=job,
            status=JobStatus.FAILED,
            error=_("%(count)d site crawl(s) failed in the crawler itself (not on the website):\n%(sites)s")
            % {"count": len(broken), "sites": "\n".join(broken[:50])},
            failure=JobFailure.CRAWLER_BROKEN,
        )
    else:
        job_transition(job=job, status=JobStatus.STOPPED if job.stop_requested_at else JobStatus.DONE)
    return True


@transaction.atomic
def job_stop(*, job: Job, user=None) -> Job:
    """Stop a submitted or running job: queued sites end at once, running ones within seconds."""
    require(user, CHANGE, Job)
    job = Job.objects.select_for_update().get(pk=job.pk)
    if job.status not in (JobStatus.SUBMITTED, JobStatus.STARTED):
        raise ValidationError(
            _("Only a submitted or running job can be stopped; this one is %(status)s.")
            % {"status": JobStatus(job.status).label.lower()},
            code="not_running",
        )
    if job.stop_requested_at is not None:
        return job
    job.stop_requested_at = timezone.now()
    save_as(job, user)
    ended = list(job.configurations.filter(state=SiteState.QUEUED).order_by("pk").select_for_update())
    for entry in ended:
        _end_entry(job, entry, stop_reason=StopReason.OPERATOR, count=False)
    _count_ended(job, ended)
    if not job.configurations.filter(state=SiteState.RUNNING).exists():
        if job.status == JobStatus.SUBMITTED:
            job = job_transition(job=job, status=JobStatus.STARTED, user=user)
        _end_job_if_complete(job)
        job.refresh_from_db()
    return job


def jobs_fail_stalled(*, now=None) -> list[Job]:
    """Fail the started jobs that have made no progress for HARVEST_STALL_SECONDS while their queue is dead.

    A job whose sites merely wait behind other jobs on a busy queue is not stalled: it fails only when
    no site crawl of its queue, of any job, has reported for that long either (the workers are gone).
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.HARVEST_STALL_SECONDS)
    failed = []
    for job_id in list(Job.objects.filter(status=JobStatus.STARTED).values_list("pk", flat=True)):
        with transaction.atomic():
            job = Job.objects.select_for_update().get(pk=job_id)
            if job.status != JobStatus.STARTED:
                continue
            last = _last_activity(job)
            if last >= cutoff:
                continue
            if JobConfiguration.objects.filter(job__queue=job.queue, progress_at__gte=cutoff).exists():
                continue
            minutes = settings.HARVEST_STALL_SECONDS // 60
            # A site whose end is being recorded right now (its row locked) is left to it.
            ended = list(
                job.configurations.exclude(state=SiteState.ENDED)
                .order_by("pk")
                .select_for_update(skip_locked=True)
            )
            for entry in ended:
                entry.error = _("Stopped by the watchdog: no progress for %(minutes)d minutes.") % {
                    "minutes": minutes
                }
                entry.report = {**(entry.report or {}), "error_code": JobFailure.STALLED.value}
                _end_entry(job, entry, stop_reason=StopReason.FAILED, count=False)
            _count_ended(job, ended)
            job_transition(
                job=job,
                status=JobStatus.FAILED,
                error=_(
                    "No site of this job made progress for %(minutes)d minutes (last progress at %(last)s), "
                    "and no crawl worker of the queue “%(queue)s” reported in that time: the workers are "
                    "probably stopped or cut off from the database. Start a worker for this queue "
                    "(see docs/harvesting.md), then resubmit the job; the WARC files written so far are kept."
                )
                % {
                    "minutes": minutes,
                    "last": timezone.localtime(last).strftime("%Y-%m-%d %H:%M:%S"),
                    "queue": job.queue,
                },
                failure=JobFailure.STALLED,
            )
            failed.append(job)
    return failed


def _last_activity(job: Job):
    moments = [job.started_at]
    for progress_at, ended_at in job.configurations.values_list("progress_at", "ended_at"):
        moments += [progress_at, ended_at]
    return max(moment for moment in moments if moment is not None)
