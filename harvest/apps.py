from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class HarvestConfig(AppConfig):
    name = "harvest"
    verbose_name = _("Harvest")
