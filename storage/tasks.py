"""Celery tasks of the storage side: the units of a deduplication run, and moving a run on.

Tasks take ids, re-read the run and call one service; they are idempotent (a unit already done is
not redone; a stage already sent is not sent again), so that ``acks_late`` redelivery after a
killed worker is safe. No task waits for another: the unit that completes a stage sends the next.
"""

from celery import shared_task
from django.conf import settings
from django.db import OperationalError

from storage.services.dedup_runs import dedup_run_advance, dedup_run_unit

# A unit is one input file (or one digest partition): a large file takes a while to rewrite.
UNIT_TIME_LIMIT = getattr(settings, "DEDUP_UNIT_TIME_LIMIT", 6 * 3600)


@shared_task(
    name="storage.dedup_unit",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=10,
    max_retries=5,
    soft_time_limit=UNIT_TIME_LIMIT,
    time_limit=UNIT_TIME_LIMIT + 60,
)
def dedup_unit(run_id: int, stage: str, unit: str) -> None:
    """Run one unit of a stage of a deduplication run; the unit completing the stage moves the run on."""
    dedup_run_unit(run_id=run_id, stage=stage, unit=unit)


@shared_task(
    name="storage.dedup_advance",
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError,),
    retry_backoff=10,
    max_retries=5,
    soft_time_limit=UNIT_TIME_LIMIT,  # finishing a run registers its output: it indexes every file
    time_limit=UNIT_TIME_LIMIT + 60,
)
def dedup_advance(run_id: int) -> None:
    """Start a queued deduplication run, or send its next stage, or finish it."""
    dedup_run_advance(run_id=run_id)
