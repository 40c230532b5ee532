"""What storage provides to the apps below it (their hooks; the mechanism: :mod:`webarchive.hooks`).

Connected once, by :meth:`storage.apps.StorageConfig.ready`.
"""

from __future__ import annotations

import logging
from functools import partial

from django.conf import settings

from harvest import hooks as harvest_hooks
from harvest.choices import DedupPolicy
from harvest.models import Job
from harvest.selectors import crawl_log_uri
from selection import hooks as selection_hooks
from selection.models import Record
from storage.models import Capture, ChangeEstimate, HarvestNote, IngestStep, StorageNode, WarcFile
from storage.selectors import record_payload_stream
from storage.selectors_change_rates import BOOST_FREQUENCIES, rate_in_words
from storage.selectors_quality import record_harvests
from storage.selectors_storage import alerts
from storage.services.dedup_index import CaptureDedupIndex
from storage.services.indexing import CaptureRecorder, IndexConflict, warc_file_index, warc_file_register
from storage.services.ingest import send_ingest
from storage.warcindex import WarcReadError, url_key
from webarchive.permissions import VALIDATE, VIEW, Area, can, can_enter, restrict
from webarchive.tasks import spool_queue

logger = logging.getLogger(__name__)

HARVEST_NOTES_SHOWN = 50  # the newest notes on a record's harvests


def capture_recorder(*, job_id: int | None, directory) -> CaptureRecorder:
    return CaptureRecorder(job_id=job_id, directory=directory)


def dedup_index(
    *, policy: str, harvest_definition_id: int | None, memory, questions=None
) -> CaptureDedupIndex | None:
    if policy == DedupPolicy.OFF:
        return None
    return CaptureDedupIndex(
        policy=policy, harvest_definition_id=harvest_definition_id, memory=memory, questions=questions
    )


def warc_files_closed(*, infos, job_id: int | None, recovered: bool = False) -> list[int]:
    """Register closed WARC files; send their ingest chain, or, for files a killed writer left open,
    index them whole again (the storage check sends their ingest chain, as for any file left behind)."""
    ids = []
    for info in infos:
        ids.append(warc_file_register(info=info, job_id=job_id).pk)
        if recovered:
            try:
                warc_file_index(path=info.path, job_id=job_id)
            except (WarcReadError, IndexConflict) as error:
                logger.error("recovered WARC file not indexed: %s", error)
    if ids and not recovered:
        send_ingest(ids)
    return ids


def record_harvests_panel(*, record, user) -> dict:
    """The record's last site crawls (with replay links) and the curators' notes on its harvests."""
    notes = restrict(HarvestNote.objects.filter(record=record), user, VIEW).select_related(
        "author", "job", "domain"
    )
    return {
        "template": "storage/record_harvests.html",
        "context": {
            # Whoever may read the record reads what became of it (date, size, stop reason, replay).
            "harvests": record_harvests(record),
            "harvest_notes": notes[:HARVEST_NOTES_SHOWN],
            "may_open_jobs": can_enter(user, Area.PLANNING),
            "may_open_quality": can_enter(user, Area.REPORTS) and can(user, VIEW, Job),
        },
    }


def change_rate_panel(*, record=None, domain=None, user) -> dict:
    """How often the record's page (or the domain's pages) change, measured, with the crawls it comes
    from, the suggested frequency and, for curators, accepting it and boosting the record."""
    estimate = (
        ChangeEstimate.objects.filter(record=record)
        if record
        else ChangeEstimate.objects.filter(domain=domain)
    )
    estimate = estimate.first()
    return {
        "template": "storage/change_rate.html",
        "context": {
            "estimate": estimate,
            "words": rate_in_words(estimate) if estimate else "",
            "record": record,
            "may_open_jobs": can_enter(user, Area.PLANNING),
            "may_decide": record is not None and can(user, VALIDATE, Record),
            "boost_frequencies": BOOST_FREQUENCIES,
        },
    }


def crawl_log_segments(*, job_id: int) -> list:
    """The parts of a job's crawl log held by its WARC files (metadata records, indexed as they were
    written), oldest first: each a function opening its text, read through storage."""
    uri = crawl_log_uri(job_id)
    captures = (
        Capture.objects.filter(
            job_id=job_id, urlkey=url_key(uri), url=uri, record_type=Capture.RecordType.METADATA
        )
        .select_related("warc_file")
        .order_by("timestamp", "pk")
    )
    return [partial(record_payload_stream, capture) for capture in captures]


def node_queues() -> list[tuple[str, str]]:
    """The queues of the storage nodes that have a local worker (retired nodes need none)."""
    nodes = StorageNode.objects.filter(local_worker=True).exclude(state=StorageNode.State.RETIRED)
    return [(node.queue, node.name) for node in nodes.order_by("name")]


def spool_queues() -> list[tuple[str, str]]:
    """This machine's spool queue, and those of the crawl machines with a file the ingest chain has not
    finished (their worker must be up for it to go on)."""
    waiting = (
        WarcFile.objects.exclude(machine="")
        .exclude(ingest_step=IngestStep.CLEANED)
        .values_list("machine", flat=True)
        .distinct()
    )
    machines = {settings.MACHINE_NAME, *waiting}
    return [(spool_queue(machine), machine) for machine in sorted(machines)]


def monitoring_panel() -> dict:
    """The storage alerts on the monitoring page, counted as the alerts page counts them."""
    return {"template": "storage/monitoring_storage.html", "context": {"alerts": alerts()}}


def connect() -> None:
    harvest_hooks.capture_recorder.provide(capture_recorder)
    harvest_hooks.dedup_index.provide(dedup_index)
    harvest_hooks.warc_files_closed.provide(warc_files_closed)
    selection_hooks.record_panels.provide(record_harvests_panel)
    selection_hooks.record_panels.provide(lambda *, record, user: change_rate_panel(record=record, user=user))
    harvest_hooks.domain_panels.provide(lambda *, domain, user: change_rate_panel(domain=domain, user=user))
    harvest_hooks.worker_queues.provide(node_queues)
    harvest_hooks.spool_queues.provide(spool_queues)
    harvest_hooks.crawl_log_segments.provide(crawl_log_segments)
    harvest_hooks.monitoring_panels.provide(monitoring_panel)
