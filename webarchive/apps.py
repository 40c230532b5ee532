from django.apps import AppConfig, apps
from django.contrib.admin import apps as admin_apps
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_migrate
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _


def _remember_language(sender, request, user, **kwargs):
    """At login, the language the person chose goes into the session (read once, not on each page)."""
    from webarchive.middleware import remember_language

    if request is not None and hasattr(request, "session"):
        remember_language(request, user)


def _sync_roles(sender, **kwargs):
    from webarchive.permissions import roles_sync

    roles_sync()


class WebArchiveConfig(AppConfig):
    default = True
    name = "webarchive"
    verbose_name = _("Web archive")

    def ready(self):
        # The Celery app is loaded with Django, not with the package, so that importing webarchive's
        # plain modules loads no Celery: the shared tasks bind to it, and it becomes the default app
        # that celery.current_app gives in any thread. `celery -A webarchive` finds webarchive.celery.
        import webarchive.celery
        from webarchive import netguard

        # Every app's tasks registered in every process, so that a service can send a task by its
        # name (webarchive.tasks.enqueue) without importing the tasks module that imports it.
        webarchive.celery.app.autodiscover_tasks(
            [config.name for config in apps.get_app_configs()], force=True
        )

        # The address guard is plain Python (the crawler uses it without Django): its reasons are
        # translated once the application is there.
        netguard.set_translation(gettext)

        # New models get their permissions after their migration; keep the
        # role groups equal to webarchive.permissions.ROLE_PERMISSIONS.
        post_migrate.connect(_sync_roles, sender=self, dispatch_uid="webarchive.roles_sync")
        user_logged_in.connect(_remember_language, dispatch_uid="webarchive.remember_language")


class WebArchiveAdminConfig(admin_apps.AdminConfig):
    """The Django admin with the administrators-only site of webarchive.admin."""

    default = False
    default_site = "webarchive.admin.WebArchiveAdminSite"
