"""Storage nodes and the replicas of WARC files on them: placement, copies, audits, repair, reads.

After the INA's replication layer: every file is kept on ``replicas_wanted`` nodes (from its
harvest definition, else its collections, else ``STORAGE_REPLICAS``), never twice on one node,
placed on the nodes with the most free space and preferring locations that do not hold it yet.

- A copy is claimed by its Replica row (state ``copying``, refreshed while it runs; a claim older
  than ``STORAGE_COPY_STALE_SECONDS`` belonged to a dead worker and is taken over), written to a
  temporary name, read back and checked against the file's SHA-256, and only then renamed and
  marked ``ok`` (storage.backends). A corrupt source is found by that check and marked corrupt.
- Audits (:func:`audit_due`, :func:`replica_verify`) re-hash replicas on a rolling schedule so that
  each one is verified at least every ``STORAGE_AUDIT_DAYS`` days with an even load; a corrupt or
  missing replica is repaired in place from a good one.
- A node that cannot be reached (:func:`node_check`) or is marked offline has its replicas counted
  missing, so the files are re-replicated elsewhere (:func:`under_replicated`); when it comes back,
  each of its replicas is verified before it counts again. Draining a node moves its replicas
  away, then retires it.
- Every change is a :class:`StorageEvent`; a file with no good replica left is an alert.

Functions take ids or rows and do one thing; the Celery tasks (storage.tasks) and the pages call
them. None holds a database transaction while bytes are copied or hashed.
"""

from __future__ import annotations

import logging
import math
import os
import time
from datetime import timedelta
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.db.models import Count, F, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from storage.backends import CHUNK, ChecksumMismatch, NodeUnavailable
from storage.models import Replica, StorageEvent, StorageNode, WarcFile

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 5.0


class NoSource(Exception):
    """No good copy of the file can be read: neither a replica nor the spool."""


# Events


def event(kind: str, *, node=None, warc_file=None, detail: str = "", user=None) -> StorageEvent:
    return StorageEvent.objects.create(kind=kind, node=node, warc_file=warc_file, detail=detail, user=user)


# Nodes


def node_create(*, name: str, location: str, root: str, local_worker: bool = False, user=None) -> StorageNode:
    """Add a node: its root is created with a marker naming the node, then measured."""
    errors = {}
    root_path = Path(root)
    if not root_path.is_absolute():
        errors["root"] = _("Give an absolute path.")
    else:
        for other in StorageNode.objects.exclude(state=StorageNode.State.RETIRED):
            other_root = Path(other.root)
            if root_path == other_root or other_root in root_path.parents or root_path in other_root.parents:
                errors["root"] = _("%(root)s overlaps node %(node)s's directory %(other)s.") % {
                    "root": root,
                    "node": other.name,
                    "other": other.root,
                }
                break
    node = StorageNode(name=name, location=location, root=str(root_path), local_worker=local_worker)
    try:
        node.full_clean()
    except ValidationError as error:
        errors = {**error.message_dict, **errors}
    if errors:
        raise ValidationError(errors)
    try:
        node.backend_instance().initialise()
    except OSError as error:
        raise ValidationError(
            {"root": _("Cannot use this directory: %(error)s") % {"error": error}}
        ) from None
    node.save()
    event(StorageEvent.Kind.NODE_ADDED, node=node, detail=f"{node.location}: {node.root}", user=user)
    node_check(node)
    return node


