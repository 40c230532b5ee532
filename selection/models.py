"""The selection side (BCWeb): collections that librarians propose URLs into."""

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from selection.choices import CollectionKind


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
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    history = HistoricalRecords(m2m_fields=[members], excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("collection")
        verbose_name_plural = _("collections")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(Lower("name"), name="selection_collection_name_unique_ci"),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("selection:collection_detail", kwargs={"pk": self.pk})
