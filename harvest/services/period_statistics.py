"""Period statistics: a year's (or month's) figures counted by domain, kept up to date as jobs end.

The reports' domain figures (domains harvested, by kind of crawl, by size class; the top domains)
need every site crawl of the period, millions in a year with a broad crawl: seconds of SQL. They are
computed once per change instead of once per view: when a job's statistics are computed, its year
and month are refreshed on a worker (``harvest.refresh_period_statistics``). A row says what it was
computed from (how many job statistics rows of the period and the newest one, with the size classes
of the time), so a reader tells in one indexed count whether it is still right; one that is not (a
refresh still on its way, statistics computed again elsewhere) is shown as of when it was computed
and sent for refreshing.

A period is also kept for one harvest definition (every year, or one year): the tables filtered by
a definition read it, refreshed the same way when a job of the definition gets its statistics (its
year) or when read stale (every year). Within each period, the domains per harvest definition, run,
collection and month are kept too (one grouped count each), for the tables grouped by them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Q
from django.db.models.functions import ExtractMonth
from django.utils import timezone

from harvest import statistics_sites
from harvest.models import JobStatistics, PeriodStatistics
from webarchive.tasks import enqueue

TOP_KEPT = 100  # top domains kept per period: the year's export shows 100, the dashboard 10


@dataclass(frozen=True)
class Period:
    """Every year (year 0), one year (month 0) or one month of a year; of every harvest definition
    (definition 0) or of one (every year or one year). ``shares``: the statistics read with it are
    the collections' shares of the period's jobs, not the whole jobs (the same stored row)."""

    year: int = 0
    month: int = 0
    definition: int = 0
    shares: bool = field(default=False, compare=False)

    def __post_init__(self):
        if not 0 <= self.month <= 12 or (self.month and not self.year):
            raise ValueError(f"not a period: year {self.year}, month {self.month}")
        if self.definition and self.month:
            raise ValueError(f"not a period: a harvest definition's month ({self.year}-{self.month})")

    @property
    def task_arguments(self) -> tuple[int, ...]:
        """The arguments of harvest.refresh_period_statistics for this period."""
        return (self.year, self.month, self.definition) if self.definition else (self.year, self.month)

    def statistics(self):
        """The whole-job statistics of the period (collection shares excluded)."""
        rows = JobStatistics.objects.filter(collection__isnull=True)
        if self.definition:
            rows = rows.filter(harvest_definition=self.definition)
        if self.year:
            rows = rows.filter(year=self.year)
        if self.month:
            rows = rows.annotate(month=ExtractMonth("ended_at")).filter(month=self.month)
        return rows


def _counted(rows, fields: tuple[str, ...], wanted: set[Period], period_of) -> dict[Period, tuple[int, int]]:
    """(count, newest id) of the ``wanted`` periods, from ``rows`` grouped by ``fields`` (``period_of``:
    the period of one group's row); (0, 0) for a period without statistics."""
    grouped = rows.values(*fields).annotate(n=Count("pk"), last=Max("pk")).order_by()
    found = {period_of(row): (row["n"], row["last"]) for row in grouped}
    return {period: found.get(period, (0, 0)) for period in wanted}


def _fingerprints(periods: set[Period]) -> dict[Period, tuple[int, int]]:
    """(count, newest id) of each period's job statistics: one grouped query per kind of period."""
    result = {}
    whole = JobStatistics.objects.filter(collection__isnull=True)
    if Period() in periods:
        row = whole.aggregate(n=Count("pk"), last=Max("pk"))
        result[Period()] = (row["n"], row["last"] or 0)
    if of_definitions := {period for period in periods if period.definition and not period.year}:
        rows = whole.filter(harvest_definition__in={period.definition for period in of_definitions})
        result |= _counted(
            rows,
            ("harvest_definition",),
            of_definitions,
            lambda row: Period(definition=row["harvest_definition"]),
        )
    if of_years := {period for period in periods if period.definition and period.year}:
        rows = whole.filter(
            harvest_definition__in={period.definition for period in of_years},
            year__in={period.year for period in of_years},
        )
        result |= _counted(
            rows,
            ("harvest_definition", "year"),
            of_years,
            lambda row: Period(row["year"], 0, row["harvest_definition"]),
        )
    periods = {period for period in periods if not period.definition}
    if years := {period for period in periods if period.year and not period.month}:
        rows = whole.filter(year__in={period.year for period in years})
        result |= _counted(rows, ("year",), years, lambda row: Period(row["year"]))
    if months := {period for period in periods if period.month}:
        rows = whole.filter(year__in={period.year for period in months}).annotate(
            month=ExtractMonth("ended_at")
        )
        result |= _counted(rows, ("year", "month"), months, lambda row: Period(row["year"], row["month"]))
    return result


def period_statistics_current(*periods: Period, wait: bool = False) -> dict[Period, PeriodStatistics]:
    """Each period's row. One never computed is computed now. One whose job statistics have changed
    since is sent for computing again on a worker and returned as it is, marked ``stale`` (its
    ``computed_at`` says as of when): a page never spends a refresh's seconds of SQL, and the
    workers' task refreshes it within moments of the change. With ``wait``, stale rows are computed
    again now (the task itself)."""
    wanted = set(periods)
    fingerprints = _fingerprints(wanted)
    definitions = {period.definition for period in wanted if period.definition}
    rows = {}
    for row in PeriodStatistics.objects.filter(
        Q(harvest_definition__isnull=True) | Q(harvest_definition__in=definitions),
        year__in={period.year for period in wanted},
        month__in={period.month for period in wanted},
    ):
        rows[Period(row.year, row.month, row.harvest_definition_id or 0)] = row
    result = {}
    for period in wanted:
        row = rows.get(period)
        fresh = (
            row is not None
            and (row.statistics_count, row.statistics_last) == fingerprints[period]
            and row.size_bounds == settings.REPORT_SIZE_CLASSES
            and row.run_domains is not None  # computed before the groups' figures were kept
        )
        if row is None or (wait and not fresh):
            row = period_statistics_refresh(
                year=period.year, month=period.month, definition=period.definition
            )
        elif not fresh:
            row.stale = True
            # Once per change of the period's statistics, however many pages see it stale meanwhile.
            count, last = fingerprints[period]
            key = f"period-refresh:{period.year}:{period.month}:{period.definition}:{count}:{last}"
            if cache.add(key, 1, 600):
                enqueue("harvest.refresh_period_statistics", *period.task_arguments)
        result[period] = row
    return result


def _by_id(counts: dict[tuple, int]) -> dict[str, int]:
    """Domains per group of one id, keyed by the id as a string (JSON keys); sites of no group left out."""
    return {str(key): n for (key,), n in counts.items() if key is not None}


def period_statistics_refresh(*, year: int, month: int = 0, definition: int = 0) -> PeriodStatistics:
    """Compute a period's figures from its site crawls and store them (replacing the earlier ones)."""
    period = Period(year, month, definition)
    # Read before the figures: a job whose statistics land in between is then counted by the figures
    # but not by the fingerprint, so the row looks stale and is computed again, never the reverse.
    count, last = _fingerprints({period})[period]
    statistics = period.statistics()
    bounds = list(settings.REPORT_SIZE_CLASSES)
    by_group = statistics_sites.domains_by_group
    figures = {
        "statistics_count": count,
        "statistics_last": last,
        "size_bounds": bounds,
        "domains": statistics_sites.domains_harvested(statistics),
        "kind_domains": {kind: n for (kind,), n in by_group(statistics, ("kind",)).items()},
        "size_classes": statistics_sites.domain_sizes(statistics, bounds),
        "top_domains": {
            by: statistics_sites.top_domains(statistics, by=by, limit=TOP_KEPT) for by in ("urls", "bytes")
        },
        "definition_domains": _by_id(by_group(statistics, ("harvest_definition",))),
        "run_domains": _by_id(by_group(statistics, ("run",))),
        "collection_domains": _by_id(by_group(statistics, ("collection",))),
        "collection_shares_domains": statistics_sites.domains_in_collections(statistics),
        "month_domains": {
            f"{year_}-{month_}": n for (year_, month_), n in by_group(statistics, ("year", "month")).items()
        },
    }
    scope = {"year": year, "month": month, "harvest_definition_id": definition or None}
    try:
        with transaction.atomic():
            row, _new = PeriodStatistics.objects.update_or_create(**scope, defaults=figures)
    except IntegrityError:  # another refresh created the row meanwhile: ours is as new as its
        PeriodStatistics.objects.filter(**scope).update(**figures, computed_at=timezone.now())
        row = PeriodStatistics.objects.get(**scope)
    return row
