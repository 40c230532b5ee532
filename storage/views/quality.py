"""The curators' quality view of a job (Reports area): its sites flagged for a budget hit, many errors or
few URLs, each beside the previous harvest of its domain, and the notes curators write on a site, which
go to every selection record behind it (librarians read them on the record's page).

When the crawl rendered pages in a browser, each site shows its render figures and errors and the
screenshots of its seeds, as far as the user may see captures (their images come from the Access area's
``storage:capture_image``).

Curators write notes; engineers and managers read the page. The note form of a site is an htmx
fragment: a note posted from it comes back as the site's notes, or as the form with its error.
"""

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.generic import TemplateView, View

from harvest.choices import StopReason
from harvest.models import HarvestDefinition, Job, JobConfiguration, NextRunAddition
from harvest.services.additions import next_run_additions
from storage.forms import SiteNoteForm
from storage.models import Capture, HarvestNote
from storage.selectors_misses import definition_misses, job_misses, replay_misses_grouped
from storage.selectors_quality import (
    QualityFilter,
    job_quality,
    job_quality_counts,
    percent_change,
    site_notes,
    site_renders,
)
from storage.services.quality import harvest_note_add_to_site
from storage.services.replay_misses import replay_misses_add_to_next_run
from storage.views.pages import planning_links
from webarchive.permissions import ADD, VIEW, Area, permitted, restrict
from webarchive.views import AreaRequiredMixin, apply_validation_error, htmx_response

SITES_PER_PAGE = 50
NOTES_FRAGMENT = "storage/job_quality_notes.html"


def _signed_percent(change: float | None) -> str:
    return "" if change is None else f"{change:+.0f} %"


def _stop_label(reason: str | None) -> str:
    if not reason:
        return ""
    return StopReason(reason).label if reason in StopReason.values else reason


def _site_context(entry: JobConfiguration, notes, form) -> dict:
    """A site's notes and, for those who may write one (curators), its note form."""
    return {"entry": entry, "notes": notes, "form": form}


class JobQualityView(AreaRequiredMixin, TemplateView):
    """One job's sites with their flags, previous harvest and rendering; filtered by flag, paginated."""

    area = Area.REPORTS
    model_permission = (VIEW, Job)
    template_name = "storage/job_quality.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        job = get_object_or_404(Job.objects.select_related("harvest_definition"), pk=self.kwargs["pk"])
        flag = self.request.GET.get("flag", QualityFilter.ALL)
        if flag not in dict(QualityFilter.CHOICES):
            flag = QualityFilter.ALL
        page = Paginator(job_quality(job, flag=flag), SITES_PER_PAGE).get_page(self.request.GET.get("page"))
        notes = site_notes(job, [entry.domain_id for entry in page])
        user = self.request.user
        renders = site_renders(job, page, restrict(Capture.objects.all(), user))
        writes_notes = permitted(user, HarvestNote, [ADD])[ADD]  # each site's note form (curators)
        for entry in page:
            entry.render = renders[entry.pk]
            entry.urls_change = percent_change(entry.urls_done, entry.previous_urls)
            entry.bytes_change = percent_change(entry.bytes_done, entry.previous_bytes)
            entry.urls_change_text = _signed_percent(entry.urls_change)
            entry.bytes_change_text = _signed_percent(entry.bytes_change)
            entry.previous_stop_label = _stop_label(entry.previous_stop_reason)
            entry.site = _site_context(
                entry,
                notes.get(entry.domain_id, []),
                SiteNoteForm(prefix=f"site-{entry.pk}") if writes_notes else None,
            )
        counts = job_quality_counts(job)
        context.update(
            {
                "job": job,
                "flag": flag,
                "filters": [(value, label, counts[value]) for value, label in QualityFilter.CHOICES],
                "page_obj": page,
                "paginator": page.paginator,
                "is_paginated": page.has_other_pages(),
                "planning": planning_links(user),
                "error_share_percent": f"{settings.REPORT_ERROR_SHARE * 100:g}",
                "few_urls": settings.REPORT_FEW_URLS,
                "misses": _misses_context(user, job.harvest_definition, job_misses(job), job=job),
            }
        )
        return context


def _misses_context(user, definition, misses, job=None) -> dict:
    """The missed-in-replay section: groups, and whether the user may add them to the next run."""
    return {
        "definition": definition,
        "job": job,
        "groups": replay_misses_grouped(misses),
        "can_add": permitted(user, NextRunAddition, [ADD])[ADD] and definition.is_active,
    }


