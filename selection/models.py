"""The selection side (BCWeb): collections, their themes, and the records librarians propose."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Concat, Lower
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from selection.choices import (
    SUGGESTABLE_FREQUENCIES,
    Budget,
    CheckStatus,
    CollectionKind,
    Depth,
    Frequency,
    RecordStatus,
    frequency_order,
)
from webarchive.permissions import VIEW, Role, is_administrator, user_roles
from webarchive.urlnorm import validate_url


def supplementary_url_list(text: str) -> list[str]:
    """A record's supplementary URLs, one a line as they are kept (blank lines left out)."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def may_write_everywhere(user) -> bool:
    """Curators and administrators write in every collection; librarians only in their own."""
    return is_administrator(user) or Role.CURATOR in user_roles(user)


class CollectionQuerySet(models.QuerySet):
    def writable_by(self, user):
        """The collections the user may create and edit records in."""
        if may_write_everywhere(user):
            return self
        return self.filter(members=user) if user.is_authenticated else self.none()


class Collection(models.Model):
    """A set of websites selected together, by a department or for a project or event."""

    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    kind = models.CharField(
        _("kind"), max_length=20, choices=CollectionKind, default=CollectionKind.DEPARTMENT
    )
    is_active = models.BooleanField(_("active"), default=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("members"),
        blank=True,
        related_name="collections",
        help_text=_("Librarians who may propose and edit records in this collection."),
    )
    default_budget = models.CharField(
        _("default budget"), max_length=10, choices=Budget, default=Budget.SMALL
    )
    default_frequency = models.CharField(
        _("default frequency"), max_length=15, choices=Frequency, default=Frequency.ANNUAL
    )
    default_depth = models.CharField(_("default depth"), max_length=10, choices=Depth, default=Depth.HOST)
    replica_count = models.PositiveSmallIntegerField(
        _("replicas"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_(
            "How many storage nodes keep each WARC file harvested for this collection "
            "(empty: the archive's default)."
        ),
    )
    # Bounds of the frequencies suggested from measured change rates (storage.services.change_rates).
    frequency_most_often = models.CharField(
        _("suggest at most"),
        max_length=15,
        choices=SUGGESTABLE_FREQUENCIES,
        default=Frequency.DAILY,
        db_default=Frequency.DAILY,
        help_text=_("Never suggest harvesting this collection's sites more often than this."),
    )
    frequency_least_often = models.CharField(
        _("suggest at least"),
        max_length=15,
        choices=SUGGESTABLE_FREQUENCIES,
        default=Frequency.ANNUAL,
        db_default=Frequency.ANNUAL,
        help_text=_("Never suggest harvesting this collection's sites less often than this."),
    )
    follow_suggestions = models.BooleanField(
        _("follow suggested frequencies automatically"),
        default=False,
        db_default=False,
        help_text=_("Each record's frequency is changed to its suggested frequency when it is measured."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # Raised by every service save: a change is made over the version its writer read
    # (webarchive.versioning).
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(m2m_fields=[members], excluded_fields=["updated_at"])
    objects = CollectionQuerySet.as_manager()

    class Meta:
        verbose_name = _("collection")
        verbose_name_plural = _("collections")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="selection_collection_name_unique_ci",
                violation_error_message=_("A collection with this name already exists."),
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("selection:collection_detail", kwargs={"pk": self.pk})

    def clean(self):
        super().clean()
        order = frequency_order()
        if order.get(self.frequency_most_often, 0) > order.get(self.frequency_least_often, len(order)):
            raise ValidationError(
                {
                    "frequency_least_often": _(
                        "The least frequent suggestion cannot be more frequent than the most frequent one."
                    )
                }
            )

    def clamp_frequency(self, frequency: str) -> str:
        """A suggested frequency kept inside this collection's bounds."""
        order = frequency_order()
        low, high = order[self.frequency_most_often], order[self.frequency_least_often]
        index = min(max(order[frequency], low), high)
        return SUGGESTABLE_FREQUENCIES[index][0]


class Theme(models.Model):
    """A heading that classifies the records of one collection (mandatory on each record)."""

    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="themes", verbose_name=_("collection")
    )
    name = models.CharField(_("name"), max_length=200)
    is_active = models.BooleanField(_("active"), default=True)

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("theme")
        verbose_name_plural = _("themes")
        ordering = ["collection__name", "name"]
        constraints = [
            models.UniqueConstraint(
                "collection",
                Lower("name"),
                name="selection_theme_name_unique_ci",
                violation_error_message=_("This collection already has this theme."),
            ),
        ]

    def __str__(self):
        return self.name


class Keyword(models.Model):
    """A term describing a site; shared by all collections."""

    name = models.CharField(_("name"), max_length=100)

    class Meta:
        verbose_name = _("keyword")
        verbose_name_plural = _("keywords")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="selection_keyword_name_unique_ci",
                violation_error_message=_("This keyword already exists."),
            )
        ]

    def __str__(self):
        return self.name


