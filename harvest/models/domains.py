"""Domains and what is harvested of each: seed lists and domain configurations."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.validators import seed_list, trap_list, validate_seed_lines, validate_trap_lines

UNLIMITED = -1
DEFAULT_SEED_LIST = "defaultseeds"
DEFAULT_CONFIGURATION = "defaultconfig"


class DomainQuerySet(models.QuerySet):
    def live_aliases(self, now=None):
        """Domains that are currently an alias of another (their alias has not expired)."""
        now = now or timezone.now()
        cutoff = now - timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS)
        return self.filter(alias_of__isnull=False, alias_updated_at__gt=cutoff)

    def snapshot_candidates(self, now=None):
        """Domains a snapshot harvest takes: active, and not a live alias of another."""
        return self.filter(is_active=True).exclude(pk__in=self.live_aliases(now).values("pk"))


class Domain(models.Model):
    """A registered domain (example.fr): what is harvested is planned per domain. Never deleted."""

    name = models.CharField(_("name"), max_length=255, unique=True)
    comments = models.TextField(_("comments"), blank=True)
    crawler_traps = models.TextField(
        _("crawler traps"),
        blank=True,
        validators=[validate_trap_lines],
        help_text=_("One regular expression per line; URLs matching one are not harvested."),
    )
    alias_of = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="aliases",
        verbose_name=_("alias of"),
        help_text=_("The domain this one is the same site as (harvested there, skipped in snapshots)."),
        db_index=False,  # a partial index (Meta): nearly every domain is no alias
    )
    alias_updated_at = models.DateTimeField(
        _("alias set or renewed at"), null=True, blank=True, editable=False
    )
    is_active = models.BooleanField(
        _("active"),
        default=True,
        help_text=_("Inactive domains (no DNS entry, closed) are left out of snapshots."),
    )
    dns_failed_at = models.DateTimeField(
        _("no DNS answer since"),
        null=True,
        blank=True,
        editable=False,
        help_text=_("Set when a broad-crawl preparation found no DNS answer and made the domain inactive."),
    )
    default_configuration = models.ForeignKey(
        "harvest.DomainConfiguration",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("default configuration"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # Raised by every service save (webarchive.versioning); a database default too, for the rows
    # the broad-crawl preparation inserts in SQL.
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    # History is looked up by the domain's id; the other indexes a history table would copy cost
    # every write (millions in a broad-crawl preparation) and serve no query.
    history = HistoricalRecords(
        excluded_fields=["updated_at"], no_db_index=["name", "alias_of", "default_configuration"]
    )
    objects = DomainQuerySet.as_manager()

    class Meta:
        verbose_name = _("domain")
        verbose_name_plural = _("domains")
        ordering = ["name"]
        indexes = [
            models.Index(
                fields=["alias_of"], name="harvest_domain_alias_of", condition=Q(alias_of__isnull=False)
            )
        ]
        constraints = [
            models.CheckConstraint(
                condition=~Q(alias_of=models.F("pk")),
                name="harvest_domain_not_own_alias",
                violation_error_message=_("A domain cannot be an alias of itself."),
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:domain_detail", kwargs={"pk": self.pk})

    @property
    def trap_list(self) -> list[str]:
        return trap_list(self.crawler_traps)

    @property
    def alias_expires_at(self):
        if self.alias_of_id is None or self.alias_updated_at is None:
            return None
        return self.alias_updated_at + timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS)

    @property
    def is_live_alias(self) -> bool:
        expires = self.alias_expires_at
        return expires is not None and expires > timezone.now()


class SeedList(models.Model):
    """Named start URLs of a domain, one per line (``#`` starts a comment)."""

    # No index of its own: the unique (domain, name) constraint serves the lookups by domain.
    domain = models.ForeignKey(
        Domain, on_delete=models.PROTECT, related_name="seed_lists", verbose_name=_("domain"), db_index=False
    )
    name = models.CharField(_("name"), max_length=200)
    seeds = models.TextField(
        _("seeds"), validators=[validate_seed_lines], help_text=_("One URL per line; # starts a comment.")
    )
    comments = models.TextField(_("comments"), blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("seed list")
        verbose_name_plural = _("seed lists")
        ordering = ["domain__name", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["domain", "name"],
                name="harvest_seedlist_name_unique_per_domain",
                violation_error_message=_("This domain already has a seed list with this name."),
            )
        ]

    def __str__(self):
        return f"{self.domain} / {self.name}"

    @property
    def seed_urls(self) -> list[str]:
        return seed_list(self.seeds)


class DomainConfiguration(models.Model):
    """How a domain is harvested: a template, seed lists and a budget (max objects/bytes)."""

    # No index of its own: the unique (domain, name) constraint serves the lookups by domain.
    domain = models.ForeignKey(
        Domain,
        on_delete=models.PROTECT,
        related_name="configurations",
        verbose_name=_("domain"),
        db_index=False,
    )
    name = models.CharField(_("name"), max_length=200)
    template = models.ForeignKey(
        "harvest.HarvestTemplate",
        on_delete=models.PROTECT,
        related_name="configurations",
        verbose_name=_("template"),
    )
    seed_lists = models.ManyToManyField(SeedList, related_name="configurations", verbose_name=_("seed lists"))
    max_objects = models.BigIntegerField(
        _("max objects"), default=UNLIMITED, help_text=_("URLs harvested at most; -1 for no limit.")
    )
    max_bytes = models.BigIntegerField(
        _("max bytes"), default=UNLIMITED, help_text=_("Bytes harvested at most; -1 for no limit.")
    )
    max_request_rate = models.PositiveIntegerField(
        _("max requests per minute"),
        default=0,
        help_text=_("0 leaves the pace to the template's politeness."),
    )
    comments = models.TextField(_("comments"), blank=True)
    # Set when the transfer from selection created the configuration: the
    # transfer keeps it in step with the collection's records and detaches it
    # when none is left.
    source_collection = models.ForeignKey(
        "selection.Collection",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("transferred from collection"),
        editable=False,
        db_index=False,  # a partial index (Meta): most configurations come from no collection
    )
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(m2m_fields=[seed_lists], excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("domain configuration")
        verbose_name_plural = _("domain configurations")
        ordering = ["domain__name", "name"]
        indexes = [
            models.Index(
                fields=["source_collection"],
                name="harvest_configuration_source",
                condition=Q(source_collection__isnull=False),
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["domain", "name"],
                name="harvest_configuration_name_unique_per_domain",
                violation_error_message=_("This domain already has a configuration with this name."),
            ),
            models.CheckConstraint(
                condition=Q(max_objects__gte=UNLIMITED) & Q(max_bytes__gte=UNLIMITED),
                name="harvest_configuration_limits_valid",
                violation_error_message=_("A limit is a number of 0 or more, or -1 for no limit."),
            ),
        ]

    def __str__(self):
        return f"{self.domain} / {self.name}"

    def get_absolute_url(self):
        return reverse("harvest:configuration_detail", kwargs={"pk": self.pk})
