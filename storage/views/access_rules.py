"""The curators' pages of who may read what: access rules (per collection, per harvest definition) and
exclusions (take-downs), each with its history. Writes go through storage.services.access."""

from __future__ import annotations

from functools import cached_property

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View

from storage.filtersets import AccessRuleFilterSet, ExclusionFilterSet
from storage.forms_access import AccessRuleCreateForm, AccessRuleEditForm, ExclusionForm, ExclusionLiftForm
from storage.models_access import AccessRule, Exclusion
from storage.selectors_access import (
    exclusion_capture_count,
    exclusions_in_force_first,
    rule_capture_count,
    rule_definitions,
)
from storage.services.access import access_rule_save, exclusion_change, exclusion_create, exclusion_lift
from storage.tables_access import AccessRuleTable, ExclusionTable
from webarchive.permissions import ADD, CHANGE, Area
from webarchive.views import (
    AreaRequiredMixin,
    ObjectDetailView,
    ObjectListView,
    PermittedActionsMixin,
    ServiceFormView,
)


class RulesAreaMixin:
    area = Area.ACCESS


# Access rules ---------------------------------------------------------------------------------------


class AccessRuleListView(RulesAreaMixin, PermittedActionsMixin, ObjectListView):
    queryset = AccessRule.objects.select_related("collection", "harvest_definition")
    filterset_class = AccessRuleFilterSet
    table_class = AccessRuleTable
    actions = (ADD,)
    template_name = "storage/accessrule_list.html"


class AccessRuleDetailView(RulesAreaMixin, PermittedActionsMixin, ObjectDetailView):
    """A rule: who may read, from when, what it covers, and its history."""

    queryset = AccessRule.objects.select_related("collection", "harvest_definition")
    actions = (CHANGE,)
    template_name = "storage/accessrule_detail.html"
    fields = ["level", "embargo_until", "note", "created_at", "updated_at"]

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            definitions=rule_definitions(self.object),
            captures=rule_capture_count(self.object),
            **kwargs,
        )


class AccessRuleCreateView(RulesAreaMixin, ServiceFormView):
    model_permission = (ADD, AccessRule)
    form_class = AccessRuleCreateForm
    template_name = "storage/accessrule_form.html"
    title = gettext_lazy("New access rule")

    def get_initial(self):
        # From a collection's or a definition's page: the target already chosen.
        initial = super().get_initial()
        for name in ("collection", "harvest_definition"):
            value = self.request.GET.get(name, "")
            if value.isdigit() and len(value) < 19:
                initial[name] = int(value)
        return initial

    def perform(self, form):
        rule = access_rule_save(user=self.request.user, **form.cleaned_data)
        messages.success(
            self.request, _("The access rule of %(target)s was created.") % {"target": rule.target}
        )
        return rule


class AccessRuleEditView(RulesAreaMixin, ServiceFormView):
    model_permission = (CHANGE, AccessRule)
    form_class = AccessRuleEditForm
    template_name = "storage/accessrule_form.html"

    @cached_property
    def rule(self) -> AccessRule:
        return get_object_or_404(
            AccessRule.objects.select_related("collection", "harvest_definition"), pk=self.kwargs["pk"]
        )

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "instance": AccessRule.objects.get(pk=self.rule.pk)}

    def get_context_data(self, **kwargs):
        title = _("The access rule of %(target)s") % {"target": self.rule.target}
        return super().get_context_data(title=title, rule=self.rule, **kwargs)

    def perform(self, form):
        rule = access_rule_save(
            user=self.request.user, rule=self.rule, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(
            self.request, _("The access rule of %(target)s was saved.") % {"target": rule.target}
        )
        return rule


# Exclusions -----------------------------------------------------------------------------------------


class ExclusionListView(RulesAreaMixin, PermittedActionsMixin, ObjectListView):
    queryset = Exclusion.objects.select_related("created_by")
    filterset_class = ExclusionFilterSet
    table_class = ExclusionTable
    actions = (ADD,)
    template_name = "storage/exclusion_list.html"

    def get_queryset(self):
        return exclusions_in_force_first(super().get_queryset())


class ExclusionDetailView(RulesAreaMixin, PermittedActionsMixin, ObjectDetailView):
    """An exclusion: what it takes out of access, why, who asked, whether it is in force, its history."""

    queryset = Exclusion.objects.select_related("created_by", "lifted_by")
    actions = (CHANGE,)
    template_name = "storage/exclusion_detail.html"
    fields = [
        "kind",
        "target",
        "reason",
        "requested_by",
        "requested_on",
        "ends_on",
        "created_at",
        "created_by",
        "lifted_at",
        "lifted_by",
    ]

    def get_context_data(self, **kwargs):
        return super().get_context_data(covered=exclusion_capture_count(self.object), **kwargs)


class ExclusionCreateView(RulesAreaMixin, ServiceFormView):
    model_permission = (ADD, Exclusion)
    form_class = ExclusionForm
    template_name = "storage/exclusion_form.html"
    title = gettext_lazy("New exclusion")

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "instance": Exclusion()}

    def perform(self, form):
        exclusion = exclusion_create(user=self.request.user, **form.cleaned_data)
        messages.success(
            self.request, _("“%(target)s” is excluded from access.") % {"target": exclusion.target}
        )
        return exclusion


