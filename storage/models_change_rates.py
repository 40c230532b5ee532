"""How often a record's page and a domain change, measured from successive captures."""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from selection.choices import Frequency


class Confidence(models.TextChoices):
    LOW = "low", _("low")
    MEDIUM = "medium", _("medium")
    HIGH = "high", _("high")


class ChangeEstimate(models.Model):
    """The measured change rate of a record's page or of a domain's pages, with the crawls it comes from.

    Refreshed as a whole by storage.services.change_rates (a job's statistics, a periodic task, the
    ``change_rates`` command); never computed when a page is shown.
    """

    record = models.OneToOneField(
        "selection.Record",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="change_estimate",
        verbose_name=_("record"),
    )
    domain = models.OneToOneField(
        "harvest.Domain",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="change_estimate",
        verbose_name=_("domain"),
    )
    visits = models.PositiveIntegerField(_("visits compared"))
    changes = models.PositiveIntegerField(_("visits that saw a change"))
    mean_interval_days = models.FloatField(_("mean interval (days)"))
    rate_per_day = models.FloatField(_("changes per day"))
    confidence = models.CharField(_("confidence"), max_length=10, choices=Confidence)
    suggested_frequency = models.CharField(
        _("suggested frequency"), max_length=15, choices=Frequency, blank=True
    )
    # [{"job": id, "date": ISO date, "changed": bool}], oldest first: the crawls the estimate comes from.
    evidence = models.JSONField(_("evidence"), default=list)
    computed_at = models.DateTimeField(_("computed at"))

    class Meta:
        verbose_name = _("change estimate")
        verbose_name_plural = _("change estimates")
        constraints = [
            models.CheckConstraint(
                condition=Q(record__isnull=True) ^ Q(domain__isnull=True),
                name="storage_changeestimate_record_xor_domain",
            )
        ]

    def __str__(self):
        return f"{self.record or self.domain}: {self.rate_per_day:.3f}/day"

    @property
    def interval_days(self) -> float | None:
        """About how many days between changes (None: no change seen)."""
        return 1 / self.rate_per_day if self.rate_per_day > 0 else None
