"""The archive's files. WARC files are recorded here as they are closed; where their copies live
(storage nodes, replicas) and what is in them (the capture index) come with the storage and access issues."""

from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _


class WarcFile(models.Model):
    """A closed WARC file: its name (unique in the archive), where it is, its size and checksum."""

    name = models.CharField(_("name"), max_length=255, unique=True)
    path = models.CharField(_("path"), max_length=1000, help_text=_("Where the file was written."))
    size = models.BigIntegerField(_("size (bytes)"))
    sha256 = models.CharField(_("SHA-256"), max_length=64)
    records = models.PositiveIntegerField(_("records"), default=0)
    job = models.ForeignKey(
        "harvest.Job",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="warc_files",
        verbose_name=_("job"),
    )
    created_at = models.DateTimeField(_("created at"))
    closed_at = models.DateTimeField(_("closed at"))
    recovered = models.BooleanField(
        _("recovered"),
        default=False,
        help_text=_("Closed after its writer died: a torn last record was cut off."),
    )
    registered_at = models.DateTimeField(_("registered at"), auto_now_add=True)

    class Meta:
        verbose_name = _("WARC file")
        verbose_name_plural = _("WARC files")
        ordering = ["-created_at", "name"]
        indexes = [models.Index(fields=["job", "created_at"])]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:job_detail", kwargs={"pk": self.job_id}) if self.job_id else ""
