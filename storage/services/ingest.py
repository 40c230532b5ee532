"""The ingest chain: a closed WARC file from where it was written to its replicas on storage nodes.

After the BnF's chain, one file at a time, in steps whose progress is the file's ``ingest_step``:

1. **checksum** — the file is hashed where it is; a file the crawler already hashed must match
   (a spool copy damaged since is stopped here, with the reason, and never stored);
2. **index** — its captures are in the capture index (crawled files were indexed as they were
   written; imported and deduplicated ones already are too; anything else is indexed now);
3. **store** — a first replica on the node placement chooses;
4. **replicate** — the replicas it wants (as many as there are usable nodes, at least 2 unless
   configured otherwise) are written and verified;
5. **clean** — the crawler's spool copy is deleted, only once the replicas are verified; a file
   imported from elsewhere or written by deduplication is left where it was.

Each step is idempotent and recorded when done, so a chain interrupted anywhere (a killed worker,
a node down, no node yet) resumes from the database: the beat check (storage.check) sends
:func:`ingest_advance` again for every file whose chain stopped, and a step done but not recorded
is done again without harm (a replica already ok is not copied twice, a deleted spool file is not
missed).

When the chain of the last file of an ended job finishes, the job's bag for the preservation system
is sent (storage.services.bags), if the workers make them (``STORAGE_BAG_DIR``).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from storage.backends import file_sha256
from storage.models import IngestStep, StorageEvent, WarcFile
from storage.services import bags, placement, replication
from storage.services.indexing import warc_file_index
from webarchive.tasks import enqueue, spool_queue

logger = logging.getLogger(__name__)

ORDER = list(IngestStep.values)
RETRY_SECONDS = 300  # a chain that stopped on an error is sent again after this long


class IngestWaiting(Exception):
    """The chain cannot go on now (no node, too few nodes, a damaged spool copy): the reason."""


def _record(warc: WarcFile, step: str, **fields) -> None:
    now = timezone.now()
    WarcFile.objects.filter(pk=warc.pk).update(
        ingest_step=step, ingest_error="", ingest_updated_at=now, **fields
    )
    warc.ingest_step, warc.ingest_error, warc.ingest_updated_at = step, "", now
    for name, value in fields.items():
        setattr(warc, name, value)


def _checksum(warc: WarcFile) -> None:
    if not placement.good_replicas(warc).exists():
        with warc.spool_bytes() as stream:
            sha256, size = file_sha256(stream)
        if warc.sha256 and (sha256, size) != (warc.sha256, warc.size):
            raise IngestWaiting(
                _("%(path)s reads as SHA-256 %(found)s (%(size)d bytes), not %(sha)s as written.")
                % {"path": warc.path, "found": sha256, "size": size, "sha": warc.sha256}
            )
    else:  # a replica already holds it: the chain was past this step once
        sha256, size = warc.sha256, warc.size
    _record(
        warc, IngestStep.CHECKSUMMED, sha256=sha256, size=size, replicas_wanted=placement.replicas_for(warc)
    )


def _index(warc: WarcFile) -> None:
    if warc.indexed_at is None:
        warc_file_index(path=warc.path, job_id=warc.job_id)
    _record(warc, IngestStep.INDEXED)


def _store(warc: WarcFile) -> None:
    if not placement.good_replicas(warc).exists():
        replication.file_replicate(warc.pk, at_most=1)
        if not placement.good_replicas(warc).exists():
            raise IngestWaiting(_("No storage node could take the file (none online, or none with room)."))
    _record(warc, IngestStep.STORED)


def _replicate(warc: WarcFile) -> None:
    wanted = warc.replicas_wanted or placement.replicas_for(warc)
    good = replication.file_replicate(warc.pk)
    if good < wanted:
        raise IngestWaiting(
            _("%(good)d of the %(wanted)d replicas wanted: waiting for more storage nodes.")
            % {"good": good, "wanted": wanted}
        )
    _record(warc, IngestStep.REPLICATED)


def in_spool(warc: WarcFile) -> bool:
    """Whether the file was written by a crawler of this machine into its spool (HARVEST_WARC_DIR), whose
    copy goes (a file of another machine's spool is that machine's to clean: its path means nothing
    here)."""
    if warc.machine and warc.machine != settings.MACHINE_NAME:
        return False
    spool = Path(settings.HARVEST_WARC_DIR).resolve()
    return spool in Path(warc.path).resolve().parents


def _clean(warc: WarcFile) -> None:
    wanted = warc.replicas_wanted or placement.replicas_for(warc)
    verified = placement.good_replicas(warc).filter(verified_at__isnull=False).count()
    if verified < wanted:
        raise IngestWaiting(
            _("Only %(count)d verified replicas: the spool copy is kept.") % {"count": verified}
        )
    if in_spool(warc):
        path = Path(warc.path)
        if path.exists():
            path.unlink()
            StorageEvent.objects.create(
                kind=StorageEvent.Kind.SPOOL_CLEANED,
                warc_file=warc,
                detail=_("%(path)s deleted: %(count)d verified replicas.")
                % {"path": path, "count": verified},
            )
    _record(warc, IngestStep.CLEANED)


STEPS = {
    IngestStep.REGISTERED: _checksum,
    IngestStep.CHECKSUMMED: _index,
    IngestStep.INDEXED: _store,
    IngestStep.STORED: _replicate,
    IngestStep.REPLICATED: _clean,
}


def ingest_advance(warc_file_id: int) -> WarcFile:
    """Run the rest of a file's chain; it stops (the reason in ``ingest_error``) where it must wait."""
    warc = WarcFile.objects.get(pk=warc_file_id)
    finished = warc.ingest_step == IngestStep.CLEANED
    while warc.ingest_step in STEPS and warc.retired_at is None and not warc.is_open:
        step = STEPS[warc.ingest_step]
        try:
            step(warc)
        except (IngestWaiting, OSError) as error:
            WarcFile.objects.filter(pk=warc.pk).update(
                ingest_error=str(error), ingest_updated_at=timezone.now()
            )
            warc.ingest_error = str(error)
            logger.info("ingest of %s waits at %s: %s", warc.name, warc.ingest_step, error)
            break
    if not finished and warc.ingest_step == IngestStep.CLEANED and warc.job_id:
        bags.job_bag_send_when_ingested(warc.job_id)  # the job's last file: its bag (STORAGE_BAG_DIR)
    return warc


