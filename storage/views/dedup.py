"""Deduplication pages (Operations, crawl engineers): the runs of the post-crawl pipeline, starting
one, following one (its stage, units, savings, validation), stopping and resuming it; and retiring
an original file whose deduplicated replacement is registered.

The run page's live part is an htmx fragment of the same URL, polling while the run is queued,
running or stopping (as the job pages do). Registration of a validated output is automatic.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import DetailView, View

from storage.forms import DedupRunForm
from storage.models import DedupRun, WarcFile
from storage.services.dedup_runs import (
    DEDUP_RUN_TRANSITIONS,
    allowed_roots,
    dedup_run_resume,
    dedup_run_start,
    dedup_run_stop,
    run_stages,
    warc_file_retire,
)
from storage.tables import DedupRunTable
from webarchive.permissions import ADD, CHANGE, Area
from webarchive.views import (
    AreaRequiredMixin,
    ObjectListView,
    PermittedActionsMixin,
    RestrictedQuerysetMixin,
    ServiceFormView,
    htmx_response,
)

POLL_SECONDS = 3


def dedup_run_offers(run: DedupRun) -> dict[str, bool]:
    """What a run's state lets its page offer (to those permitted to change runs): stopping it while
    it is queued, running or stopping (twice: at once), resuming it once it stopped or failed."""
    return {
        "stop": run.is_active,
        "resume": DedupRun.State.QUEUED in DEDUP_RUN_TRANSITIONS[run.state],
    }


class DedupAreaMixin(AreaRequiredMixin):
    area = Area.OPERATIONS


class DedupRunListView(PermittedActionsMixin, DedupAreaMixin, ObjectListView):
    """The runs, newest first."""

    queryset = DedupRun.objects.select_related("created_by")
    template_name = "storage/dedup_list.html"
    table_class = DedupRunTable
    actions = (ADD,)  # start a run


class DedupRunStartView(DedupAreaMixin, ServiceFormView):
    """Start a run on files of the archive (a job's, a definition's, a period's, read from the storage
    nodes) and files under the allowed directories; it is sent to the workers."""

    model_permission = (ADD, DedupRun)
    permission_denied_message = gettext_lazy("Only crawl engineers may start deduplication runs.")
    form_class = DedupRunForm
    template_name = "storage/dedup_start.html"
    title = gettext_lazy("Start a deduplication run")
    submit_label = gettext_lazy("Start")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["roots"] = allowed_roots()
        return context

    def perform(self, form):
        data = form.cleaned_data
        run = dedup_run_start(
            inputs=data["inputs"],
            archive=form.archive_selection(),
            out_dir=data["out_dir"],
            options={"recompute_digests": data["recompute_digests"], "include_empty": data["include_empty"]},
            dry_run=data["dry_run"],
            user=self.request.user,
        )
        messages.success(self.request, _("%(run)s was queued.") % {"run": run})
        return run


class DedupRunDetailView(PermittedActionsMixin, DedupAreaMixin, RestrictedQuerysetMixin, DetailView):
    """A run: its state and stage, the units of the stage, its savings and its validation report."""

    queryset = DedupRun.objects.select_related("created_by")
    actions = (CHANGE,)  # stop, resume
    template_name = "storage/dedup_detail.html"
    context_object_name = "run"

    def get_template_names(self):
        return ["storage/dedup_live.html" if self.request.htmx else self.template_name]

    def render_to_response(self, context, **kwargs):
        return htmx_response(self.request, super().render_to_response(context, **kwargs))

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        run = self.object
        stages = run_stages(run)
        context.update(
            {
                "live": run.is_active,
                "poll_seconds": POLL_SECONDS,
                "percent": run.percent_done,
                "stages": stages,
                "stage_number": stages.index(run.stage) + 1 if run.stage in stages else None,
                "offers": dedup_run_offers(run),
                "outputs": WarcFile.objects.filter(
                    origin=WarcFile.Origin.DEDUPLICATED, path__startswith=run.out_dir.rstrip("/") + "/"
                ).order_by("name")
                if run.state == DedupRun.State.VALIDATED
                else [],
            }
        )
        return context


class DedupRunActionView(DedupAreaMixin, View):
    """POST: stop or resume a run; a refusal is shown as the service words it."""

    model_permission = (CHANGE, DedupRun)
    permission_denied_message = gettext_lazy("Only crawl engineers may stop or resume deduplication runs.")

    def act(self, run: DedupRun) -> str:
        raise NotImplementedError

    def post(self, request, pk):
        run = get_object_or_404(DedupRun, pk=pk)
        try:
            messages.success(request, self.act(run))
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        return redirect(run.get_absolute_url())


class DedupRunStopView(DedupRunActionView):
    def act(self, run):
        run = dedup_run_stop(run_id=run.pk, user=self.request.user)
        if run.state == DedupRun.State.STOPPING:
            return _("%(run)s is stopping: the units running now finish, no other starts.") % {"run": run}
        return _("%(run)s was stopped.") % {"run": run}


class DedupRunResumeView(DedupRunActionView):
    def act(self, run):
        run = dedup_run_resume(run_id=run.pk, user=self.request.user)
        return _("%(run)s was queued again: it goes on where it stopped.") % {"run": run}


class WarcFileRetireView(AreaRequiredMixin, View):
    """POST: remove the bytes of an original whose deduplicated replacement is registered (engineers)."""

    area = Area.OPERATIONS
    model_permission = (CHANGE, WarcFile)
    permission_denied_message = gettext_lazy("Only crawl engineers may retire files.")

    def post(self, request, pk):
        warc_file = get_object_or_404(WarcFile, pk=pk)
        try:
            warc_file = warc_file_retire(warc_file_id=warc_file.pk, user=request.user)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        else:
            messages.success(
                request,
                _("%(name)s was retired: its bytes were removed; %(replacement)s holds its captures.")
                % {"name": warc_file.name, "replacement": warc_file.replaced_by.name},
            )
        return redirect(warc_file.get_absolute_url())


urlpatterns = [
    path("dedup/", DedupRunListView.as_view(), name="dedup_list"),
    path("dedup/start/", DedupRunStartView.as_view(), name="dedup_start"),
    path("dedup/<int:pk>/", DedupRunDetailView.as_view(), name="dedup_detail"),
    path("dedup/<int:pk>/stop/", DedupRunStopView.as_view(), name="dedup_stop"),
    path("dedup/<int:pk>/resume/", DedupRunResumeView.as_view(), name="dedup_resume"),
    path("files/<int:pk>/retire/", WarcFileRetireView.as_view(), name="warcfile_retire"),
]
