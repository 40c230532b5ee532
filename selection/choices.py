from django.db import models
from django.utils.translation import gettext_lazy as _


class CollectionKind(models.TextChoices):
    """Who a collection belongs to: a library department's standing work, or a time-bound project."""

    DEPARTMENT = "department", _("Department")
    PROJECT = "project", _("Project")
    EVENT = "event", _("Event")
