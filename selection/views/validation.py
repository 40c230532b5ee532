"""The curators' validation queue: proposed records across collections, one by one or in bulk."""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import View

from selection import services
from selection.choices import RecordStatus
from selection.filtersets import RecordFilterSet
from selection.models import Record
from selection.tables import ValidationQueueTable
from webarchive.filters import id_range_error
from webarchive.permissions import VALIDATE, Area
from webarchive.views import AreaRequiredMixin, ObjectListView, redirect_next


class CuratorMixin:
    area = Area.SELECTION
    model_permission = (VALIDATE, Record)
    permission_denied_message = gettext_lazy("Only curators may validate or reject records.")


class ValidationQueueView(CuratorMixin, ObjectListView):
    queryset = Record.objects.filter(status=RecordStatus.PROPOSED).select_related(
        "collection", "responsible", "theme"
    )
    filterset_class = RecordFilterSet
    template_name = "selection/validation_queue.html"
    table_class = ValidationQueueTable
    ordering = ["created_at", "pk"]

    def get_queryset(self):
        queryset = super().get_queryset()
        # The queue's filter bar shows the fields without their errors: say them above the list.
        for name, errors in self.filterset.errors.items():
            label = self.filterset.form.fields[name].label if name in self.filterset.form.fields else name
            messages.error(self.request, f"{label}: {' '.join(errors)}")
        return queryset


class ValidationDecisionView(CuratorMixin, AreaRequiredMixin, View):
    """POST: validate or reject the selected records, all of them or none."""

    def post(self, request):
        ids = request.POST.getlist("records")
        decision = request.POST.get("decision")
        reason = request.POST.get("reason", "")
        if decision not in (RecordStatus.VALIDATED, RecordStatus.REJECTED):
            messages.error(request, _("Choose to validate or to reject."))
        elif not ids:
            messages.error(request, _("Select at least one record."))
        else:
            ids = [i for i in ids if i.isdigit() and not id_range_error(i)]
            records = Record.objects.filter(pk__in=ids).order_by("pk")
            try:
                count = services.records_set_status(
                    records=records, user=request.user, status=decision, reason=reason
                )
            except ValidationError as error:
                for message in error.messages:
                    messages.error(request, message)
                messages.error(request, _("Nothing was changed."))
            else:
                label = RecordStatus(decision).label.lower()
                messages.success(request, _("%(n)d record(s) %(what)s.") % {"n": count, "what": label})
        return redirect_next(request, "selection:validation_queue")
