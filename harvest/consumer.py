"""A crawl worker that holds thousands of site crawls at once, none of them on a thread of its own.

Celery delivers one ``harvest.crawl_site`` task per site crawl, as before, and the broker keeps it
until the site has ended (acknowledged late: a worker that dies gives its sites back, and the
next one crawls them again). What changes is who runs the task. With a task pool, each running
site held a pool thread that did nothing but wait for the engine and write the site's progress,
so a process crawled as many sites as it had threads. Here a consumer step
(:class:`SiteCrawlConsumer`) takes the worker's crawl queues over from the task pool, with a
prefetch of HARVEST_SITES_PER_WORKER messages, and each message becomes a site crawl on the
process's engine (harvest.crawler.engine: a site waiting out its politeness delay costs only
its memory). One watcher thread writes the progress of every site in a few statements, passes
on stop requests and time limits, and answers the sites' deduplication questions; a few
threads start and end sites (the database work); a message is acknowledged when its site has
ended and its end is recorded.

Bounds: at most HARVEST_SITES_PER_WORKER sites (the messages the broker lets the process hold),
and no new site while the process's resident memory is above HARVEST_WORKER_MEMORY_MB. A warm
shutdown stops the running sites, closes their files and gives their tasks back unacknowledged.

The step is added to every worker (webarchive.celery); it does nothing in a worker that consumes
no crawl queue, or when HARVEST_SITES_PER_WORKER is 0 (then the task pool runs the sites, a
thread each, as ``harvest.tasks.crawl_site``).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import queue
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from celery import bootsteps
from celery.worker.control import inspect_command
from kombu import Consumer

logger = logging.getLogger(__name__)

SITE_CRAWL_TASK = "harvest.crawl_site"
DATABASE_THREADS = 4  # threads that start and end sites (the database work), whatever the sites
DEDUP_THREADS = 2  # threads that answer the sites' deduplication questions as they come
WATCH_SECONDS = 0.05  # how often the watcher starts due sites and collects ended ones
RETRY_SECONDS = (10, 20, 40, 80, 160)  # a site whose start met a database error is tried again after
HEARTBEAT_INTERVALS = 4  # an unchanged site's row is written every 4 intervals (the watchdog: 3 + 10 s)
SHUTDOWN_SECONDS = 30.0  # a warm shutdown waits this long for the stopped sites to close their files

_host: SiteCrawls | None = None  # this process's, once the step has started


def resident_mb() -> float | None:
    """This process's resident memory in MB (Linux), None where /proc does not tell."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


@dataclass(order=True)
class _Later:
    at: float
    order: int
    delivery: _Delivery = field(compare=False)


@dataclass
class _Delivery:
    """A site-crawl message received, waiting to start or running."""

    entry_id: int
    redelivered: bool
    message: object  # the kombu message: acknowledged at the end, or given back
    attempts: int = 0
    generation: int = 0  # the consumer's connection it came on (let_go starts a new one)


