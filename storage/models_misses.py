"""URLs a replayed page asked for that the archive does not hold (recorded by the replay gate)."""

from django.db import models
from django.utils.translation import gettext_lazy as _

MISS_URL_MAX = 2000  # a longer URL is cut (hostile input is bounded)


class MissKind(models.TextChoices):
    PAGE = "page", _("page")
    IMAGE = "image", _("image")
    SCRIPT = "script", _("script")
    STYLESHEET = "stylesheet", _("stylesheet")
    FONT = "font", _("font")
    MEDIA = "media", _("media")
    OTHER = "other", _("other")


class ReplayMiss(models.Model):
    """One URL a capture's page asked for in replay and the archive lacks: how often, when last."""

    # sha256 of page, timestamp and URL: one row per (capture page, missing URL) without indexing long text.
    key = models.CharField(_("key"), max_length=64, unique=True, editable=False)
    page_url = models.CharField(_("page"), max_length=MISS_URL_MAX)
    page_stamp = models.CharField(_("page timestamp"), max_length=14)
    url = models.CharField(_("missing URL"), max_length=MISS_URL_MAX)
    host = models.CharField(_("host"), max_length=255, db_index=True)
    kind = models.CharField(_("kind"), max_length=10, choices=MissKind, default=MissKind.OTHER)
    job = models.ForeignKey(
        "harvest.Job",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="replay_misses",
        verbose_name=_("job"),
        help_text=_("The job whose capture of the page was browsed."),
    )
    count = models.PositiveIntegerField(_("count"), default=1)
    first_seen = models.DateTimeField(_("first seen"))
    last_seen = models.DateTimeField(_("last seen"))

    class Meta:
        verbose_name = _("URL missed in replay")
        verbose_name_plural = _("URLs missed in replay")
        ordering = ["host", "kind", "url"]
        indexes = [models.Index(fields=["job", "host"], name="storage_miss_job_host")]

    def __str__(self):
        return self.url
