"""Reads of the job statistics for the reports: totals, groupings, distributions, top domains.

Every function takes a queryset of :class:`~harvest.models.JobStatistics` rows, already filtered
(:class:`harvest.filtersets.StatisticsFilterSet`): either whole jobs, or the shares of one
collection. Each is one or two grouped queries whatever the number of jobs.
"""

from __future__ import annotations

from django.db.models import Count, F, Sum
from django.db.models.functions import ExtractMonth, ExtractYear
from django.utils.translation import gettext_lazy as _

from harvest.choices import HarvestKind, StopReason
from harvest.models import Dimension, JobConfiguration, JobStatistics, StatisticLine
from harvest.services.statistics import (
    IP_ADDRESS,
    NO_ANSWER,
    SEED_SOURCES,
    UNKNOWN,
    size_class,
    size_classes,
)

SUMS = (
    "urls",
    "bytes",
    "duplicate_urls",
    "duplicate_bytes",
    "errors",
    "sites",
    "budget_stopped",
    "duration_seconds",
)

# How a table can group the statistics: name -> (label, the fields that identify a group).
GROUPS: dict[str, tuple] = {
    "year": (_("Year"), ("year",)),
    "month": (_("Month"), ("year", "month")),
    "kind": (_("Kind of crawl"), ("kind",)),
    "definition": (_("Harvest definition"), ("harvest_definition", "harvest_definition__name")),
    "run": (_("Harvest run"), ("harvest_definition__name", "run__number", "run")),
    "job": (_("Job"), ("job", "harvest_definition__name", "ended_at")),
    "collection": (_("Collection"), ("collection", "collection__name")),
}


def _sums() -> dict:
    return {name: Sum(name) for name in SUMS}


def _sites(statistics):
    """The site crawls behind these statistics (a collection's share: only the sites selected in it)."""
    sites = JobConfiguration.objects.filter(job__in=statistics.values("job"))
    if statistics.filter(collection__isnull=False).exists():
        sites = sites.filter(configuration__source_collection__in=statistics.values("collection"))
    return sites


# A group's fields, read from a site crawl instead of its job's statistics (same values).
SITE_FIELDS = {
    "year": ExtractYear("job__ended_at"),
    "month": ExtractMonth("job__ended_at"),
    "kind": F("job__harvest_definition__kind"),
    "harvest_definition": F("job__harvest_definition"),
    "harvest_definition__name": F("job__harvest_definition__name"),
    "run": F("job__run"),
    "run__number": F("job__run__number"),
    "job": F("job"),
    "ended_at": F("job__ended_at"),
    "collection": F("configuration__source_collection"),
    "collection__name": F("configuration__source_collection__name"),
}


def _finish(row: dict) -> dict:
    for name in SUMS:
        row[name] = row.get(name) or 0
    row["new_bytes"] = row["bytes"] - row["duplicate_bytes"]
    row["duplicate_share"] = row["duplicate_bytes"] / row["bytes"] if row["bytes"] else 0.0
    return row


def totals(statistics) -> dict:
    """Sums over the statistics, with the distinct domains harvested and the number of jobs."""
    row = statistics.aggregate(**_sums(), jobs=Count("job", distinct=True))
    row["domains"] = (
        _sites(statistics).filter(urls_done__gt=0).aggregate(n=Count("domain", distinct=True))["n"]
    )
    return _finish(row)


def grouped(statistics, by: str) -> list[dict]:
    """One row of sums per group (year, month, kind, harvest definition, run, job, collection)."""
    fields = GROUPS[by][1]
    rows = statistics.annotate(month=ExtractMonth("ended_at")) if by == "month" else statistics
    rows = rows.values(*fields).annotate(**_sums(), jobs=Count("job", distinct=True)).order_by(*fields)
    # Distinct domains per group: a domain crawled by several jobs of a year counts once.
    sites = (
        _sites(statistics)
        .filter(urls_done__gt=0)
        .annotate(**{f"group_{field}": SITE_FIELDS[field] for field in fields})
        .values(*(f"group_{field}" for field in fields))
        .annotate(n=Count("domain", distinct=True))
        .order_by()
    )
    domains = {tuple(row[f"group_{field}"] for field in fields): row["n"] for row in sites}
    result = []
    for row in rows:
        row["domains"] = domains.get(tuple(row[field] for field in fields), 0)
        row["label"] = group_label(by, row)
        result.append(_finish(row))
    if by in ("year", "month", "run", "job"):
        result.sort(key=lambda row: tuple(row[field] for field in fields))
    return result


