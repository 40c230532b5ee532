"""Steering a running job (Heritrix's live controls): pause and resume a job or one of its sites, add
a reject rule or a crawler trap, change a site's budget.

Each command is a row change, written here with who asked in the job's history; the crawl workers
read the rows with the progress they write every few seconds (:func:`site_crawls_steering`) and apply
them to the running crawl (``harvest.steering``). A paused site is paused in place: its crawl stays
in its worker's memory, frontier, counters and politeness kept, and takes no step until resumed.
A rule added goes into the job's frozen settings (``template_settings["reject_rules"]`` or
``crawler_traps``), so a resubmission of the job keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import JobStatus, SiteState
from harvest.models import Job, JobConfiguration
from harvest.validators import trap_list, validate_trap_lines
from webarchive.history import save_as
from webarchive.permissions import CHANGE, require

REJECT = "reject"
TRAP = "trap"
RULE_KINDS = (REJECT, TRAP)
RULE_MAX_LENGTH = 1000  # characters of one rule added while a job runs
STEERED = (JobStatus.SUBMITTED, JobStatus.STARTED)  # the statuses a job is steered in


def _steerable(job: Job) -> None:
    """Refuse a job that will crawl no more (ended, or stopping)."""
    if job.status not in STEERED or job.stop_requested_at is not None:
        raise ValidationError(
            _("Only a submitted or running job that is not stopping can be steered; this one is %(status)s.")
            % {"status": JobStatus(job.status).label.lower()},
            code="not_running",
        )


def _site_steerable(entry: JobConfiguration) -> None:
    if entry.state == SiteState.ENDED:
        raise ValidationError(
            _("The crawl of %(domain)s has ended: it can no longer be steered.") % {"domain": entry.domain},
            code="site_ended",
        )


def _record(job: Job, user, reason: str) -> None:
    """A row of the job's history: who, when, what (the reason)."""
    job._change_reason = reason[:100]
    save_as(job, user)


def _locked(job: Job) -> Job:
    return Job.objects.select_for_update().get(pk=job.pk)


@transaction.atomic
def job_pause(*, job: Job, user=None) -> Job:
    """Pause a job: its running sites take no more steps, its queued sites start paused."""
    require(user, CHANGE, Job)
    job = _locked(job)
    _steerable(job)
    if job.paused_at is None:
        job.paused_at = timezone.now()
        _record(job, user, "Paused")
    return job


@transaction.atomic
def job_resume(*, job: Job, user=None) -> Job:
    """Resume a paused job (its sites paused one by one stay paused)."""
    require(user, CHANGE, Job)
    job = _locked(job)
    _steerable(job)
    if job.paused_at is not None:
        job.paused_at = None
        _record(job, user, "Resumed")
    return job


def _locked_site(entry: JobConfiguration) -> tuple[Job, JobConfiguration]:
    job = _locked(entry.job)
    entry = JobConfiguration.objects.select_for_update().select_related("domain").get(pk=entry.pk)
    _steerable(job)
    _site_steerable(entry)
    return job, entry


@transaction.atomic
def site_pause(*, entry: JobConfiguration, user=None) -> JobConfiguration:
    """Pause one site of a job (queued: it starts paused; running: it takes no more steps)."""
    require(user, CHANGE, Job)
    job, entry = _locked_site(entry)
    if entry.paused_at is None:
        entry.paused_at = timezone.now()
        entry.save(update_fields=["paused_at"])
        _record(job, user, f"Paused {entry.domain}")
    return entry


@transaction.atomic
def site_resume(*, entry: JobConfiguration, user=None) -> JobConfiguration:
    """Resume one paused site (it stays paused while its whole job is)."""
    require(user, CHANGE, Job)
    job, entry = _locked_site(entry)
    if entry.paused_at is not None:
        entry.paused_at = None
        entry.save(update_fields=["paused_at"])
        _record(job, user, f"Resumed {entry.domain}")
    return entry