def node_check(node: StorageNode) -> bool:
    """Measure a node and see whether it can be reached; its replicas follow (missing / to verify).

    Returns whether the node is reachable. A node found unreachable has its ok replicas marked
    missing (the files are then under-replicated and copied elsewhere); a node reachable again
    gets each of its replicas verified (:func:`replica_verify`, sent by the caller's task).
    """
    backend = node.backend_instance()
    try:
        backend.check()
        usage = backend.usage()
    except NodeUnavailable as error:
        if node.reachable:
            StorageNode.objects.filter(pk=node.pk).update(reachable=False, unreachable_reason=str(error))
            node.reachable, node.unreachable_reason = False, str(error)
            lost = _replicas_missing(node)
            event(
                StorageEvent.Kind.NODE_UNREACHABLE,
                node=node,
                detail=_("%(error)s; %(count)d replicas counted missing.") % {"error": error, "count": lost},
            )
        return False
    was_reachable = node.reachable
    node.reachable, node.unreachable_reason = True, ""
    node.capacity, node.free, node.measured_at = usage.capacity, usage.free, timezone.now()
    node.save(update_fields=["reachable", "unreachable_reason", "capacity", "free", "measured_at"])
    if not was_reachable:
        event(
            StorageEvent.Kind.NODE_ONLINE, node=node, detail=_("Reachable again; its replicas are verified.")
        )
    return True


def _replicas_missing(node: StorageNode) -> int:
    return Replica.objects.filter(node=node, state=Replica.State.OK).update(state=Replica.State.MISSING)


def node_set_offline(*, node_id: int, user=None, reason: str = "") -> StorageNode:
    node = StorageNode.objects.get(pk=node_id)
    if node.state == StorageNode.State.RETIRED:
        raise ValidationError(_("Node %(name)s is retired.") % {"name": node.name})
    node.state = StorageNode.State.OFFLINE
    node.save(update_fields=["state"])
    lost = _replicas_missing(node)
    detail = _("Marked offline; %(count)d replicas counted missing.") % {"count": lost}
    event(StorageEvent.Kind.NODE_OFFLINE, node=node, detail=f"{detail} {reason}".strip(), user=user)
    return node


def node_set_online(*, node_id: int, user=None) -> list[int]:
    """Bring an offline node back: it is checked, and each of its replicas must be verified again.

    Returns the ids of the replicas to verify (the caller sends :func:`replica_verify` for each).
    """
    node = StorageNode.objects.get(pk=node_id)
    if node.state not in (StorageNode.State.OFFLINE, StorageNode.State.DRAINING):
        raise ValidationError(
            _("Node %(name)s is %(state)s.") % {"name": node.name, "state": node.get_state_display()}
        )
    node.state = StorageNode.State.ONLINE
    node.save(update_fields=["state"])
    event(
        StorageEvent.Kind.NODE_ONLINE,
        node=node,
        detail=_("Marked online; its replicas are verified."),
        user=user,
    )
    if not node_check(node):
        return []
    return list(node.replicas.exclude(state=Replica.State.COPYING).values_list("pk", flat=True))


def node_drain(*, node_id: int, user=None) -> StorageNode:
    """Start moving a node's replicas away (:func:`drain_step` does it); it is then retired."""
    node = StorageNode.objects.get(pk=node_id)
    if node.state == StorageNode.State.RETIRED:
        raise ValidationError(_("Node %(name)s is retired.") % {"name": node.name})
    node.state = StorageNode.State.DRAINING
    node.save(update_fields=["state"])
    event(
        StorageEvent.Kind.NODE_DRAINING,
        node=node,
        detail=_("%(count)d replicas to move.") % {"count": node.replicas.count()},
        user=user,
    )
    return node


def drain_step(node: StorageNode, *, limit: int | None = None) -> tuple[int, int]:
    """Remove the replicas of a draining node whose files have their count elsewhere.

    Returns (removed, left). Files short of replicas elsewhere are left for :func:`file_replicate`
    (the node check sends it); when nothing is left, the node is retired.
    """
    removed = 0
    replicas = node.replicas.select_related("warc_file").order_by("pk")
    for replica in replicas[:limit] if limit else replicas:
        warc = replica.warc_file
        elsewhere = (
            good_replicas(warc).exclude(node=node).filter(node__state=StorageNode.State.ONLINE).count()
        )
        if elsewhere < wanted(warc) and warc.retired_at is None:
            continue
        try:
            node.backend_instance().delete(replica.relative_path)
        except OSError as error:
            logger.warning("draining %s: %s not removed: %s", node.name, replica.relative_path, error)
            continue
        replica.delete()
        event(StorageEvent.Kind.REMOVED, node=node, warc_file=warc, detail=_("Moved away (draining)."))
        removed += 1
    left = node.replicas.count()
    if left == 0:
        node.state = StorageNode.State.RETIRED
        node.save(update_fields=["state"])
        event(StorageEvent.Kind.NODE_RETIRED, node=node, detail=_("Drained: it holds no replica any more."))
    return removed, left


