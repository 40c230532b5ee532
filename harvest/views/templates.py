"""Planning pages: harvest templates and global crawler trap lists."""

from django.contrib import messages
from django.db.models import Count
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from harvest.filtersets import TemplateFilterSet, TrapListFilterSet
from harvest.forms.domains import (
    TEMPLATE_GROUPS,
    TemplateForm,
    TrapListForm,
)
from harvest.models import GlobalCrawlerTrapList, HarvestTemplate
from harvest.services import planning as planning_services
from harvest.tables import TemplateTable, TrapListTable
from harvest.views.base import PLANNING, PlanningFormView
from webarchive.permissions import ADD, CHANGE
from webarchive.tables import display_value
from webarchive.views import (
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
)

# Templates -------------------------------------------------------------------------------------


class TemplateListView(PermittedActionsMixin, ObjectListView):
    area = PLANNING
    queryset = HarvestTemplate.objects.annotate(configuration_count=Count("configurations")).order_by("name")
    filterset_class = TemplateFilterSet
    table_class = TemplateTable
    actions = (ADD,)
    template_name = "harvest/template_list.html"


class TemplateDetailView(PermittedActionsMixin, ObjectDetailView):
    area = PLANNING
    queryset = HarvestTemplate.objects.all()
    fields = ["description", "is_active", "version", "updated_at"]
    actions = (CHANGE,)
    template_name = "harvest/template_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        template = self.object
        meta = HarvestTemplate._meta
        context.update(
            {
                "groups": [
                    (
                        label,
                        [
                            (meta.get_field(name).verbose_name, display_value(template, name))
                            for name in names
                        ],
                    )
                    for label, names in TEMPLATE_GROUPS
                ],
                "configuration_count": template.configurations.count(),
            }
        )
        return context


class TemplateCreateView(PlanningFormView):
    model_permission = (ADD, HarvestTemplate)
    form_class = TemplateForm
    template_name = "harvest/template_form.html"
    title = gettext_lazy("New harvest template")
    submit_label = gettext_lazy("Create the template")
    cancel = "harvest:template_list"

    def perform(self, form):
        template = planning_services.template_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("The template %(name)s was created.") % {"name": template})
        return template


class TemplateEditView(PlanningFormView):
    model = HarvestTemplate
    model_permission = (CHANGE, HarvestTemplate)
    form_class = TemplateForm
    template_name = "harvest/template_form.html"
    title = gettext_lazy("Edit the template %(name)s")

    def perform(self, form):
        version = self.object.version
        template = planning_services.template_save(
            user=self.request.user, template=self.object, expected_version=form.seen, **form.cleaned_data
        )
        if template.version != version:
            message = _("The template %(name)s was saved as version %(version)d.")
        else:
            message = _(
                "The template %(name)s was saved; no crawler setting changed, it stays version %(version)d."
            )
        messages.success(self.request, message % {"name": template, "version": template.version})
        return template

    def get_context_data(self, **kwargs):
        return {
            **super().get_context_data(**kwargs),
            "configuration_count": self.object.configurations.count(),
        }


# Global crawler traps --------------------------------------------------------------------------


class TrapListListView(PermittedActionsMixin, ObjectListView):
    area = PLANNING
    queryset = GlobalCrawlerTrapList.objects.all()
    filterset_class = TrapListFilterSet
    table_class = TrapListTable
    actions = (ADD,)
    template_name = "harvest/trap_list_list.html"


class TrapListDetailView(PermittedActionsMixin, ObjectDetailView):
    area = PLANNING
    queryset = GlobalCrawlerTrapList.objects.all()
    fields = ["description", "is_active"]
    actions = (CHANGE,)
    template_name = "harvest/trap_list_detail.html"


class TrapListCreateView(PlanningFormView):
    model_permission = (ADD, GlobalCrawlerTrapList)
    form_class = TrapListForm
    template_name = "harvest/trap_list_form.html"
    title = gettext_lazy("New global crawler trap list")
    submit_label = gettext_lazy("Create the list")
    cancel = "harvest:trap_list_list"

    def perform(self, form):
        trap_list = planning_services.trap_list_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("The trap list %(name)s was created.") % {"name": trap_list})
        return trap_list


class TrapListEditView(PlanningFormView):
    model = GlobalCrawlerTrapList
    model_permission = (CHANGE, GlobalCrawlerTrapList)
    form_class = TrapListForm
    template_name = "harvest/trap_list_form.html"
    title = gettext_lazy("Edit the trap list %(name)s")

    def perform(self, form):
        trap_list = planning_services.trap_list_save(
            user=self.request.user, trap_list=self.object, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(self.request, _("The trap list %(name)s was saved.") % {"name": trap_list})
        return trap_list


urlpatterns = [
    path("templates/", TemplateListView.as_view(), name="template_list"),
    path("templates/new/", TemplateCreateView.as_view(), name="template_create"),
    path("templates/<int:pk>/", TemplateDetailView.as_view(), name="template_detail"),
    path("templates/<int:pk>/edit/", TemplateEditView.as_view(), name="template_edit"),
    path("trap-lists/", TrapListListView.as_view(), name="trap_list_list"),
    path("trap-lists/new/", TrapListCreateView.as_view(), name="trap_list_create"),
    path("trap-lists/<int:pk>/", TrapListDetailView.as_view(), name="trap_list_detail"),
    path("trap-lists/<int:pk>/edit/", TrapListEditView.as_view(), name="trap_list_edit"),
]
