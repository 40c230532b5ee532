"""Job life cycle: status changes (through harvest.choices.JOB_TRANSITIONS), resubmission, and what a
crawl reports per domain."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from harvest.choices import JOB_TRANSITIONS as JOB_TRANSITIONS  # the table, where the views read it
from harvest.choices import JobStatus
from harvest.models import DomainConfiguration, HarvestInfo, Job, JobConfiguration
from harvest.services.statistics import send_job_statistics
from webarchive.history import save_as
from webarchive.permissions import CHANGE, require
from webarchive.tasks import enqueue

ENDED = (JobStatus.DONE, JobStatus.STOPPED, JobStatus.FAILED)  # a job that will crawl no more

_TIMESTAMPS = {
    JobStatus.SUBMITTED: "submitted_at",
    JobStatus.STARTED: "started_at",
    JobStatus.DONE: "ended_at",
    JobStatus.STOPPED: "ended_at",
}


@transaction.atomic
def job_transition(*, job: Job, status: str, user=None, error: str = "", failure: str = "") -> Job:
    """Move a job to a new status, if that is legal from the status it has now in the database;
    a failed job keeps ``error`` (words) and ``failure`` (a ``JobFailure`` code)."""
    require(user, CHANGE, Job)
    job = Job.objects.select_for_update().get(pk=job.pk)
    JOB_TRANSITIONS.apply(job, status)
    now = timezone.now()
    if status in _TIMESTAMPS:
        setattr(job, _TIMESTAMPS[status], now)
    if status == JobStatus.FAILED:
        job.ended_at = now
        job.errors = "\n".join(filter(None, [job.errors, error]))
        job.failure = failure
    save_as(job, user)
    if status in ENDED:
        send_job_statistics(job.pk)
    return job


@transaction.atomic
def job_resubmit(*, job: Job, user=None) -> Job:
    """Run a failed or stopped (or never started) job again as a new job with the same contents."""
    job = job_transition(job=job, status=JobStatus.RESUBMITTED, user=user)
    copy = Job.objects.create(
        harvest_definition_id=job.harvest_definition_id,
        run_id=job.run_id,
        run_number=job.run_number,
        channel_id=job.channel_id,
        queue=job.queue,
        template_id=job.template_id,
        template_version=job.template_version,
        template_settings=job.template_settings,
        crawler_traps=job.crawler_traps,
        max_seconds=job.max_seconds,
        domain_count=job.domain_count,
        expected_objects=job.expected_objects,
    )
    entries = JobConfiguration.objects.filter(job=job).order_by("pk")
    JobConfiguration.objects.bulk_create(
        [
            JobConfiguration(
                job=copy,
                configuration_id=e.configuration_id,
                domain_id=e.domain_id,
                seeds=e.seeds,
                max_objects=e.max_objects,
                max_bytes=e.max_bytes,
                max_request_rate=e.max_request_rate,
                expected_objects=e.expected_objects,
                crawler_traps=e.crawler_traps,
            )
            for e in entries.iterator(chunk_size=2000)
        ],
        batch_size=2000,
    )
    job.resubmitted_as = copy
    save_as(job, user)
    copy = job_transition(job=copy, status=JobStatus.SUBMITTED, user=user)
    _dispatch_after_commit()
    return copy


def _dispatch_after_commit() -> None:
    enqueue("harvest.dispatch_submitted")


@transaction.atomic
def harvest_info_record(
    *, job: Job, configuration: DomainConfiguration, object_count: int, byte_count: int, stop_reason: str
) -> HarvestInfo:
    """Record (or correct) what the crawl of one configuration in a job yielded and why it stopped."""
    info, _created = HarvestInfo.objects.update_or_create(
        job=job,
        configuration=configuration,
        defaults={
            "domain_id": configuration.domain_id,
            "object_count": object_count,
            "byte_count": byte_count,
            "stop_reason": stop_reason,
        },
    )
    info.full_clean()
    return info
