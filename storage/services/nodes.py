"""Storage nodes: adding one, the engineers' actions on them, the node check and draining.

Every action an engineer takes on a node (add, offline, online, drain, verify now) is one
function here that makes the change and writes the :class:`StorageEvent` naming who did it; the
pages only call them. What the workers must do next (verifications) is sent once the change is
committed. The beat's node check (:func:`check_round`) measures the nodes, follows their
reachability and empties draining ones; its events name no one.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from storage import selectors_storage
from storage.backends import NodeUnavailable
from storage.backends_s3 import make_root, parse_root
from storage.models import REPLICA_TRANSITIONS, STORAGE_NODE_TRANSITIONS, Replica, StorageEvent, StorageNode
from storage.services.placement import good_replicas, under_replicated, wanted
from webarchive.permissions import ADD, CHANGE, require
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)


def event(kind: str, *, node=None, warc_file=None, detail: str = "", user=None) -> StorageEvent:
    """Record one change of the storage: ``user`` is the engineer who made it (None: the system)."""
    user = user if getattr(user, "is_authenticated", False) else None
    return StorageEvent.objects.create(kind=kind, node=node, warc_file=warc_file, detail=detail, user=user)


def verify_asked(replicas: list[tuple[int, str]], *, user, node=None, warc_file=None) -> int:
    """An engineer's "verify now" on a node or a file: the replicas sent, with an event naming who
    asked (none sent, nothing is recorded). Returns how many were sent."""
    if replicas:
        event(
            StorageEvent.Kind.VERIFY_ASKED,
            node=node,
            warc_file=warc_file,
            detail=_("%(count)d replicas sent to be verified.") % {"count": len(replicas)},
            user=user,
        )
        send_verify(replicas)
    return len(replicas)


def send_verify(replicas: list[tuple[int, str]]) -> None:
    """Have each (replica id, queue) verified by a worker, once the current transaction commits."""
    for replica_id, queue in replicas:
        enqueue("storage.verify", replica_id, queue=queue)


# An engineer's actions


def node_create(
    *,
    name: str,
    location: str,
    root: str = "",
    local_worker: bool = False,
    user=None,
    backend: str = StorageNode.Backend.DIRECTORY,
    bucket: str = "",
    prefix: str = "",
    profile: str = "",
    quota: int | None = None,
) -> StorageNode:
    """Add a node: a directory (``root``) or an S3 bucket and prefix reached through a credentials
    profile of STORAGE_S3_PROFILES (``backend="s3"``, ``bucket``, ``prefix``, ``profile``, ``quota``).
    Its root is created with a marker naming the node, then measured; bad input is refused with the
    reason, and nothing is made."""
    require(user, ADD, StorageNode)
    if backend == StorageNode.Backend.S3:
        errors, root = _s3_errors(bucket=bucket, prefix=prefix, profile=profile)
    else:
        errors, root = _directory_errors(root)
    node = StorageNode(
        name=name,
        location=location,
        root=root,
        local_worker=local_worker,
        backend=backend,
        credentials=profile if backend == StorageNode.Backend.S3 else "",
        quota=quota if backend == StorageNode.Backend.S3 else None,
    )
    try:
        node.full_clean()
    except ValidationError as error:
        errors = {**error.message_dict, **errors}
    if errors:
        raise ValidationError(errors)
    try:
        node.backend_instance().initialise()
    except OSError as error:
        if backend == StorageNode.Backend.S3:
            raise ValidationError(
                {"bucket": _("Cannot use this bucket: %(error)s") % {"error": error}}
            ) from None
        raise ValidationError(
            {"root": _("Cannot use this directory: %(error)s") % {"error": error}}
        ) from None
    node.save()
    event(
        StorageEvent.Kind.NODE_ADDED,
        node=node,
        detail=f"{node.location}: {node.root}",
        user=user,
    )
    node_check(node)
    return node


def _directory_errors(root: str) -> tuple[dict, str]:
    """What is wrong with a directory node's root (relative, overlapping another node's)."""
    errors = {}
    root_path = Path(root)
    if not root_path.is_absolute():
        errors["root"] = _("Give an absolute path.")
    else:
        others = StorageNode.objects.exclude(state=StorageNode.State.RETIRED).filter(
            backend=StorageNode.Backend.DIRECTORY
        )
        for other in others:
            other_root = Path(other.root)
            if root_path == other_root or other_root in root_path.parents or root_path in other_root.parents:
                errors["root"] = _("%(root)s overlaps node %(node)s's directory %(other)s.") % {
                    "root": root,
                    "node": other.name,
                    "other": other.root,
                }
                break
    return errors, str(root_path)


def _s3_errors(*, bucket: str, prefix: str, profile: str) -> tuple[dict, str]:
    """What is wrong with an S3 node's bucket, prefix and profile (unknown profile, a bucket name S3
    refuses, a prefix inside or around another node's in the same bucket of the same endpoint)."""
    errors = {}
    if profile not in settings.STORAGE_S3_PROFILES:
        known = ", ".join(sorted(settings.STORAGE_S3_PROFILES)) or _("none")
        errors["profile"] = _(
            "No credentials profile %(profile)s in STORAGE_S3_PROFILES (known: %(known)s)."
        ) % {
            "profile": profile or "''",
            "known": known,
        }
    try:
        root = make_root(bucket, prefix)
        parse_root(root)
    except ValueError as error:
        errors["bucket"] = _("Not a bucket and prefix S3 accepts: %(error)s") % {"error": error}
        return errors, ""
    endpoint = (settings.STORAGE_S3_PROFILES.get(profile) or {}).get("endpoint_url", "")
    mine = PurePosixPath(prefix.strip("/") or ".")
    others = StorageNode.objects.exclude(state=StorageNode.State.RETIRED).filter(
        backend=StorageNode.Backend.S3
    )
    for other in others:
        other_bucket, other_prefix = other.bucket_and_prefix
        if other_bucket != bucket or other.endpoint_url != endpoint:
            continue
        theirs = PurePosixPath(other_prefix or ".")
        if (
            mine == theirs
            or str(theirs) == "."
            or str(mine) == "."
            or theirs in mine.parents
            or mine in theirs.parents
        ):
            errors["prefix"] = _("%(root)s overlaps node %(node)s's %(other)s.") % {
                "root": root,
                "node": other.name,
                "other": other.root,
            }
            break
    return errors, root


