"""The REST API of the statistics: the stored rows per job, their totals, and every report table."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from harvest import selectors_statistics as stats
from harvest.filtersets import StatisticsFilterSet
from harvest.models import JobStatistics, StatisticLine
from harvest.reports import TABLES, csv_value, report_table
from webarchive.api.fields import ModelSerializer
from webarchive.api.viewsets import ReadOnlyViewSet
from webarchive.permissions import Area


class StatisticLineSerializer(ModelSerializer):
    class Meta:
        model = StatisticLine
        fields = ["dimension", "key", "urls", "bytes", "domains"]
        read_only_fields = fields


class JobStatisticsSerializer(ModelSerializer):
    new_bytes = serializers.IntegerField(read_only=True)
    lines = StatisticLineSerializer(many=True, read_only=True)

    class Meta:
        model = JobStatistics
        fields = [
            "id",
            "job",
            "collection",
            "harvest_definition",
            "run",
            "kind",
            "ended_at",
            "year",
            "urls",
            "bytes",
            "new_bytes",
            "duplicate_urls",
            "duplicate_bytes",
            "errors",
            "domains",
            "sites",
            "budget_stopped",
            "duration_seconds",
            "computed_at",
            "lines",
        ]
        read_only_fields = fields


TABLE_PARAMETER = OpenApiParameter(
    "table",
    OpenApiTypes.STR,
    enum=list(TABLES),
    required=True,
    description="The report table (as on the page).",
)


class StatisticsViewSet(ReadOnlyViewSet):
    """Statistics of ended jobs (whole jobs, or with ``collection`` the share of one collection's sites)."""

    area = Area.REPORTS
    queryset = JobStatistics.objects.prefetch_related("lines").order_by("-ended_at", "job_id", "pk")
    serializer_class = JobStatisticsSerializer
    filterset_class = StatisticsFilterSet

    def _filtered(self, *, by_collection: bool = False):
        """The filtered statistics, and the period they are all the whole jobs of (or None)."""
        filterset = StatisticsFilterSet(
            self.request.query_params, queryset=self.get_queryset(), by_collection=by_collection
        )
        if not filterset.is_valid():
            raise ValidationError(filterset.errors)
        return filterset.qs, stats.period_of(filterset)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @action(detail=False, methods=["get"], filterset_class=None)
    def totals(self, request):
        """Sums over the filtered statistics, with the distinct domains harvested and the number of jobs."""
        return Response(stats.totals(*self._filtered()))

    @extend_schema(parameters=[TABLE_PARAMETER], responses=OpenApiTypes.OBJECT)
    @action(detail=False, methods=["get"], filterset_class=None)
    def table(self, request):
        """A report table over the filtered statistics: the rows and stable column names of its CSV."""
        name = request.query_params.get("table", "")
        if name not in TABLES:
            raise ValidationError({"table": [f"Choose one of: {', '.join(TABLES)}."]})
        statistics, period = self._filtered(by_collection=name == "by-collection")
        table = report_table(name, statistics, period=period)
        columns = [column.name for column in table.all_columns]
        rows = [{column.name: csv_value(column, row) for column in table.all_columns} for row in table.rows]
        return Response({"table": name, "title": str(table.title), "columns": columns, "rows": rows})