def rule_clean(rule: str) -> str:
    """One regular expression, bounded, that RE2 runs in linear time (as every trap is checked)."""
    rule = (rule or "").strip()
    if not rule:
        raise ValidationError({"rule": _("Give a regular expression.")}, code="required")
    if "\n" in rule or "\r" in rule:
        raise ValidationError({"rule": _("Give one regular expression, on one line.")}, code="one_line")
    if len(rule) > RULE_MAX_LENGTH:
        raise ValidationError(
            {"rule": _("A rule has at most %(max)d characters.") % {"max": RULE_MAX_LENGTH}}, code="too_long"
        )
    if rule.startswith("#"):
        raise ValidationError({"rule": _("A rule cannot start with #: that is a comment.")}, code="comment")
    try:
        validate_trap_lines(rule)
    except ValidationError as error:
        raise ValidationError({"rule": error.messages}) from None
    return rule


@transaction.atomic
def job_rule_add(*, job: Job, kind: str, rule: str, user=None) -> Job:
    """Add a reject rule or a crawler trap to a running job: its sites drop the queued URLs it matches
    and no longer queue new ones; the job's frozen settings keep it (a resubmission too)."""
    require(user, CHANGE, Job)
    if kind not in RULE_KINDS:
        raise ValidationError({"kind": _("Choose a reject rule or a crawler trap.")}, code="invalid_kind")
    rule = rule_clean(rule)
    job = _locked(job)
    _steerable(job)
    if kind == REJECT:
        settings = dict(job.template_settings or {})
        rules = list(settings.get("reject_rules", []))
        present = rule in rules
        settings["reject_rules"] = [*rules, rule] if not present else rules
        job.template_settings = settings
    else:
        traps = list(job.crawler_traps or [])
        present = rule in traps
        job.crawler_traps = [*traps, rule] if not present else traps
    if present:
        raise ValidationError({"rule": _("The job already has this rule.")}, code="duplicate")
    job.rules_serial += 1
    label = "Reject rule added" if kind == REJECT else "Crawler trap added"
    _record(job, user, f"{label}: {rule}")
    return job


def _budget(value, field: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number < -1:
        raise ValidationError(
            {field: _("Give a whole number, -1 for no limit.")},
            code="invalid_budget",
        )
    return number


@transaction.atomic
def site_budget_change(*, entry: JobConfiguration, max_objects, max_bytes, user=None) -> JobConfiguration:
    """Raise or lower a site's budget while it runs (-1: no limit); a budget below what it has done
    ends it at once, with the limit as its stop reason."""
    require(user, CHANGE, Job)
    max_objects = _budget(max_objects, "max_objects")
    max_bytes = _budget(max_bytes, "max_bytes")
    job, entry = _locked_site(entry)
    if (max_objects, max_bytes) == (entry.max_objects, entry.max_bytes):
        return entry
    reason = (
        f"Budget of {entry.domain}: objects {entry.max_objects} → {max_objects}, "
        f"bytes {entry.max_bytes} → {max_bytes}"
    )
    entry.max_objects, entry.max_bytes = max_objects, max_bytes
    entry.full_clean(validate_unique=False, validate_constraints=False)
    entry.save(update_fields=["max_objects", "max_bytes"])
    job._change_reason = reason[:100]
    save_as(job, user)
    return entry


# What the crawl workers read ---------------------------------------------------------------------


@dataclass(frozen=True)
class SiteSteering:
    """What a running site should be doing now, as its rows say."""

    paused: bool
    max_objects: int
    max_bytes: int
    rules_serial: int


def site_crawls_steering(entry_ids) -> dict[int, SiteSteering]:
    """The steering of running sites, in one query (read with their progress)."""
    rows = JobConfiguration.objects.filter(pk__in=list(entry_ids)).values_list(
        "pk", "paused_at", "job__paused_at", "max_objects", "max_bytes", "job__rules_serial"
    )
    return {
        pk: SiteSteering(paused or job_paused is not None, max_objects, max_bytes, serial)
        for pk, paused, job_paused, max_objects, max_bytes, serial in rows.iterator()
    }


def site_rules(entry_id: int) -> tuple[list[str], list[str]]:
    """A site's reject rules and crawler traps as they are now (the job's and the domain's)."""
    entry = JobConfiguration.objects.select_related("job").only(
        "crawler_traps", "job__template_settings", "job__crawler_traps"
    )
    entry = entry.get(pk=entry_id)
    template = entry.job.template_settings or {}
    reject = list(template.get("reject_rules", []))
    traps = list(entry.job.crawler_traps or []) + trap_list(entry.crawler_traps)
    return reject, traps
