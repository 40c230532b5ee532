"""Broad-crawl preparation pages (Operations): start a run from uploaded lists, watch its progress,
stop and resume it, read its statistics and invalid lines, take the statistics as CSV."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.generic import DetailView, View

from harvest.choices import HarvestKind
from harvest.models import HarvestDefinition, PreloadInvalidLine, PreloadRun
from harvest.models.preload import PRELOAD_RUN_TRANSITIONS
from harvest.preload.limits import UploadLimit, too_large_message
from harvest.services.preload import (
    UploadedSource,
    preload_create_from_uploads,
    preload_resume,
    preload_send,
    preload_stop,
    statistics_rows,
)
from harvest.tables import PreloadRunTable
from webarchive.csvfiles import csv_response
from webarchive.forms import BootstrapMixin, add_bootstrap_classes
from webarchive.permissions import ADD, CHANGE, VIEW, Area
from webarchive.views import (
    AreaRequiredMixin,
    ObjectListView,
    PermittedActionsMixin,
    RestrictedQuerysetMixin,
    ServiceFormView,
    htmx_response,
)

SOURCE_SLOTS = 3
STEPS_SHOWN = 500  # of a run's audit trail: a step per stage and per range of domains loaded
INVALID_SHOWN = 100


class PreloadMixin(AreaRequiredMixin):
    area = Area.OPERATIONS
    model_permission = (VIEW, PreloadRun)


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input (a registry's list in parts)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)] if data else []


class PreloadForm(BootstrapMixin, forms.Form):
    harvest_definition = forms.ModelChoiceField(
        queryset=HarvestDefinition.objects.filter(kind=HarvestKind.SNAPSHOT).order_by("name"),
        required=False,
        label=gettext_lazy("Snapshot harvest definition"),
        help_text=gettext_lazy(
            "The snapshot this preparation is for (optional: the domains are loaded all the same, and "
            "every snapshot takes the active ones)."
        ),
    )
    include_selection = forms.BooleanField(
        required=False,
        initial=True,
        label=gettext_lazy("Add the librarians' validated records (source “selection”)"),
    )
    check_dns = forms.BooleanField(required=False, initial=True, label=gettext_lazy("Check DNS"))
    find_redirects = forms.BooleanField(
        required=False, initial=True, label=gettext_lazy("Discover redirects")
    )
    nameservers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label=gettext_lazy("Nameservers"),
        help_text=gettext_lazy(
            "IP address or ADDRESS:PORT, one per line, at most 10; empty: the system's. Only addresses"
            " the crawler may reach (public ones), or those the setting PRELOAD_ALLOWED_NAMESERVERS names."
        ),
    )
    dns_timeout = forms.FloatField(
        min_value=0.1, max_value=60, initial=2.0, label=gettext_lazy("DNS timeout (s)")
    )
    dns_retries = forms.IntegerField(min_value=0, max_value=10, initial=1, label=gettext_lazy("DNS retries"))

    def __init__(self, *args, refused_uploads: list[tuple[str, str]] = (), **kwargs):
        super().__init__(*args, **kwargs)
        self.refused_uploads = list(refused_uploads)  # (field, file name) past the upload limit
        for number in range(1, SOURCE_SLOTS + 1):
            self.fields[f"source_{number}"] = forms.CharField(
                required=False, max_length=100, label=_("Source %(n)d: name") % {"n": number}
            )
            self.fields[f"files_{number}"] = MultipleFileField(
                required=False,
                label=_("Source %(n)d: files") % {"n": number},
                help_text=_("One domain or URL per line (# comments), or a CSV file with the column below."),
            )
            self.fields[f"column_{number}"] = forms.CharField(
                required=False, max_length=200, label=_("Source %(n)d: CSV column") % {"n": number}
            )
        add_bootstrap_classes(self)  # the source fields too, added after the mixin's pass

    def clean(self):
        data = super().clean()
        for field, file_name in self.refused_uploads:
            self.add_error(field if field in self.fields else None, too_large_message(file_name))
        refused = {field for field, _file_name in self.refused_uploads}
        for number in range(1, SOURCE_SLOTS + 1):
            name, files = data.get(f"source_{number}", ""), data.get(f"files_{number}") or []
            if files and not name:
                self.add_error(f"source_{number}", _("Name the source of these files."))
            if name and not files and f"files_{number}" not in refused:
                self.add_error(f"files_{number}", _("Give the files of this source."))
        return data


class PreloadListView(PreloadMixin, PermittedActionsMixin, ObjectListView):
    model = PreloadRun
    queryset = PreloadRun.objects.select_related("harvest_definition")
    template_name = "harvest/preload_list.html"
    table_class = PreloadRunTable
    actions = (ADD,)


@method_decorator(csrf_exempt, name="dispatch")  # checked in dispatch, once the upload limit is set
class PreloadStartView(PreloadMixin, ServiceFormView):
    model_permission = (ADD, PreloadRun)
    form_class = PreloadForm
    title = gettext_lazy("Prepare a broad crawl")
    submit_label = gettext_lazy("Start")

    def dispatch(self, request, *args, **kwargs):
        # The limit must be in the upload handlers before the body is read, and CsrfViewMiddleware
        # reads it (request.POST) before any view: the CSRF check is made here instead, just after.
        self.upload_limit = UploadLimit(request, limit=settings.PRELOAD_MAX_UPLOAD_BYTES)
        request.upload_handlers.insert(0, self.upload_limit)
        return csrf_protect(super().dispatch)(request, *args, **kwargs)

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "refused_uploads": self.upload_limit.refused}

    def perform(self, form):
        data = form.cleaned_data
        uploads = [
            UploadedSource(
                name=data[f"source_{number}"],
                files=data[f"files_{number}"],
                column=data[f"column_{number}"],
            )
            for number in range(1, SOURCE_SLOTS + 1)
            if data.get(f"files_{number}")
        ]
        run = preload_create_from_uploads(
            harvest_definition=data["harvest_definition"],
            uploads=uploads,
            check_dns=data["check_dns"],
            find_redirects=data["find_redirects"],
            include_selection=data["include_selection"],
            nameservers=data["nameservers"].splitlines(),
            dns_timeout=data["dns_timeout"],
            dns_retries=data["dns_retries"],
            user=self.request.user,
        )
        preload_send(run_id=run.pk)
        messages.success(self.request, _("The preparation %(pk)d has started.") % {"pk": run.pk})
        return run


class PreloadDetailView(PreloadMixin, PermittedActionsMixin, RestrictedQuerysetMixin, DetailView):
    model = PreloadRun
    actions = (CHANGE,)
    queryset = PreloadRun.objects.select_related("harvest_definition", "created_by")
    template_name = "harvest/preload_detail.html"

    def get_template_names(self):
        return ["harvest/preload_progress.html" if self.request.htmx else self.template_name]

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        run = self.object
        context.update(
            {
                "progress": run_progress(run),
                "sources": run.sources.all(),
                "invalid_lines": PreloadInvalidLine.objects.filter(source__run=run).select_related("source")[
                    :INVALID_SHOWN
                ],
                "statistics": run.statistics,
                # Who had what done: the run's audit trail (harvest.models.PreloadStep), oldest first.
                "steps": run.steps.select_related("user").order_by("pk")[:STEPS_SHOWN],
                "active": run.is_active,
                # Resuming queues the run again: offered when its table allows it (stopped, failed).
                "offers": {"resume": PRELOAD_RUN_TRANSITIONS.may(run.state, PreloadRun.State.QUEUED)},
            }
        )
        return context

    def render_to_response(self, context, **kwargs):
        return htmx_response(self.request, super().render_to_response(context, **kwargs))


def run_progress(run: PreloadRun) -> dict:
    """The stage's share done, its rate and the time left at that rate."""
    return {"percent": run.percent_done, "rate": run.rate, "seconds_left": run.seconds_left}


