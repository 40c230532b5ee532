"""Reads of the job statistics for the reports: totals, groupings, distributions, top domains.

Every function takes a queryset of :class:`~harvest.models.JobStatistics` rows, already filtered
(:class:`harvest.filtersets.StatisticsFilterSet`): either whole jobs, or the shares of one
collection. Sums are one grouped query whatever the number of jobs. Domains counted once across
jobs come from the site crawls (harvest.statistics_sites), or, when the caller says the rows are
all the whole jobs of a period (``period``: every year or one, of every harvest definition or of
one; or with ``shares`` the collections' shares of those jobs), from that period's stored figures
(harvest.services.period_statistics): the dashboard, the unfiltered tables and the tables filtered
by a year and a harvest definition never read the millions of site crawls of a broad crawl.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import Count, Max, Sum
from django.db.models.functions import ExtractMonth
from django.utils.translation import gettext_lazy as _

from harvest import statistics_sites
from harvest.choices import HarvestKind, StopReason
from harvest.models import Dimension, JobStatistics, PeriodStatistics, StatisticLine
from harvest.services.period_statistics import TOP_KEPT, Period, period_statistics_current
from harvest.services.statistics import IP_ADDRESS, NO_ANSWER, SEED_SOURCES, UNKNOWN

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


def _finish(row: dict) -> dict:
    for name in SUMS:
        row[name] = row.get(name) or 0
    row["new_bytes"] = row["bytes"] - row["duplicate_bytes"]
    row["duplicate_share"] = row["duplicate_bytes"] / row["bytes"] if row["bytes"] else 0.0
    return row


def totals(statistics, period: Period | None = None) -> dict:
    """Sums over the statistics, with the distinct domains harvested and the number of jobs
    (``period``: the statistics are all the whole jobs of that period)."""
    row = statistics.aggregate(**_sums(), jobs=Count("job", distinct=True))
    if period and not period.shares:
        row["domains"] = period_statistics_current(period)[period].domains
    elif stored := _stored(period):
        row["domains"] = stored.collection_shares_domains
    else:
        row["domains"] = statistics_sites.domains_harvested(statistics)
    return _finish(row)


def _stored(period: Period | None):
    """The period's stored figures (None: no period, or a row computed before the groups' figures)."""
    if period is None:
        return None
    row = period_statistics_current(period)[period]
    return None if row.run_domains is None else row


# The stored map of domains per group, and which of the group's fields is its key there.
STORED_GROUPS = {"definition": ("definition_domains", 0), "run": ("run_domains", 2)}


def _group_domains(statistics, by: str, rows: list[dict], period: Period | None) -> dict[tuple, int]:
    """Distinct domains harvested per group: a domain crawled by several jobs of a group counts once."""
    fields = GROUPS[by][1]
    keys = {tuple(row[field] for field in fields) for row in rows}
    if period and period.shares != (by == "collection"):  # no stored figures for these groups
        period = None
    if by == "job":  # a job's statistics row counts its own domains (collection shares never overlap)
        return {tuple(row[field] for field in fields): row["job_domains"] for row in rows}
    if period and by == "year":  # every whole job of each year is in the rows
        current = period_statistics_current(*(Period(year, 0, period.definition) for (year,) in keys))
        return {key: current[Period(key[0], 0, period.definition)].domains for key in keys}
    if period and by == "month" and not period.definition:  # each month has its own row
        current = period_statistics_current(*(Period(*key) for key in keys))
        return {key: current[Period(*key)].domains for key in keys}
    if period and by == "kind":  # kept in every row, even one stored before the groups' figures
        kinds = period_statistics_current(period)[period].kind_domains
        return {(kind,): n for kind, n in kinds.items()}
    stored = _stored(period)
    if stored is not None and by == "month":
        return {key: stored.month_domains.get(f"{key[0]}-{key[1]}", 0) for key in keys}
    if stored is not None and by in STORED_GROUPS:
        name, index = STORED_GROUPS[by]
        return {key: getattr(stored, name).get(str(key[index]), 0) for key in keys}
    if stored is not None and by == "collection":
        return {key: stored.collection_domains.get(str(key[0]), 0) for key in keys}
    return statistics_sites.domains_by_group(statistics, fields)


def grouped(statistics, by: str, period: Period | None = None) -> list[dict]:
    """One row of sums per group (year, month, kind, harvest definition, run, job, collection)
    (``period``: the statistics are all the whole jobs of that period)."""
    fields = GROUPS[by][1]
    rows = statistics.annotate(month=ExtractMonth("ended_at")) if by == "month" else statistics
    rows = list(
        rows.values(*fields)
        .annotate(**_sums(), jobs=Count("job", distinct=True), job_domains=Sum("domains"))
        .order_by(*fields)
    )
    domains = _group_domains(statistics, by, rows, period)
    result = []
    for row in rows:
        del row["job_domains"]
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


def sizes_of_domains(statistics, period: Period | None = None) -> list[dict]:
    """Domains by size class over these statistics: each domain harvested (URLs > 0) counted once, in
    the class of all the URLs it yielded in them, so that the classes add up to the "domains
    harvested" of :func:`totals` (a job's own statistics keep its per-job classes)."""
    if period and not period.shares:
        return [dict(row) for row in period_statistics_current(period)[period].size_classes]
    return statistics_sites.domain_sizes(statistics)


def distribution(statistics, dimension: str, period: Period | None = None) -> list[dict]:
    """URLs, bytes and domains per value of one dimension, with each value's share of the URLs."""
    if dimension == Dimension.SIZE_CLASS:
        rows = sizes_of_domains(statistics, period)  # smallest class first
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


def top_domains(statistics, *, by: str = "urls", limit: int = 20, period: Period | None = None) -> list[dict]:
    """The domains that yielded the most URLs (or bytes) over these statistics."""
    if period and not period.shares and limit <= TOP_KEPT:
        return [dict(row) for row in period_statistics_current(period)[period].top_domains[by][:limit]]
    return statistics_sites.top_domains(statistics, by=by, limit=limit)


def period_of(filterset) -> Period | None:
    """The period whose whole jobs (or, for the table by collection, whose jobs' collection shares)
    a valid filter set selects: a year or every year, of one harvest definition or of all; None when
    it selects anything else (a collection, a run, dates, a kind of crawl…)."""
    given = {name for name, value in filterset.form.cleaned_data.items() if value not in (None, "")}
    if given - {"year", "harvest_definition"}:
        return None
    data = filterset.form.cleaned_data
    definition = data.get("harvest_definition")
    return Period(
        data.get("year") or 0, 0, definition.pk if definition else 0, shares=filterset.by_collection
    )


def state() -> str:
    """What the statistics are now, in a few characters: changes whenever job statistics are computed
    (again) or removed (their rows are replaced, so the newest id moves), whenever a period's domain
    figures are (those of every harvest definition: a definition's own are on no dashboard), and with
    the size classes."""
    row = JobStatistics.objects.aggregate(n=Count("pk"), last=Max("pk"))
    periods = PeriodStatistics.objects.filter(harvest_definition=None).aggregate(
        n=Count("pk"), last=Max("computed_at")
    )
    last_period = periods["last"].timestamp() if periods["last"] else 0
    bounds = ",".join(map(str, settings.REPORT_SIZE_CLASSES))
    return f"{row['n']}-{row['last'] or 0}-{periods['n']}-{last_period}-{bounds}"


def stale_period(period: Period):
    """When the period's domain figures were computed, if its statistics have changed since (None if
    they are up to date): the figures shown are as of then, and being brought up to date."""
    row = period_statistics_current(period)[period]
    return row.computed_at if row.stale else None


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
