"""Steering a running job from its page (engineers): pause and resume the job or one of its sites,
add a reject rule or a crawler trap, change a site's budget (harvest.services.steering)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from harvest.models import JobConfiguration
from harvest.services.steering import (
    REJECT,
    job_pause,
    job_resume,
    job_rule_add,
    site_budget_change,
    site_pause,
    site_resume,
)
from harvest.views.jobs import JobActionView, _back

REFUSED = gettext_lazy("Only crawl engineers may steer jobs.")


class JobPauseView(JobActionView):
    """Pause a running job: its sites take no more steps until it is resumed."""

    permission_denied_message = REFUSED

    def act(self, request, job):
        job = job_pause(job=job, user=request.user)
        return _back(request, job), _(
            "%(job)s is paused: its sites take no more steps until it is resumed."
        ) % {"job": job}


class JobResumeView(JobActionView):
    permission_denied_message = REFUSED

    def act(self, request, job):
        job = job_resume(job=job, user=request.user)
        return _back(request, job), _("%(job)s is resumed.") % {"job": job}


class JobRuleAddView(JobActionView):
    """Add a reject rule or a crawler trap to a running job (fields ``kind`` and ``rule``)."""

    permission_denied_message = REFUSED

    def act(self, request, job):
        kind = request.POST.get("kind", "")
        rule = request.POST.get("rule", "")
        job = job_rule_add(job=job, kind=kind, rule=rule, user=request.user)
        if kind == REJECT:
            text = _(
                "Reject rule added to %(job)s: its sites drop the queued URLs it matches within seconds."
            )
        else:
            text = _(
                "Crawler trap added to %(job)s: its sites drop the queued URLs it matches within seconds."
            )
        return _back(request, job), text % {"job": job}


def _site(job, request) -> JobConfiguration:
    """The site of the job the form names (``domain``), or a refusal."""
    name = request.POST.get("domain", "").strip().lower()
    entry = job.configurations.select_related("domain").filter(domain__name=name).first()
    if entry is None:
        raise ValidationError(_("%(job)s has no site “%(domain)s”.") % {"job": job, "domain": name[:200]})
    entry.job = job
    return entry


class SitePauseView(JobActionView):
    """Pause one site of a job (field ``domain``)."""

    permission_denied_message = REFUSED

    def act(self, request, job):
        entry = site_pause(entry=_site(job, request), user=request.user)
        return _back(request, job), _("%(domain)s is paused.") % {"domain": entry.domain}


class SiteResumeView(JobActionView):
    permission_denied_message = REFUSED

    def act(self, request, job):
        entry = site_resume(entry=_site(job, request), user=request.user)
        return _back(request, job), _("%(domain)s is resumed.") % {"domain": entry.domain}


class SiteBudgetView(JobActionView):
    """Change the budget of one site of a job (fields ``domain``, ``max_objects``, ``max_bytes``)."""

    permission_denied_message = REFUSED

    def act(self, request, job):
        entry = _site(job, request)
        entry = site_budget_change(
            entry=entry,
            max_objects=request.POST.get("max_objects", "").strip(),
            max_bytes=request.POST.get("max_bytes", "").strip(),
            user=request.user,
        )
        text = _("The budget of %(domain)s is now %(objects)s objects and %(bytes)s bytes (-1: no limit).")
        return _back(request, job), text % {
            "domain": entry.domain,
            "objects": entry.max_objects,
            "bytes": entry.max_bytes,
        }


urlpatterns = [
    path("jobs/<int:pk>/pause/", JobPauseView.as_view(), name="job_pause"),
    path("jobs/<int:pk>/resume/", JobResumeView.as_view(), name="job_resume"),
    path("jobs/<int:pk>/rules/", JobRuleAddView.as_view(), name="job_rule_add"),
    path("jobs/<int:pk>/sites/pause/", SitePauseView.as_view(), name="job_site_pause"),
    path("jobs/<int:pk>/sites/resume/", SiteResumeView.as_view(), name="job_site_resume"),
    path("jobs/<int:pk>/sites/budget/", SiteBudgetView.as_view(), name="job_site_budget"),
]