class SiteCrawls:
    """The site crawls of this process: started, watched, ended, acknowledged."""

    def __init__(self, *, limit: int, memory_mb: int, interval: float, worker: str):
        self.limit = limit
        self.memory_mb = memory_mb
        self.interval = interval
        self.worker = worker
        self.running: dict[int, tuple[_Delivery, object]] = {}  # entry id -> (delivery, worker.RunningSite)
        self._ended_ids: queue.SimpleQueue[int] = queue.SimpleQueue()  # put by the engine as sites end
        self.starting = 0
        self.started = self.ended = 0
        self._full = False  # over the memory budget at the last look
        self.generation = 0  # how many times the running sites were let go (a lost connection)
        self._turn = threading.Lock()  # held by the watcher for a turn, and by let_go
        self._waiting: list[_Later] = []  # deliveries to start when due (retries, messages with an ETA)
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._database = ThreadPoolExecutor(max_workers=DATABASE_THREADS, thread_name_prefix="site-crawls")
        self._watcher = threading.Thread(target=self._watch, name="site-crawls-watcher", daemon=True)
        self._watcher.start()
        # Every site's dedup index puts its database questions in this one queue, answered at once by
        # threads of their own (a site's fetch waits for the answer).
        self.dedup_questions: queue.SimpleQueue = queue.SimpleQueue()
        self._answerers = [
            threading.Thread(target=self._answer_dedup, name=f"site-crawls-dedup-{n}", daemon=True)
            for n in range(DEDUP_THREADS)
        ]
        for thread in self._answerers:
            thread.start()

    # -- deliveries (the consumer's thread) -------------------------------------------------------------

    def deliver(self, delivery: _Delivery, *, not_before: float = 0.0) -> None:
        with self._lock:
            delivery.generation = self.generation
            heapq.heappush(self._waiting, _Later(not_before, next(self._order), delivery))

    def info(self) -> dict:
        with self._lock:
            return {
                "running": len(self.running),
                "starting": self.starting,
                "waiting": len(self._waiting),
                "limit": self.limit,
                "started": self.started,
                "ended": self.ended,
                "resident_mb": round(resident_mb() or 0.0, 1),
                "memory_mb": self.memory_mb,
            }

    # -- the watcher thread ------------------------------------------------------------------------------

    def _watch(self) -> None:
        next_report = time.monotonic() + self.interval
        while not self._closing.is_set():
            try:
                with self._turn:
                    self._start_due()
                    self._collect_ended()
                    if time.monotonic() >= next_report:
                        next_report = time.monotonic() + self.interval
                        self._report()
            except Exception:  # the watcher must outlive a database hiccup: the next turn tries again
                logger.exception("the site crawl watcher failed a turn")
                time.sleep(1.0)
            self._closing.wait(WATCH_SECONDS)

    def _memory_full(self) -> bool:
        resident = resident_mb()
        full = resident is not None and resident > self.memory_mb
        if full != self._full:
            self._full = full
            if full:
                logger.warning(
                    "resident memory %.0f MB, over its memory budget of %s MB: no new site until some end",
                    resident,
                    self.memory_mb,
                )
            else:
                logger.info("resident memory %.0f MB: new sites are taken again", resident)
        return full

    def _start_due(self) -> None:
        now = time.monotonic()
        due = []
        with self._lock:
            if self._waiting and self._waiting[0].at <= now and self._memory_full():
                return  # no new site until some have ended (the messages stay held, unacknowledged)
            while self._waiting and self._waiting[0].at <= now:
                due.append(heapq.heappop(self._waiting).delivery)
            self.starting += len(due)
        for delivery in due:
            self._database.submit(self._start, delivery)

    def _start(self, delivery: _Delivery) -> None:
        from django.db import OperationalError, close_old_connections

        from harvest.worker import site_crawl_start

        site = None
        try:
            close_old_connections()
            site = site_crawl_start(
                delivery.entry_id,
                redelivered=delivery.redelivered,
                worker=self.worker,
                dedup_questions=self.dedup_questions,
            )
        except OperationalError as error:  # the database is away: try again later, as the task retried
            if delivery.attempts < len(RETRY_SECONDS):
                seconds = RETRY_SECONDS[delivery.attempts]
                delivery.attempts += 1
                logger.warning(
                    "site crawl %s not started (%s): again in %s s", delivery.entry_id, error, seconds
                )
                with self._lock:
                    self.starting -= 1
                self.deliver(delivery, not_before=time.monotonic() + seconds)
                return
            logger.error(
                "site crawl %s not started after %s attempts: %s", delivery.entry_id, delivery.attempts, error
            )
        except Exception:
            logger.exception("site crawl %s could not start", delivery.entry_id)
        with self._lock:
            self.starting -= 1
            late = site is not None and delivery.generation != self.generation
            if site is not None and not late:
                self.running[delivery.entry_id] = (delivery, site)
                self.started += 1
        if site is not None and not late:
            site.handle.when_done(lambda _handle, entry_id=delivery.entry_id: self._ended_ids.put(entry_id))
        if late:  # started while the others were let go: its message's channel is gone too
            self._let_go_sites([(delivery, site)])
        elif site is None:  # nothing to do (ended, running elsewhere, job stopped), or it failed for good
            _acknowledge(delivery)

    def _answer_dedup(self) -> None:
        from django.db import close_old_connections

        from harvest.crawler.dedup import answer

        checked = 0.0
        while not self._closing.is_set():
            try:
                question = self.dedup_questions.get(timeout=0.5)
            except queue.Empty:
                continue
            try:
                # Once a second, not once a question: each check is a round trip (Django's health
                # check), and a crawl asks two questions for every URL it fetches.
                if time.monotonic() - checked >= 1.0:
                    close_old_connections()
                    checked = time.monotonic()
                answer(question)
            except Exception:  # answer() hands the question's own errors to the asking thread
                logger.exception("a deduplication question could not be answered")

    def _collect_ended(self) -> None:
        ended = set()
        while True:  # the sites the engine says have ended since the last turn (not a scan of them all)
            try:
                ended.add(self._ended_ids.get_nowait())
            except queue.Empty:
                break
        with self._lock:
            # An id seen here may be of a site let go and delivered again since: only an ended one goes.
            ended = [entry_id for entry_id in ended if entry_id in self.running]
            finished = [
                self.running.pop(entry_id) for entry_id in ended if self.running[entry_id][1].handle.done
            ]
        for delivery, site in finished:
            self._database.submit(self._end, delivery, site)

    def _end(self, delivery: _Delivery, site) -> None:
        from django.db import close_old_connections

        from harvest.worker import site_crawl_finish

        try:
            close_old_connections()
            logger.info("site crawl %s ended: %s", delivery.entry_id, site_crawl_finish(site))
        except Exception:
            # Not recorded: the task goes back to the broker and the site is crawled again.
            logger.exception("the end of site crawl %s could not be recorded", delivery.entry_id)
            _give_back(delivery)
            return
        with self._lock:
            self.ended += 1
        _acknowledge(delivery)

    def _report(self) -> None:
        from django.db import close_old_connections

        from harvest.crawler.outcomes import OPERATOR
        from harvest.services.crawls import jobs_stopping, site_crawls_progress
        from harvest.steering import steer_sites

        with self._lock:
            sites = [site for _delivery, site in self.running.values()]
        if not sites:
            return
        for site in sites:
            site.handle.stop_if_overdue()
        close_old_connections()
        # A site's row is written when its numbers have changed, and at least every few intervals
        # (its heartbeat: a row not written for three intervals is taken for a dead worker's). A
        # site waiting out a delay of seconds changes less often than the interval.
        now = time.monotonic()
        heartbeat = HEARTBEAT_INTERVALS * self.interval
        reports = []
        for site in sites:
            progress = site.crawl.progress()
            numbers = (progress.urls_done, progress.urls_queued, progress.bytes, progress.errors)
            if numbers != site.reported or now - site.reported_at >= heartbeat:
                reports.append((site.entry_id, site.job_id, progress))
                site.reported, site.reported_at = numbers, now
        site_crawls_progress(reports)
        stopping = jobs_stopping({site.job_id for site in sites})
        for site in sites:
            if site.job_id in stopping:
                site.handle.stop(OPERATOR)
        steer_sites(sites)  # pauses, resumes, rules and budgets changed meanwhile
        for files in {id(site.files): site.files for site in sites}.values():
            files.register_closed()

    # -- letting go ---------------------------------------------------------------------------------------

    def let_go(self) -> int:
        """Stop every running site, close its files and give its task back: the broker hands it to the
        next worker, which crawls the site again (as after a killed worker, but with its files whole).
        For a warm shutdown, and when the broker connection is lost (the messages' channel is gone:
        an acknowledgement could no longer reach the broker, which gives them out again anyway)."""
        with self._turn:  # no progress report under way, which would make them look alive again
            with self._lock:
                self.generation += 1
                running = list(self.running.values())
                self.running.clear()
                waiting, self._waiting = self._waiting, []
            self._let_go_sites(running)
        for later in waiting:
            _give_back(later.delivery)
        if running:
            logger.info("%s site crawls stopped and given back to the broker", len(running))
        return len(running)

    def _let_go_sites(self, running: list) -> None:
        from harvest.crawler.outcomes import OPERATOR
        from harvest.services.crawls import site_crawls_abandon
        from harvest.worker import release_site

        for _delivery, site in running:
            site.handle.stop(OPERATOR)
        deadline = time.monotonic() + SHUTDOWN_SECONDS
        for _delivery, site in running:
            site.handle.wait(max(0.0, deadline - time.monotonic()))
        for _delivery, site in running:
            release_site(site)
        if running:
            try:
                site_crawls_abandon(site.entry_id for _delivery, site in running)
            except Exception:  # they will be taken for dead once their progress is old enough
                logger.exception("the running sites could not be marked abandoned")
        for delivery, _site in running:
            _give_back(delivery)

    def shutdown(self) -> None:
        """A warm shutdown: the sites that have ended are recorded, the others let go."""
        self._closing.set()
        self._watcher.join()
        for thread in self._answerers:
            thread.join()
        self._collect_ended()
        self._database.shutdown(wait=True)  # the sites starting or ending finish that first
        self.let_go()