# Counts


def wanted(warc: WarcFile) -> int:
    """How many replicas the file should have (its stored wish, else computed now)."""
    return warc.replicas_wanted or replicas_for(warc)


def replicas_for(warc: WarcFile) -> int:
    """The harvest definition's replica count, else the highest of its collections', else the default."""
    definition = warc.job.harvest_definition if warc.job_id else None
    if definition is not None:
        if definition.replica_count:
            return definition.replica_count
        from selection.models import Collection

        collections = Collection.objects.filter(
            pk__in=definition.collection_mappings.values("collection"), replica_count__isnull=False
        )
        highest = max(collections.values_list("replica_count", flat=True), default=None)
        if highest:
            return highest
    return settings.STORAGE_REPLICAS


def usable_nodes():
    """Online, reachable nodes: where new replicas go and whose replicas count."""
    return StorageNode.objects.filter(state=StorageNode.State.ONLINE, reachable=True)


def good_replicas(warc: WarcFile):
    """Replicas that count: ok, on a reachable node that is online or draining."""
    return warc.replicas.filter(
        state=Replica.State.OK,
        node__reachable=True,
        node__state__in=[StorageNode.State.ONLINE, StorageNode.State.DRAINING],
    )


def effective_wanted(warc: WarcFile) -> int:
    """The count to reach now: never more than there are usable nodes."""
    return min(wanted(warc), usable_nodes().count())


def stored_files():
    """Files the ingest chain has put on nodes (not retired)."""
    return WarcFile.objects.filter(retired_at__isnull=True, replicas_wanted__gt=0)


def _with_good_counts(files):
    good = Q(
        replicas__state=Replica.State.OK,
        replicas__node__reachable=True,
        replicas__node__state=StorageNode.State.ONLINE,
    )
    return files.annotate(good=Count("replicas", filter=good))


def under_replicated():
    """Files with fewer good replicas on online nodes than they want (as far as the nodes allow)."""
    nodes = usable_nodes().count()
    files = _with_good_counts(stored_files())
    return files.filter(Q(good__lt=F("replicas_wanted")) & Q(good__lt=nodes)).order_by("pk")


def lost_files():
    """Files with no good replica anywhere (the alert)."""
    good = Q(
        replicas__state=Replica.State.OK,
        replicas__node__reachable=True,
        replicas__node__state__in=[StorageNode.State.ONLINE, StorageNode.State.DRAINING],
    )
    return stored_files().annotate(good=Count("replicas", filter=good)).filter(good=0).order_by("pk")


# Placement and copies


def relative_path(warc: WarcFile) -> str:
    """Where a file goes on a node: by year of creation, then its (unique) name."""
    return str(PurePosixPath(f"{warc.created_at:%Y}") / warc.name)


def placement(warc: WarcFile, count: int, *, exclude: set[int] = frozenset()) -> list[StorageNode]:
    """Up to ``count`` new nodes for the file: usable, not holding it already, with room for it;
    a location that does not hold the file yet first, then the most free space."""
    holding = set(warc.replicas.values_list("node_id", flat=True))
    used_locations = set(StorageNode.objects.filter(pk__in=holding).values_list("location", flat=True))
    candidates = [
        node
        for node in usable_nodes().exclude(pk__in=holding | set(exclude))
        if node.free is None or node.free > warc.size
    ]
    chosen: list[StorageNode] = []
    while candidates and len(chosen) < count:
        best = min(
            candidates, key=lambda node: (node.location in used_locations, -(node.free or 0), node.name)
        )
        chosen.append(best)
        candidates.remove(best)
        used_locations.add(best.location)
    return chosen


