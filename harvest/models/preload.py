"""Broad-crawl preparation (the BnF's NAS_preload, inside the application): one run, its sources,
its audit trail (steps) and the staging rows a run works through (harvest.services.preload).

A run goes through its stages in order — ingest, merge, DNS check, redirect discovery, load —
and records where it stands after every batch, so that an interrupted run resumes where it was.
"""

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from harvest.models.definitions import HarvestDefinition
from webarchive.runs import Run
from webarchive.transitions import Transitions


class PreloadRun(Run):
    """One preparation of a snapshot harvest from domain lists: options, stage, progress, statistics."""

    class State(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        STOPPED = "stopped", _("stopped")
        FAILED = "failed", _("failed")
        DONE = "done", _("done")

    class Stage(models.TextChoices):
        INGEST = "ingest", _("reading the lists")
        MERGE = "merge", _("merging the sources")
        DNS = "dns", _("checking DNS")
        REDIRECTS = "redirects", _("discovering redirects")
        LOAD = "load", _("loading the domains")
        DONE = "done", _("done")

    # What the preparation is for; optional: the domains are loaded all the same, and every snapshot
    # takes the active ones (the definition can be chosen later).
    harvest_definition = models.ForeignKey(
        HarvestDefinition,
        on_delete=models.PROTECT,
        related_name="preload_runs",
        verbose_name=_("snapshot harvest definition"),
        null=True,
        blank=True,
    )
    state = models.CharField(_("state"), max_length=10, choices=State, default=State.QUEUED)
    stage = models.CharField(_("stage"), max_length=10, choices=Stage, default=Stage.INGEST)
    check_dns = models.BooleanField(_("check DNS"), default=True)
    find_redirects = models.BooleanField(_("discover redirects"), default=True)
    include_selection = models.BooleanField(
        _("librarians' validated records"),
        default=True,
        help_text=_("Add the domains of validated selection records as the source “selection”."),
    )
    nameservers = models.TextField(
        _("nameservers"), blank=True, help_text=_("HOST or HOST:PORT, one per line; empty: the system's.")
    )
    dns_timeout = models.FloatField(_("DNS timeout (s)"), default=2.0)
    dns_retries = models.PositiveSmallIntegerField(_("DNS retries"), default=1)
    # A stop is a flag the run reads between two batches: the run stays running until then (its
    # stages are one process that must finish its batch), and a run queued again clears it.
    stop_requested = models.BooleanField(_("stop requested"), default=False)
    # The load takes the staged domains by ranges of ids (batch k: ids from k times the batch size), a
    # range per transaction, which adds k here: no per-row flag to rewrite, and ranges loaded
    # side by side by several connections each leave their mark.
    loaded_batches = models.JSONField(_("batches loaded"), default=list, blank=True, editable=False)
    statistics = models.JSONField(_("statistics"), default=dict, blank=True)

    ACTIVE = (State.QUEUED, State.RUNNING)

    class Meta:
        verbose_name = _("preload run")
        verbose_name_plural = _("preload runs")
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        if self.harvest_definition_id is None:
            return f"{_('Preload')} {self.pk}"
        return f"{_('Preload')} {self.pk} → {self.harvest_definition}"

    def get_absolute_url(self):
        return reverse("harvest:preload_detail", kwargs={"pk": self.pk})

    @property
    def nameserver_list(self) -> list[str]:
        return [line.strip() for line in self.nameservers.splitlines() if line.strip()]


# A run's state, moved by harvest.services.preload.runs. A run is run (preload_run) from any state
# but done: running -> running is a worker killed mid-run whose task is delivered again, and a
# stopped or failed run may be run again directly (``preload_domains --resume``) as well as queued
# again by Resume. Stop only raises a flag; the run itself becomes stopped between two batches.
PRELOAD_RUN_TRANSITIONS = Transitions(
    PreloadRun.State,
    {
        PreloadRun.State.QUEUED: {PreloadRun.State.RUNNING},
        PreloadRun.State.RUNNING: {
            PreloadRun.State.RUNNING,
            PreloadRun.State.STOPPED,
            PreloadRun.State.FAILED,
            PreloadRun.State.DONE,
        },
        PreloadRun.State.STOPPED: {PreloadRun.State.QUEUED, PreloadRun.State.RUNNING},
        PreloadRun.State.FAILED: {PreloadRun.State.QUEUED, PreloadRun.State.RUNNING},
        PreloadRun.State.DONE: set(),
    },
    noun=_("preload run"),
    field="state",
)


class PreloadStep(models.Model):
    """One step of a run in its audit trail: who created, stopped or resumed it, each stage it
    finished and each range of domains it loaded, with what the step wrote.

    A run creates and changes domains in bulk (thousands a statement), not one saved object at a
    time: this is the record of who had what done, a row per step rather than per domain."""

    class Kind(models.TextChoices):
        CREATED = "created", _("created")
        STOP_ASKED = "stop_asked", _("stop asked")
        RESUMED = "resumed", _("resumed")
        STAGE_DONE = "stage_done", _("stage done")
        LOADED = "loaded", _("domains loaded")

    run = models.ForeignKey(PreloadRun, on_delete=models.CASCADE, related_name="steps", verbose_name=_("run"))
    at = models.DateTimeField(_("at"), auto_now_add=True)
    kind = models.CharField(_("step"), max_length=12, choices=Kind)
    stage = models.CharField(_("stage"), max_length=10, choices=PreloadRun.Stage, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
        help_text=_("Who asked for it: for the run's own steps, who started the run or resumed it last."),
    )
    counts = models.JSONField(_("what it wrote"), default=dict, blank=True)

    class Meta:
        verbose_name = _("preload step")
        verbose_name_plural = _("preload steps")
        ordering = ["run", "pk"]

    def __str__(self):
        return f"{self.run_id} {self.get_kind_display()} {self.stage}".strip()


class PreloadSource(models.Model):
    """One list of a run: a file of domains or URLs (or CSV), tagged with where it comes from."""

    run = models.ForeignKey(
        PreloadRun, on_delete=models.CASCADE, related_name="sources", verbose_name=_("run")
    )
    name = models.CharField(_("source"), max_length=100)
    path = models.CharField(_("file"), max_length=1000, blank=True, help_text=_("Empty for the selection."))
    column = models.CharField(_("CSV column"), max_length=200, blank=True)
    lines = models.BigIntegerField(_("lines"), default=0)
    accepted = models.BigIntegerField(_("lines accepted"), default=0)
    invalid = models.BigIntegerField(_("invalid lines"), default=0)
    ingested = models.BooleanField(_("read"), default=False)

    class Meta:
        verbose_name = _("preload source")
        verbose_name_plural = _("preload sources")
        ordering = ["pk"]
        # Several files may make one source (one registry's list in parts); a file is read once.
        constraints = [
            models.UniqueConstraint(fields=["run", "path", "name"], name="preload_source_unique_file")
        ]

    def __str__(self):
        return self.name


class PreloadInvalidLine(models.Model):
    """A line of a source that gives no domain, and why (the first ones of each source are kept)."""

    source = models.ForeignKey(PreloadSource, on_delete=models.CASCADE, related_name="invalid_lines")
    line = models.BigIntegerField(_("line"))
    text = models.CharField(_("text"), max_length=500)
    reason = models.CharField(_("reason"), max_length=500)

    class Meta:
        ordering = ["source", "line"]

    def __str__(self):
        return f"{self.source} line {self.line}"


class PreloadEntry(models.Model):
    """One accepted line of one source: the registered domain and, when the line was a URL, the URL.

    A staging table written once by ``COPY`` and read whole by the merge: millions of rows, so no
    index and no foreign-key constraint to maintain for each (deleting a run or source still
    deletes its entries, through Django)."""

    run = models.ForeignKey(
        PreloadRun, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    source = models.ForeignKey(
        PreloadSource, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    name = models.CharField(max_length=255)
    seed = models.TextField(blank=True)

    def __str__(self):
        return self.name


class PreloadDomain(models.Model):
    """One domain of a run after the merge: its sources, seeds, whether it is new, its DNS result."""

    class Dns(models.TextChoices):
        PENDING = "pending", _("not checked yet")
        LIVE = "live", _("live")
        FAILED = "failed", _("no DNS answer")
        SKIPPED = "skipped", _("not checked (taken as live)")

    run = models.ForeignKey(
        PreloadRun, on_delete=models.CASCADE, related_name="domains", db_index=False, db_constraint=False
    )
    name = models.CharField(_("domain"), max_length=255)
    sources = models.TextField(_("sources"), help_text=_("Source names, comma-separated."))
    seeds = models.TextField(_("seeds"), blank=True)
    # The domain's id when the database knew it at the merge (no constraint, no index: the load
    # updates known domains by their primary key).
    known_id = models.BigIntegerField(_("known domain"), null=True, blank=True, editable=False)
    is_new = models.BooleanField(_("new"), default=False)
    dns = models.CharField(_("DNS"), max_length=10, choices=Dns, default=Dns.PENDING)
    dns_detail = models.CharField(_("DNS detail"), max_length=200, blank=True)
    redirect_from = models.CharField(_("redirect from"), max_length=255, blank=True)
    redirects_checked = models.BooleanField(default=False)

    class Meta:
        verbose_name = _("preloaded domain")
        verbose_name_plural = _("preloaded domains")
        # The stages walk the rows in id order (the primary key); the name is looked up by the
        # redirect discovery. No other index: each costs the merge and the checks millions of writes.
        constraints = [models.UniqueConstraint(fields=["run", "name"], name="preload_domain_unique_name")]

    def __str__(self):
        return self.name
