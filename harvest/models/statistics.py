"""Statistics of what each job collected, computed when it ends (harvest.services.statistics).

Reports and exports read these rows, never the WARC files nor the capture index: one
:class:`JobStatistics` row for the whole job (``collection`` empty) and one for the share of its
sites selected in each collection, each with its distributions as :class:`StatisticLine` rows
(URLs, bytes and domains for one value of one dimension). Sums over jobs (per harvest
definition, run, collection, year, kind of crawl) are then one grouped query.
"""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from harvest.choices import HarvestKind
from harvest.models.definitions import HarvestDefinition
from harvest.models.jobs import HarvestRun, Job


class Dimension(models.TextChoices):
    """What a distribution counts by."""

    MIME_FAMILY = "mime-family", _("MIME type family")
    MIME = "mime", _("MIME type")
    STATUS_CLASS = "status-class", _("HTTP status class")
    STATUS = "status", _("HTTP status code")
    TLD = "tld", _("Top-level domain")
    SIZE_CLASS = "size-class", _("Domain size class")
    STOP_REASON = "stop-reason", _("Stop reason")
    SEED_SOURCE = "seed-source", _("Seed source")


class JobStatistics(models.Model):
    """What one job collected (or the share of it selected in one collection): its totals."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="statistics", verbose_name=_("job"))
    collection = models.ForeignKey(
        "selection.Collection",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="job_statistics",
        verbose_name=_("collection"),
        help_text=_("Empty: the whole job. Otherwise the sites of the job selected in this collection."),
    )
    # Copied from the job, so that reports filter and group without joins.
    harvest_definition = models.ForeignKey(
        HarvestDefinition, on_delete=models.PROTECT, related_name="+", verbose_name=_("harvest definition")
    )
    run = models.ForeignKey(HarvestRun, on_delete=models.PROTECT, related_name="+", verbose_name=_("run"))
    kind = models.CharField(_("kind of crawl"), max_length=10, choices=HarvestKind)
    ended_at = models.DateTimeField(_("ended at"))
    year = models.PositiveSmallIntegerField(_("year"))
    urls = models.BigIntegerField(_("URLs"), default=0)
    bytes = models.BigIntegerField(_("bytes"), default=0)
    duplicate_urls = models.BigIntegerField(_("deduplicated URLs"), default=0)
    duplicate_bytes = models.BigIntegerField(_("deduplicated bytes"), default=0)
    errors = models.BigIntegerField(_("errors"), default=0)
    domains = models.BigIntegerField(_("domains harvested"), default=0)
    sites = models.BigIntegerField(_("site crawls"), default=0)
    budget_stopped = models.BigIntegerField(_("domains cut by their budget"), default=0)
    duration_seconds = models.BigIntegerField(_("duration (s)"), default=0)
    computed_at = models.DateTimeField(_("computed at"), auto_now=True)

    class Meta:
        verbose_name = _("job statistics")
        verbose_name_plural = _("job statistics")
        ordering = ["-ended_at", "job_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["job"], condition=Q(collection__isnull=True), name="job_statistics_one_whole"
            ),
            models.UniqueConstraint(fields=["job", "collection"], name="job_statistics_one_per_collection"),
        ]
        indexes = [models.Index(fields=["year", "kind"], name="job_statistics_year_kind")]

    def __str__(self):
        return f"{self.job} {self.collection or ''}".strip()

    @property
    def new_bytes(self) -> int:
        return self.bytes - self.duplicate_bytes


class StatisticLine(models.Model):
    """URLs, bytes and domains of one value of one dimension (a MIME type, a status code, …)."""

    statistics = models.ForeignKey(
        JobStatistics, on_delete=models.CASCADE, related_name="lines", verbose_name=_("statistics")
    )
    dimension = models.CharField(_("dimension"), max_length=20, choices=Dimension)
    key = models.CharField(_("value"), max_length=255)
    urls = models.BigIntegerField(_("URLs"), default=0)
    bytes = models.BigIntegerField(_("bytes"), default=0)
    domains = models.BigIntegerField(_("domains"), default=0)

    class Meta:
        verbose_name = _("statistic line")
        verbose_name_plural = _("statistic lines")
        constraints = [
            models.UniqueConstraint(fields=["statistics", "dimension", "key"], name="statistic_line_unique"),
        ]

    def __str__(self):
        return f"{self.dimension}={self.key}: {self.urls}"


class PeriodStatistics(models.Model):
    """What a period's whole jobs collected, counted by domain: the figures no sum of job statistics gives.

    A domain crawled by several jobs of a year is one domain harvested, in the size class of all
    its URLs of the year; finding that out reads every site crawl of the period (millions for a
    broad crawl), so it is done once, when a job's statistics are computed, and kept here. A row is
    good for as long as the period's job statistics are those it was computed from (its
    ``statistics_count`` and ``statistics_last``) with the size classes it was computed with.

    A row with a ``harvest_definition`` holds the same figures for that definition's jobs only (every
    year, or one year; never a month): the tables filtered by a harvest definition read it. Per
    harvest definition, run, collection and month, the domains counted once within the period (the
    ``*_domains`` maps, keyed by id or "year-month") serve the tables grouped by them; empty in a row
    computed before they existed (it is then stale, and computed again).
    """

    year = models.PositiveSmallIntegerField(_("year"), help_text=_("0: every year."))
    month = models.PositiveSmallIntegerField(_("month"), help_text=_("0: the whole year."))
    harvest_definition = models.ForeignKey(
        HarvestDefinition,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("harvest definition"),
        help_text=_("Empty: every harvest definition. Otherwise the jobs of this one only."),
    )
    statistics_count = models.BigIntegerField(_("job statistics counted"))
    statistics_last = models.BigIntegerField(_("last job statistics counted"))
    size_bounds = models.JSONField(_("size class bounds"))
    domains = models.BigIntegerField(_("domains harvested"))
    kind_domains = models.JSONField(_("domains harvested by kind of crawl"))
    size_classes = models.JSONField(_("domains by size class"))
    top_domains = models.JSONField(_("top domains"))
    definition_domains = models.JSONField(_("domains harvested by harvest definition"), null=True)
    run_domains = models.JSONField(_("domains harvested by run"), null=True)
    collection_domains = models.JSONField(_("domains harvested by collection"), null=True)
    collection_shares_domains = models.BigIntegerField(
        _("domains harvested in the collections' shares"), null=True
    )
    month_domains = models.JSONField(_("domains harvested by month"), null=True)
    computed_at = models.DateTimeField(_("computed at"), auto_now=True)

    stale = False  # set when read: the period's statistics have changed since, a refresh is on its way

    class Meta:
        verbose_name = _("period statistics")
        verbose_name_plural = _("period statistics")
        constraints = [
            models.UniqueConstraint(
                fields=["year", "month"],
                condition=Q(harvest_definition__isnull=True),
                name="period_statistics_unique",
            ),
            models.UniqueConstraint(
                fields=["year", "month", "harvest_definition"], name="period_statistics_definition_unique"
            ),
            models.CheckConstraint(
                condition=Q(harvest_definition__isnull=True) | Q(month=0),
                name="period_statistics_definition_no_month",
            ),
        ]

    def __str__(self):
        period = f"{self.year or '*'}-{self.month or '*'}"
        return f"{period} {self.harvest_definition_id}" if self.harvest_definition_id else period
