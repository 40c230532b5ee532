"""Harvest definitions, the channels they run on, global traps, and the mapping from selection."""

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.choices import EndKind, HarvestKind
from harvest.models.domains import UNLIMITED, DomainConfiguration
from harvest.validators import trap_list, validate_trap_lines
from selection.choices import Budget, Depth, Frequency


def queue_choices():
    return [(queue, queue) for queue in settings.HARVEST_CRAWL_QUEUES]


class HarvestChannel(models.Model):
    """A priority lane for jobs, mapped to a Celery queue that dedicated workers consume."""

    name = models.CharField(_("name"), max_length=100)
    queue = models.CharField(
        _("Celery queue"),
        max_length=100,
        choices=queue_choices,
        help_text=_("Workers started with -Q consume it."),
    )
    is_snapshot = models.BooleanField(_("for snapshot harvests"), default=False)
    is_default = models.BooleanField(
        _("default"), default=False, help_text=_("New harvest definitions of its kind use this channel.")
    )
    comments = models.TextField(_("comments"), blank=True)
    # Raised by every service save (webarchive.versioning).
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("harvest channel")
        verbose_name_plural = _("harvest channels")
        ordering = ["is_snapshot", "name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="harvest_channel_name_unique_ci",
                violation_error_message=_("A channel with this name already exists."),
            ),
            models.UniqueConstraint(
                fields=["is_snapshot"],
                condition=Q(is_default=True),
                name="harvest_channel_one_default_per_kind",
                violation_error_message=_("There is already a default channel for this kind of harvest."),
            ),
        ]

    def __str__(self):
        return self.name


class HarvestDefinition(models.Model):
    """What to harvest and when: selective (configurations on a schedule) or snapshot (all domains).

    Never deleted, only deactivated.
    """

    name = models.CharField(_("name"), max_length=200)
    comments = models.TextField(_("comments"), blank=True)
    kind = models.CharField(_("kind"), max_length=10, choices=HarvestKind, editable=False)
    is_active = models.BooleanField(_("active"), default=True)
    channel = models.ForeignKey(
        HarvestChannel,
        on_delete=models.PROTECT,
        related_name="harvest_definitions",
        verbose_name=_("channel"),
    )

    # Selective
    schedule = models.ForeignKey(
        "harvest.Schedule",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="harvest_definitions",
        verbose_name=_("schedule"),
    )
    next_date = models.DateTimeField(_("next run"), null=True, blank=True, db_index=True)
    runs_done = models.PositiveIntegerField(_("runs done"), default=0, editable=False)
    configurations = models.ManyToManyField(
        DomainConfiguration,
        blank=True,
        related_name="harvest_definitions",
        verbose_name=_("domain configurations"),
    )
    crawler_traps = models.TextField(
        _("crawler traps"),
        blank=True,
        validators=[validate_trap_lines],
        help_text=_("One regular expression per line, applied to every job of this definition."),
    )
    replica_count = models.PositiveSmallIntegerField(
        _("replicas"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "How many storage nodes keep each WARC file of this definition. Empty: the highest of its "
            "collections', else the archive's default (STORAGE_REPLICAS)."
        ),
    )
    # Selective, news (docs/curation.md, "Frequent shallow crawls for news")
    news = models.BooleanField(
        _("news front pages"),
        default=False,
        help_text=_(
            "Crawl its seeds (front pages) and the pages they link to, one click deep, fetching only the "
            "pages no earlier run of it captured; run it every few minutes."
        ),
    )
    news_feeds = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="news_sources",
        verbose_name=_("feeds new articles to"),
        help_text=_("A scheduled selective definition whose next run gets the new article URLs as seeds."),
    )

    # Snapshot
    max_objects_per_domain = models.BigIntegerField(
        _("max objects per domain"),
        default=UNLIMITED,
        help_text=_("-1 for no limit beyond each configuration's."),
    )
    max_bytes_per_domain = models.BigIntegerField(
        _("max bytes per domain"),
        default=UNLIMITED,
        help_text=_("-1 for no limit beyond each configuration's."),
    )
    max_job_seconds = models.PositiveIntegerField(
        _("max running time per job (s)"), default=0, help_text=_("0 for no limit.")
    )
    continue_from = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="continuations",
        verbose_name=_("continue from"),
        help_text=_("Harvest only the domains this earlier snapshot stopped at its limits."),
    )

    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # Raised by every service save, not by the launcher's runs (next date, runs done).
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(excluded_fields=["updated_at", "runs_done", "next_date"])

    class Meta:
        verbose_name = _("harvest definition")
        verbose_name_plural = _("harvest definitions")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="harvest_definition_name_unique_ci",
                violation_error_message=_("A harvest definition with this name already exists."),
            ),
            models.CheckConstraint(
                condition=Q(kind=HarvestKind.SNAPSHOT) | Q(schedule__isnull=False),
                name="harvest_definition_selective_has_schedule",
                violation_error_message=_("A selective harvest needs a schedule."),
            ),
            models.CheckConstraint(
                condition=Q(kind=HarvestKind.SNAPSHOT) | Q(continue_from__isnull=True),
                name="harvest_definition_only_snapshots_continue",
                violation_error_message=_("Only a snapshot harvest can continue another."),
            ),
            models.CheckConstraint(
                condition=Q(kind=HarvestKind.SELECTIVE) | Q(news=False),
                name="harvest_definition_news_selective",
                violation_error_message=_("Only a selective harvest can crawl news front pages."),
            ),
            models.CheckConstraint(
                condition=Q(news=True) | Q(news_feeds__isnull=True),
                name="harvest_definition_only_news_feeds",
                violation_error_message=_("Only a news definition feeds articles to another definition."),
            ),
            models.CheckConstraint(
                condition=Q(max_objects_per_domain__gte=UNLIMITED) & Q(max_bytes_per_domain__gte=UNLIMITED),
                name="harvest_definition_limits_valid",
                violation_error_message=_("A limit is a number of 0 or more, or -1 for no limit."),
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:definition_detail", kwargs={"pk": self.pk})

    @property
    def is_selective(self) -> bool:
        return self.kind == HarvestKind.SELECTIVE

    @property
    def trap_list(self) -> list[str]:
        return trap_list(self.crawler_traps)

    def upcoming_runs(self, count: int = 5, *, start=None, end=None) -> list:
        """The next run dates of a selective definition: its next date, then its schedule's.

        Only as many as its schedule has left (a schedule of N runs), and, with
        ``start``/``end``, only those in that window. Empty when it will not run.
        """
        if not self.is_selective or not self.is_active or self.next_date is None:
            return []
        schedule = self.schedule
        if schedule.end_kind == EndKind.RUNS:
            count = min(count, max(schedule.max_runs - self.runs_done, 0))
        start = max(start or self.next_date, self.next_date)
        runs = [self.next_date, *schedule.runs(start, count=count)]
        runs = [run for run in dict.fromkeys(runs) if run >= start and (end is None or run <= end)]
        return runs[:count]


class GlobalCrawlerTrapList(models.Model):
    """Regular expressions every job avoids while the list is active (calendars, session loops…)."""

    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    is_active = models.BooleanField(_("active"), default=True)
    traps = models.TextField(
        _("crawler traps"), validators=[validate_trap_lines], help_text=_("One regular expression per line.")
    )
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("global crawler trap list")
        verbose_name_plural = _("global crawler trap lists")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="harvest_globaltraps_name_unique_ci",
                violation_error_message=_("A trap list with this name already exists."),
            )
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:trap_list_detail", kwargs={"pk": self.pk})

    @property
    def trap_list(self) -> list[str]:
        return trap_list(self.traps)