class DefinitionMissesView(AreaRequiredMixin, TemplateView):
    """The URLs missed in replay of all the jobs of a definition, and what was added to its next runs."""

    area = Area.REPORTS
    model_permission = (VIEW, Job)
    template_name = "storage/definition_misses.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        definition = get_object_or_404(HarvestDefinition, pk=self.kwargs["pk"])
        user = self.request.user
        context.update(
            {
                "definition": definition,
                "definition_link": planning_links(user).get("definition", False),
                "misses": _misses_context(user, definition, definition_misses(definition)),
                "additions": next_run_additions(definition),
            }
        )
        return context


class DefinitionMissesAddView(AreaRequiredMixin, View):
    """POST: add the chosen missed URLs (or all of the job's or definition's) to the definition's next run."""

    area = Area.REPORTS
    model_permission = (ADD, NextRunAddition)
    permission_denied_message = gettext_lazy("Only curators add URLs to the next run.")

    def post(self, request, pk):
        definition = get_object_or_404(HarvestDefinition, pk=pk)
        job = None
        if request.POST.get("job"):
            job = get_object_or_404(Job, pk=request.POST["job"] if request.POST["job"].isdigit() else 0)
        back = (
            reverse("quality:job_quality", kwargs={"pk": job.pk})
            if job is not None
            else reverse("quality:definition_misses", kwargs={"pk": definition.pk})
        )
        if request.POST.get("all"):
            scope = job_misses(job) if job is not None else definition_misses(definition)
            ids = list(scope.order_by("-count", "pk").values_list("pk", flat=True)[:1000])
        else:
            values = request.POST.getlist("miss")
            if not all(value.isdigit() for value in values):
                messages.error(request, _("Unknown missed URL."))
                return redirect(back)
            ids = [int(value) for value in values]
        try:
            added = replay_misses_add_to_next_run(
                definition=definition,
                miss_ids=ids,
                user=request.user,
                as_rules=request.POST.get("as") == "rule",
            )
        except ValidationError as error:
            messages.error(request, " ".join(error.messages))
            return redirect(back)
        if request.POST.get("as") == "rule":
            message = _("%(count)d accept rule(s) will be in the next run of %(definition)s.")
        else:
            message = _("%(count)d URL(s) will be extra seeds of the next run of %(definition)s.")
        messages.success(request, message % {"count": len(added), "definition": definition.name})
        return redirect(back)


class SiteNoteView(AreaRequiredMixin, View):
    """POST: a curator's note on one site of a job, attached to every record behind the site."""

    area = Area.REPORTS
    model_permission = (ADD, HarvestNote)
    permission_denied_message = gettext_lazy("Only curators write notes on harvests.")

    def post(self, request, pk, entry_pk):
        entry = get_object_or_404(
            JobConfiguration.objects.select_related("domain", "configuration", "job"), pk=entry_pk, job_id=pk
        )
        form = SiteNoteForm(request.POST, prefix=f"site-{entry.pk}")
        saved = []
        if form.is_valid():
            try:
                saved = harvest_note_add_to_site(
                    entry=entry, user=request.user, text=form.cleaned_data["text"]
                )
            except ValidationError as error:
                apply_validation_error(form, error)
        back = reverse("quality:job_quality", kwargs={"pk": pk})
        if saved:
            text = _("The note was attached to %(count)d record(s) of %(domain)s.") % {
                "count": len(saved),
                "domain": entry.domain.name,
            }
            if not request.htmx:
                messages.success(request, text)
                return redirect(back)
            form = SiteNoteForm(prefix=f"site-{entry.pk}")
        context = _site_context(
            entry, site_notes(entry.job, [entry.domain_id]).get(entry.domain_id, []), form
        )
        context.update({"saved_text": text if saved else "", "job": entry.job, "back": back})
        if request.htmx:
            return htmx_response(request, render(request, NOTES_FRAGMENT, {"site": context}))
        return render(
            request, "storage/job_quality_note.html", {"site": context, "job": entry.job, "back": back}
        )


app_name = "quality"

urlpatterns = [
    path("jobs/<int:pk>/quality/", JobQualityView.as_view(), name="job_quality"),
    path(
        "jobs/<int:pk>/quality/sites/<int:entry_pk>/notes/", SiteNoteView.as_view(), name="job_quality_note"
    ),
    path("definitions/<int:pk>/misses/", DefinitionMissesView.as_view(), name="definition_misses"),
    path("definitions/<int:pk>/misses/add/", DefinitionMissesAddView.as_view(), name="definition_misses_add"),
]