def _active_node(node_id: int, user) -> StorageNode:
    """The node, locked for the action, if ``user`` may change nodes; a retired node takes none."""
    require(user, CHANGE, StorageNode)
    node = StorageNode.objects.select_for_update().get(pk=node_id)
    if node.state == StorageNode.State.RETIRED:
        raise ValidationError(_("Node %(name)s is retired.") % {"name": node.name})
    return node


def _move(node: StorageNode, state: str) -> None:
    """Move a node through its table (STORAGE_NODE_TRANSITIONS); a move it refuses says the state the
    node is in, as the pages show it."""
    if not STORAGE_NODE_TRANSITIONS.may(node.state, state):
        raise ValidationError(
            _("Node %(name)s is %(state)s.") % {"name": node.name, "state": node.get_state_display()},
            code="illegal_transition",
        )
    STORAGE_NODE_TRANSITIONS.apply(node, state)


@transaction.atomic
def node_set_offline(*, node_id: int, user=None, reason: str = "") -> StorageNode:
    """Take a node out of service: its replicas count missing, so its files are copied elsewhere."""
    node = _active_node(node_id, user)
    _move(node, StorageNode.State.OFFLINE)
    node.save(update_fields=["state"])
    lost = _replicas_missing(node)
    detail = _("Marked offline; %(count)d replicas counted missing.") % {"count": lost}
    event(StorageEvent.Kind.NODE_OFFLINE, node=node, detail=f"{detail} {reason}".strip(), user=user)
    return node


@transaction.atomic
def node_set_online(*, node_id: int, user=None) -> list[int]:
    """Bring an offline (or draining) node back: it is checked, and each of its replicas is sent to
    be verified before it counts again.

    Returns the ids of the replicas sent (none when the node cannot be reached).
    """
    require(user, CHANGE, StorageNode)
    node = StorageNode.objects.select_for_update().get(pk=node_id)
    _move(node, StorageNode.State.ONLINE)
    node.save(update_fields=["state"])
    event(
        StorageEvent.Kind.NODE_ONLINE,
        node=node,
        detail=_("Marked online; its replicas are verified."),
        user=user,
    )
    if not node_check(node):
        return []
    replicas = selectors_storage.node_replicas_to_verify(node)
    send_verify(replicas)
    return [pk for pk, _queue in replicas]


@transaction.atomic
def node_drain(*, node_id: int, user=None) -> StorageNode:
    """Start moving a node's replicas away (:func:`drain_step` does it); it is then retired."""
    node = _active_node(node_id, user)
    _move(node, StorageNode.State.DRAINING)
    node.save(update_fields=["state"])
    event(
        StorageEvent.Kind.NODE_DRAINING,
        node=node,
        detail=_("%(count)d replicas to move.") % {"count": node.replicas.count()},
        user=user,
    )
    return node


@transaction.atomic
def node_verify(*, node_id: int, user=None) -> int:
    """Send every replica of the node (but those being copied) to be verified now, on its queue.

    Returns how many were sent."""
    node = _active_node(node_id, user)
    return verify_asked(selectors_storage.node_replicas_to_verify(node), user=user, node=node)


# The node check


def node_check(node: StorageNode) -> bool:
    """Measure a node and see whether it can be reached; its replicas follow (missing / to verify).

    Returns whether the node is reachable. A node found unreachable has its ok replicas marked
    missing (the files are then under-replicated and copied elsewhere); a node reachable again
    gets each of its replicas verified (:func:`~storage.services.audits.replica_verify`, sent by
    the caller).
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
    REPLICA_TRANSITIONS.check(Replica.State.OK, Replica.State.MISSING)  # the ok ones only: the WHERE says so
    return Replica.objects.filter(node=node, state=Replica.State.OK).update(state=Replica.State.MISSING)


def drain_step(node: StorageNode, *, limit: int | None = None) -> tuple[int, int]:
    """Remove the replicas of a draining node whose files have their count elsewhere.

    Returns (removed, left). Files short of replicas elsewhere are left for
    :func:`~storage.services.replication.file_replicate` (the node check sends it); when nothing
    is left, the node is retired.
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
        _move(node, StorageNode.State.RETIRED)
        node.save(update_fields=["state"])
        event(StorageEvent.Kind.NODE_RETIRED, node=node, detail=_("Drained: it holds no replica any more."))
    return removed, left


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
