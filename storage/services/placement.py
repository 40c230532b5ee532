"""How many replicas a file wants, which of its replicas count, where new ones go, what nodes hold.

Reads only: the copies (storage.services.replication), the node actions (storage.services.nodes)
and the audits (storage.services.audits) decide with them.

Placement is deterministic: given the nodes as the database has them, the same file always goes to
the same nodes, whatever order the nodes were added in and whatever the disks of the machine hold
at the moment. See :func:`placement` for the rule.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from django.conf import settings
from django.db.models import Count, F, Q, Sum

from selection.models import Collection
from storage.models import Replica, StorageNode, WarcFile

# Free space that differs by less than this does not tell two nodes apart. Nodes on one file system
# (the demo's, the tests') report the same free space measured moments apart, give or take what
# was written meanwhile; which one was measured last must not decide where a file goes.
FREE_SPACE_MARGIN = 1 << 30  # 1 GiB


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


# Placement


def relative_path(warc: WarcFile) -> str:
    """Where a file goes on a node: by year of creation, then its (unique) name."""
    return str(PurePosixPath(f"{warc.created_at:%Y}") / warc.name)


def placement(warc: WarcFile, count: int, *, exclude: set[int] = frozenset()) -> list[StorageNode]:
    """Up to ``count`` new nodes for the file, chosen one at a time by a stated rule.

    The candidates are the usable nodes that do not hold the file yet (nor are in ``exclude``) and
    have room for it. Each choice takes, in this order:

    1. a node at a location that holds no replica of the file yet (counting the ones just chosen);
    2. among those, the most free space, free spaces within ``FREE_SPACE_MARGIN`` of the largest
       counting as equal (a node never measured counts as having none);
    3. among equals, the node whose name comes first.

    Names are unique, so the choice never depends on the order the nodes were added in, nor on
    which of several nodes sharing one file system was measured last.
    """
    holding = set(warc.replicas.values_list("node_id", flat=True))
    used_locations = set(StorageNode.objects.filter(pk__in=holding).values_list("location", flat=True))
    candidates = [
        node
        for node in usable_nodes().exclude(pk__in=holding | set(exclude))
        if node.free is None or node.free > warc.size
    ]
    chosen: list[StorageNode] = []
    while candidates and len(chosen) < count:
        elsewhere = [node for node in candidates if node.location not in used_locations]
        pool = elsewhere or candidates
        roomiest = max(node.free or 0 for node in pool)
        best = min(
            (node for node in pool if (node.free or 0) >= roomiest - FREE_SPACE_MARGIN),
            key=lambda node: node.name,
        )
        chosen.append(best)
        candidates.remove(best)
        used_locations.add(best.location)
    return chosen


# What the nodes hold


def bytes_per_node():
    """Each node with the bytes (``stored``) and the number (``files``) of its ok replicas."""
    return StorageNode.objects.annotate(
        stored=Sum("replicas__warc_file__size", filter=Q(replicas__state=Replica.State.OK)),
        files=Count("replicas", filter=Q(replicas__state=Replica.State.OK)),
    ).order_by("name")
