"""What harvest asks of the apps above it (the mechanism: :mod:`webarchive.hooks`).

Storage keeps what the crawls write — WARC files, the capture index — and sits above harvest (its
files and captures belong to jobs). A crawl worker still works with it while it crawls: it indexes
records as they are written, asks the index for earlier copies of a payload (crawl-time dedup) and
hands over every WARC file it closes. These hooks are that, provided by ``storage.providers``.
"""

from __future__ import annotations

from webarchive.hooks import Hook


class _NoRecorder:
    """Indexes nothing: an installation without storage."""

    def record(self, info) -> None:
        pass

    def flush(self) -> int:
        return 0


capture_recorder = Hook(
    "harvest.capture_recorder",
    default=lambda *, job_id, directory: _NoRecorder(),
    doc="(job_id, directory) → an object whose record(RecordInfo) is called as each WARC record is "
    "written (from fetch threads: it only queues) and whose flush() indexes what was queued (the site's "
    "task thread).",
)

dedup_index = Hook(
    "harvest.dedup_index",
    default=lambda *, policy, harvest_definition_id, memory, questions=None: None,
    doc="(policy, harvest_definition_id, memory, questions=None) → the crawl-time dedup index of a "
    "template's policy: the crawler's DedupIndex protocol, plus serve(timeout) answering questions on "
    "the task thread; given a queue (questions), it puts its database questions there instead, for "
    "threads that answer those of every site (harvest.consumer). Without storage: None (no crawl-time "
    "dedup).",
)

warc_files_closed = Hook(
    "harvest.warc_files_closed",
    doc="(infos, job_id, recovered) → ids: WARC files closed by a writer (recovered: left open by a killed "
    "worker and closed since), handed over for safe keeping. Called once per batch, after the records "
    "they hold were recorded.",
)

crawl_log_segments = Hook(
    "harvest.crawl_log_segments",
    default=lambda *, job_id: [],
    doc="(job_id) → [() → binary stream]: the parts of a job's crawl log kept with its WARC files, oldest "
    "first, each opened when called (storage: read from a replica, wherever the crawl ran).",
)

worker_queues = Hook(
    "harvest.worker_queues",
    doc="() → [(queue, storage node name)]: the queues of the apps above that need a worker, shown on the "
    "monitoring page beside the crawl queues (storage: the queues of nodes with a local worker).",
)

spool_queues = Hook(
    "harvest.spool_queues",
    doc="() → [(queue, machine name)]: the spool queues of crawl machines whose files wait in the ingest "
    "chain, shown on the monitoring page (storage: this machine's, and every machine with a file not "
    "ingested yet; a queue nobody consumes means a crawl machine's files wait).",
)

monitoring_panels = Hook(
    "harvest.monitoring_panels",
    doc="() → a panel of the monitoring page below the failures: a dict with 'template' and 'context' "
    "(storage: its alerts, as its alerts page computes them).",
)

domain_panels = Hook(
    "harvest.domain_panels",
    doc="(domain, user) → a panel of the domain's page, below its description: a dict with 'template' and "
    "'context' (storage: how often the domain's pages change, measured).",
)
