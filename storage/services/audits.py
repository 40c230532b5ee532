"""Fixity audits: re-hashing replicas against their file's checksum, on a rolling schedule or when
an engineer asks, and repairing the bad ones.

- :func:`audit_due` picks the replicas of this round, so that each one is verified at least every
  ``STORAGE_AUDIT_DAYS`` days with an even load;
- :func:`replica_verify` (the ``storage.verify`` task) re-hashes one; a corrupt or missing replica
  is repaired in place from a good one (storage.services.replication);
- :func:`warc_file_verify` is an engineer sending all the replicas of one file to be verified now
  (a node's are sent by :func:`storage.services.nodes.node_verify`).

No database transaction is held while a replica is hashed.
"""

from __future__ import annotations

import math
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from storage import selectors_storage
from storage.models import REPLICA_TRANSITIONS, Replica, StorageEvent, StorageNode, WarcFile
from storage.services.nodes import event, verify_asked
from storage.services.replication import file_replicate
from webarchive.permissions import CHANGE, require


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
    if state != before:  # found as it was: not a change (its verification time is still written)
        # From whatever it is now but copying (the WHERE below): the table lets each such state
        # become any other, so checking from the state read before hashing is the same check.
        REPLICA_TRANSITIONS.check(before, state)
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


@transaction.atomic
def warc_file_verify(*, warc_file_id: int, user=None) -> int:
    """Send every replica of one file (but those being copied) to be verified now, each on its
    node's queue. Returns how many were sent; none sent, nothing is recorded."""
    require(user, CHANGE, Replica)
    warc = WarcFile.objects.get(pk=warc_file_id)
    return verify_asked(selectors_storage.file_replicas_to_verify(warc), user=user, warc_file=warc)
