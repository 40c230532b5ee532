"""Harvest templates: the crawler settings a domain configuration runs with."""

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.choices import DedupPolicy, DepthPolicy, DigestAlgorithm, RenderMode, StreamVariants
from harvest.crawler import defaults as crawler_defaults
from harvest.validators import trap_list, validate_trap_lines

RENDER_TIMES_MESSAGE = _(
    "The time per behaviour cannot be longer than the time per rendered page, which includes it."
)


class HarvestTemplate(models.Model):
    """Crawler settings as structured fields; a job keeps a copy of the version it ran with."""

    # The fields of browser rendering (docs/harvesting.md, "Browser capture").
    RENDER_SETTINGS = (
        "render",
        "behaviour_scroll",
        "behaviour_click",
        "behaviour_media",
        "render_page_seconds",
        "render_behaviour_seconds",
        "viewport_width",
        "viewport_height",
    )
    # The fields copied into a job (Job.template_settings) and shown as the template's settings;
    # the job gets the behaviour switches as one list, ``behaviours`` (see crawler_settings).
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
        "stream_variants",
        "dedup",
        "dedup_verify",
        "digest_algorithm",
        *RENDER_SETTINGS,
    )
    # What the browser does on each rendered page, in the order it does it.
    BEHAVIOURS = ("scroll", "click", "media")

    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    is_active = models.BooleanField(
        _("active"), default=True, help_text=_("Inactive templates cannot be chosen.")
    )

    # Scope
    depth_policy = models.CharField(
        _("depth policy"), max_length=10, choices=DepthPolicy, default=crawler_defaults.DEPTH_POLICY
    )
    clicks = models.PositiveSmallIntegerField(
        _("clicks"),
        default=crawler_defaults.CLICKS,
        validators=[MaxValueValidator(50)],
        help_text=_("For “the page and N clicks”: how many links away from a seed."),
    )
    max_hops = models.PositiveSmallIntegerField(
        _("max hops"),
        default=crawler_defaults.MAX_HOPS,
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
    min_delay = models.FloatField(
        _("minimum delay (s)"), default=crawler_defaults.MIN_DELAY, validators=[MinValueValidator(0)]
    )
    max_delay = models.FloatField(
        _("maximum delay (s)"), default=crawler_defaults.MAX_DELAY, validators=[MinValueValidator(0)]
    )
    delay_factor = models.FloatField(
        _("delay factor"), default=crawler_defaults.DELAY_FACTOR, validators=[MinValueValidator(0)]
    )

    # Extractors (HTML and CSS are always on)
    extract_javascript = models.BooleanField(_("URLs in JavaScript"), default=True)
    extract_sitemaps = models.BooleanField(_("sitemaps"), default=True)
    extract_forms = models.BooleanField(_("form targets (GET)"), default=False)
    stream_variants = models.CharField(
        _("streamed video"),
        max_length=10,
        choices=StreamVariants,
        default=crawler_defaults.STREAM_VARIANTS,
        help_text=_(
            "Which variants of an HLS or DASH stream are archived, segment by segment: every one, or only "
            "the best (fewer bytes; replay shows the best variant in any case). The segments count against "
            "the site's limits."
        ),
    )

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

    # Browser rendering: the crawler's browser capture reads these (docs/harvesting.md says how).
    render = models.CharField(
        _("render pages in a browser"),
        max_length=10,
        choices=RenderMode,
        default=RenderMode.OFF,
        help_text=_(
            "Render pages in a browser: for sites whose pages are built by JavaScript, which a plain "
            "fetch archives nearly empty. The browser shows each page as a reader would see it, and "
            "everything it loads (scripts, data, images, media) is archived. Rendering is much slower "
            "than fetching: keep it to the sites that need it."
        ),
    )
    behaviour_scroll = models.BooleanField(
        _("scroll to the end"),
        default=True,
        help_text=_(
            "Scroll each rendered page down to its end, so that endless pages load their next items "
            "and lazy images appear."
        ),
    )
    behaviour_click = models.BooleanField(
        _("click in-page controls"),
        default=True,
        help_text=_(
            "Click the buttons, tabs and “show more” links that load content without leaving the page."
        ),
    )
    behaviour_media = models.BooleanField(
        _("play audio and video"),
        default=True,
        help_text=_("Start the page's players, so that the sound and video they stream are archived."),
    )
    render_page_seconds = models.FloatField(
        _("time per rendered page (s)"),
        default=30.0,
        validators=[MinValueValidator(5), MaxValueValidator(300)],
        help_text=_("The most a rendered page may take in all, its behaviours included (5 to 300 s)."),
    )
    render_behaviour_seconds = models.FloatField(
        _("time per behaviour (s)"),
        default=10.0,
        validators=[MinValueValidator(1), MaxValueValidator(120)],
        help_text=_(
            "The most each behaviour (scrolling, clicking, playing) may take on a page "
            "(1 to 120 s, and not more than the time per page)."
        ),
    )
    viewport_width = models.PositiveSmallIntegerField(
        _("browser window width (px)"),
        default=1366,
        validators=[MinValueValidator(320), MaxValueValidator(3840)],
        help_text=_("Sites serve the images and layout that fit the window: 320 (a phone) to 3840."),
    )
    viewport_height = models.PositiveSmallIntegerField(
        _("browser window height (px)"),
        default=768,
        validators=[MinValueValidator(240), MaxValueValidator(2160)],
        help_text=_("240 to 2160."),
    )

    version = models.PositiveIntegerField(_("version"), default=1, editable=False)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    # ``version`` numbers the crawler settings (a job keeps the one it ran with); every save,
    # whatever it changes, raises the revision, which edits are made over (webarchive.versioning).
    revision = models.PositiveIntegerField(_("revision"), default=1, db_default=1, editable=False)
    VERSION_FIELD = "revision"

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
            models.CheckConstraint(
                condition=Q(render_behaviour_seconds__lte=F("render_page_seconds")),
                name="harvest_template_render_times_ordered",
                violation_error_message=RENDER_TIMES_MESSAGE,
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:template_detail", kwargs={"pk": self.pk})

    def clean(self):
        # The constraint below holds this in the database; here it is said at the field it concerns.
        page, behaviour = self.render_page_seconds, self.render_behaviour_seconds
        if page is not None and behaviour is not None and behaviour > page:
            raise ValidationError({"render_behaviour_seconds": RENDER_TIMES_MESSAGE})

    def crawler_settings(self) -> dict:
        """The settings as plain JSON, as a job keeps them."""
        values = {name: getattr(self, name) for name in self.SETTINGS}
        values["accept_rules"] = trap_list(self.accept_rules)
        values["reject_rules"] = trap_list(self.reject_rules)
        values["behaviours"] = [name for name in self.BEHAVIOURS if values.pop(f"behaviour_{name}")]
        for name in ("render_page_seconds", "render_behaviour_seconds"):
            values[name] = float(values[name])
        for name in ("viewport_width", "viewport_height"):
            values[name] = int(values[name])
        return {"template": self.name, "version": self.version, **values}
