"""The REST API of jobs: their frozen contents, live progress, sites, WARC files, stop and resubmit."""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from harvest.choices import JobFailure, JobStatus, SiteState, StopReason
from harvest.filtersets import (
    JobFilterSet,
    SiteCrawlFilterSet,
)
from harvest.models import (
    HarvestInfo,
    Job,
    JobConfiguration,
)
from harvest.selectors import job_sites, job_totals
from harvest.services import crawls, jobs, steering
from harvest.validators import trap_list
from webarchive.api.fields import CharField, DateTimeField, ModelSerializer
from webarchive.api.filters import refuse_unknown_parameters
from webarchive.api.viewsets import ReadOnlyViewSet
from webarchive.permissions import CHANGE, Area

# Serializers -----------------------------------------------------------------------------------


class JobSerializer(ModelSerializer):
    # Empty until the job fails (and for jobs that failed before the codes): the schema says so.
    failure = serializers.ChoiceField(choices=JobFailure.choices, allow_blank=True, read_only=True)

    class Meta:
        model = Job
        fields = [
            "id",
            "harvest_definition",
            "run_number",
            "channel",
            "queue",
            "status",
            "template",
            "template_version",
            "max_seconds",
            "domain_count",
            "expected_objects",
            "created_at",
            "submitted_at",
            "started_at",
            "ended_at",
            "errors",
            "failure",
            "resubmitted_as",
            "continuation_of",
        ]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """A job with what it froze (the template settings and traps) and links to its parts."""

    configurations_url = serializers.SerializerMethodField(
        help_text=_("The job's domain configurations, paginated.")
    )
    progress_url = serializers.SerializerMethodField(help_text=_("The job's progress summed over its sites."))
    sites_url = serializers.SerializerMethodField(help_text=_("The progress of each site, paginated."))
    files_url = serializers.SerializerMethodField(help_text=_("The job's WARC files, paginated."))

    class Meta(JobSerializer.Meta):
        fields = [
            *JobSerializer.Meta.fields,
            "dispatched_at",
            "stop_requested_at",
            "paused_at",
            "template_settings",
            "crawler_traps",
            "configurations_url",
            "progress_url",
            "sites_url",
            "files_url",
        ]
        read_only_fields = fields

    def _url(self, name: str, job) -> str:
        url = reverse(f"api:job-{name}", kwargs={"pk": job.pk})
        request = self.context.get("request")
        return request.build_absolute_uri(url) if request else url

    @extend_schema_field(OpenApiTypes.URI)
    def get_configurations_url(self, job) -> str:
        return self._url("configurations", job)

    @extend_schema_field(OpenApiTypes.URI)
    def get_progress_url(self, job) -> str:
        return self._url("progress", job)

    @extend_schema_field(OpenApiTypes.URI)
    def get_sites_url(self, job) -> str:
        return self._url("sites", job)

    @extend_schema_field(OpenApiTypes.URI)
    def get_files_url(self, job) -> str:
        return self._url("files", job)


class JobConfigurationSerializer(ModelSerializer):
    domain = serializers.SlugRelatedField(slug_field="name", read_only=True)
    configuration_name = CharField(source="configuration.name", read_only=True)
    seeds = serializers.ListField(source="seed_urls", child=CharField(), read_only=True)
    crawler_traps = serializers.SerializerMethodField(
        help_text=_("The domain's traps when the job was made.")
    )

    class Meta:
        model = JobConfiguration
        fields = [
            "id",
            "configuration",
            "configuration_name",
            "domain",
            "seeds",
            "max_objects",
            "max_bytes",
            "max_request_rate",
            "expected_objects",
            "crawler_traps",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=CharField()))
    def get_crawler_traps(self, entry) -> list:
        return trap_list(entry.crawler_traps)


class HarvestInfoSerializer(ModelSerializer):
    domain = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = HarvestInfo
        fields = [
            "id",
            "job",
            "configuration",
            "domain",
            "object_count",
            "byte_count",
            "stop_reason",
            "created_at",
        ]
        read_only_fields = fields


class SiteCountsSerializer(serializers.Serializer):
    total = serializers.IntegerField(source="sites_total")
    queued = serializers.IntegerField(source="sites_queued")
    running = serializers.IntegerField(source="sites_running")
    ended = serializers.IntegerField(source="sites_ended")


