"""What the engineers' monitoring page reads: why jobs and sites failed (``failures``), and the health
of the workers and the queues (``workers``). The storage's part of the page is storage's
(``harvest.hooks.monitoring_panels``)."""

from harvest.monitoring.failures import (
    DANGER,
    INFO,
    WARNING,
    Explanation,
    Failures,
    explain_job_failure,
    explain_site_failure,
    explain_sites,
    recent_failures,
)
from harvest.monitoring.workers import (
    BrokerView,
    QueueLength,
    QueueLengths,
    Worker,
    WorkerHealth,
    broker_view,
    consumers_by_queue,
    known_queues,
    queue_lengths,
    worker_health,
)

__all__ = [
    "DANGER",
    "INFO",
    "WARNING",
    "BrokerView",
    "Explanation",
    "Failures",
    "QueueLength",
    "QueueLengths",
    "Worker",
    "WorkerHealth",
    "broker_view",
    "consumers_by_queue",
    "explain_job_failure",
    "explain_site_failure",
    "explain_sites",
    "known_queues",
    "queue_lengths",
    "recent_failures",
    "worker_health",
]
