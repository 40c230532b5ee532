"""The Reports area: the manager dashboard, the statistics tables with their CSV, comparisons.

Everything here reads stored job statistics (harvest.models.statistics), never WARC files.
A table's CSV is the same view with ``export=csv``: the same filters, the same rows, streamed by the
application's one CSV writer (webarchive.csvfiles), which escapes the cells a spreadsheet would run.
"""

from __future__ import annotations

import io
import zipfile

from django.core.cache import cache
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.urls import path, reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.generic import TemplateView

from harvest import charts
from harvest import selectors_statistics as stats
from harvest.filtersets import StatisticsFilterSet
from harvest.forms.reports import CompareForm, TableChoiceForm, YearForm
from harvest.models import Dimension, JobStatistics
from harvest.reports import TABLE_CHOICES, TABLES, ReportTable, report_table
from harvest.services.period_statistics import Period
from webarchive.csvfiles import csv_response, csv_stream
from webarchive.forms import add_bootstrap_classes
from webarchive.permissions import VIEW, Area
from webarchive.views import AreaRequiredMixin

DASHBOARD_CACHE_SECONDS = 24 * 3600  # a rendered dashboard is dropped by any new statistics anyway
# What the dashboard draws: (table, chart kind, the column drawn, how many rows at most).
DASHBOARD_CHARTS = [
    ("mime-family", "pie", "urls", 8),
    ("status-class", "bar", "urls", 8),
    ("tld", "bar", "urls", 10),
    ("size-class", "bar", "domains", 10),
    ("seed-source", "pie", "urls", 8),
    ("by-kind", "bar", "bytes", 4),
    ("stop-reason", "bar", "domains", 10),
    ("top-domains-bytes", "bar", "bytes", 10),
]


class ReportsMixin(AreaRequiredMixin):
    area = Area.REPORTS
    model_permission = (VIEW, JobStatistics)


def invalid_filters(filterset: StatisticsFilterSet) -> HttpResponse:
    # Exporting everything instead of what was asked for would be worse than nothing.
    return HttpResponse(
        _("The filters are not valid, nothing was exported: %(problems)s")
        % {"problems": filterset.error_text()},
        status=400,
        content_type="text/plain; charset=utf-8",
    )