def _acknowledge(delivery: _Delivery) -> None:
    try:
        delivery.message.ack()
    except Exception:  # the connection was lost: the broker gives the task again, which then does nothing
        logger.warning("site crawl %s: its task could not be acknowledged", delivery.entry_id, exc_info=True)


def _give_back(delivery: _Delivery) -> None:
    try:
        delivery.message.reject(requeue=True)
    except Exception:  # the connection is gone: the broker gives it back by itself
        logger.warning("site crawl %s: its task could not be given back", delivery.entry_id, exc_info=True)


class SiteCrawlConsumer(bootsteps.ConsumerStep):
    """Takes the worker's crawl queues over from its task pool (see the module's docstring)."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent, **kwargs):
        super().__init__(parent, **kwargs)
        self.queues: list = []  # the crawl queues taken over (kept: a reconnection starts the step again)
        self.consumers = []

    def start(self, c):
        global _host, _step
        from django.conf import settings

        limit = settings.HARVEST_SITES_PER_WORKER
        if not self.queues and limit > 0 and c.task_consumer is not None:
            self.queues = [
                queue for queue in c.task_consumer.queues if queue.name in settings.HARVEST_CRAWL_QUEUES
            ]
            for queue in self.queues:
                c.cancel_task_queue(queue.name)
        if not self.queues:
            return
        _step = self
        if _host is None:
            _host = SiteCrawls(
                limit=limit,
                memory_mb=settings.HARVEST_WORKER_MEMORY_MB,
                interval=settings.HARVEST_PROGRESS_INTERVAL,
                worker=f"{c.hostname or socket.gethostname()}:{os.getpid()}",
            )
        channel = c.connection.channel()
        self.consumers = [
            Consumer(
                channel,
                queues=self.queues,
                callbacks=[self.on_message],
                accept=["json"],
                prefetch_count=limit,
            )
        ]
        for consumer in self.consumers:
            consumer.consume()
        logger.info(
            "site crawls: up to %s at once from %s", limit, ", ".join(queue.name for queue in self.queues)
        )

    def on_message(self, body, message) -> None:
        headers = message.headers or {}
        if headers.get("task") != SITE_CRAWL_TASK:
            logger.error("%s on a crawl queue is not a site crawl: dropped", headers.get("task"))
            message.reject(requeue=False)
            return
        try:
            args = body[0] if isinstance(body, list | tuple) else body["args"]
            entry_id = int(args[0])
        except (KeyError, IndexError, TypeError, ValueError):
            logger.error("a site crawl message without its site: %r", body)
            message.reject(requeue=False)
            return
        redelivered = bool((message.delivery_info or {}).get("redelivered"))
        _host.deliver(_Delivery(entry_id, redelivered, message), not_before=_not_before(headers.get("eta")))

    def stop(self, c):
        """The connection is lost (the consumer starts again on a new one) or the worker stops."""
        if _host is not None and self.consumers:
            self._cancel(c)
            _host.let_go()
        super().stop(c)

    def shutdown(self, c):
        if _host is not None and self.consumers:
            self._cancel(c)
            _host.shutdown()
        super().shutdown(c)

    def _cancel(self, c) -> None:
        """No more deliveries: what is given back must go to another worker, not come back here."""
        for consumer in self.consumers:
            try:
                consumer.cancel()
            except Exception:  # the connection is gone already: nothing will be delivered anyway
                logger.debug("the site crawl consumer could not be cancelled", exc_info=True)


def _not_before(eta) -> float:
    """The monotonic time a message with an ETA (a retried task) may start; 0 for at once."""
    if not eta:
        return 0.0
    try:
        when = datetime.fromisoformat(eta)
    except (TypeError, ValueError):
        return 0.0
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return time.monotonic() + max(0.0, (when - datetime.now(UTC)).total_seconds())


@inspect_command()
def site_crawls(state):
    """``celery inspect site_crawls``: what this worker's consumer holds (the monitoring page asks)."""
    if _host is None:
        return {}
    return {**_host.info(), "queues": [queue.name for queue in _queues()]}


def _queues() -> list:
    return _step.queues if _step is not None else []


_step: SiteCrawlConsumer | None = None


def install(app) -> None:
    """Add the step to the workers of ``app`` (webarchive.celery)."""
    app.steps["consumer"].add(SiteCrawlConsumer)
