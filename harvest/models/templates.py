"""Harvest templates: the crawler settings a domain configuration runs with."""

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.choices import DedupPolicy, DepthPolicy, DigestAlgorithm
from harvest.validators import trap_list, validate_trap_lines


class HarvestTemplate(models.Model):
    """Crawler settings as structured fields; a job keeps a copy of the version it ran with."""

    # The fields copied into a job (Job.template_settings) and shown as the template's settings.
    SETTINGS = (
        "depth_policy",
        "clicks",
        "max_hops",
        "accept_rules",
        "reject_rules",
        "obey_robots",
        "min_delay",
        "max_delay",
        "delay_factor",
        "extract_javascript",
        "extract_sitemaps",
        "extract_forms",
        "dedup",
        "dedup_verify",
        "digest_algorithm",
    )

    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    is_active = models.BooleanField(
        _("active"), default=True, help_text=_("Inactive templates cannot be chosen.")
    )

    # Scope
    depth_policy = models.CharField(
        _("depth policy"), max_length=10, choices=DepthPolicy, default=DepthPolicy.HOST
    )
    clicks = models.PositiveSmallIntegerField(
        _("clicks"),
        default=1,
        validators=[MaxValueValidator(50)],
        help_text=_("For “the page and N clicks”: how many links away from a seed."),
    )
    max_hops = models.PositiveSmallIntegerField(
        _("max hops"),
        default=20,
        validators=[MinValueValidator(0), MaxValueValidator(1000)],
        help_text=_("Links away from a seed, at most, whatever the depth policy."),
    )
    accept_rules = models.TextField(
        _("accept rules"),
        blank=True,
        validators=[validate_trap_lines],
        help_text=_("Regular expressions, one per line: URLs matching one are in scope as well."),
    )
    reject_rules = models.TextField(
        _("reject rules"),
        blank=True,
        validators=[validate_trap_lines],
        help_text=_("Regular expressions, one per line: URLs matching one are out of scope."),
    )
    obey_robots = models.BooleanField(_("obey robots.txt"), default=True)

    # Politeness: delay = clamp(delay factor * last fetch duration, min, max)
    min_delay = models.FloatField(_("minimum delay (s)"), default=1.0, validators=[MinValueValidator(0)])
    max_delay = models.FloatField(_("maximum delay (s)"), default=30.0, validators=[MinValueValidator(0)])
    delay_factor = models.FloatField(_("delay factor"), default=5.0, validators=[MinValueValidator(0)])

    # Extractors (HTML and CSS are always on)
    extract_javascript = models.BooleanField(_("URLs in JavaScript"), default=True)
    extract_sitemaps = models.BooleanField(_("sitemaps"), default=True)
    extract_forms = models.BooleanField(_("form targets (GET)"), default=False)

    dedup = models.CharField(_("deduplication"), max_length=20, choices=DedupPolicy, default=DedupPolicy.ALL)
    dedup_verify = models.BooleanField(
        _("confirm duplicates byte for byte"),
        default=False,
        help_text=_(
            "Before writing a revisit, compare the payload with the stored original; "
            "on a mismatch (a digest collision) the response is stored in full and the collision logged."
        ),
    )
    digest_algorithm = models.CharField(
        _("WARC digest algorithm"), max_length=10, choices=DigestAlgorithm, default=DigestAlgorithm.SHA256
    )

    version = models.PositiveIntegerField(_("version"), default=1, editable=False)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("harvest template")
        verbose_name_plural = _("harvest templates")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="harvest_template_name_unique_ci",
                violation_error_message=_("A template with this name already exists."),
            ),
            models.CheckConstraint(
                condition=Q(min_delay__lte=F("max_delay")),
                name="harvest_template_delays_ordered",
                violation_error_message=_("The minimum delay cannot be longer than the maximum delay."),
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:template_detail", kwargs={"pk": self.pk})

    def crawler_settings(self) -> dict:
        """The settings as plain JSON, as a job keeps them."""
        values = {name: getattr(self, name) for name in self.SETTINGS}
        values["accept_rules"] = trap_list(self.accept_rules)
        values["reject_rules"] = trap_list(self.reject_rules)
        return {"template": self.name, "version": self.version, **values}