def ingest_pending(*, now=None, limit: int | None = None) -> list[int]:
    """Files whose chain has not finished and is not being worked on (never tried, or stopped a
    while ago): what the beat check sends again."""
    now = now or timezone.now()
    pending = (
        WarcFile.objects.filter(retired_at__isnull=True, closed_at__isnull=False)
        .exclude(ingest_step=IngestStep.CLEANED)
        .filter(
            Q(ingest_updated_at__isnull=True)
            | Q(ingest_updated_at__lt=now - timedelta(seconds=RETRY_SECONDS))
        )
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    return list(pending[: limit or settings.STORAGE_REPAIR_BATCH])


def ingest_queue(warc: WarcFile) -> str | None:
    """Where a file's ingest chain runs: on the crawl machine that wrote it while its spool copy is the
    only one (or is still to be cleaned); anywhere (the task's own queue) otherwise."""
    if warc.machine and warc.origin == WarcFile.Origin.CRAWLED:
        return spool_queue(warc.machine)
    return None


def send_ingest(warc_file_ids) -> None:
    """Send the ingest chain of these files (marked as sent, so the check does not send it twice),
    once the transaction that registered them is committed (a worker must find their rows)."""
    ids = list(warc_file_ids)
    mark_sent(ids)
    files = WarcFile.objects.filter(pk__in=ids).only("pk", "machine", "origin").order_by("pk")
    for warc in files:
        enqueue("storage.ingest", warc.pk, queue=ingest_queue(warc))


def mark_sent(warc_file_ids) -> None:
    """The chain of these files was sent to a worker: the check leaves them alone for a while."""
    WarcFile.objects.filter(pk__in=list(warc_file_ids)).update(ingest_updated_at=timezone.now())