class JobProgressSerializer(serializers.Serializer):
    """A job's progress summed over its sites, as the site crawls last reported it."""

    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=JobStatus.choices)
    submitted_at = DateTimeField(allow_null=True)
    started_at = DateTimeField(allow_null=True)
    stop_requested_at = DateTimeField(allow_null=True)
    ended_at = DateTimeField(allow_null=True)
    sites = SiteCountsSerializer(source="*")
    urls_done = serializers.IntegerField()
    urls_queued = serializers.IntegerField()
    bytes_done = serializers.IntegerField()
    error_count = serializers.IntegerField()
    rate = serializers.FloatField(help_text=_("URLs per second, summed over the running sites."))


class SiteProgressSerializer(ModelSerializer):
    """One site crawl of a job: its state and the progress it last reported."""

    domain = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = JobConfiguration
        fields = [
            "id",
            "domain",
            "configuration",
            "state",
            "attempts",
            "worker",
            "started_at",
            "progress_at",
            "ended_at",
            "urls_done",
            "urls_queued",
            "bytes_done",
            "error_count",
            "rate",
            "current_url",
            "stop_reason",
            "error",
            "paused_at",
            "max_objects",
            "max_bytes",
            "biggest_queues",
        ]
        read_only_fields = fields


class RuleAddSerializer(serializers.Serializer):
    """A reject rule or a crawler trap added to a running job."""

    kind = serializers.ChoiceField(choices=[("reject", _("Reject rule")), ("trap", _("Crawler trap"))])
    rule = serializers.CharField(max_length=1000, trim_whitespace=True)


class SiteSteerSerializer(serializers.Serializer):
    """One site of a job, by domain name; a budget when it is changed (-1: no limit)."""

    domain = serializers.CharField(max_length=255)
    max_objects = serializers.IntegerField(min_value=-1, required=False)
    max_bytes = serializers.IntegerField(min_value=-1, required=False)


# Viewsets --------------------------------------------------------------------------------------


