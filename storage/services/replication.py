"""Replicas of WARC files on storage nodes: the copies, bringing a file to its count, and reads.

After the INA's replication layer: every file is kept on ``replicas_wanted`` nodes (from its
harvest definition, else its collections, else ``STORAGE_REPLICAS``), never twice on one node,
placed by a deterministic rule (storage.services.placement: a location that does not hold it yet,
then the most free space, then the node's name).

- A copy is claimed by its Replica row (state ``copying``, refreshed while it runs; a claim older
  than ``STORAGE_COPY_STALE_SECONDS`` belonged to a dead worker and is taken over), written to a
  temporary name, read back and checked against the file's SHA-256, and only then renamed and
  marked ``ok`` (storage.backends). A corrupt source is found by that check and marked corrupt.
- :func:`file_replicate` repairs a file's broken replicas in place and places new ones until the
  file has its count; a file with no good replica left is an alert.
- :func:`replica_open` reads a file from its first healthy replica.

The rest of the storage side is split by job: the nodes and the engineers' actions on them
(storage.services.nodes), the fixity audits (storage.services.audits), the counts and placement
(storage.services.placement). Every change is a :class:`StorageEvent`. Functions take ids or rows
and do one thing; the Celery tasks (storage.tasks) and the pages call them. None holds a database
transaction while bytes are copied or hashed.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import BinaryIO

from django.conf import settings
from django.db import IntegrityError
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from storage.backends import CHUNK, ChecksumMismatch, stream_size
from storage.models import REPLICA_TRANSITIONS, Replica, StorageEvent, StorageNode, WarcFile
from storage.services.nodes import event, node_check
from storage.services.placement import (
    effective_wanted,
    good_replicas,
    placement,
    relative_path,
    usable_nodes,
)

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0


class NoSource(Exception):
    """No good copy of the file can be read: neither a replica nor the spool."""


# Copies


def _claim(replica: Replica) -> str | None:
    """Take a replica for copying: it is not being copied, or its copier has been silent too long
    (a killed worker). Returns the state it had, or None when someone else is copying it."""
    stale = timezone.now() - timedelta(seconds=settings.STORAGE_COPY_STALE_SECONDS)
    before = Replica.objects.filter(pk=replica.pk).values_list("state", flat=True).first()
    if before is None:
        return None
    REPLICA_TRANSITIONS.check(before, Replica.State.COPYING)
    taken = (
        Replica.objects.filter(pk=replica.pk, state=before)
        .filter(~Q(state=Replica.State.COPYING) | Q(updated_at__lt=stale))
        .update(state=Replica.State.COPYING, updated_at=timezone.now())
    )
    return before if taken == 1 else None


def _release(replica: Replica, before: str) -> None:
    """A copy that did not happen: the replica is as broken as it was (a dead copy counts missing)."""
    state = Replica.State.CORRUPT if before == Replica.State.CORRUPT else Replica.State.MISSING
    REPLICA_TRANSITIONS.check(Replica.State.COPYING, state)
    Replica.objects.filter(pk=replica.pk, state=Replica.State.COPYING).update(state=state)


class _Heartbeat:
    """Wraps the source stream: refreshes the claim on the replica while a long copy runs."""

    def __init__(self, stream: BinaryIO, replica_id: int):
        self.stream, self.replica_id, self.last = stream, replica_id, time.monotonic()

    def read(self, size: int = CHUNK) -> bytes:
        now = time.monotonic()
        if now - self.last > HEARTBEAT_SECONDS:
            Replica.objects.filter(pk=self.replica_id).update(updated_at=timezone.now())
            self.last = now
        return self.stream.read(size)


def _sources(warc: WarcFile, *, exclude_node=None):
    """Streams to copy a file from: its good replicas (the most recently verified first), then the spool.

    On the crawl machine that wrote it, the spool copy comes first: a local disk, where a replica may
    be an object store across the network (every copy is read back against the file's checksum
    anyway, so a spool copy damaged since the chain's first step is found and the replicas tried)."""
    local_spool = bool(warc.machine) and warc.machine == settings.MACHINE_NAME
    if local_spool and (spool := _spool_stream(warc)) is not None:
        yield None, spool
    replicas = good_replicas(warc).select_related("node").order_by(F("verified_at").desc(nulls_last=True))
    if exclude_node is not None:
        replicas = replicas.exclude(node=exclude_node)
    for replica in replicas:
        try:
            yield replica, replica.node.backend_instance().open(replica.relative_path)
        except OSError as error:
            logger.warning("replica %s cannot be read: %s", replica, error)
    if not local_spool and (spool := _spool_stream(warc)) is not None:
        yield None, spool


def _spool_stream(warc: WarcFile) -> BinaryIO | None:
    try:
        return warc.spool_bytes()
    except OSError:
        return None


def replica_copy(replica: Replica) -> bool:
    """Write one replica from a good source; True when it is now ok, False when another worker is
    copying it. Raises NoSource when no good copy could be read, NodeUnavailable when the target
    node cannot be written (the replica is left not ok either way)."""
    before = _claim(replica)
    if before is None:
        return False
    warc, node = replica.warc_file, replica.node
    backend = node.backend_instance()
    spool_damaged = None
    try:
        for source, stream in _sources(warc, exclude_node=node):
            with stream:
                try:
                    size = backend.put(
                        _Heartbeat(stream, replica.pk), replica.relative_path, sha256=warc.sha256
                    )
                except ChecksumMismatch as error:
                    if source is None:
                        spool_damaged = error
                        logger.warning(
                            "the spool copy of %s does not match its checksum: %s", warc.name, error
                        )
                        continue
                    # The bytes read back as they were read: the source is what is wrong.
                    REPLICA_TRANSITIONS.check(source.state, Replica.State.CORRUPT)
                    Replica.objects.filter(pk=source.pk).update(state=Replica.State.CORRUPT)
                    event(StorageEvent.Kind.CORRUPT, node=source.node, warc_file=warc, detail=str(error))
                    continue
            now = timezone.now()
            REPLICA_TRANSITIONS.check(Replica.State.COPYING, Replica.State.OK)  # claimed above
            Replica.objects.filter(pk=replica.pk).update(
                state=Replica.State.OK, sha256=warc.sha256, size=size, verified_at=now, updated_at=now
            )
            origin = source.node.name if source is not None else _("the spool")
            kind = (
                StorageEvent.Kind.REPAIRED
                if before == Replica.State.CORRUPT or replica.sha256
                else StorageEvent.Kind.COPIED
            )
            event(kind, node=node, warc_file=warc, detail=_("From %(origin)s.") % {"origin": origin})
            return True
        if spool_damaged is not None:
            raise NoSource(
                _("The spool copy of %(name)s does not match its checksum.") % {"name": warc.name}
            ) from spool_damaged
        raise NoSource(_("No good copy of %(name)s can be read.") % {"name": warc.name})
    except BaseException:
        _release(replica, before)
        raise


def file_replicate(warc_file_id: int, *, at_most: int | None = None) -> int:
    """Bring a file to its replica count (or ``at_most`` replicas): repair its broken replicas on
    usable nodes in place, then place new ones. Returns the number of good replicas it has on
    online nodes afterwards.

    A file without any readable good copy raises the "no good replica" alert (once until a good
    copy is made again) and keeps its broken replicas as they are, for an engineer to look at.
    """
    warc = WarcFile.objects.get(pk=warc_file_id)
    if warc.retired_at is not None or warc.is_open:
        return 0
    target = effective_wanted(warc) if at_most is None else min(effective_wanted(warc), at_most)
    good = good_replicas(warc).filter(node__state=StorageNode.State.ONLINE).count()
    tried: set[int] = set()
    try:
        broken = warc.replicas.exclude(state=Replica.State.OK).filter(node__in=usable_nodes())
        for replica in broken.select_related("node"):
            if good >= target:
                break
            tried.add(replica.node_id)
            good += _copy_to(replica, new=False)
        while good < target:
            nodes = placement(warc, target - good, exclude=tried)
            if not nodes:
                break
            for node in nodes:
                tried.add(node.pk)
                try:
                    replica = Replica.objects.create(
                        warc_file=warc,
                        node=node,
                        relative_path=relative_path(warc),
                        state=Replica.State.MISSING,
                    )
                except IntegrityError:
                    continue  # another worker placed it there meanwhile
                good += _copy_to(replica, new=True)
    except NoSource as error:
        alerted = StorageEvent.objects.filter(
            warc_file=warc, kind=StorageEvent.Kind.NO_GOOD_REPLICA, at__gte=_last_good_event(warc)
        )
        if not alerted.exists():
            event(StorageEvent.Kind.NO_GOOD_REPLICA, warc_file=warc, detail=str(error))
    return good


def _copy_to(replica: Replica, *, new: bool) -> int:
    """Copy one replica; 1 when it is now good. A node that fails the write is checked, and a new
    replica that could not be written is forgotten (NoSource goes up to the caller)."""
    try:
        return int(replica_copy(replica))
    except NoSource:
        if new:
            replica.delete()
        raise
    except OSError as error:
        event(
            StorageEvent.Kind.COPY_FAILED, node=replica.node, warc_file=replica.warc_file, detail=str(error)
        )
        if new:
            replica.delete()
        node_check(replica.node)
        return 0


def _last_good_event(warc: WarcFile):
    last = (
        StorageEvent.objects.filter(
            warc_file=warc,
            kind__in=[StorageEvent.Kind.COPIED, StorageEvent.Kind.REPAIRED, StorageEvent.Kind.VERIFIED],
        )
        .order_by("-at")
        .values_list("at", flat=True)
        .first()
    )
    return last or warc.registered_at


# Reads


def warc_file_open(warc: WarcFile) -> BinaryIO:
    """A WARC file's bytes, opened for reading: from its first healthy replica, falling back to the
    next one if a read fails, then to where it was written (OSError when none can be read)."""
    stream = replica_open(warc)
    if stream is not None:
        return stream
    return warc.spool_bytes()


def replica_open(warc: WarcFile) -> BinaryIO | None:
    """The file's bytes from its first healthy replica (online nodes first, the most recently
    verified first), falling back to the next when one cannot be read or has the wrong size."""
    if warc.is_open or warc.pk is None:
        return None
    replicas = good_replicas(warc).select_related("node").order_by(F("verified_at").desc(nulls_last=True))
    ordered = sorted(replicas, key=lambda replica: replica.node.state != StorageNode.State.ONLINE)
    for replica in ordered:
        try:
            stream = replica.node.backend_instance().open(replica.relative_path)
        except OSError as error:
            logger.warning("replica %s of %s cannot be read: %s", replica.node.name, warc.name, error)
            continue
        if stream_size(stream) != warc.size:
            logger.warning("replica %s of %s has the wrong size", replica.node.name, warc.name)
            stream.close()
            continue
        return stream
    return None
