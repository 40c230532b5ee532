"""The shared core's one model: each person's preferences (the interface language). Roles are auth
groups (webarchive.permissions); Django sends this app ``post_migrate``, on which the role groups'
permissions are synced (webarchive.apps)."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class UserPreference(models.Model):
    """What a person chose for themselves, remembered from one session to the next."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="preference", verbose_name=_("user")
    )
    # Empty: the browser's language (Accept-Language), as for visitors who are not logged in.
    language = models.CharField(_("language"), max_length=10, choices=settings.LANGUAGES, blank=True)

    class Meta:
        verbose_name = _("preference")
        verbose_name_plural = _("preferences")

    def __str__(self):
        return f"{self.user}: {self.language or '-'}"