class JobViewSet(ReadOnlyViewSet):
    """Jobs: read them and their progress (curators and engineers); stop or resubmit them (engineers)."""

    # Curators read jobs (quality, planning); engineers also stop and resubmit them.
    area = Area.PLANNING
    action_permissions = {
        "resubmit": (CHANGE, None),
        "stop": (CHANGE, None),
        **dict.fromkeys(("pause", "resume", "rules", "site_pause", "site_resume", "budget"), (CHANGE, None)),
    }
    queryset = Job.objects.all()
    filterset_class = JobFilterSet

    def get_queryset(self):
        queryset = super().get_queryset()
        if self.action == "list":  # the frozen settings are for one job at a time
            queryset = queryset.defer("template_settings", "crawler_traps")
        return queryset

    def get_serializer_class(self):
        return JobSerializer if self.action == "list" else JobDetailSerializer

    def _detail(self, job, status_code=status.HTTP_200_OK):
        return Response(
            JobDetailSerializer(job, context=self.get_serializer_context()).data, status=status_code
        )

    @extend_schema(responses=JobConfigurationSerializer(many=True))
    @action(
        detail=True,
        methods=["get"],
        serializer_class=JobConfigurationSerializer,
        filterset_class=None,
    )
    def configurations(self, request, pk=None):
        """The job's domain configurations as it froze them: seeds, limits, traps (paginated)."""
        refuse_unknown_parameters(request)
        job = self.get_object()
        entries = (
            JobConfiguration.objects.filter(job=job)
            .select_related("domain", "configuration")
            .order_by("-expected_objects", "pk")
        )
        page = self.paginate_queryset(entries)
        return self.get_paginated_response(JobConfigurationSerializer(page, many=True).data)

    @extend_schema(responses=JobProgressSerializer)
    @action(detail=True, methods=["get"], serializer_class=JobProgressSerializer, filterset_class=None)
    def progress(self, request, pk=None):
        """The job's status and its progress summed over its sites, as they last reported it."""
        job = self.get_object()
        fields = ("id", "status", "submitted_at", "started_at", "stop_requested_at", "ended_at")
        progress = {name: getattr(job, name) for name in fields} | job_totals(job)
        return Response(JobProgressSerializer(progress).data)

    @extend_schema(
        responses=SiteProgressSerializer(many=True),
        parameters=[
            OpenApiParameter(
                "state",
                str,
                enum=SiteState.values,
                many=True,
                explode=True,
                description=_("State (repeatable)."),
            ),
            OpenApiParameter("stop_reason", str, enum=StopReason.values),
            OpenApiParameter("domain", str, description=_("Part of the domain name.")),
        ],
    )
    @action(detail=True, methods=["get"], serializer_class=SiteProgressSerializer, filterset_class=None)
    def sites(self, request, pk=None):
        """The progress of each site of the job, running ones first (paginated; filter by state)."""
        job = self.get_object()
        filterset = SiteCrawlFilterSet(request.query_params, queryset=job_sites(job), request=request)
        if not filterset.is_valid():
            raise ValidationError(filterset.errors)
        page = self.paginate_queryset(filterset.qs)
        return self.get_paginated_response(SiteProgressSerializer(page, many=True).data)

    @extend_schema(request=None, responses=JobDetailSerializer)
    @action(detail=True, methods=["post"], filterset_class=None)
    def stop(self, request, pk=None):
        """Stop a submitted or running job: its queued sites end at once, its running sites within seconds."""
        return self._detail(crawls.job_stop(job=self.get_object(), user=request.user))

    @extend_schema(request=None, responses=JobDetailSerializer)
    @action(detail=True, methods=["post"], filterset_class=None)
    def pause(self, request, pk=None):
        """Pause a running job: its sites take no more steps (their queues and politeness kept)."""
        return self._detail(steering.job_pause(job=self.get_object(), user=request.user))

    @extend_schema(request=None, responses=JobDetailSerializer)
    @action(detail=True, methods=["post"], filterset_class=None)
    def resume(self, request, pk=None):
        """Resume a paused job."""
        return self._detail(steering.job_resume(job=self.get_object(), user=request.user))

    @extend_schema(request=RuleAddSerializer, responses=JobDetailSerializer)
    @action(detail=True, methods=["post"], filterset_class=None, serializer_class=RuleAddSerializer)
    def rules(self, request, pk=None):
        """Add a reject rule or a crawler trap to a running job (to what is queued and to new links)."""
        given = RuleAddSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        job = self.get_object()
        return self._detail(steering.job_rule_add(job=job, user=request.user, **given.validated_data))

    def _site(self, request):
        given = SiteSteerSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        job = self.get_object()
        name = given.validated_data["domain"].strip().lower()
        entry = job.configurations.select_related("domain").filter(domain__name=name).first()
        if entry is None:
            raise ValidationError({"domain": [_("The job has no such site.")]})
        entry.job = job
        return entry, given.validated_data

    @extend_schema(request=SiteSteerSerializer, responses=SiteProgressSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="sites/pause",
        filterset_class=None,
        serializer_class=SiteSteerSerializer,
    )
    def site_pause(self, request, pk=None):
        """Pause one site of a job (``domain``)."""
        entry, _given = self._site(request)
        return Response(SiteProgressSerializer(steering.site_pause(entry=entry, user=request.user)).data)

    @extend_schema(request=SiteSteerSerializer, responses=SiteProgressSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="sites/resume",
        filterset_class=None,
        serializer_class=SiteSteerSerializer,
    )
    def site_resume(self, request, pk=None):
        """Resume one paused site of a job (``domain``)."""
        entry, _given = self._site(request)
        return Response(SiteProgressSerializer(steering.site_resume(entry=entry, user=request.user)).data)

    @extend_schema(request=SiteSteerSerializer, responses=SiteProgressSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="sites/budget",
        filterset_class=None,
        serializer_class=SiteSteerSerializer,
    )
    def budget(self, request, pk=None):
        """Change the budget of one site of a running job (``domain``, ``max_objects``, ``max_bytes``)."""
        entry, given = self._site(request)
        entry = steering.site_budget_change(
            entry=entry,
            max_objects=given.get("max_objects", entry.max_objects),
            max_bytes=given.get("max_bytes", entry.max_bytes),
            user=request.user,
        )
        return Response(SiteProgressSerializer(entry).data)

    @extend_schema(request=None, responses={201: JobDetailSerializer})
    @action(detail=True, methods=["post"], filterset_class=None)
    def resubmit(self, request, pk=None):
        """Run the job again as a new job with the same contents; answers with the new job."""
        return self._detail(
            jobs.job_resubmit(job=self.get_object(), user=request.user), status.HTTP_201_CREATED
        )


class HarvestInfoViewSet(ReadOnlyViewSet):
    """What each domain configuration of each job yielded, and why it stopped (Reports)."""

    area = Area.REPORTS
    queryset = HarvestInfo.objects.select_related("domain")
    serializer_class = HarvestInfoSerializer
    filterset_fields = ["job", "configuration", "domain", "stop_reason"]
