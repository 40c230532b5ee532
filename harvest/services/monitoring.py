"""The monitoring page's background work: what the broker says, gathered every
MONITORING_BROKER_INTERVAL seconds by the beat (``harvest.gather_broker``) and kept in one row."""

from __future__ import annotations

import time

from django.utils import timezone

from harvest.models import BrokerSnapshot
from harvest.monitoring.workers import gather


def broker_snapshot_take(app=None) -> BrokerSnapshot:
    """Ask the broker about the workers and queues, and keep the answer for the monitoring page."""
    started = time.monotonic()
    health, queues = gather(app)
    snapshot, _created = BrokerSnapshot.objects.update_or_create(
        pk=1,
        defaults={
            "taken_at": timezone.now(),
            "took": round(time.monotonic() - started, 3),
            "health": health,
            "queues": queues,
        },
    )
    return snapshot
