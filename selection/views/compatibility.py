"""The compatibility of technical settings: which combinations cannot be used, editable by curators."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from selection import services
from selection.choices import Budget, Depth, Frequency
from selection.forms import CompatibilityRuleForm
from selection.models import CompatibilityRule
from selection.selectors import (
    budget_ranges,
    compatibility_matrix,
    records_breaking_rules,
    records_forbidden_by,
)
from webarchive.permissions import ADD, DELETE, VIEW, Area, can
from webarchive.views import AreaRequiredMixin, PermittedActionsMixin, ServiceFormView

SHOWN_RECORDS = 100  # records listed under a rule's preview, and among those breaking the rules


class CompatibilityView(PermittedActionsMixin, ServiceFormView):
    """The matrix: for each budget and frequency, which depths may be used; and the rules behind it."""

    area = Area.SELECTION
    model_permission = (VIEW, CompatibilityRule)
    model = CompatibilityRule
    actions = (ADD, DELETE)  # forbid a combination; allow one again
    template_name = "selection/compatibility.html"
    form_class = CompatibilityRuleForm
    title = gettext_lazy("Compatible settings")
    submit_label = gettext_lazy("Forbid this combination")

    def post(self, request, *args, **kwargs):
        if not can(request.user, ADD, CompatibilityRule):
            raise PermissionDenied(_("Only curators may change the compatibility of settings."))
        return super().post(request, *args, **kwargs)

    def form_valid(self, form):
        if "preview" in self.request.POST:  # which records it would catch, before it is made
            settings = {name: form.cleaned_data[name] for name in ("budget", "frequency", "depth")}
            caught = records_forbidden_by(**settings).order_by("url")
            return self.render_to_response(
                self.get_context_data(
                    form=form,
                    previewed=True,
                    caught=caught[:SHOWN_RECORDS],
                    caught_count=caught.count(),
                )
            )
        return super().form_valid(form)

    def perform(self, form):
        rule = services.compatibility_rule_create(user=self.request.user, **form.cleaned_data)
        messages.success(self.request, _("“%(rule)s” can no longer be used.") % {"rule": rule})
        return self.request.path

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        forbidden = set(compatibility_matrix()["forbidden"])
        ranges = budget_ranges()
        context.update(
            {
                "depths": Depth.choices,
                "rows": [
                    (
                        f"{Budget(b).label} ({ranges[b]})",
                        Frequency(f).label,
                        [f"{b}|{f}|{d}" not in forbidden for d in Depth.values],
                    )
                    for b in Budget.values
                    for f in Frequency.values
                ],
                "rules": CompatibilityRule.objects.all(),
            }
        )
        if can(self.request.user, ADD, CompatibilityRule):  # curators: the records to fix
            breaking = records_breaking_rules().order_by("collection__name", "url")
            context.update({"breaking": breaking[:SHOWN_RECORDS], "breaking_count": breaking.count()})
        return context


class CompatibilityRuleDeleteView(AreaRequiredMixin, View):
    area = Area.SELECTION
    model_permission = (DELETE, CompatibilityRule)
    permission_denied_message = gettext_lazy("Only curators may change the compatibility of settings.")

    def post(self, request, pk):
        rule = get_object_or_404(CompatibilityRule, pk=pk)
        services.compatibility_rule_delete(user=request.user, rule=rule)
        messages.success(request, _("“%(rule)s” may be used again.") % {"rule": rule})
        return redirect("selection:compatibility")