def _claim(replica: Replica) -> str | None:
    """Take a replica for copying: it is not being copied, or its copier has been silent too long
    (a killed worker). Returns the state it had, or None when someone else is copying it."""
    stale = timezone.now() - timedelta(seconds=settings.STORAGE_COPY_STALE_SECONDS)
    before = Replica.objects.filter(pk=replica.pk).values_list("state", flat=True).first()
    if before is None:
        return None
    taken = (
        Replica.objects.filter(pk=replica.pk, state=before)
        .filter(~Q(state=Replica.State.COPYING) | Q(updated_at__lt=stale))
        .update(state=Replica.State.COPYING, updated_at=timezone.now())
    )
    return before if taken == 1 else None


def _release(replica: Replica, before: str) -> None:
    """A copy that did not happen: the replica is as broken as it was (a dead copy counts missing)."""
    state = Replica.State.CORRUPT if before == Replica.State.CORRUPT else Replica.State.MISSING
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
    """Streams to copy a file from: its good replicas (the most recently verified first), then the spool."""
    replicas = good_replicas(warc).select_related("node").order_by(F("verified_at").desc(nulls_last=True))
    if exclude_node is not None:
        replicas = replicas.exclude(node=exclude_node)
    for replica in replicas:
        try:
            yield replica, replica.node.backend_instance().open(replica.relative_path)
        except OSError as error:
            logger.warning("replica %s cannot be read: %s", replica, error)
    try:
        yield None, warc.spool_bytes()
    except OSError:
        return


def replica_copy(replica: Replica) -> bool:
    """Write one replica from a good source; True when it is now ok, False when another worker is
    copying it. Raises NoSource when no good copy could be read, NodeUnavailable when the target
    node cannot be written (the replica is left not ok either way)."""
    before = _claim(replica)
    if before is None:
        return False
    warc, node = replica.warc_file, replica.node
    backend = node.backend_instance()
    try:
        for source, stream in _sources(warc, exclude_node=node):
            with stream:
                try:
                    size = backend.put(
                        _Heartbeat(stream, replica.pk), replica.relative_path, sha256=warc.sha256
                    )
                except ChecksumMismatch as error:
                    if source is None:
                        raise NoSource(
                            _("The spool copy of %(name)s does not match its checksum.") % {"name": warc.name}
                        ) from error
                    # The bytes read back as they were read: the source is what is wrong.
                    Replica.objects.filter(pk=source.pk).update(state=Replica.State.CORRUPT)
                    event(StorageEvent.Kind.CORRUPT, node=source.node, warc_file=warc, detail=str(error))
                    continue
            now = timezone.now()
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


# Audits


def replica_verify(replica_id: int, *, repair: bool = True) -> str:
    """Re-hash one replica against the file's checksum; a bad one is repaired from a good one.

    Returns the replica's state after the check (before any repair).
    """
    replica = Replica.objects.select_related("node", "warc_file").get(pk=replica_id)
    node, warc = replica.node, replica.warc_file
    if replica.state == Replica.State.COPYING:
        return replica.state
    before = replica.state
    if not node.usable:
        state, detail = Replica.State.MISSING, _("Node %(name)s is not available.") % {"name": node.name}
    else:
        try:
            found, size = node.backend_instance().sha256(replica.relative_path)
        except FileNotFoundError:
            state, detail = Replica.State.MISSING, _("No file at %(path)s.") % {"path": replica.relative_path}
        except OSError as error:
            state, detail = Replica.State.MISSING, str(error)
        else:
            if found == warc.sha256 and size == warc.size:
                state, detail = Replica.State.OK, ""
            else:
                state = Replica.State.CORRUPT
                detail = _("SHA-256 %(found)s (%(size)d bytes), expected %(sha)s (%(expected)d bytes).") % {
                    "found": found,
                    "size": size,
                    "sha": warc.sha256,
                    "expected": warc.size,
                }
    now = timezone.now()
    changes = {"state": state, "updated_at": now}
    if state == Replica.State.OK:
        changes["verified_at"] = now
    updated = Replica.objects.filter(pk=replica.pk).exclude(state=Replica.State.COPYING).update(**changes)
    if not updated:
        return Replica.State.COPYING  # a repair took it meanwhile
    if state != Replica.State.OK and before != state:
        kind = StorageEvent.Kind.CORRUPT if state == Replica.State.CORRUPT else StorageEvent.Kind.MISSING
        event(kind, node=node, warc_file=warc, detail=detail)
    elif state == Replica.State.OK and before != Replica.State.OK:
        event(StorageEvent.Kind.VERIFIED, node=node, warc_file=warc, detail=_("Verified again: it counts."))
    if state != Replica.State.OK and repair:
        file_replicate(warc.pk)  # in place on a usable node, else elsewhere
    return state


