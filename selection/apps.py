from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SelectionConfig(AppConfig):
    name = "selection"
    verbose_name = _("Selection")