class CompatibilityRule(models.Model):
    """A combination of technical settings that cannot be used; an empty field matches any value.

    For example budget "large" with frequency "daily" and any depth: a large
    site cannot be harvested in full every day.
    """

    budget = models.CharField(_("budget"), max_length=10, choices=Budget, blank=True)
    frequency = models.CharField(_("frequency"), max_length=15, choices=Frequency, blank=True)
    depth = models.CharField(_("depth"), max_length=10, choices=Depth, blank=True)
    reason = models.CharField(_("reason"), max_length=300, blank=True)

    history = HistoricalRecords()

    class Meta:
        verbose_name = _("incompatible combination")
        verbose_name_plural = _("incompatible combinations")
        ordering = ["budget", "frequency", "depth"]
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "frequency", "depth"],
                name="selection_compatibilityrule_unique",
                violation_error_message=_("This combination is already forbidden."),
            ),
            models.CheckConstraint(
                condition=~Q(budget="", frequency="", depth=""),
                name="selection_compatibilityrule_not_all_empty",
                violation_error_message=_("A rule must name at least one setting."),
            ),
        ]

    def __str__(self):
        any_value = _("any")
        return " + ".join(
            str(value)
            for value in (
                self.get_budget_display() or any_value,
                self.get_frequency_display() or any_value,
                self.get_depth_display() or any_value,
            )
        )

    SETTINGS = ("budget", "frequency", "depth")

    @property
    def refusal(self) -> str:
        """Why a record with these settings is refused, as shown at each setting the rule names."""
        message = _("These settings cannot be combined: %(rule)s.") % {"rule": self}
        return f"{message} {self.reason}" if self.reason else message

    @property
    def named_settings(self) -> list[str]:
        """The settings this rule names (the others match any value)."""
        return [name for name in self.SETTINGS if getattr(self, name)]

    def matches(self, budget: str, frequency: str, depth: str) -> bool:
        return all(
            (not rule or rule == value)
            for rule, value in ((self.budget, budget), (self.frequency, frequency), (self.depth, depth))
        )


# What the records' text search looks in (selection.filtersets.RecordFilterSet.search), as one
# expression: on PostgreSQL a trigram index on it (migration selection 0011) finds the records that
# contain a word without reading them all. Fields are joined by a control character no search has, so
# a match never spans two of them.
RECORD_TEXT_FIELDS = ("url", "supplementary_urls", "content_notes", "technical_notes")
RECORD_TEXT_SEPARATOR = "\x1f"


def record_text() -> models.Func:
    parts = []
    for field in RECORD_TEXT_FIELDS:
        parts += [models.F(field), models.Value(RECORD_TEXT_SEPARATOR)]
    return Concat(*parts[:-1], output_field=models.TextField())


class RecordQuerySet(models.QuerySet):
    def restrict(self, user, action):
        """Everyone who may view records sees them all; members and curators may write."""
        if action == VIEW or may_write_everywhere(user):
            return self
        return self.filter(collection__members=user)


