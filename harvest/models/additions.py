"""URLs a curator adds to the next run of a definition (missed in replay, NetarchiveSuite's ViewerProxy)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class NextRunAddition(models.Model):
    """A URL to give as an extra seed to the next run of a definition, or an accept rule that brings a
    missed URL's folder into its jobs' scope: who added it, which run got it."""

    class Kind(models.TextChoices):
        SEED = "seed", _("extra seed")
        RULE = "rule", _("accept rule")

    definition = models.ForeignKey(
        "harvest.HarvestDefinition",
        on_delete=models.CASCADE,
        related_name="next_run_additions",
        verbose_name=_("harvest definition"),
    )
    domain = models.ForeignKey(
        "harvest.Domain", on_delete=models.CASCADE, related_name="+", verbose_name=_("domain")
    )
    kind = models.CharField(_("kind"), max_length=4, choices=Kind, default=Kind.SEED)
    url = models.TextField(_("URL"))  # an accept rule's regular expression, for a rule
    reason = models.CharField(_("reason"), max_length=200, blank=True, default="")
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("added by"),
    )
    added_at = models.DateTimeField(_("added at"), db_index=True)
    consumed_by = models.ForeignKey(
        "harvest.HarvestRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="additions_consumed",
        verbose_name=_("seed of run"),
        help_text=_("The run it was given to as a seed; empty: waiting for the next run."),
    )

    class Meta:
        verbose_name = _("addition to the next run")
        verbose_name_plural = _("additions to the next run")
        ordering = ["-added_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["definition", "url"],
                condition=models.Q(consumed_by__isnull=True),
                name="harvest_nextrunaddition_unique_waiting",
                violation_error_message=_("This URL is already waiting for the definition's next run."),
            )
        ]
        indexes = [models.Index(fields=["definition", "consumed_by"], name="harvest_addition_waiting")]

    def __str__(self):
        return self.url
