"""Runs of harvest definitions, the jobs they produce, and what each domain yielded."""

from django.db import models
from django.db.models import JSONField, Q, Value
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.choices import JobFailure, JobStatus, SiteState, StopReason
from harvest.models.definitions import HarvestChannel, HarvestDefinition
from harvest.models.domains import Domain, DomainConfiguration

# What a site crawl counts (JobConfiguration's fields); a job keeps the sum over its ended sites in
# ``ended_<field>``.
SITE_PROGRESS_FIELDS = (
    "urls_done",
    "urls_queued",
    "bytes_done",
    "error_count",
    "duplicates",
    "duplicate_bytes",
)
ENDED_COUNTERS = ("sites_ended", *(f"ended_{field}" for field in SITE_PROGRESS_FIELDS))


class HarvestRun(models.Model):
    """One run of a harvest definition; unique per (definition, number), so a run is launched once."""

    harvest_definition = models.ForeignKey(
        HarvestDefinition, on_delete=models.PROTECT, related_name="runs", verbose_name=_("harvest definition")
    )
    number = models.PositiveIntegerField(_("run"))
    scheduled_for = models.DateTimeField(_("scheduled for"))
    created_at = models.DateTimeField(_("launched at"), auto_now_add=True)
    missed = models.PositiveIntegerField(
        _("missed runs skipped"),
        default=0,
        help_text=_("Scheduled runs that were due but skipped, not piled up."),
    )

    class Meta:
        verbose_name = _("harvest run")
        verbose_name_plural = _("harvest runs")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["harvest_definition", "number"],
                name="harvest_run_unique_number",
                violation_error_message=_("This run of the harvest definition was already launched."),
            )
        ]

    def __str__(self):
        return f"{self.harvest_definition} #{self.number}"


class Job(models.Model):
    """A batch of domain configurations crawled together with one template, on one channel."""

    harvest_definition = models.ForeignKey(
        HarvestDefinition, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("harvest definition")
    )
    run = models.ForeignKey(HarvestRun, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("run"))
    run_number = models.PositiveIntegerField(_("run"))
    channel = models.ForeignKey(
        HarvestChannel, on_delete=models.PROTECT, related_name="jobs", verbose_name=_("channel")
    )
    queue = models.CharField(_("Celery queue"), max_length=100)
    status = models.CharField(_("status"), max_length=12, choices=JobStatus, default=JobStatus.NEW)

    # Frozen when the job is made: later edits of the template do not change it.
    template = models.ForeignKey(
        "harvest.HarvestTemplate", on_delete=models.PROTECT, related_name="jobs", verbose_name=_("template")
    )
    template_version = models.PositiveIntegerField(_("template version"))
    template_settings = models.JSONField(_("template settings"))
    crawler_traps = models.JSONField(
        _("crawler traps"),
        default=list,
        help_text=_("Global and harvest definition traps; domains add their own."),
    )
    max_seconds = models.PositiveIntegerField(_("max running time (s)"), default=0)
    domain_count = models.PositiveIntegerField(_("domains"), default=0)
    expected_objects = models.BigIntegerField(_("expected objects"), default=0)

    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    submitted_at = models.DateTimeField(_("submitted at"), null=True, blank=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    errors = models.TextField(_("errors"), blank=True)
    failure = models.CharField(
        _("failure"), max_length=30, choices=JobFailure, blank=True, help_text=_("Why it failed, as a code.")
    )
    dispatched_at = models.DateTimeField(_("sent to the crawlers at"), null=True, blank=True)
    stop_requested_at = models.DateTimeField(_("stop requested at"), null=True, blank=True)
    # Steering (harvest.services.steering): a paused job's sites take no step until it is resumed;
    # the serial grows with each rule added while it runs, so the crawl workers know to read them.
    paused_at = models.DateTimeField(_("paused at"), null=True, blank=True)
    rules_serial = models.PositiveIntegerField(
        _("rules added while running"), default=0, db_default=0, editable=False
    )
    resubmitted_as = models.OneToOneField(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="resubmission_of",
        verbose_name=_("resubmitted as"),
    )
    continuation_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="continuations",
        verbose_name=_("continuation of"),
    )

    # The progress of the job's ended sites, added up as each ends (harvest.services.crawls, in the
    # transaction that ends it, under the job's lock): a job's progress is these plus its running
    # sites, so the polling pages never sum over thousands of site crawls.
    sites_ended = models.PositiveIntegerField(_("sites ended"), default=0, db_default=0, editable=False)
    ended_urls_done = models.BigIntegerField(
        _("URLs done by ended sites"), default=0, db_default=0, editable=False
    )
    ended_urls_queued = models.BigIntegerField(
        _("URLs left queued by ended sites"), default=0, db_default=0, editable=False
    )
    ended_bytes_done = models.BigIntegerField(
        _("bytes of ended sites"), default=0, db_default=0, editable=False
    )
    ended_error_count = models.BigIntegerField(
        _("errors of ended sites"), default=0, db_default=0, editable=False
    )
    ended_duplicates = models.BigIntegerField(
        _("revisits of ended sites"), default=0, db_default=0, editable=False
    )
    ended_duplicate_bytes = models.BigIntegerField(
        _("bytes saved by ended sites"), default=0, db_default=0, editable=False
    )

    history = HistoricalRecords(
        excluded_fields=["template_settings", "crawler_traps", "rules_serial", *ENDED_COUNTERS]
    )

    class Meta:
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        ordering = ["-pk"]
        indexes = [models.Index(fields=["status", "harvest_definition"])]

    def __str__(self):
        return _("Job %(id)s") % {"id": self.pk}

    def get_absolute_url(self):
        return reverse("harvest:job_detail", kwargs={"pk": self.pk})