class PreloadActionView(PreloadMixin, View):
    model_permission = (CHANGE, PreloadRun)

    def post(self, request, pk, action):
        run = get_object_or_404(PreloadRun, pk=pk)
        if action == "stop":
            preload_stop(run=run, user=request.user)
            messages.success(request, _("The preparation will stop after its current batch."))
            return redirect(run.get_absolute_url())
        try:
            run = preload_resume(run=run, user=request.user)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
        else:
            messages.success(
                request,
                _("The preparation resumes at stage: %(stage)s.") % {"stage": run.get_stage_display()},
            )
        return redirect(run.get_absolute_url())


class PreloadStatisticsCsvView(PreloadMixin, View):
    def get(self, request, pk):
        run = get_object_or_404(PreloadRun, pk=pk)
        return csv_response(statistics_rows(run), f"preload-{run.pk}-statistics.csv")


class PreloadInvalidLinesCsvView(PreloadMixin, View):
    """Every invalid line kept (the first INVALID_KEPT of each source): source, line, text, reason."""

    def get(self, request, pk):
        run = get_object_or_404(PreloadRun, pk=pk)
        lines = (
            PreloadInvalidLine.objects.filter(source__run=run)
            .order_by("source__pk", "line")
            .values_list("source__name", "line", "text", "reason")
        )
        rows = [["source", "line", "text", "reason"], *lines.iterator(chunk_size=2000)]
        return csv_response(rows, f"preload-{run.pk}-invalid-lines.csv")


urlpatterns = [
    path("preload/", PreloadListView.as_view(), name="preload_list"),
    path("preload/new/", PreloadStartView.as_view(), name="preload_start"),
    path("preload/<int:pk>/", PreloadDetailView.as_view(), name="preload_detail"),
    path("preload/<int:pk>/stop/", PreloadActionView.as_view(), {"action": "stop"}, name="preload_stop"),
    path(
        "preload/<int:pk>/resume/", PreloadActionView.as_view(), {"action": "resume"}, name="preload_resume"
    ),
    path("preload/<int:pk>/statistics.csv", PreloadStatisticsCsvView.as_view(), name="preload_statistics"),
    path(
        "preload/<int:pk>/invalid-lines.csv",
        PreloadInvalidLinesCsvView.as_view(),
        name="preload_invalid_lines",
    ),
]
