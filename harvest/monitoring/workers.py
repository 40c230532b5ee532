"""The health of the workers and of the queues, as the monitoring page shows it.

It asks the broker with short timeouts: a broker that cannot be reached is reported as such, never
raised to the page. The queues are the crawl queues, their channels', and those the apps above name
(``harvest.hooks.worker_queues``: storage's nodes with a local worker).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime

from celery import current_app
from django.conf import settings
from django.utils import timezone

from harvest import hooks
from harvest.models import BrokerSnapshot, HarvestChannel

logger = logging.getLogger(__name__)

BROKER_TIMEOUT = 1.5  # seconds: connecting to the broker, and waiting for the workers' replies


# Workers and queues ----------------------------------------------------------------------------


@dataclass
class Worker:
    """A Celery worker that answered: its queues, and the tasks it runs now."""

    name: str
    queues: list[str] = field(default_factory=list)
    active: int = 0
    concurrency: int | None = None
    crawls: int = 0  # of the active tasks, site crawls


@dataclass
class WorkerHealth:
    reachable: bool
    broker: str  # the broker's URL, without its password
    error: str = ""
    workers: list[Worker] = field(default_factory=list)


def _broker_connection(app):
    return app.connection_for_read(connect_timeout=BROKER_TIMEOUT)


def _connect(connection) -> str:
    """Connect, once, within BROKER_TIMEOUT; the reason it failed, or ""."""
    try:
        connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=BROKER_TIMEOUT)
    except Exception as error:  # kombu raises its own and the transports' errors
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return ""


def worker_health(app=None) -> WorkerHealth:
    """The workers that answer a ping within BROKER_TIMEOUT, with their queues and active tasks."""
    app = app or current_app
    with _broker_connection(app) as connection:
        broker = connection.as_uri()
        error = _connect(connection)
        if error:
            return WorkerHealth(False, broker, error)
        try:
            inspect = app.control.inspect(timeout=BROKER_TIMEOUT, connection=connection)
            names = sorted(inspect.ping() or {})
            if not names:
                return WorkerHealth(True, broker)
            # The others wait for as many replies as pings, not for the whole timeout.
            inspect = app.control.inspect(timeout=BROKER_TIMEOUT, connection=connection, limit=len(names))
            queues = inspect.active_queues() or {}
            active = inspect.active() or {}
            stats = inspect.stats() or {}
            # What a crawl worker's consumer holds (harvest.consumer): its crawl queues are not its
            # task pool's, and its site crawls are not active tasks.
            held = inspect._request("site_crawls") or {}
        except Exception as error:
            logger.warning("the workers could not be inspected: %s", error)
            return WorkerHealth(False, broker, f"{type(error).__name__}: {error}")
    workers = []
    for name in names:
        tasks = active.get(name) or []
        pool = (stats.get(name) or {}).get("pool") or {}
        sites = held.get(name) or {}
        crawls = sum(1 for task in tasks if task.get("name") == "harvest.crawl_site")
        workers.append(
            Worker(
                name=name,
                queues=sorted(
                    {queue["name"] for queue in queues.get(name) or [] if "name" in queue}
                    | set(sites.get("queues") or [])
                ),
                active=len(tasks) + int(sites.get("running") or 0),
                concurrency=sites.get("limit") or pool.get("max-concurrency"),
                crawls=crawls + int(sites.get("running") or 0),
            )
        )
    return WorkerHealth(True, broker, workers=workers)


@dataclass
class QueueLength:
    name: str
    waiting: int | None  # None: not known (the queue does not exist on the broker yet)
    channels: list[str] = field(default_factory=list)  # harvest channels sending to it
    storage_nodes: list[str] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)  # crawl machines whose spool it ingests
    consumers: list[str] = field(default_factory=list)  # workers consuming it (from worker_health)


@dataclass
class QueueLengths:
    reachable: bool
    error: str = ""
    queues: list[QueueLength] = field(default_factory=list)


def known_queues() -> list[QueueLength]:
    """The queues tasks are sent to: default, the crawl queues (with their channels) and the queues the
    apps above name (storage: its nodes with a local worker, harvest.hooks.worker_queues; the spools of
    crawl machines with files to ingest, harvest.hooks.spool_queues)."""
    queues = {name: QueueLength(name, None) for name in ["default", *settings.HARVEST_CRAWL_QUEUES]}
    for name, queue in HarvestChannel.objects.order_by("name").values_list("name", "queue"):
        queues.setdefault(queue, QueueLength(queue, None)).channels.append(name)
    for provided in hooks.worker_queues.collect():
        for queue, node in provided:
            queues.setdefault(queue, QueueLength(queue, None)).storage_nodes.append(node)
    for provided in hooks.spool_queues.collect():
        for queue, machine in provided:
            queues.setdefault(queue, QueueLength(queue, None)).machines.append(machine)
    return list(queues.values())


def queue_lengths(app=None) -> QueueLengths:
    """How many tasks wait in each known queue, asked of the broker (a passive declare: the queue is
    never created by asking). On the filesystem broker of the demo, kombu counts the queue's message
    files in its folder."""
    app = app or current_app
    queues = known_queues()
    with _broker_connection(app) as connection:
        error = _connect(connection)
        if error:
            return QueueLengths(False, error, queues)
        for queue in queues:
            # One channel per queue: an AMQP broker closes the channel that asked about a missing queue.
            try:
                channel = connection.channel()
            except Exception as error:
                return QueueLengths(False, f"{type(error).__name__}: {error}", queues)
            try:
                queue.waiting = channel.queue_declare(queue=queue.name, passive=True).message_count
            except Exception:  # not declared yet: no worker ever consumed it, no task ever sent to it
                queue.waiting = None
            finally:
                with contextlib.suppress(Exception):  # the broker may have closed it already
                    channel.close()
    return QueueLengths(True, queues=queues)


def consumers_by_queue(queues: QueueLengths, health: WorkerHealth) -> None:
    """Name, on each queue, the workers consuming it."""
    for queue in queues.queues:
        queue.consumers = [worker.name for worker in health.workers if queue.name in worker.queues]


# Gathered in the background ---------------------------------------------------------------------


@dataclass
class BrokerView:
    """What the monitoring page shows of the broker: the last gathering, and how old it is."""

    health: WorkerHealth | None
    queues: QueueLengths | None
    taken_at: datetime | None
    age: float | None  # seconds
    stale: bool  # older than three gatherings: the beat (or its worker) is probably not running


def gather(app=None) -> tuple[dict, dict]:
    """Ask the broker (seconds, with short timeouts): the workers' health and the queues, as dicts."""
    health = worker_health(app)
    queues = queue_lengths(app)
    consumers_by_queue(queues, health)
    return asdict(health), asdict(queues)


def broker_view(now=None) -> BrokerView:
    """The last gathering (harvest.services.monitoring.broker_snapshot_take), read in one query."""
    snapshot = BrokerSnapshot.objects.filter(pk=1).first()
    if snapshot is None:
        return BrokerView(None, None, None, None, stale=True)
    health = WorkerHealth(
        **{**snapshot.health, "workers": [Worker(**w) for w in snapshot.health.get("workers", [])]}
    )
    queues = QueueLengths(
        **{**snapshot.queues, "queues": [QueueLength(**q) for q in snapshot.queues.get("queues", [])]}
    )
    age = max(0.0, ((now or timezone.now()) - snapshot.taken_at).total_seconds())
    stale = age > 3 * settings.MONITORING_BROKER_INTERVAL + 30
    return BrokerView(health, queues, snapshot.taken_at, age, stale=stale)