class JobConfiguration(models.Model):
    """A domain configuration as a job harvests it: seeds, effective limits and traps, frozen."""

    job = models.ForeignKey(
        Job, on_delete=models.PROTECT, related_name="configurations", verbose_name=_("job")
    )
    # No foreign key constraint in the database for these two, on purpose: PostgreSQL checks a key by
    # locking the row it points to (FOR KEY SHARE), so a snapshot's 3,000,000 rows locked, that is
    # rewrote, every domain and every configuration at its commit (47 s per million). Domains are
    # never deleted; a configuration is deleted only by configuration_delete, which waits for the
    # launches writing jobs (job_entries_lock) and then refuses one with job entries. PROTECT still
    # guards every deletion through the ORM.
    configuration = models.ForeignKey(
        DomainConfiguration,
        on_delete=models.PROTECT,
        related_name="job_entries",
        verbose_name=_("configuration"),
        db_constraint=False,
    )
    domain = models.ForeignKey(
        Domain,
        on_delete=models.PROTECT,
        related_name="job_entries",
        verbose_name=_("domain"),
        db_constraint=False,
    )
    seeds = models.TextField(_("seeds"), blank=True)
    max_objects = models.BigIntegerField(_("max objects"))
    max_bytes = models.BigIntegerField(_("max bytes"))
    max_request_rate = models.PositiveIntegerField(_("max requests per minute"), default=0)
    expected_objects = models.BigIntegerField(_("expected objects"))
    crawler_traps = models.TextField(_("domain crawler traps"), blank=True)

    # The site crawl of this configuration: its state and live progress, written by the crawl
    # task every few seconds (pages read it here, never from the crawler).
    state = models.CharField(
        _("state"), max_length=10, choices=SiteState, default=SiteState.QUEUED, db_default=SiteState.QUEUED
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0, db_default=0)
    worker = models.CharField(_("worker"), max_length=200, blank=True, default="", db_default="")
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    progress_at = models.DateTimeField(_("progress at"), null=True, blank=True)
    urls_done = models.BigIntegerField(_("URLs done"), default=0, db_default=0)
    urls_queued = models.BigIntegerField(_("URLs queued"), default=0, db_default=0)
    bytes_done = models.BigIntegerField(_("bytes"), default=0, db_default=0)
    error_count = models.BigIntegerField(_("errors"), default=0, db_default=0)
    duplicates = models.BigIntegerField(
        _("revisits"), default=0, db_default=0, help_text=_("Captures stored as revisits of an earlier one.")
    )
    duplicate_bytes = models.BigIntegerField(
        _("bytes saved"),
        default=0,
        db_default=0,
        help_text=_("Payload bytes the revisits did not store again."),
    )
    rate = models.FloatField(_("URLs per second"), default=0.0, db_default=0.0)
    current_url = models.TextField(_("current URL"), blank=True, default="", db_default="")
    stop_reason = models.CharField(
        _("stop reason"), max_length=20, choices=StopReason, blank=True, default="", db_default=""
    )
    error = models.TextField(_("error"), blank=True, default="", db_default="")
    report = models.JSONField(_("report"), default=dict, blank=True, db_default=Value({}, JSONField()))
    paused_at = models.DateTimeField(_("paused at"), null=True, blank=True)
    # Sent with its progress while it runs: the hosts and path prefixes with the most URLs queued.
    biggest_queues = models.JSONField(
        _("biggest queues"), default=dict, blank=True, db_default=Value({}, JSONField())
    )

    class Meta:
        verbose_name = _("job configuration")
        verbose_name_plural = _("job configurations")
        ordering = ["job", "-expected_objects", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "domain"],
                name="harvest_jobconfiguration_domain_once",
                violation_error_message=_("A domain is harvested at most once per job."),
            )
        ]
        indexes = [
            models.Index(fields=["job", "state"]),
            # The monitoring page's failed sites of the last day (harvest.monitoring.failed_sites):
            # a few rows among millions, newest first.
            models.Index(
                fields=["-ended_at"],
                name="harvest_jobconf_failed_ended",
                condition=Q(state=SiteState.ENDED) & (Q(stop_reason=StopReason.FAILED) | ~Q(error="")),
            ),
        ]

    def __str__(self):
        return f"{self.job} / {self.configuration}"

    @property
    def seed_urls(self) -> list[str]:
        return self.seeds.split()


