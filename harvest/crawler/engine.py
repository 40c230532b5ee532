"""Many site crawls in one process, on a small pool of fetch threads.

A site waiting out its politeness delay holds nothing: it sits in a heap
ordered by the time it may be asked again, and the fetch threads take
whichever site is due next. So a process with 8 fetch threads can keep 500
polite site crawls going, each one connection to its host, and the threads
are busy as long as some site is due (the delay of a site is measured from
the end of its last fetch).

Used by the Celery site-crawl task (``harvest.tasks``) through the process's
shared engine, and directly by ``manage.py crawl`` and the benchmarks.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from dataclasses import dataclass, field

from harvest.crawler import defaults
from harvest.crawler.outcomes import OPERATOR, TIME_LIMIT
from harvest.crawler.site import SiteCrawl

logger = logging.getLogger(__name__)


@dataclass(order=True)
class _Due:
    at: float
    order: int
    turn: int = field(compare=False)
    handle: SiteHandle = field(compare=False)


class SiteHandle:
    """A site crawl given to the engine: wait for it, stop it, read its progress."""

    def __init__(self, engine: CrawlEngine, crawl: SiteCrawl):
        self.engine = engine
        self.crawl = crawl
        self.turn = 0  # heap entries of an older turn are stale (the site was woken early)
        self.running = False  # a fetch thread is in its step: never two at once
        self.woken = False  # woken during its step: due again at once after it
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the crawl has ended (within ``timeout`` seconds)."""
        return self._done.wait(timeout)

    def stop(self, reason: str) -> None:
        """End the crawl at its next step, at once if it is waiting out a delay."""
        self.crawl.request_stop(reason)
        self.engine._wake(self)

    def stop_if_overdue(self) -> None:
        """Stop the crawl once its time limit has passed (a fetch under way cut, headers included)."""
        if self.crawl.overdue():
            self.stop(TIME_LIMIT)

    def _finished(self) -> None:
        self._done.set()


class CrawlEngine:
    """A pool of fetch threads serving the site crawls that are due, soonest first."""

    def __init__(self, *, threads: int = defaults.FETCH_THREADS, name: str = "crawl"):
        self.threads = threads
        self.name = name
        self._heap: list[_Due] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._closing = False
        self.active = 0  # site crawls submitted and not ended

    def submit(self, crawl: SiteCrawl) -> SiteHandle:
        """Start crawling a site; returns at once."""
        handle = SiteHandle(self, crawl)
        with self._ready:
            if self._closing:
                raise RuntimeError("the crawl engine is shutting down")
            self._start_workers()
            self.active += 1
            heapq.heappush(self._heap, _Due(time.monotonic(), next(self._order), handle.turn, handle))
            self._ready.notify()
        return handle

    def shutdown(self, *, wait: bool = True) -> None:
        """Stop the fetch threads once the sites already submitted have ended (or at once)."""
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        if wait:
            for worker in self._workers:
                worker.join()

    def _start_workers(self) -> None:
        while len(self._workers) < self.threads:
            worker = threading.Thread(
                target=self._work, name=f"{self.name}-{len(self._workers)}", daemon=True
            )
            self._workers.append(worker)
            worker.start()

    def _wake(self, handle: SiteHandle) -> None:
        with self._ready:
            if handle.done:
                return
            if handle.running:
                handle.woken = True
                return
            handle.turn += 1
            heapq.heappush(self._heap, _Due(time.monotonic(), next(self._order), handle.turn, handle))
            self._ready.notify()

    def _next_due(self) -> SiteHandle | None:
        with self._ready:
            while True:
                if self._closing and self.active == 0:
                    return None
                if self._heap:
                    due = self._heap[0]
                    if due.turn != due.handle.turn:  # superseded by an earlier wake-up
                        heapq.heappop(self._heap)
                        continue
                    wait = due.at - time.monotonic()
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        due.handle.turn += 1  # any other entry of this site is now stale
                        due.handle.running = True
                        return due.handle
                    self._ready.wait(wait)
                else:
                    self._ready.wait(1.0)

    def _work(self) -> None:
        while True:
            handle = self._next_due()
            if handle is None:
                return
            crawl = handle.crawl
            try:
                delay = crawl.step()
            except Exception as error:  # a crawler bug ends this site, never the thread or the others
                logger.exception("site crawl of %s failed", crawl.site)
                crawl.fail(error)
                delay = None
            with self._ready:
                handle.running = False
                if handle.woken:
                    handle.woken = False
                    delay = 0.0 if delay is not None else None
                if delay is None:
                    self.active -= 1
                    handle._finished()
                    self._ready.notify_all()
                else:
                    heapq.heappush(
                        self._heap, _Due(time.monotonic() + delay, next(self._order), handle.turn, handle)
                    )
                    self._ready.notify()


def run_sites(crawls: list[SiteCrawl], *, threads: int = 8, on_progress=None, interval: float = 2.0) -> None:
    """Crawl ``crawls`` to the end on a private engine (``manage.py crawl``, benchmarks, tests).

    Interrupted (Ctrl-C), it stops every site, the fetches under way included, and waits for them
    to end before the interruption goes on up.
    """
    engine = CrawlEngine(threads=threads)
    handles = [engine.submit(crawl) for crawl in crawls]
    try:
        for handle in handles:
            while not handle.wait(interval):
                for each in handles:
                    each.stop_if_overdue()
                if on_progress is not None:
                    on_progress()
    except BaseException:
        for handle in handles:
            handle.stop(OPERATOR)
        raise
    finally:
        engine.shutdown()
