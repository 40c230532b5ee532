"""Discovered sites: the external links of every crawl, aggregated by registered domain, and what
curators decided about them (harvest.services.discovery folds the links in; the queue reads here)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

SAMPLE_KEPT = 5  # linking pages and linked URLs kept per (candidate, linking site)


class DiscoveredSite(models.Model):
    """A registered domain archived sites link to: the candidate a curator may select."""

    registered_domain = models.CharField(_("registered domain"), max_length=255, unique=True)
    tld = models.CharField(_("TLD"), max_length=63, db_index=True)
    site_count = models.PositiveIntegerField(_("archived sites linking"), default=0)
    link_count = models.BigIntegerField(_("links found"), default=0)
    first_seen = models.DateTimeField(_("first seen"))
    last_seen = models.DateTimeField(_("last seen"))

    class Meta:
        verbose_name = _("discovered site")
        verbose_name_plural = _("discovered sites")
        ordering = ["-site_count", "-link_count", "registered_domain"]

    def __str__(self):
        return self.registered_domain

    @property
    def url(self) -> str:
        """The address a curator checks and proposes: the domain's front page."""
        return f"https://{self.registered_domain}/"


class DiscoveredLink(models.Model):
    """The links from one archived site (a harvested domain) to one discovered site, over all jobs."""

    site = models.ForeignKey(
        DiscoveredSite, on_delete=models.CASCADE, related_name="links", verbose_name=_("discovered site")
    )
    source_domain = models.ForeignKey(
        "harvest.Domain", on_delete=models.CASCADE, related_name="+", verbose_name=_("linking site")
    )
    link_count = models.BigIntegerField(_("links found"), default=0)
    # Bounded samples (SAMPLE_KEPT): pages of the linking site that link, URLs they link to.
    source_pages = models.JSONField(_("linking pages"), default=list, blank=True)
    urls = models.JSONField(_("linked URLs"), default=list, blank=True)
    first_seen = models.DateTimeField(_("first seen"))
    last_seen = models.DateTimeField(_("last seen"))

    class Meta:
        verbose_name = _("discovered link")
        verbose_name_plural = _("discovered links")
        ordering = ["site", "-link_count", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["site", "source_domain"], name="harvest_discoveredlink_once")
        ]
        indexes = [models.Index(fields=["source_domain"], name="harvest_discoveredlink_src")]

    def __str__(self):
        return f"{self.source_domain_id} → {self.site}"


class DiscoveryFold(models.Model):
    """A site crawl whose external links are counted in the discovered sites (counted once)."""

    entry = models.OneToOneField(
        "harvest.JobConfiguration",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="discovery_fold",
        verbose_name=_("site crawl"),
    )
    folded_at = models.DateTimeField(_("counted at"), auto_now_add=True)

    class Meta:
        verbose_name = _("site crawl counted in discovery")
        verbose_name_plural = _("site crawls counted in discovery")

    def __str__(self):
        return str(self.entry_id)


class DiscoveryBlock(models.Model):
    """A domain, or every domain under a suffix (``*.example.com``, ``*.gov``), never proposed."""

    pattern = models.CharField(_("pattern"), max_length=255, unique=True)
    reason = models.CharField(_("reason"), max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("added by")
    )
    created_at = models.DateTimeField(_("added at"), auto_now_add=True)

    class Meta:
        verbose_name = _("blacklisted domain")
        verbose_name_plural = _("blacklisted domains")
        ordering = ["pattern"]

    def __str__(self):
        return self.pattern


class DiscoveryAction(models.TextChoices):
    DISMISSED = "dismissed", _("Dismissed")
    PROPOSED = "proposed", _("Proposed as a record")
    DOMAIN_ADDED = "domain_added", _("Added as a domain")


class DiscoveryDecision(models.Model):
    """What a curator did with a discovered site for one collection; an undone dismissal stays as history."""

    collection = models.ForeignKey(
        "selection.Collection", on_delete=models.PROTECT, related_name="+", verbose_name=_("collection")
    )
    registered_domain = models.CharField(_("registered domain"), max_length=255)
    action = models.CharField(_("action"), max_length=20, choices=DiscoveryAction)
    record = models.ForeignKey(
        "selection.Record",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("record"),
    )
    domain = models.ForeignKey(
        "harvest.Domain",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("domain"),
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", verbose_name=_("by")
    )
    decided_at = models.DateTimeField(_("at"), auto_now_add=True)
    undone_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("undone by"),
    )
    undone_at = models.DateTimeField(_("undone at"), null=True, blank=True)

    class Meta:
        verbose_name = _("discovery decision")
        verbose_name_plural = _("discovery decisions")
        ordering = ["-decided_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["collection", "registered_domain"],
                condition=Q(undone_at__isnull=True),
                name="harvest_discoverydecision_once",
                violation_error_message=_("This site was already decided on for this collection."),
            )
        ]

    def __str__(self):
        return f"{self.registered_domain}: {self.get_action_display()}"