class ExclusionEditView(RulesAreaMixin, ServiceFormView):
    model_permission = (CHANGE, Exclusion)
    form_class = ExclusionForm
    template_name = "storage/exclusion_form.html"

    @cached_property
    def exclusion(self) -> Exclusion:
        return get_object_or_404(Exclusion, pk=self.kwargs["pk"])

    def get(self, request, *args, **kwargs):
        if self.exclusion.lifted_at is not None:
            messages.error(request, _("This exclusion was lifted; enter a new one."))
            return redirect(self.exclusion.get_absolute_url())
        return super().get(request, *args, **kwargs)

    def get_form_kwargs(self):
        return {**super().get_form_kwargs(), "instance": Exclusion.objects.get(pk=self.exclusion.pk)}

    def get_context_data(self, **kwargs):
        title = _("Edit the exclusion of “%(target)s”") % {"target": self.exclusion.target}
        return super().get_context_data(title=title, exclusion=self.exclusion, **kwargs)

    def perform(self, form):
        exclusion = exclusion_change(
            user=self.request.user, exclusion=self.exclusion, expected_version=form.seen, **form.cleaned_data
        )
        messages.success(
            self.request, _("The exclusion of “%(target)s” was saved.") % {"target": exclusion.target}
        )
        return exclusion


class ExclusionLiftView(RulesAreaMixin, AreaRequiredMixin, View):
    """Lift an exclusion (POST, with the version the page showed): its URLs are readable again."""

    model_permission = (CHANGE, Exclusion)
    http_method_names = ["post"]

    def post(self, request, pk):
        exclusion = get_object_or_404(Exclusion, pk=pk)
        form = ExclusionLiftForm(request.POST)
        try:
            if not form.is_valid():
                raise ValidationError(
                    _("The page did not say which version of this exclusion it showed; reload it.")
                )
            exclusion_lift(user=request.user, exclusion=exclusion, expected_version=form.cleaned_data["seen"])
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request,
                _("The exclusion of “%(target)s” was lifted: its captures are readable again.")
                % {"target": exclusion.target},
            )
        return redirect(reverse("storage:exclusion_detail", kwargs={"pk": pk}))


urlpatterns = [
    path("rules/", AccessRuleListView.as_view(), name="accessrule_list"),
    path("rules/new/", AccessRuleCreateView.as_view(), name="accessrule_create"),
    path("rules/<int:pk>/", AccessRuleDetailView.as_view(), name="accessrule_detail"),
    path("rules/<int:pk>/edit/", AccessRuleEditView.as_view(), name="accessrule_edit"),
    path("exclusions/", ExclusionListView.as_view(), name="exclusion_list"),
    path("exclusions/new/", ExclusionCreateView.as_view(), name="exclusion_create"),
    path("exclusions/<int:pk>/", ExclusionDetailView.as_view(), name="exclusion_detail"),
    path("exclusions/<int:pk>/edit/", ExclusionEditView.as_view(), name="exclusion_edit"),
    path("exclusions/<int:pk>/lift/", ExclusionLiftView.as_view(), name="exclusion_lift"),
]