class ExternalLink(models.Model):
    """A link to another site found by a site crawl, with how many times it was found."""

    entry = models.ForeignKey(
        JobConfiguration,
        on_delete=models.CASCADE,
        related_name="external_links",
        verbose_name=_("site crawl"),
    )
    url = models.TextField(_("URL"))
    count = models.PositiveIntegerField(_("times found"), default=1)
    # The first few pages of the site that link to it (harvest.crawler.site.EXTERNAL_SOURCES_KEPT).
    sources = models.JSONField(
        _("linking pages"), default=list, blank=True, db_default=Value([], JSONField())
    )

    class Meta:
        verbose_name = _("external link")
        verbose_name_plural = _("external links")
        ordering = ["entry", "-count", "url"]

    def __str__(self):
        return self.url


class HarvestInfo(models.Model):
    """What the crawl of one domain configuration in one job yielded, and why it stopped."""

    job = models.ForeignKey(
        Job, on_delete=models.PROTECT, related_name="harvest_infos", verbose_name=_("job")
    )
    configuration = models.ForeignKey(
        DomainConfiguration,
        on_delete=models.PROTECT,
        related_name="harvest_infos",
        verbose_name=_("configuration"),
    )
    domain = models.ForeignKey(
        Domain, on_delete=models.PROTECT, related_name="harvest_infos", verbose_name=_("domain")
    )
    object_count = models.BigIntegerField(_("objects"), default=0)
    byte_count = models.BigIntegerField(_("bytes"), default=0)
    stop_reason = models.CharField(_("stop reason"), max_length=20, choices=StopReason)
    created_at = models.DateTimeField(_("recorded at"), auto_now_add=True)

    class Meta:
        verbose_name = _("harvest info")
        verbose_name_plural = _("harvest infos")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["job", "configuration"], name="harvest_harvestinfo_unique_per_job"
            )
        ]
        indexes = [models.Index(fields=["domain", "-created_at"])]

    def __str__(self):
        return f"{self.job} / {self.configuration}: {self.object_count}"