def group_label(by: str, row: dict) -> str:
    if by == "year":
        return str(row["year"])
    if by == "month":
        return f"{row['year']}-{row['month']:02d}"
    if by == "kind":
        return str(HarvestKind(row["kind"]).label)
    if by == "definition":
        return row["harvest_definition__name"]
    if by == "run":
        return f"{row['harvest_definition__name']} #{row['run__number']}"
    if by == "job":
        return f"{_('Job')} {row['job']} ({row['harvest_definition__name']})"
    if by == "collection":
        return row["collection__name"] or str(_("(whole jobs)"))
    raise ValueError(by)


def sizes_of_domains(statistics) -> list[dict]:
    """Domains by size class over these statistics: each domain harvested (URLs > 0) counted once, in
    the class of all the URLs it yielded in them, so that the classes add up to the "domains
    harvested" of :func:`totals` (a job's own statistics keep its per-job classes)."""
    classes = {label: {"key": label, "urls": 0, "bytes": 0, "domains": 0} for label, _most in size_classes()}
    domains = (
        _sites(statistics)
        .values("domain")
        .annotate(urls=Sum("urls_done"), bytes=Sum("bytes_done"))
        .filter(urls__gt=0)
        .values_list("urls", "bytes")
    )
    for urls, size in domains.iterator(chunk_size=10_000):
        row = classes[size_class(urls)]
        row["urls"] += urls
        row["bytes"] += size or 0
        row["domains"] += 1
    return [row for row in classes.values() if row["domains"]]


def distribution(statistics, dimension: str) -> list[dict]:
    """URLs, bytes and domains per value of one dimension, with each value's share of the URLs."""
    if dimension == Dimension.SIZE_CLASS:
        rows = sizes_of_domains(statistics)  # smallest class first
    else:
        rows = list(
            StatisticLine.objects.filter(statistics__in=statistics, dimension=dimension)
            .values("key")
            .annotate(urls=Sum("urls"), bytes=Sum("bytes"), domains=Sum("domains"))
            .order_by("-urls", "key")
        )
    if dimension in (Dimension.STATUS, Dimension.STATUS_CLASS):
        rows.sort(key=lambda row: (row["key"] == NO_ANSWER, row["key"]))
    total = sum(row["urls"] for row in rows)
    for row in rows:
        row["label"] = key_label(dimension, row["key"])
        row["share"] = row["urls"] / total if total else 0.0
    return rows


def key_label(dimension: str, key: str) -> str:
    """How a value reads in the reports (the CSV keeps the key itself)."""
    if dimension == Dimension.STOP_REASON and key in StopReason.values:
        return str(StopReason(key).label)
    if dimension == Dimension.SEED_SOURCE and key in SEED_SOURCES:
        return str(SEED_SOURCES[key])
    if dimension == Dimension.TLD and key == IP_ADDRESS:
        return str(_("IP address"))
    if key == UNKNOWN:
        return str(_("unknown"))
    if key == NO_ANSWER:
        return str(_("no answer"))
    return key


def top_domains(statistics, *, by: str = "urls", limit: int = 20) -> list[dict]:
    """The domains that yielded the most URLs (or bytes) over these statistics."""
    order = "-bytes" if by == "bytes" else "-urls"
    rows = (
        _sites(statistics)
        .values("domain__name")
        .annotate(urls=Sum("urls_done"), bytes=Sum("bytes_done"), jobs=Count("job", distinct=True))
        .filter(urls__gt=0)
        .order_by(order, "domain__name")[:limit]
    )
    return [{**row, "label": row["domain__name"]} for row in rows]


def years() -> list[int]:
    """The years that have statistics, newest first."""
    return list(
        JobStatistics.objects.filter(collection__isnull=True)
        .values_list("year", flat=True)
        .distinct()
        .order_by("-year")
    )


def change(current: int | float, previous: int | float) -> float | None:
    """The relative change from ``previous`` to ``current`` (None when there was nothing before)."""
    return (current - previous) / previous if previous else None
