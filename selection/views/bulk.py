"""Bulk edit: the same changes to every selected record, all saved or none."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import QueryDict
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import TemplateView

from selection import services
from selection.filtersets import RecordFilterSet
from selection.forms import BulkEditForm
from selection.models import Record
from selection.selectors import compatibility_matrix
from webarchive.filters import id_range_error
from webarchive.permissions import CHANGE, VALIDATE, VIEW, Area, can, restrict
from webarchive.views import AreaRequiredMixin, apply_validation_error

MAX_BULK = 5000


class RecordBulkEditView(AreaRequiredMixin, TemplateView):
    """Reached from the record list with the ticked records, or with the list's filters for all of them."""

    area = Area.SELECTION
    model_permission = (CHANGE, Record)
    permission_denied_message = gettext_lazy("Your role does not allow you to change records.")
    template_name = "selection/record_bulk_edit.html"

    def selected(self):
        data = self.request.POST
        records = restrict(
            Record.objects.select_related("collection", "responsible"), self.request.user, VIEW
        )
        ids = [value for value in data.getlist("records") if value.isdigit() and not id_range_error(value)]
        query = data.get("query", "")
        if ids:
            return records.filter(pk__in=ids).order_by("url"), ""
        return RecordFilterSet(QueryDict(query), queryset=records, request=self.request).qs.order_by(
            "url"
        ), query

    def post(self, request):
        records, query = self.selected()
        count = records.count()
        if count == 0:
            messages.error(request, _("Select at least one record."))
            return redirect(f"{reverse('selection:record_list')}?{query}")
        if count > MAX_BULK:
            messages.error(request, _("Narrow the selection to %(n)d records or fewer.") % {"n": MAX_BULK})
            return redirect(f"{reverse('selection:record_list')}?{query}")
        may_validate = can(request.user, VALIDATE, Record)
        applying = "apply" in request.POST
        form = BulkEditForm(request.POST if applying else None, user=request.user, may_validate=may_validate)
        if applying and form.is_valid():
            try:
                summary = services.records_bulk_update(
                    records=records, user=request.user, changes=form.cleaned_data
                )
            except ValidationError as error:
                apply_validation_error(form, error)
            else:
                changed = ", ".join(f"{field}: {n}" for field, n in sorted(summary["changed"].items())) or _(
                    "nothing"
                )
                messages.success(
                    request,
                    _("%(n)d record(s) checked; changes made — %(changed)s.")
                    % {"n": summary["records"], "changed": changed},
                )
                return redirect(f"{reverse('selection:record_list')}?{query}")
        scope = request.POST.get("scope", "selected")
        ids = list(records.values_list("pk", flat=True)) if scope != "all" else []
        return self.render_to_response(
            self.get_context_data(
                form=form,
                records=records[:200],
                count=count,
                ids=ids,
                query=query,
                scope=scope,
                matrix=compatibility_matrix(),
            )
        )
