"""Celery tasks of the storage side: the ingest chain, replication, fixity audits, the node check
and the bags of jobs for a preservation system (docs/storage.md); the units of a deduplication run,
and moving a run on.

Tasks take ids, re-read the run and call one service; they are idempotent (a unit already done is
not redone; a stage already sent is not sent again), so that ``acks_late`` redelivery after a
killed worker is safe. No task waits for another: the unit that completes a stage sends the next.
"""

import logging

from celery import shared_task
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import OperationalError

from storage.models import Replica, WarcFile
from storage.services import audits, bags, fulltext, ingest, nodes, placement, replication, wacz
from storage.services.dedup_runs import dedup_run_advance, dedup_run_unit
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)

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


# Storage. A file's copies and audits can take minutes; a killed worker's task is redelivered and
# finds its work half done (a copy claim gone stale, an ingest step not recorded): all idempotent.
STORAGE_TASK = {
    "ignore_result": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": 10,
    "max_retries": 5,
}


@shared_task(name="storage.ingest", **STORAGE_TASK)
def ingest_file(warc_file_id: int) -> None:
    """Run the rest of one file's ingest chain (checksum, index, store, replicate, clean)."""
    if WarcFile.objects.filter(pk=warc_file_id).exists():
        ingest.ingest_advance(warc_file_id)


@shared_task(name="storage.replicate", **STORAGE_TASK)
def replicate_file(warc_file_id: int) -> None:
    """Bring one file to its replica count (repairs in place, new replicas elsewhere)."""
    if WarcFile.objects.filter(pk=warc_file_id).exists():
        replication.file_replicate(warc_file_id)


@shared_task(name="storage.verify", **STORAGE_TASK)
def verify_replica(replica_id: int) -> None:
    """Re-hash one replica (on its node's queue when the node has a worker); repair it if bad."""
    if Replica.objects.filter(pk=replica_id).exists():
        audits.replica_verify(replica_id)


@shared_task(name="storage.check", ignore_result=True)
def storage_check() -> None:
    """Beat: check the nodes, send verifications of returning nodes, repairs and stalled ingests."""
    work = nodes.check_round()
    nodes.send_verify(work["verify"])
    for warc_file_id in work["replicate"]:
        enqueue(replicate_file, warc_file_id)
    if placement.usable_nodes().exists():
        ingest.send_ingest(ingest.ingest_pending())


@shared_task(name="storage.audit", ignore_result=True)
def storage_audit() -> None:
    """Beat: verify this round's share of the replicas (each at least every STORAGE_AUDIT_DAYS)."""
    due = Replica.objects.filter(pk__in=audits.audit_due()).select_related("node")
    nodes.send_verify([(replica.pk, replica.node.queue) for replica in due])


@shared_task(name="storage.index_texts", soft_time_limit=900, time_limit=960, **STORAGE_TASK)
def index_texts(capture_ids: list[int]) -> None:
    """Put the documents of captures a crawl has just made into the full-text index."""
    fulltext.captures_text_index(capture_ids)


# A bag refused because a replica failed its checksum is tried again once the audit it was sent to
# has had time to repair the replica (up to STORAGE_TASK's five times).
BAG_RETRY_SECONDS = 600


@shared_task(name="storage.bag_job", bind=True, **STORAGE_TASK)
def bag_job(self, job_id: int) -> None:
    """Write the BagIt package of an ended, ingested job into STORAGE_BAG_DIR (docs/storage.md)."""
    try:
        bags.job_bag_auto(job_id)
    except ValidationError as error:
        if error.code == "replica":
            raise self.retry(exc=error, countdown=BAG_RETRY_SECONDS) from error
        logger.warning("job %s not bagged: %s", job_id, " ".join(error.messages))


@shared_task(name="storage.wacz_job", bind=True, **STORAGE_TASK)
def wacz_job(self, job_id: int) -> None:
    """Write the WACZ package of an ended, ingested job into STORAGE_WACZ_DIR, for its page's download."""
    try:
        wacz.job_wacz_auto(job_id)
    except ValidationError as error:
        if error.code == "replica":
            raise self.retry(exc=error, countdown=BAG_RETRY_SECONDS) from error
        logger.warning("job %s not packaged as WACZ: %s", job_id, " ".join(error.messages))


@shared_task(name="storage.refresh_change_rates", ignore_result=True, soft_time_limit=3600, time_limit=3660)
def refresh_change_rates() -> None:
    """Measure how often records' pages and domains change again; followed collections get their
    suggested frequencies (idempotent: the estimates are replaced)."""
    from storage.services.change_rates import change_estimates_refresh

    change_estimates_refresh()