class CollectionMapping(models.Model):
    """(collection, frequency) → the selective harvest definition its records are transferred to."""

    collection = models.ForeignKey(
        "selection.Collection", on_delete=models.PROTECT, related_name="+", verbose_name=_("collection")
    )
    frequency = models.CharField(_("frequency"), max_length=15, choices=Frequency)
    harvest_definition = models.ForeignKey(
        HarvestDefinition,
        on_delete=models.PROTECT,
        related_name="collection_mappings",
        verbose_name=_("harvest definition"),
        limit_choices_to={"kind": HarvestKind.SELECTIVE},
    )

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("collection mapping")
        verbose_name_plural = _("collection mappings")
        ordering = ["collection__name", "frequency"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "frequency"],
                name="harvest_collectionmapping_unique",
                violation_error_message=_("This collection and frequency are already mapped."),
            )
        ]

    def __str__(self):
        return f"{self.collection} / {self.get_frequency_display()} → {self.harvest_definition}"


class BudgetMapping(models.Model):
    """(budget, depth) → the template and limits a transferred record's configuration gets
    (with another template for the records whose site needs a browser)."""

    budget = models.CharField(_("budget"), max_length=10, choices=Budget)
    depth = models.CharField(_("depth"), max_length=10, choices=Depth)
    template = models.ForeignKey(
        "harvest.HarvestTemplate", on_delete=models.PROTECT, related_name="+", verbose_name=_("template")
    )
    browser_template = models.ForeignKey(
        "harvest.HarvestTemplate",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("template for sites that need a browser"),
        help_text=_("Used instead for records whose site needs a browser; it should render pages."),
    )
    max_objects = models.BigIntegerField(_("max objects"), default=UNLIMITED)
    max_bytes = models.BigIntegerField(_("max bytes"), default=UNLIMITED)

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("budget mapping")
        verbose_name_plural = _("budget mappings")
        ordering = ["budget", "depth"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "depth"],
                name="harvest_budgetmapping_unique",
                violation_error_message=_("This budget and depth are already mapped."),
            ),
            models.CheckConstraint(
                condition=Q(max_objects__gte=UNLIMITED) & Q(max_bytes__gte=UNLIMITED),
                name="harvest_budgetmapping_limits_valid",
                violation_error_message=_("A limit is a number of 0 or more, or -1 for no limit."),
            ),
        ]

    def __str__(self):
        return f"{self.get_budget_display()} / {self.get_depth_display()} → {self.template}"


class TransferReport(models.Model):
    """One run of the transfer from selection: what it created, updated and detached."""

    created_at = models.DateTimeField(_("run at"), auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("run by"),
        help_text=_("Empty when the launcher ran it before a scheduled run."),
    )
    collection = models.ForeignKey(
        "selection.Collection",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("collection"),
    )
    harvest_definition = models.ForeignKey(
        HarvestDefinition,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="transfer_reports",
        verbose_name=_("harvest definition"),
    )
    created = models.PositiveIntegerField(_("created"), default=0)
    updated = models.PositiveIntegerField(_("updated"), default=0)
    unchanged = models.PositiveIntegerField(_("unchanged"), default=0)
    detached = models.PositiveIntegerField(_("detached"), default=0)
    skipped = models.PositiveIntegerField(_("skipped"), default=0)
    details = models.JSONField(_("details"), default=dict)

    class Meta:
        verbose_name = _("transfer report")
        verbose_name_plural = _("transfer reports")
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.collection or self.harvest_definition or ''}"

    def get_absolute_url(self):
        return reverse("harvest:transfer_detail", kwargs={"pk": self.pk})