class StatisticsView(ReportsMixin, TemplateView):
    """Any statistic, filtered by period, harvest definition, collection and kind; CSV of the same."""

    template_name = "harvest/reports_statistics.html"

    def get(self, request, *args, **kwargs):
        choice = TableChoiceForm(request.GET)
        add_bootstrap_classes(choice, small=True)
        self.table_name = (choice.is_valid() and choice.cleaned_data["table"]) or "by-year"
        self.filterset = StatisticsFilterSet(
            request.GET,
            queryset=JobStatistics.objects.all(),
            by_collection=self.table_name == "by-collection",
        )
        add_bootstrap_classes(self.filterset.form, small=True)
        self.choice = choice
        if request.GET.get("export") == "csv":
            if not choice.is_valid() or not self.filterset.is_valid():
                if not choice.is_valid():
                    return HttpResponse(
                        _("Unknown table: nothing was exported."),
                        status=400,
                        content_type="text/plain; charset=utf-8",
                    )
                return invalid_filters(self.filterset)
            table = report_table(self.table_name, self.filterset.qs, period=stats.period_of(self.filterset))
            stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
            return csv_response(table.csv_rows(), f"statistics-{self.table_name}-{stamp}.csv")
        return super().get(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        valid = self.choice.is_valid() and self.filterset.is_valid()
        period = stats.period_of(self.filterset) if valid else None
        table = report_table(self.table_name, self.filterset.qs, period=period) if valid else None
        query = self.request.GET.copy()
        query["export"] = "csv"
        query["table"] = self.table_name
        context.update(
            {
                "filterset": self.filterset,
                "choice": self.choice,
                "table": table,
                "totals": stats.totals(self.filterset.qs, period) if valid else None,
                "domains_as_of": stats.stale_period(period) if period else None,
                "csv_url": f"{self.request.path}?{query.urlencode()}",
            }
        )
        return context


def statistics_url(table: str, **filters) -> str:
    query = {"table": table, **{name: value for name, value in filters.items() if value not in (None, "")}}
    return f"{reverse('reports:statistics')}?{urlencode(query)}"


class DashboardView(ReportsMixin, TemplateView):
    """The year's totals against last year's, their trend, and charts of the distributions.

    Its figures and charts change only when statistics do: they are rendered once per year shown,
    language and state of the statistics (DASHBOARD_CACHE_SECONDS at most), and read from the cache
    by every other view; any job statistics computed or removed changes the state, hence the key.
    """

    template_name = "harvest/reports_dashboard.html"
    body_template_name = "harvest/reports_dashboard_body.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        form = YearForm(self.request.GET)
        add_bootstrap_classes(form, small=True)
        years = stats.years()
        year = form.cleaned_data.get("year") if form.is_valid() else None
        year = year or (years[0] if years else timezone.localtime().year)
        key = f"reports-dashboard:{year}:{get_language()}:{stats.state()}"
        context.update(
            {
                "form": form,
                "year": year,
                "years": years,
                "body": mark_safe(cache.get_or_set(key, lambda: self.body(year), DASHBOARD_CACHE_SECONDS)),  # noqa: S308 (our own template)
                "export_url": reverse("reports:year_export", kwargs={"year": year}),
            }
        )
        return context

    def body(self, year: int) -> str:
        """The figures, the trend and the charts of ``year``, rendered."""
        whole = JobStatistics.objects.filter(collection__isnull=True)
        this_year = whole.filter(year=year)
        current = stats.totals(this_year, Period(year))
        previous = stats.totals(whole.filter(year=year - 1), Period(year - 1))
        figures = [
            (_("URLs collected"), "urls", charts.COUNT_UNIT),
            (_("Bytes collected"), "bytes", "B"),
            (_("New bytes"), "new_bytes", "B"),
            (_("Deduplicated bytes"), "duplicate_bytes", "B"),
            (_("Domains harvested"), "domains", charts.COUNT_UNIT),
            (_("Jobs"), "jobs", charts.COUNT_UNIT),
        ]
        context = {
            "year": year,
            "domains_as_of": stats.stale_period(Period(year)),
            "figures": [
                {
                    "label": label,
                    "field": field,
                    "unit": unit,
                    "current": current[field],
                    "previous": previous[field],
                    "change": stats.change(current[field], previous[field]),
                }
                for label, field, unit in figures
            ],
            "trend": self.trend(whole, year),
            "charts": [self.chart(this_year, year, *spec) for spec in DASHBOARD_CHARTS],
        }
        return render_to_string(self.body_template_name, context, request=self.request)

    def trend(self, whole, year: int) -> dict:
        by_year = report_table("by-year", whole, period=Period())
        by_month = report_table("by-month", whole.filter(year=year), period=Period(year))
        labels = [row["label"] for row in by_year.rows]
        return {
            "years": by_year,
            "years_chart": charts.line_chart(
                labels,
                {_("URLs"): [row["urls"] for row in by_year.rows]},
                title=_("URLs collected per year"),
            ),
            "years_csv": statistics_url("by-year", export="csv"),
            "months": by_month,
            "months_chart": charts.bar_chart(
                [row["label"] for row in by_month.rows],
                [row["bytes"] for row in by_month.rows],
                title=_("Bytes collected per month of %(year)s") % {"year": year},
                unit="B",
            ),
            "months_csv": statistics_url("by-month", year=year, export="csv"),
        }

    def chart(self, statistics, year: int, name: str, kind: str, field: str, limit: int) -> dict:
        table = report_table(name, statistics, limit=limit, period=Period(year))
        rows = table.rows[:limit]
        labels = [str(row.get("label", row.get("key"))) for row in rows]
        values = [row[field] for row in rows]
        title = f"{TABLES[name]} ({_(field_label(field))})"
        unit = "B" if field == "bytes" else charts.COUNT_UNIT
        svg = (
            charts.pie_chart(labels, values, title=title, other=_("other"))
            if kind == "pie"
            else charts.bar_chart(labels, values, title=title, unit=unit)
        )
        return {
            "name": name,
            "title": title,
            "svg": svg if rows else "",
            "table": table,
            "csv_url": statistics_url(name, year=year, export="csv"),
            "page_url": statistics_url(name, year=year),
        }


def field_label(field: str) -> str:
    return {"urls": "URLs", "bytes": "bytes", "domains": "domains"}[field]


class CompareView(ReportsMixin, TemplateView):
    """This year against last, selective against broad, two runs of one harvest definition."""

    template_name = "harvest/reports_compare.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        form = CompareForm(self.request.GET)
        add_bootstrap_classes(form, small=True)
        context["form"] = form
        if not form.is_valid():
            return context
        years = stats.years()
        year = form.cleaned_data.get("year") or (years[0] if years else timezone.localtime().year)
        dimension = form.cleaned_data.get("dimension") or Dimension.MIME_FAMILY
        whole = JobStatistics.objects.filter(collection__isnull=True)
        context.update(
            {
                "year": year,
                "dimension": Dimension(dimension),
                "years": side_by_side(
                    stats.distribution(whole.filter(year=year), dimension, Period(year)),
                    stats.distribution(whole.filter(year=year - 1), dimension, Period(year - 1)),
                ),
                "year_totals": (
                    stats.totals(whole.filter(year=year), Period(year)),
                    stats.totals(whole.filter(year=year - 1), Period(year - 1)),
                ),
                "kinds": report_table("by-kind", whole.filter(year=year), period=Period(year)),
            }
        )
        definition = form.cleaned_data.get("harvest_definition")
        run_a, run_b = form.cleaned_data.get("run_a"), form.cleaned_data.get("run_b")
        if definition and run_a and run_b:
            runs = whole.filter(harvest_definition=definition)
            first, second = runs.filter(run__number=run_a), runs.filter(run__number=run_b)
            existing = set(definition.runs.filter(number__in=[run_a, run_b]).values_list("number", flat=True))
            missing = [
                {"number": number, "exists": number in existing}
                for number, found in ((run_a, first.exists()), (run_b, second.exists()))
                if not found
            ]
            context["runs"] = {
                "definition": definition,
                "numbers": (run_a, run_b),
                # A run that does not exist (or has no statistics yet) is said so; nothing is compared.
                "missing": missing,
                "totals": (stats.totals(first), stats.totals(second)),
                "found": (first.exists(), second.exists()),
                "rows": side_by_side(
                    stats.distribution(first, dimension), stats.distribution(second, dimension)
                ),
            }
        return context


def side_by_side(current: list[dict], previous: list[dict]) -> list[dict]:
    """Two distributions by value: the URLs of each and the change."""
    before = {row["key"]: row for row in previous}
    rows = []
    for row in current:
        other = before.pop(row["key"], None)
        rows.append(_pair(row["label"], row, other))
    rows += [_pair(row["label"], None, row) for row in before.values()]
    return rows


def _pair(label, current: dict | None, previous: dict | None) -> dict:
    now = current["urls"] if current else 0
    then = previous["urls"] if previous else 0
    return {
        "label": label,
        "current": now,
        "previous": then,
        "current_bytes": current["bytes"] if current else 0,
        "previous_bytes": previous["bytes"] if previous else 0,
        "change": stats.change(now, then),
    }


class YearExportView(ReportsMixin, TemplateView):
    """Every table of the reports for one year: a zip of one CSV per table (``statistics-2026-mime.csv``
    …), each with its own columns, as a spreadsheet opens them."""

    def get(self, request, *args, year: int, **kwargs):
        statistics = JobStatistics.objects.filter(year=year)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, rows in year_tables(statistics, year):
                archive.writestr(f"statistics-{year}-{name}.csv", "".join(csv_stream(rows)).encode("utf-8"))
        response = HttpResponse(buffer.getvalue(), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="statistics-{year}.zip"'
        return response


YEAR_TABLES = [name for name, _title in TABLE_CHOICES if name not in ("by-year",)]


def year_tables(statistics, year: int):
    """(table name, its CSV rows, as the table's own download gives them) for every table of the year
    (whole jobs; collections for by-collection)."""
    whole = statistics.filter(collection__isnull=True)
    for name in YEAR_TABLES:
        if name == "by-collection":
            table: ReportTable = report_table(name, statistics.filter(collection__isnull=False), limit=100)
        else:
            table = report_table(name, whole, limit=100, period=Period(year))
        yield name, table.csv_rows()


app_name = "reports"

urlpatterns = [
    path("dashboard/", DashboardView.as_view(), name="dashboard"),
    path("statistics/", StatisticsView.as_view(), name="statistics"),
    path("compare/", CompareView.as_view(), name="compare"),
    path("export/<int:year>/", YearExportView.as_view(), name="year_export"),
]
