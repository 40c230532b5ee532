"""The mappings from selection to planning, and the transfer page with its reports."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.functional import cached_property
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import DetailView, TemplateView, View

from harvest.filtersets import TransferReportFilterSet
from harvest.forms.planning import BudgetMappingForm, CollectionMappingForm, TransferForm
from harvest.models import BudgetMapping, CollectionMapping, TransferReport
from harvest.services.planning import budget_mapping_save, collection_mapping_save, mapping_delete
from harvest.services.transfer import transfer_collection, transfer_for_definition
from harvest.tables import CollectionMappingTable, TransferReportTable
from selection.choices import Budget, Depth
from webarchive.forms import add_bootstrap_classes
from webarchive.permissions import ADD, CHANGE, DELETE, VIEW, Area, permitted
from webarchive.views import AreaRequiredMixin, RestrictedQuerysetMixin, ServiceFormView

REPORTS_PER_PAGE = 20


class MappingListView(AreaRequiredMixin, TemplateView):
    """Both tables: (collection, frequency) → definition, and the (budget, depth) → template grid."""

    area = Area.PLANNING
    model_permission = (VIEW, CollectionMapping)
    template_name = "harvest/mapping_list.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        user = self.request.user
        budgets = {
            (m.budget, m.depth): m
            for m in BudgetMapping.objects.select_related("template", "browser_template")
        }
        context.update(
            {
                "collection_table": CollectionMappingTable(
                    CollectionMapping.objects.select_related("collection", "harvest_definition"), user=user
                ),
                "depths": Depth.choices,
                "budget_rows": [
                    (value, label, [(depth, budgets.get((value, depth))) for depth in Depth.values])
                    for value, label in Budget.choices
                ],
                # The page is about two models; the withdraw buttons of the collection table are its
                # column's action (harvest.tables.CollectionMappingTable).
                "permitted_for": {
                    "collection_mapping": permitted(user, CollectionMapping, (ADD,)),
                    "budget_mapping": permitted(user, BudgetMapping, (ADD, CHANGE, DELETE)),
                },
            }
        )
        return context


class CollectionMappingCreateView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (ADD, CollectionMapping)
    form_class = CollectionMappingForm
    title = gettext_lazy("Map a collection and frequency to a harvest definition")

    def get_initial(self):
        return {key: self.request.GET.get(key) for key in ("collection", "frequency", "harvest_definition")}

    def perform(self, form):
        mapping = collection_mapping_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("Mapped: %(m)s.") % {"m": mapping})
        return reverse("harvest:mapping_list")


class BudgetMappingCreateView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (ADD, BudgetMapping)
    form_class = BudgetMappingForm
    title = gettext_lazy("Map a budget and depth to a template and limits")

    def get_initial(self):
        return {key: self.request.GET.get(key) for key in ("budget", "depth")}

    def perform(self, form):
        mapping = budget_mapping_save(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("Mapped: %(m)s.") % {"m": mapping})
        return reverse("harvest:mapping_list")


class BudgetMappingEditView(ServiceFormView):
    area = Area.PLANNING
    model_permission = (CHANGE, BudgetMapping)
    form_class = BudgetMappingForm
    title = gettext_lazy("Edit the budget mapping")

    @cached_property
    def mapping(self) -> BudgetMapping:
        return get_object_or_404(BudgetMapping, pk=self.kwargs["pk"])

    def get_form_kwargs(self):
        kwargs = super().get_form_kwargs()
        kwargs["instance"] = BudgetMapping.objects.get(pk=self.mapping.pk)  # a copy for the form
        return kwargs

    def perform(self, form):
        mapping = budget_mapping_save(mapping=self.mapping, user=self.request.user, **form.cleaned_data)
        messages.success(
            self.request,
            _("Saved: %(m)s. Configurations follow at the next transfer.") % {"m": mapping},
        )
        return reverse("harvest:mapping_list")


class MappingDeleteView(AreaRequiredMixin, View):
    """POST: withdraw a mapping; the records it covered are detached at the next transfer."""

    area = Area.PLANNING
    model: type[CollectionMapping] | type[BudgetMapping]

    def post(self, request, pk):
        mapping = get_object_or_404(self.model, pk=pk)
        label = str(mapping)
        mapping_delete(mapping=mapping, user=request.user)
        messages.success(
            request,
            _("Mapping withdrawn: %(m)s. The next transfer detaches what it covered.") % {"m": label},
        )
        return redirect("harvest:mapping_list")


class CollectionMappingDeleteView(MappingDeleteView):
    model = CollectionMapping
    model_permission = (DELETE, CollectionMapping)


class BudgetMappingDeleteView(MappingDeleteView):
    model = BudgetMapping
    model_permission = (DELETE, BudgetMapping)


# The transfer --------------------------------------------------------------------------------


class TransferView(ServiceFormView):
    """Run the transfer of a collection (or of every collection mapped to a definition); recent reports."""

    area = Area.PLANNING
    model_permission = (VIEW, TransferReport)
    form_class = TransferForm
    template_name = "harvest/transfer.html"
    title = gettext_lazy("Transfer from selection")
    submit_label = gettext_lazy("Run the transfer now")

    def get_initial(self):
        return {key: self.request.GET.get(key) for key in ("collection", "harvest_definition")}

    def perform(self, form):
        user = self.request.user
        collection = form.cleaned_data["collection"]
        definition = form.cleaned_data["harvest_definition"]
        if collection is not None:
            report = transfer_collection(collection=collection, user=user)
            messages.success(self.request, _("The transfer of “%(c)s” ran.") % {"c": collection})
            return report
        reports = transfer_for_definition(definition=definition, user=user)
        if not reports:
            raise ValidationError(
                {
                    "harvest_definition": _(
                        "No collection is mapped to “%(d)s”: map one under “Mappings from selection”."
                    )
                    % {"d": definition}
                }
            )
        messages.success(
            self.request,
            _("The transfer for “%(d)s” ran: %(n)d collection(s).") % {"d": definition, "n": len(reports)},
        )
        if len(reports) == 1:
            return reports[0]
        return f"{reverse('harvest:transfer')}?harvest_definition={definition.pk}"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        reports = TransferReport.objects.select_related("collection", "harvest_definition", "user")
        filterset = TransferReportFilterSet(self.request.GET, queryset=reports, request=self.request)
        add_bootstrap_classes(filterset.form, small=True)
        filterset.form.auto_id = "id_filter_%s"  # the transfer form above has the same field names
        page = Paginator(filterset.qs, REPORTS_PER_PAGE).get_page(self.request.GET.get("page"))
        context.update(
            {
                "filterset": filterset,
                "page_obj": page,
                "report_table": TransferReportTable(page, model=TransferReport),
            }
        )
        return context


class TransferDetailView(RestrictedQuerysetMixin, DetailView):
    """One report: the counts, and what was created, updated, detached and skipped (written once)."""

    area = Area.PLANNING
    queryset = TransferReport.objects.select_related("collection", "harvest_definition", "user")
    template_name = "harvest/transfer_detail.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        details = self.object.details or {}
        context.update(
            {
                "sections": [
                    ("created", _("Configurations created"), details.get("created", [])),
                    ("updated", _("Configurations updated"), details.get("updated", [])),
                    ("detached", _("Configurations detached"), details.get("detached", [])),
                ],
                "skipped": details.get("skipped", []),
                "domains_created": details.get("domains_created", []),
            }
        )
        return context


urlpatterns = [
    path("mappings/", MappingListView.as_view(), name="mapping_list"),
    path(
        "mappings/collections/new/",
        CollectionMappingCreateView.as_view(),
        name="collection_mapping_create",
    ),
    path(
        "mappings/collections/<int:pk>/delete/",
        CollectionMappingDeleteView.as_view(),
        name="collection_mapping_delete",
    ),
    path("mappings/budgets/new/", BudgetMappingCreateView.as_view(), name="budget_mapping_create"),
    path("mappings/budgets/<int:pk>/edit/", BudgetMappingEditView.as_view(), name="budget_mapping_edit"),
    path(
        "mappings/budgets/<int:pk>/delete/",
        BudgetMappingDeleteView.as_view(),
        name="budget_mapping_delete",
    ),
    path("transfer/", TransferView.as_view(), name="transfer"),
    path("transfer/<int:pk>/", TransferDetailView.as_view(), name="transfer_detail"),
]
