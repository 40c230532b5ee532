from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps
from django.db.models.signals import post_migrate
from django.utils.translation import gettext_lazy as _


def _sync_roles(sender, **kwargs):
    from webarchive.permissions import roles_sync

    roles_sync()


class WebArchiveConfig(AppConfig):
    default = True
    name = "webarchive"
    verbose_name = _("Web archive")

    def ready(self):
        # New models get their permissions after their migration; keep the
        # role groups equal to webarchive.permissions.ROLE_PERMISSIONS.
        post_migrate.connect(_sync_roles, sender=self, dispatch_uid="webarchive.roles_sync")


class WebArchiveAdminConfig(admin_apps.AdminConfig):
    """The Django admin with the administrators-only site of webarchive.admin."""

    default = False
    default_site = "webarchive.admin.WebArchiveAdminSite"
