"""Reads of the storage side for the Operations → Storage pages and the REST API: the nodes with
their replica counts, what needs attention (the alerts), and the statistics.

What counts as stored: a replica in state ``ok``. The statistics count each file once (its size,
``bytes``) and with its copies (``replica_bytes``: its size times its ok replicas), so that the
archive's size and the disk it takes are both read from one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import (
    BigIntegerField,
    Count,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.db.models.functions import Coalesce, ExtractYear
from django.utils import timezone

from storage.models import Replica, StorageEvent, StorageNode, WarcFile
from storage.services.placement import bytes_per_node, lost_files, under_replicated

RECENT_ALERT_DAYS = 7  # alert events shown on the alerts page
ALERTS_SHOWN = 100  # rows of each list on the alerts page; the counts are of all of them

_OK = Q(replicas__state=Replica.State.OK)
_NOT_OK = Q(replicas__state__in=[state for state in Replica.State if state != Replica.State.OK])


# Nodes


def nodes_with_counts(queryset: QuerySet[StorageNode] | None = None) -> QuerySet[StorageNode]:
    """Nodes with ``replicas_ok``, ``replicas_not_ok`` (copying, missing, corrupt), ``bytes_stored``
    (sizes of the files of their ok replicas) and ``used`` (capacity minus free space, if measured)."""
    queryset = StorageNode.objects.all() if queryset is None else queryset
    return queryset.annotate(
        replicas_ok=Count("replicas", filter=_OK),
        replicas_not_ok=Count("replicas", filter=_NOT_OK),
        bytes_stored=Coalesce(Sum("replicas__warc_file__size", filter=_OK), Value(0)),
        used=ExpressionWrapper(F("capacity") - F("free"), output_field=BigIntegerField()),
    ).order_by("name")


def node_replicas(node: StorageNode) -> QuerySet[Replica]:
    """A node's replicas, by file name."""
    return node.replicas.select_related("warc_file").order_by("warc_file__name", "pk")


def node_replicas_to_verify(node: StorageNode) -> list[tuple[int, str]]:
    """(replica id, queue) of every replica of the node that is not being copied: what "verify
    now" sends, on the node's queue."""
    ids = node.replicas.exclude(state=Replica.State.COPYING).order_by("pk").values_list("pk", flat=True)
    return [(pk, node.queue) for pk in ids]


def file_replicas(warc_file: WarcFile) -> QuerySet[Replica]:
    """A file's replicas, with their nodes, by node name."""
    return warc_file.replicas.select_related("node").order_by("node__name")


def file_replicas_to_verify(warc_file: WarcFile) -> list[tuple[int, str]]:
    """(replica id, queue) of a file's replicas that are not being copied, each on its node's queue."""
    replicas = file_replicas(warc_file).exclude(state=Replica.State.COPYING)
    return [(replica.pk, replica.node.queue) for replica in replicas]


# Alerts


def problem_nodes() -> QuerySet[StorageNode]:
    """Nodes that are not retired but cannot serve: unreachable, or marked offline."""
    return (
        StorageNode.objects.exclude(state=StorageNode.State.RETIRED)
        .filter(Q(reachable=False) | Q(state=StorageNode.State.OFFLINE))
        .order_by("name")
    )


def recent_alert_events(*, days: int = RECENT_ALERT_DAYS) -> QuerySet[StorageEvent]:
    """Alert events (no good replica, node unreachable, copy failed) of the last ``days`` days."""
    since = timezone.now() - timedelta(days=days)
    return StorageEvent.objects.filter(kind__in=StorageEvent.ALERTS, at__gte=since).select_related(
        "node", "warc_file", "user"
    )


def files_needing_attention() -> QuerySet[WarcFile]:
    """Files that are lost or under-replicated, each once."""
    return WarcFile.objects.filter(
        Q(pk__in=lost_files().values("pk")) | Q(pk__in=under_replicated().values("pk"))
    )


def alert_count() -> int:
    """What needs attention now: lost or under-replicated files, and unavailable nodes (the badge)."""
    return files_needing_attention().count() + problem_nodes().count()


@dataclass
class Alerts:
    """What the alerts page lists: the first rows of each list, and how many there are in all."""

    lost: list[WarcFile]
    lost_count: int
    under_replicated: list[WarcFile]
    under_replicated_count: int
    nodes: list[StorageNode]
    events: list[StorageEvent]
    events_count: int
    days: int

    @property
    def total(self) -> int:
        return self.lost_count + self.under_replicated_count + len(self.nodes) + self.events_count


def alerts() -> Alerts:
    """The alerts page: the first ``ALERTS_SHOWN`` of each list and how many there are."""
    lost, under = lost_files(), under_replicated()
    events = recent_alert_events()
    return Alerts(
        lost=list(lost[:ALERTS_SHOWN]),
        lost_count=lost.count(),
        under_replicated=list(under[:ALERTS_SHOWN]),
        under_replicated_count=under.count(),
        nodes=list(problem_nodes()),
        events=list(events[:ALERTS_SHOWN]),
        events_count=events.count(),
        days=RECENT_ALERT_DAYS,
    )


# Statistics


def _stored_files() -> QuerySet[WarcFile]:
    """Files with at least one ok replica, each given ``ok_replicas`` (a subquery: the totals below
    then sum plain columns, grouped by whatever they are grouped by)."""
    ok = (
        Replica.objects.filter(warc_file=OuterRef("pk"), state=Replica.State.OK)
        .order_by()
        .values("warc_file")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return (
        WarcFile.objects.order_by()
        .annotate(ok_replicas=Coalesce(Subquery(ok, output_field=IntegerField()), Value(0)))
        .filter(ok_replicas__gt=0)
    )


_TOTALS = {
    "files": Count("pk"),
    "bytes": Sum("size"),
    "replicas": Sum("ok_replicas"),
    "replica_bytes": Sum(ExpressionWrapper(F("size") * F("ok_replicas"), output_field=BigIntegerField())),
}


def stored_totals() -> dict:
    """All stored files: ``files``, ``bytes`` (each file once), ``replicas``, ``replica_bytes``."""
    totals = _stored_files().aggregate(**_TOTALS)
    return {name: value or 0 for name, value in totals.items()}


def stored_per_definition() -> list[dict]:
    """The totals per harvest definition (``definition`` id and ``definition_name``; None for files that no
    harvest made: imports, dedup outputs of them), largest first."""
    rows = (
        _stored_files()
        .values(definition=F("job__harvest_definition"), definition_name=F("job__harvest_definition__name"))
        .annotate(**_TOTALS)
        .order_by("-bytes", "definition_name")
    )
    return list(rows)


def stored_per_year() -> list[dict]:
    """The totals per year the files were created in (the server's time zone), newest first."""
    rows = (
        _stored_files()
        .annotate(year=ExtractYear("created_at"))
        .values("year")
        .annotate(**_TOTALS)
        .order_by("-year")
    )
    return list(rows)


def stored_per_node() -> QuerySet[StorageNode]:
    """Per node: ``files`` (ok replicas) and ``stored`` (their bytes), retired nodes included."""
    return bytes_per_node()
