"""The tables of the reports: one definition per table serves the page, its CSV and the year's export.

A table is rows of the statistics selectors with named columns. The CSV column names are stable
English keys (documented in docs/reports.md), never translated; the page shows the same rows and
numbers, with labels and sizes made readable (each cell keeps its raw number in ``data-value``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.template.defaultfilters import filesizeformat
from django.utils.formats import number_format
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

from harvest import selectors_statistics as stats
from harvest.models import Dimension
from harvest.services.period_statistics import Period

TEXT, COUNT, BYTES, SHARE, SECONDS = "text", "count", "bytes", "share", "seconds"


@dataclass(frozen=True)
class Column:
    name: str  # the CSV header (stable)
    label: str
    field: str  # the key in a selector's row
    kind: str = COUNT


GROUP_COLUMNS = [
    Column("jobs", _("Jobs"), "jobs"),
    Column("urls", _("URLs"), "urls"),
    Column("bytes", _("Bytes"), "bytes", BYTES),
    Column("new_bytes", _("New bytes"), "new_bytes", BYTES),
    Column("deduplicated_urls", _("Deduplicated URLs"), "duplicate_urls"),
    Column("deduplicated_bytes", _("Deduplicated bytes"), "duplicate_bytes", BYTES),
    Column("domains", _("Domains harvested"), "domains"),
    Column("site_crawls", _("Site crawls"), "sites"),
    Column("domains_cut_by_budget", _("Cut by their budget"), "budget_stopped"),
    Column("errors", _("Errors"), "errors"),
    Column("duration_seconds", _("Crawl time"), "duration_seconds", SECONDS),
]
DIMENSION_COLUMNS = [
    Column("urls", _("URLs"), "urls"),
    Column("url_share", _("Share of URLs"), "share", SHARE),
    Column("bytes", _("Bytes"), "bytes", BYTES),
    Column("domains", _("Domains"), "domains"),
]
DOMAIN_COLUMNS = [
    Column("urls", _("URLs"), "urls"),
    Column("bytes", _("Bytes"), "bytes", BYTES),
    Column("jobs", _("Jobs"), "jobs"),
]

# name -> title
TABLES: dict[str, str] = {
    **{f"by-{group}": format_lazy(_("Totals by {}"), label) for group, (label, _f) in stats.GROUPS.items()},
    **{dimension.value: format_lazy(_("By {}"), dimension.label) for dimension in Dimension},
    "top-domains-urls": _("Top domains by URLs"),
    "top-domains-bytes": _("Top domains by bytes"),
}
TABLE_CHOICES = list(TABLES.items())


@dataclass
class ReportTable:
    name: str
    title: str
    key: Column  # the first column: what each row is
    columns: list[Column]
    rows: list[dict]

    @property
    def all_columns(self) -> list[Column]:
        return [self.key, *self.columns]

    def csv_rows(self) -> Iterator[list]:
        """The header, then the rows, with raw numbers (shares as fractions to 4 places)."""
        yield [column.name for column in self.all_columns]
        for row in self.rows:
            yield [csv_value(column, row) for column in self.all_columns]

    def cells(self) -> list[list[tuple[Column, object, str]]]:
        """Per row, per column: (column, its CSV value, what the page shows: a value's label for a key)."""
        return [
            [(self.key, csv_value(self.key, row), str(row.get("label", row.get(self.key.field))))]
            + [
                (column, csv_value(column, row), shown(column, row.get(column.field)))
                for column in self.columns
            ]
            for row in self.rows
        ]


def shown(column: Column, value) -> str:
    """A value as the page shows it: sizes in kB/MB, shares in %, durations in h min."""
    if value is None:
        return ""
    if column.kind == BYTES:
        return filesizeformat(value)
    if column.kind == SHARE:
        return f"{value:.1%}"
    if column.kind == SECONDS:
        hours, rest = divmod(int(value), 3600)
        return f"{hours} h {rest // 60:02d} min" if hours else f"{rest // 60} min {rest % 60:02d} s"
    if column.kind == COUNT:
        return number_format(value, force_grouping=True)  # 1,234 in English, 1 234 in French
    return str(value)


def csv_value(column: Column, row: dict):
    value = row.get(column.field)
    if column.kind == SHARE:
        return f"{value:.4f}"
    return "" if value is None else value


def report_table(name: str, statistics, *, limit: int = 20, period: Period | None = None) -> ReportTable:
    """The table ``name`` (a key of :data:`TABLES`) over a filtered queryset of job statistics
    (``period``: they are all the whole jobs of that period, whose stored domain figures are used)."""
    title = str(TABLES[name])
    if name.startswith("by-"):
        group = name.removeprefix("by-")
        key = Column("group", stats.GROUPS[group][0], "label", TEXT)
        return ReportTable(name, title, key, GROUP_COLUMNS, stats.grouped(statistics, group, period))
    if name.startswith("top-domains-"):
        rows = stats.top_domains(statistics, by=name.removeprefix("top-domains-"), limit=limit, period=period)
        return ReportTable(name, title, Column("domain", _("Domain"), "label", TEXT), DOMAIN_COLUMNS, rows)
    dimension = Dimension(name)
    rows = stats.distribution(statistics, dimension, period)
    key = Column("value", dimension.label, "key", TEXT)
    return ReportTable(name, title, key, DIMENSION_COLUMNS, rows)
