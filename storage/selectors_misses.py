"""Reads for the URLs missed in replay: grouped by host and kind for the quality pages."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import QuerySet

from storage.models import ReplayMiss

MISSES_SHOWN = 1000  # rows a page groups (the most requested first)
EXAMPLES_PER_GROUP = 20


@dataclass
class MissGroup:
    """The misses of one host and kind: how many URLs, how many requests, the most requested ones."""

    host: str
    kind: str
    kind_label: str
    urls: int = 0
    requests: int = 0
    examples: list[ReplayMiss] = field(default_factory=list)


def replay_misses_grouped(misses: QuerySet[ReplayMiss]) -> list[MissGroup]:
    """Misses grouped by host and kind, the groups with the most requests first."""
    groups: dict[tuple[str, str], MissGroup] = {}
    for miss in misses.order_by("-count", "-last_seen", "pk")[:MISSES_SHOWN]:
        group = groups.get((miss.host, miss.kind))
        if group is None:
            group = groups[(miss.host, miss.kind)] = MissGroup(miss.host, miss.kind, miss.get_kind_display())
        group.urls += 1
        group.requests += miss.count
        if len(group.examples) < EXAMPLES_PER_GROUP:
            group.examples.append(miss)
    return sorted(groups.values(), key=lambda group: (-group.requests, group.host, group.kind))


def job_misses(job) -> QuerySet[ReplayMiss]:
    return ReplayMiss.objects.filter(job=job)


def definition_misses(definition) -> QuerySet[ReplayMiss]:
    return ReplayMiss.objects.filter(job__harvest_definition=definition)
