"""Who may read what: access rules on collections and harvest definitions, and exclusions (take-downs).

A capture is covered by the rule of its job's harvest definition and by the rules of the collections
mapped to that definition; the most open of them that lets a person in decides (storage.access).
A capture no rule covers is closed: only staff see it. An :class:`Exclusion` takes URLs out of
access without touching what is stored, indexed or audited; lifting it restores access.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from storage.models import SurtKeyField


class AccessLevel(models.TextChoices):
    """Who may read the captures a rule covers, from the most open to the most closed."""

    OPEN = "open", _("Open: anyone")
    READERS = "readers", _("Readers: logged-in readers and staff")
    READING_ROOM = "reading_room", _("Reading room: readers in a reading room, and staff")
    STAFF = "staff", _("Staff only")


# The most open first: a capture covered by several rules gets the first of these that lets one in.
LEVEL_ORDER = [AccessLevel.OPEN, AccessLevel.READERS, AccessLevel.READING_ROOM, AccessLevel.STAFF]


class AccessRule(models.Model):
    """Who may read the captures of one collection or one harvest definition, and from when."""

    collection = models.OneToOneField(
        "selection.Collection",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="access_rule",
        verbose_name=_("collection"),
    )
    harvest_definition = models.OneToOneField(
        "harvest.HarvestDefinition",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="access_rule",
        verbose_name=_("harvest definition"),
    )
    level = models.CharField(_("access"), max_length=12, choices=AccessLevel)
    embargo_until = models.DateField(
        _("embargoed until"),
        null=True,
        blank=True,
        help_text=_("Before this date the captures are for staff only; from it, the access above applies."),
    )
    note = models.TextField(_("note"), blank=True, help_text=_("Why this rule: the agreement, the law."))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # Raised by every service save (webarchive.versioning).
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("access rule")
        verbose_name_plural = _("access rules")
        ordering = ["collection__name", "harvest_definition__name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(collection__isnull=False, harvest_definition__isnull=True)
                | Q(collection__isnull=True, harvest_definition__isnull=False),
                name="access_rule_one_target",
                violation_error_message=_("A rule is for one collection or one harvest definition."),
            ),
        ]

    def __str__(self):
        return f"{self.target}: {self.describe()}"

    def get_absolute_url(self):
        return reverse("storage:accessrule_detail", kwargs={"pk": self.pk})

    @property
    def target(self):
        return self.collection or self.harvest_definition

    def level_on(self, day) -> str:
        """The access the rule gives on ``day``: staff only while the embargo lasts."""
        if self.embargo_until and day < self.embargo_until:
            return AccessLevel.STAFF
        return self.level

    @property
    def summary(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """The rule as people read it: "Open", "Embargoed until 2027-01-01, then Readers"…"""
        level = AccessLevel(self.level).label.split(":")[0]
        if self.embargo_until:
            return _("Embargoed until %(date)s, then %(level)s") % {
                "date": self.embargo_until.isoformat(),
                "level": level,
            }
        return str(level)


class ExclusionKind(models.TextChoices):
    URL = "url", _("this URL")
    PREFIX = "prefix", _("every URL starting with it")
    DOMAIN = "domain", _("a whole domain (and its subdomains)")


class ExclusionQuerySet(models.QuerySet):
    def active(self, day=None):
        """Exclusions in force on ``day`` (today): not lifted, not ended."""
        day = day or timezone.localdate()
        return self.filter(lifted_at__isnull=True).filter(Q(ends_on__isnull=True) | Q(ends_on__gt=day))


class Exclusion(models.Model):
    """A take-down: URLs no reader sees (replay, CDX, search, counts), though stored, indexed, audited.

    The URLs are a SURT key (``key``, one URL) or a key range (``key`` ≤ urlkey < ``key_end``, a prefix
    or a domain; a domain has a second range for its ports), made from what the curator typed by
    storage.access.exclusion_keys.
    """

    kind = models.CharField(_("excludes"), max_length=6, choices=ExclusionKind)
    target = models.TextField(_("URL or domain"), help_text=_("As typed: a URL, a URL prefix or a domain."))
    key = SurtKeyField(_("SURT key"), editable=False)
    key_end = SurtKeyField(_("end of the key range"), blank=True, editable=False)
    # A domain's other hosts: the same name on another port ("com,example:8080)…").
    port_key = SurtKeyField(_("SURT key of its ports"), blank=True, editable=False)
    port_key_end = SurtKeyField(_("end of its ports' key range"), blank=True, editable=False)
    reason = models.TextField(_("reason"))
    requested_by = models.CharField(
        _("requested by"), max_length=255, help_text=_("Who asked for it: a person, a court, a body.")
    )
    requested_on = models.DateField(_("requested on"), default=timezone.localdate)
    ends_on = models.DateField(
        _("ends on"),
        null=True,
        blank=True,
        help_text=_("Optional: from this date the URLs are readable again."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("entered by"),
    )
    lifted_at = models.DateTimeField(_("lifted at"), null=True, blank=True)
    lifted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("lifted by"),
    )
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords()
    objects = ExclusionQuerySet.as_manager()

    class Meta:
        verbose_name = _("exclusion")
        verbose_name_plural = _("exclusions")
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["key"], name="exclusion_key")]

    def __str__(self):
        return f"{self.get_kind_display()}: {self.target}"

    def get_absolute_url(self):
        return reverse("storage:exclusion_detail", kwargs={"pk": self.pk})

    @property
    def state(self) -> str:
        """In force, lifted, or ended (its end date passed)."""
        if self.lifted_at is not None:
            return _("lifted")
        return _("in force") if self.is_active() else _("ended")

    def is_active(self, day=None) -> bool:
        day = day or timezone.localdate()
        return self.lifted_at is None and (self.ends_on is None or self.ends_on > day)

    def covers(self, urlkey: str) -> bool:
        """Whether the capture key is among the excluded URLs (lifted or not)."""
        if self.kind == ExclusionKind.URL:
            return urlkey == self.key
        if self.port_key and self.port_key <= urlkey < self.port_key_end:
            return True
        return self.key <= urlkey < self.key_end