class Record(models.Model):
    """A seed URL proposed by a librarian into a collection, with how and why to harvest it."""

    TECHNICAL_FIELDS = ("budget", "frequency", "depth", "needs_browser", "url", "supplementary_urls")

    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="records", verbose_name=_("collection")
    )
    # Not URLField: its validator refuses host names real sites use (underscores);
    # the archive's own normalisation decides what is a URL.
    url = models.CharField(_("URL"), max_length=2000, validators=[validate_url])
    url_key = models.CharField(_("duplicate key"), max_length=2000, editable=False)
    host = models.CharField(_("host"), max_length=255, editable=False, db_index=True)
    registered_domain = models.CharField(_("domain"), max_length=255, editable=False, db_index=True)
    supplementary_urls = models.TextField(
        _("supplementary URLs"),
        blank=True,
        help_text=_("One URL per line: a sitemap, a feed, an index page."),
    )

    # Management information
    responsible = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="responsible_records",
        verbose_name=_("responsible librarian"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="created_records",
        verbose_name=_("created by"),
        editable=False,
    )
    modified_at = models.DateTimeField(_("modified at"), auto_now=True)
    modified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="modified_records",
        verbose_name=_("modified by"),
        editable=False,
    )

    # Technical settings
    budget = models.CharField(_("budget"), max_length=10, choices=Budget)
    frequency = models.CharField(_("frequency"), max_length=15, choices=Frequency)
    depth = models.CharField(_("depth"), max_length=10, choices=Depth)
    needs_browser = models.BooleanField(
        _("the site needs a browser"),
        default=False,
        help_text=_(
            "Its pages are built by JavaScript: opened without a browser they are empty or incomplete "
            "(text, images or menus missing). The site is then harvested through a browser, which "
            "takes longer."
        ),
    )

    # Description
    theme = models.ForeignKey(
        Theme, on_delete=models.PROTECT, related_name="records", verbose_name=_("theme")
    )
    keywords = models.ManyToManyField(Keyword, blank=True, related_name="records", verbose_name=_("keywords"))
    content_notes = models.TextField(_("content notes"), blank=True)
    technical_notes = models.TextField(_("technical notes"), blank=True)
    is_active = models.BooleanField(
        _("active"), default=True, help_text=_("Inactive records are not transferred for harvesting.")
    )

    # Validation workflow
    status = models.CharField(_("status"), max_length=10, choices=RecordStatus, default=RecordStatus.PROPOSED)
    status_reason = models.TextField(_("reason"), blank=True, help_text=_("Why the record was rejected."))
    status_changed_at = models.DateTimeField(_("status changed at"), null=True, blank=True, editable=False)
    status_changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("status changed by"),
        editable=False,
    )

    # The last online check of the URL
    check_status = models.CharField(
        _("URL check"), max_length=12, choices=CheckStatus, default=CheckStatus.UNCHECKED
    )
    check_result = models.JSONField(_("URL check details"), default=dict, blank=True, editable=False)
    checked_at = models.DateTimeField(_("checked at"), null=True, blank=True, editable=False)
    check_override_reason = models.TextField(
        _("check override"),
        blank=True,
        help_text=_("Why a curator selected a URL that failed its check."),
    )

    # A time-boxed boost (selection.services.record_boost): the frequency goes back to
    # boost_return_frequency at boost_until (the periodic task selection.revert_boosts).
    boost_until = models.DateField(_("boosted until"), null=True, blank=True, editable=False)
    boost_return_frequency = models.CharField(
        _("frequency after the boost"),
        max_length=15,
        choices=Frequency,
        blank=True,
        default="",
        db_default="",
        editable=False,
    )

    # Optimistic locking: incremented by every save through the services.
    version = models.PositiveIntegerField(_("version"), default=1, editable=False)

    history = HistoricalRecords(m2m_fields=[keywords], excluded_fields=["modified_at"])
    objects = RecordQuerySet.as_manager()

    class Meta:
        verbose_name = _("record")
        verbose_name_plural = _("records")
        ordering = ["-modified_at", "-pk"]
        permissions = [("validate_record", _("Can validate or reject records"))]
        constraints = [
            # Two librarians submitting the same URL at once cannot both create it.
            models.UniqueConstraint(
                fields=["collection", "url_key"],
                name="selection_record_unique_url_per_collection",
                violation_error_message=_("This URL is already in this collection."),
            ),
            models.CheckConstraint(
                condition=~Q(status=RecordStatus.REJECTED) | ~Q(status_reason=""),
                name="selection_record_rejection_has_reason",
                violation_error_message=_("A rejected record needs a reason."),
            ),
        ]
        indexes = [
            models.Index(fields=["status", "collection"]),
            models.Index(fields=["url_key"]),
            # The lists' order (the newest change first): a page of them is read off the index, not
            # sorted out of every record.
            models.Index(fields=["-modified_at", "-id"], name="selection_record_recent_first"),
            # The validation queue's order (the oldest proposal first), among the records of a status.
            models.Index(fields=["status", "created_at", "id"], name="selection_record_queue"),
        ]

    def __str__(self):
        return self.url

    def get_absolute_url(self):
        return reverse("selection:record_detail", kwargs={"pk": self.pk})

    @property
    def supplementary_url_list(self) -> list[str]:
        return supplementary_url_list(self.supplementary_urls)


class SavedSearch(models.Model):
    """A record search a user runs often, kept under a name and listed in their navigation."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="saved_searches",
        verbose_name=_("user"),
    )
    name = models.CharField(_("name"), max_length=100)
    query = models.CharField(
        _("query"), max_length=2000, blank=True, help_text=_("The list's filters, as in its address.")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("saved search")
        verbose_name_plural = _("saved searches")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint("user", Lower("name"), name="selection_savedsearch_name_unique")
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return (
            f"{reverse('selection:record_list')}?{self.query}"
            if self.query
            else reverse("selection:record_list")
        )
