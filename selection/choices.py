from django.db import models
from django.utils.translation import gettext_lazy as _

from webarchive.transitions import Transitions


class CollectionKind(models.TextChoices):
    """Who a collection belongs to: a library department's standing work, or a time-bound project."""

    DEPARTMENT = "department", _("Department")
    PROJECT = "project", _("Project")
    EVENT = "event", _("Event")


class Budget(models.TextChoices):
    """How many URLs a site may yield; the thresholds are settings (SELECTION_BUDGET_*)."""

    SMALL = "small", _("Small")
    MEDIUM = "medium", _("Medium")
    LARGE = "large", _("Large")


class Frequency(models.TextChoices):
    DAILY = "daily", _("Daily")
    WEEKLY = "weekly", _("Weekly")
    MONTHLY = "monthly", _("Monthly")
    TWICE_YEARLY = "twice-yearly", _("Twice a year")
    ANNUAL = "annual", _("Annual")
    ONCE = "once", _("Once")


# The frequencies a measured change rate may suggest, most frequent first.
SUGGESTABLE_FREQUENCIES = [(value, label) for value, label in Frequency.choices if value != Frequency.ONCE]


def frequency_order() -> dict[str, int]:
    """Each suggestable frequency's rank, 0 the most frequent."""
    return {value: index for index, (value, _label) in enumerate(SUGGESTABLE_FREQUENCIES)}


class Depth(models.TextChoices):
    """How far the crawler goes from the seed."""

    PAGE = "page", _("The page only")
    PAGE_PLUS_1 = "page+1", _("The page and one click")
    PAGE_PLUS_2 = "page+2", _("The page and two clicks")
    PATH = "path", _("The directory (path)")
    HOST = "host", _("The host")
    DOMAIN = "domain", _("The whole domain")


class RecordStatus(models.TextChoices):
    """The validation workflow: proposed → validated or rejected (the legal changes: RECORD_TRANSITIONS)."""

    PROPOSED = "proposed", _("Proposed")
    VALIDATED = "validated", _("Validated")
    REJECTED = "rejected", _("Rejected")


# A curator may change a decision either way; a validated record whose technical settings change
# goes back to proposed (selection.services.record_update).
RECORD_TRANSITIONS = Transitions(
    RecordStatus,
    {
        RecordStatus.PROPOSED: {RecordStatus.VALIDATED, RecordStatus.REJECTED},
        RecordStatus.VALIDATED: {RecordStatus.PROPOSED, RecordStatus.REJECTED},
        RecordStatus.REJECTED: {RecordStatus.PROPOSED, RecordStatus.VALIDATED},
    },
    noun=_("record"),
    error_field="status",
)


class CheckStatus(models.TextChoices):
    """The result of the online check of a record's URL."""

    UNCHECKED = "unchecked", _("Not checked")
    OK = "ok", _("Answers")
    REDIRECT = "redirect", _("Redirects")
    INVALID = "invalid", _("Invalid (error or no DNS entry)")
    UNREACHABLE = "unreachable", _("Unreachable (timeout, TLS or connection error)")
    REFUSED = "refused", _("Refused (private or reserved address)")

    @classmethod
    def selectable(cls) -> set[str]:
        """Statuses a librarian may select a URL with (a curator may override the others)."""
        return {cls.OK, cls.REDIRECT}