def audit_due(*, now=None) -> list[int]:
    """The replicas the audit verifies now (oldest verification first), spread so that each one is
    verified at least every ``STORAGE_AUDIT_DAYS`` days with about the same number in every round
    (one round every ``STORAGE_AUDIT_INTERVAL`` seconds); overdue ones are all taken."""
    now = now or timezone.now()
    replicas = Replica.objects.exclude(state=Replica.State.COPYING).filter(
        node__state__in=[StorageNode.State.ONLINE, StorageNode.State.DRAINING],
        node__reachable=True,
        warc_file__retired_at__isnull=True,
    )
    total = replicas.count()
    if not total:
        return []
    period = settings.STORAGE_AUDIT_DAYS * 86400
    share = math.ceil(total * settings.STORAGE_AUDIT_INTERVAL / period)
    overdue = replicas.filter(
        Q(verified_at__isnull=True) | Q(verified_at__lt=now - timedelta(seconds=period))
    ).count()
    take = min(max(share, overdue), total)
    ordered = replicas.order_by(F("verified_at").asc(nulls_first=True), "pk")
    return list(ordered.values_list("pk", flat=True)[:take])


# Reads


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
        if os.fstat(stream.fileno()).st_size != warc.size:
            logger.warning("replica %s of %s has the wrong size", replica.node.name, warc.name)
            stream.close()
            continue
        return stream
    return None


# Statistics


def bytes_per_node():
    return StorageNode.objects.annotate(
        stored=Sum("replicas__warc_file__size", filter=Q(replicas__state=Replica.State.OK)),
        files=Count("replicas", filter=Q(replicas__state=Replica.State.OK)),
    ).order_by("name")


def check_round() -> dict[str, list]:
    """What the beat check finds to do: nodes measured and checked (an unreachable one has its
    replicas counted missing), draining nodes emptied where their files are safe elsewhere.

    Returns the work to send: ``verify`` (replica ids, with their node's queue: every replica of a
    node that is reachable again) and ``replicate`` (ids of under-replicated files).
    """
    verify: list[tuple[int, str]] = []
    for node in StorageNode.objects.exclude(state=StorageNode.State.RETIRED):
        was_reachable = node.reachable
        if node_check(node) and not was_reachable and node.state != StorageNode.State.OFFLINE:
            replicas = node.replicas.exclude(state=Replica.State.COPYING).values_list("pk", flat=True)
            verify += [(pk, node.queue) for pk in replicas]
        if node.state == StorageNode.State.DRAINING and node.reachable:
            drain_step(node, limit=settings.STORAGE_REPAIR_BATCH)
    replicate = list(under_replicated().values_list("pk", flat=True)[: settings.STORAGE_REPAIR_BATCH])
    # A draining node's files go elsewhere even when their count is met with the node.
    for node in StorageNode.objects.filter(state=StorageNode.State.DRAINING):
        replicate += list(
            node.replicas.values_list("warc_file_id", flat=True)[: settings.STORAGE_REPAIR_BATCH]
        )
    return {"verify": verify, "replicate": sorted(set(replicate))}
