"""How often sites change: accept a record's suggested frequency (one, or many of a collection's),
and boost a record's frequency until a date. Curators only; the writes are selection's services."""

from __future__ import annotations

import datetime

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import TemplateView, View

from selection.models import Collection, Record
from selection.services_frequency import (
    record_accept_suggestion,
    record_boost,
    record_boost_cancel,
    records_accept_suggestions,
)
from storage.selectors_change_rates import collection_suggestions
from webarchive.permissions import VALIDATE, Area
from webarchive.views import AreaRequiredMixin

CURATORS_ONLY = gettext_lazy("Only curators may change frequencies from suggestions or boost them.")


def _version(request) -> int | None:
    try:
        return int(request.POST.get("version", ""))
    except ValueError:
        return None


class CuratorMixin(AreaRequiredMixin):
    area = Area.SELECTION
    model_permission = (VALIDATE, Record)
    permission_denied_message = CURATORS_ONLY


class RecordAcceptSuggestionView(CuratorMixin, View):
    """Set the record's frequency to its suggested one (over the version the curator read)."""

    def post(self, request, pk):
        record = get_object_or_404(Record.objects.select_related("collection"), pk=pk)
        estimate = getattr(record, "change_estimate", None)
        try:
            record_accept_suggestion(
                record=record,
                user=request.user,
                suggested=estimate.suggested_frequency if estimate else "",
                expected_version=_version(request),
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(request, _("Frequency set to %(f)s.") % {"f": record.get_frequency_display()})
        return redirect(record)


class RecordBoostView(CuratorMixin, View):
    """Harvest a record at another frequency until a date, then back."""

    def post(self, request, pk):
        record = get_object_or_404(Record.objects.select_related("collection"), pk=pk)
        try:
            until = datetime.date.fromisoformat(request.POST.get("until", "").strip())
        except ValueError:
            messages.error(request, _("Give the end of the boost as a date (YYYY-MM-DD)."))
            return redirect(record)
        try:
            record_boost(
                record=record,
                user=request.user,
                frequency=request.POST.get("frequency", ""),
                until=until,
                expected_version=_version(request),
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request,
                _("Frequency %(f)s until %(date)s, then back.")
                % {"f": record.get_frequency_display(), "date": until.isoformat()},
            )
        return redirect(record)


class RecordBoostCancelView(CuratorMixin, View):
    """End a record's boost now."""

    def post(self, request, pk):
        record = get_object_or_404(Record, pk=pk)
        try:
            record_boost_cancel(record=record, user=request.user, expected_version=_version(request))
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request,
                _("Boost cancelled: frequency back to %(f)s.") % {"f": record.get_frequency_display()},
            )
        return redirect(record)


class CollectionSuggestionsView(CuratorMixin, TemplateView):
    """A collection's records whose suggested frequency differs from theirs; accept those selected."""

    template_name = "storage/collection_suggestions.html"

    def get_context_data(self, **kwargs):
        collection = get_object_or_404(Collection, pk=self.kwargs["pk"])
        return super().get_context_data(
            collection=collection, estimates=collection_suggestions(collection), **kwargs
        )

    def post(self, request, pk):
        collection = get_object_or_404(Collection, pk=pk)
        chosen = {}
        differing = {estimate.record_id: estimate for estimate in collection_suggestions(collection)}
        for raw in request.POST.getlist("record"):
            if raw.isdigit() and int(raw) in differing:
                estimate = differing[int(raw)]
                try:
                    version = int(request.POST.get(f"version_{raw}", ""))
                except ValueError:
                    version = None
                chosen[estimate.record_id] = (estimate.suggested_frequency, version)
        try:
            count = records_accept_suggestions(suggestions=chosen, user=request.user)
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
        else:
            messages.success(
                request, _("%(n)d record(s) now follow their suggested frequency.") % {"n": count}
            )
        return redirect("storage:collection_suggestions", pk=collection.pk)


urlpatterns = [
    path(
        "records/<int:pk>/accept-suggestion/",
        RecordAcceptSuggestionView.as_view(),
        name="record_accept_suggestion",
    ),
    path("records/<int:pk>/boost/", RecordBoostView.as_view(), name="record_boost"),
    path("records/<int:pk>/boost/cancel/", RecordBoostCancelView.as_view(), name="record_boost_cancel"),
    path(
        "collections/<int:pk>/suggested-frequencies/",
        CollectionSuggestionsView.as_view(),
        name="collection_suggestions",
    ),
]
