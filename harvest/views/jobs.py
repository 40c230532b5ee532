"""Job pages (Operations): the list, one job with its frozen contents, and resubmission (engineers)."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from harvest.choices import JobStatus
from harvest.filtersets import JobFilterSet
from harvest.models import Job
from harvest.services.jobs import JOB_TRANSITIONS, job_resubmit
from webarchive.permissions import CHANGE, Area, can
from webarchive.views import AreaRequiredMixin, ObjectDetailView, ObjectListView

ENTRIES_PER_PAGE = 50


class JobListView(ObjectListView):
    area = Area.PLANNING
    queryset = Job.objects.select_related("harvest_definition", "channel")
    filterset_class = JobFilterSet
    template_name = "harvest/job_list.html"
    columns: list[str] = []  # the template lays out its own table


class JobDetailView(ObjectDetailView):
    area = Area.PLANNING
    queryset = Job.objects.select_related(
        "harvest_definition", "run", "channel", "template", "resubmitted_as", "continuation_of"
    )
    template_name = "harvest/job_detail.html"
    fields = [
        "status",
        "channel",
        "queue",
        "domain_count",
        "expected_objects",
        "max_seconds",
        "created_at",
        "submitted_at",
        "started_at",
        "ended_at",
        "errors",
    ]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        job = self.object
        entries = job.configurations.select_related("domain", "configuration").order_by(
            "-expected_objects", "pk"
        )
        context.update(
            {
                "entry_page": Paginator(entries, ENTRIES_PER_PAGE).get_page(self.request.GET.get("page")),
                "settings_rows": sorted((job.template_settings or {}).items()),
                "resubmission_of": Job.objects.filter(resubmitted_as=job).first(),
                "may_resubmit": can(self.request.user, CHANGE, Job)
                and JobStatus.RESUBMITTED in JOB_TRANSITIONS[job.status],
            }
        )
        return context


class JobResubmitView(AreaRequiredMixin, View):
    """POST: run a failed (or never started) job again as a new job (engineers)."""

    area = Area.PLANNING
    model_permission = (CHANGE, Job)
    permission_denied_message = gettext_lazy("Only crawl engineers may resubmit jobs.")

    def post(self, request, pk):
        job = get_object_or_404(Job, pk=pk)
        try:
            copy = job_resubmit(job=job, user=request.user)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(job)
        messages.success(request, _("%(job)s was resubmitted as %(copy)s.") % {"job": job, "copy": copy})
        return redirect(copy)


urlpatterns = [
    path("jobs/", JobListView.as_view(), name="job_list"),
    path("jobs/<int:pk>/", JobDetailView.as_view(), name="job_detail"),
    path("jobs/<int:pk>/resubmit/", JobResubmitView.as_view(), name="job_resubmit"),
]
