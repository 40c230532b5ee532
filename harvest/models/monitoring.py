"""What the broker said last: the workers and the queues, gathered in the background for the
monitoring page (asking takes seconds; the page must not wait for it)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class BrokerSnapshot(models.Model):
    """One row (pk 1), replaced by each gathering (harvest.services.monitoring.broker_snapshot_take)."""

    taken_at = models.DateTimeField(_("taken at"))
    took = models.FloatField(_("seconds taken"), default=0.0)
    health = models.JSONField(_("workers"), default=dict)  # harvest.monitoring.WorkerHealth, as a dict
    queues = models.JSONField(_("queues"), default=dict)  # harvest.monitoring.QueueLengths, as a dict

    class Meta:
        verbose_name = _("broker snapshot")

    def __str__(self):
        return f"{_('broker snapshot')} {self.taken_at:%Y-%m-%d %H:%M:%S}"
