"""Harvest definition pages: the lists, create, edit, activate, run now, attach configurations."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import Count, Max, Q
from django.db.models.functions import Lower
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.functional import cached_property
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from harvest.choices import HarvestKind
from harvest.filtersets import HarvestDefinitionFilterSet
from harvest.forms.planning import ConfigurationAttachForm, DefinitionForm
from harvest.models import CollectionMapping, HarvestDefinition, HarvestRun, Job, TransferReport
from harvest.services.news import news_summary
from harvest.services.planning import (
    definition_configurations_change,
    definition_run_now,
    definition_save,
    definition_set_active,
)
from harvest.tables import DefinitionTable, TransferReportTable
from webarchive.permissions import ADD, CHANGE, VIEW, Area, permitted
from webarchive.views import (
    AreaRequiredMixin,
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
    ServiceFormView,
)

CONFIGURATIONS_PER_PAGE = 50
# A definition's configurations by domain name: lower(name), the same order (names are stored in lower
# case), so that PostgreSQL reads the definition's few thousand configurations and sorts them instead
# of walking the names of all the 3,000,000 domains in order looking for them (1 s at volume).
CONFIGURATIONS_ORDER = (Lower("domain__name"), "name")
RUNS_SHOWN = 20


class DefinitionListView(PermittedActionsMixin, ObjectListView):
    """Selective and snapshot definitions, one tab each (the kind filter)."""

    area = Area.PLANNING
    queryset = (
        HarvestDefinition.objects.select_related("channel", "schedule")
        .annotate(
            configuration_count=Count("configurations", distinct=True),
            last_run=Max("runs__created_at"),
        )
        .order_by("name")
    )
    filterset_class = HarvestDefinitionFilterSet
    table_class = DefinitionTable
    actions = (ADD,)
    template_name = "harvest/definition_list.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            {"kind": self.request.GET.get("kind", ""), "tabs": [("", _("All")), *HarvestKind.choices]}
        )
        return context


class DefinitionDetailView(PermittedActionsMixin, ObjectDetailView):
    area = Area.PLANNING
    queryset = HarvestDefinition.objects.select_related("channel", "schedule", "continue_from")
    actions = (CHANGE,)
    template_name = "harvest/definition_detail.html"

    def get_fields(self):
        common = ["kind", "is_active", "channel", "comments"]
        if self.object.is_selective:
            news = ["news", "news_feeds"] if self.object.news else []
            return [*common, "schedule", *news, "next_date", "runs_done", "crawler_traps", "created_at"]
        return [
            *common,
            "max_objects_per_domain",
            "max_bytes_per_domain",
            "max_job_seconds",
            "continue_from",
            "next_date",
            "runs_done",
            "crawler_traps",
            "created_at",
        ]

    def get_context_data(self, **kwargs):
        self.fields = self.get_fields()
        context = super().get_context_data(**kwargs)
        definition = self.object
        user = self.request.user
        configurations = definition.configurations.select_related("domain", "template").order_by(
            *CONFIGURATIONS_ORDER
        )
        page = Paginator(configurations, CONFIGURATIONS_PER_PAGE).get_page(self.request.GET.get("page"))
        runs = list(HarvestRun.objects.filter(harvest_definition=definition).order_by("-number")[:RUNS_SHOWN])
        jobs_by_run: dict[int, list[Job]] = {}
        for job in Job.objects.filter(run__in=runs).order_by("pk"):
            jobs_by_run.setdefault(job.run_id, []).append(job)
        collections = CollectionMapping.objects.filter(harvest_definition=definition).values("collection")
        reports = TransferReport.objects.filter(
            Q(harvest_definition=definition) | Q(collection__in=collections, harvest_definition=None)
        ).select_related("collection", "user", "harvest_definition")[:10]
        context.update(
            {
                "next_runs": definition.upcoming_runs(),
                "configuration_page": page,
                "runs": [(run, jobs_by_run.get(run.pk, [])) for run in runs],
                "mappings": definition.collection_mappings.select_related("collection"),
                "report_table": TransferReportTable(reports, model=TransferReport),
                # The page's other objects: its runs' jobs, linked for those who may open them.
                "permitted_for": {"job": permitted(user, Job, (VIEW,))},
                "news": news_summary(definition) if definition.is_selective else None,
            }
        )
        return context


class DefinitionCreateView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (ADD, HarvestDefinition)
    kind = HarvestKind.SELECTIVE
    template_name = "harvest/definition_form.html"

    def get_form(self, form_class=None):
        return DefinitionForm(**self.get_form_kwargs(), kind=self.kind)

    def get_context_data(self, **kwargs):
        title = (
            _("New selective harvest definition")
            if self.kind == HarvestKind.SELECTIVE
            else _("New snapshot harvest definition")
        )
        return super().get_context_data(title=title, **kwargs)

    def perform(self, form):
        definition = definition_save(user=self.request.user, kind=self.kind, **form.cleaned_data)
        messages.success(
            self.request, _("The harvest definition “%(name)s” was created.") % {"name": definition}
        )
        return definition


class DefinitionInURLMixin:
    @cached_property
    def definition(self) -> HarvestDefinition:
        return get_object_or_404(HarvestDefinition, pk=self.kwargs["pk"])


class DefinitionEditView(DefinitionInURLMixin, ServiceFormView):
    area = Area.PLANNING
    model_permission = (CHANGE, HarvestDefinition)
    template_name = "harvest/definition_form.html"

    def get_form(self, form_class=None):
        kwargs = self.get_form_kwargs()
        # The form reads a copy: the page's object stays as stored if the service refuses.
        kwargs["instance"] = HarvestDefinition.objects.get(pk=self.definition.pk)
        return DefinitionForm(**kwargs, kind=self.definition.kind)

    def get_context_data(self, **kwargs):
        title = _("Edit the harvest definition “%(name)s”") % {"name": self.definition}
        return super().get_context_data(title=title, definition=self.definition, **kwargs)

    def perform(self, form):
        definition = definition_save(
            definition=self.definition,
            user=self.request.user,
            expected_version=form.seen,
            **form.cleaned_data,
        )
        messages.success(self.request, _("The harvest definition was saved."))
        return definition


class DefinitionActivateView(DefinitionInURLMixin, AreaRequiredMixin, View):
    """POST ``is_active=true`` or ``false``: definitions are deactivated, never deleted."""

    area = Area.PLANNING
    model_permission = (CHANGE, HarvestDefinition)

    def post(self, request, pk):
        wanted = request.POST.get("is_active")
        if wanted not in ("true", "false"):
            messages.error(request, _("Say whether to activate or to deactivate the harvest definition."))
            return redirect(self.definition)
        try:
            definition = definition_set_active(
                definition=self.definition, is_active=wanted == "true", user=request.user
            )
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(self.definition)
        if definition.is_active:
            messages.success(request, _("“%(name)s” is active.") % {"name": definition})
        else:
            messages.success(request, _("“%(name)s” is inactive: it will not run.") % {"name": definition})
        return redirect(definition)


class DefinitionRunNowView(DefinitionInURLMixin, AreaRequiredMixin, View):
    area = Area.PLANNING
    model_permission = (CHANGE, HarvestDefinition)

    def post(self, request, pk):
        try:
            definition = definition_run_now(definition=self.definition, user=request.user)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(self.definition)
        messages.success(
            request,
            _("“%(name)s” is due now: the launcher makes its jobs within a minute.") % {"name": definition},
        )
        return redirect(definition)


class DefinitionConfigurationsView(DefinitionInURLMixin, ServiceFormView):
    """Attach a configuration by domain and name; detach the selected ones (selective definitions)."""

    area = Area.PLANNING
    model_permission = (CHANGE, HarvestDefinition)
    form_class = ConfigurationAttachForm
    template_name = "harvest/definition_configurations.html"
    submit_label = gettext_lazy("Attach")

    def get(self, request, *args, **kwargs):
        if not self.definition.is_selective:
            messages.error(request, _("A snapshot harvest takes every domain; it has no configuration list."))
            return redirect(self.definition)
        return super().get(request, *args, **kwargs)

    def post(self, request, *args, **kwargs):
        if "detach" in request.POST:
            return self.detach(request)
        return super().post(request, *args, **kwargs)

    def detach(self, request):
        ids = [value for value in request.POST.getlist("configurations") if value.isdigit()]
        chosen = list(self.definition.configurations.filter(pk__in=ids))
        if not chosen:
            messages.error(request, _("Select the configurations to detach."))
            return redirect(request.path)
        try:
            definition_configurations_change(definition=self.definition, user=request.user, remove=chosen)
        except ValidationError as error:
            for message in error.messages:
                messages.error(request, message)
            return redirect(request.path)
        messages.success(
            request,
            _("%(n)d configuration(s) detached: %(names)s.")
            % {"n": len(chosen), "names": ", ".join(str(c) for c in chosen)},
        )
        return redirect(request.path)

    def perform(self, form):
        configuration = form.cleaned_data["found"]
        if self.definition.configurations.filter(pk=configuration.pk).exists():
            raise ValidationError(_("%(c)s is already attached.") % {"c": configuration})
        definition_configurations_change(
            definition=self.definition, user=self.request.user, add=[configuration]
        )
        messages.success(self.request, _("%(c)s attached.") % {"c": configuration})
        return self.request.path

    def get_context_data(self, **kwargs):
        configurations = self.definition.configurations.select_related("domain", "template").order_by(
            *CONFIGURATIONS_ORDER
        )
        page = Paginator(configurations, CONFIGURATIONS_PER_PAGE).get_page(self.request.GET.get("page"))
        title = _("Configurations of “%(name)s”") % {"name": self.definition}
        return super().get_context_data(
            title=title, definition=self.definition, configuration_page=page, **kwargs
        )


urlpatterns = [
    path("definitions/", DefinitionListView.as_view(), name="definition_list"),
    path(
        "definitions/new/selective/",
        DefinitionCreateView.as_view(kind=HarvestKind.SELECTIVE),
        name="definition_create_selective",
    ),
    path(
        "definitions/new/snapshot/",
        DefinitionCreateView.as_view(kind=HarvestKind.SNAPSHOT),
        name="definition_create_snapshot",
    ),
    path("definitions/<int:pk>/", DefinitionDetailView.as_view(), name="definition_detail"),
    path("definitions/<int:pk>/edit/", DefinitionEditView.as_view(), name="definition_edit"),
    path("definitions/<int:pk>/activate/", DefinitionActivateView.as_view(), name="definition_activate"),
    path("definitions/<int:pk>/run-now/", DefinitionRunNowView.as_view(), name="definition_run_now"),
    path(
        "definitions/<int:pk>/configurations/",
        DefinitionConfigurationsView.as_view(),
        name="definition_configurations",
    ),
]
