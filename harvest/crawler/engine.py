"""Many site crawls in one process, on a small pool of fetch threads.

A site waiting out its politeness delay holds nothing: it sits in a heap
ordered by the time it may be asked again, and the fetch threads take
whichever site is due next. So a process with 8 fetch threads can keep 500
polite site crawls going, each one connection to its host, and the threads
are busy as long as some site is due (the delay of a site is measured from
the end of its last fetch).

Politeness across sites: each site keeps its own delay between its requests
(the template's), and the engine keeps ``ip_interval`` seconds between the
starts of two requests to one IP address, whichever sites they come from, so
that the thousand domains of one shared host are not crawled at a thousand
times the rate a site is allowed. A site's address is its first seed's host,
resolved by a fetch thread before its first step (and again after
``ADDRESS_TTL`` seconds); a site due while its address is busy waits until
the address is free, in the same heap.

Used by the crawl worker (``harvest.consumer``) through the process's
shared engine, and directly by ``manage.py crawl`` and the benchmarks.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from harvest.crawler import defaults
from harvest.crawler.outcomes import OPERATOR, TIME_LIMIT
from harvest.crawler.site import SiteCrawl
from webarchive import netguard

logger = logging.getLogger(__name__)

ADDRESS_TTL = 600.0  # seconds a site's address is trusted before it is resolved again
ADDRESSES_KEPT = 50_000  # next-free times of addresses kept (older ones are forgotten first)
_UNRESOLVED = ""


def site_address(crawl: SiteCrawl, *, timeout: float = defaults.CONNECT_TIMEOUT) -> str | None:
    """The IP address of a site's first seed host, as its connections will find it; None if it has none."""
    seeds = crawl.settings.seeds
    if not seeds:
        return None
    parts = urlsplit(seeds[0])
    host = parts.hostname
    if not host:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        addresses = netguard.resolve(host, port, timeout=timeout)
    except (OSError, ValueError, UnicodeError):
        return None  # the site's own fetch will fail and say why
    return addresses[0] if addresses else None


_CALLBACKS_LOCK = threading.Lock()  # a site's end against a callback being added: one of them runs it


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
        self.stopping = False  # a stop was asked: it ends at its next step, whatever its address
        self.paused = False  # paused by an engineer: out of the heap (costing memory only) until resumed
        self.address: str | None = _UNRESOLVED  # the IP address its politeness is counted on
        self.resolved_at = 0.0
        self._done = threading.Event()
        self._callbacks: list = []

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the crawl has ended (within ``timeout`` seconds)."""
        return self._done.wait(timeout)

    def stop(self, reason: str) -> None:
        """End the crawl at its next step, at once if it is waiting out a delay."""
        self.crawl.request_stop(reason)
        self.stopping = True
        self.engine._wake(self)

    def pause(self) -> None:
        """Take no more steps until :meth:`resume` (a fetch under way ends first); its frontier,
        counters and politeness are kept. A stop still ends it at once."""
        self.paused = True

    def resume(self) -> None:
        """Step again, at once (its politeness delay was served while it was paused)."""
        if self.paused:
            self.paused = False
            self.engine._wake(self)

    def steer(self) -> None:
        """Apply the crawl's new rules now if no thread is in its step (a paused site shows their
        effect at once); otherwise its step applies them."""
        with self.engine._ready:
            if not self.running and not self.done:
                self.crawl.apply_steering()

    def stop_if_overdue(self) -> None:
        """Stop the crawl once its time limit has passed (a fetch under way cut, headers included)."""
        if self.crawl.overdue():
            self.stop(TIME_LIMIT)

    def when_done(self, callback) -> None:
        """Call ``callback(handle)`` once the crawl has ended, from the
        thread that ended it, under the engine's lock (so: quick, and not calling the engine), or at
        once from this one if it has ended: a holder of thousands of sites learns of each end without
        polling them."""
        with _CALLBACKS_LOCK:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def _finished(self) -> None:
        with _CALLBACKS_LOCK:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


class CrawlEngine:
    """A pool of fetch threads serving the site crawls that are due, soonest first.

    ``ip_interval``: the least time (s) between the starts of two requests to one IP address
    (0: sites are polite each on their own only). ``address_of(crawl)`` gives a site's address
    (default :func:`site_address`).
    """

    def __init__(
        self,
        *,
        threads: int = defaults.FETCH_THREADS,
        name: str = "crawl",
        ip_interval: float = 0.0,
        address_of: Callable[[SiteCrawl], str | None] | None = None,
    ):
        if ip_interval < 0:
            raise ValueError("ip_interval cannot be negative")
        self.threads = threads
        self.name = name
        self.ip_interval = ip_interval
        self.address_of = address_of or site_address
        self._ip_free: dict[str, float] = {}  # address -> when its next request may start
        self._heap: list[_Due] = []
        self._order = itertools.count()
        self._ready = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._closing = False
        self.active = 0  # site crawls submitted and not ended

    def submit(self, crawl: SiteCrawl, *, paused: bool = False) -> SiteHandle:
        """Start crawling a site (``paused``: not before it is resumed); returns at once."""
        handle = SiteHandle(self, crawl)
        handle.paused = paused
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

    def _address_busy(self, handle: SiteHandle, now: float) -> bool:
        """Whether the site must wait for its address (then it is due again when the address is
        free); otherwise the address is taken for ``ip_interval``. Under the lock."""
        address = handle.address
        if not self.ip_interval or not address:
            return False
        free = self._ip_free.get(address, 0.0)
        if free > now and not handle.stopping:
            heapq.heappush(self._heap, _Due(free, next(self._order), handle.turn, handle))
            return True
        if len(self._ip_free) >= ADDRESSES_KEPT:
            self._ip_free = {key: at for key, at in self._ip_free.items() if at > now}
        self._ip_free[address] = max(free, now) + self.ip_interval
        return False

    def _resolve(self, handle: SiteHandle) -> bool:
        """Before a site's first step (and when its address is old): find its address, then put it
        back among the due sites so that the address's turn is respected. True if it was put back."""
        if not self.ip_interval:
            return False
        now = time.monotonic()
        if handle.address != _UNRESOLVED and now - handle.resolved_at < ADDRESS_TTL:
            return False
        try:
            address = self.address_of(handle.crawl)
        except Exception:  # a resolver fault must not cost the site: it goes on, polite on its own
            logger.exception("no address for the site %s", handle.crawl.site)
            address = None
        with self._ready:
            handle.address, handle.resolved_at = address or None, time.monotonic()
            handle.running = False
            handle.woken = False  # it is due at once anyway
            heapq.heappush(self._heap, _Due(time.monotonic(), next(self._order), handle.turn, handle))
            self._ready.notify()
        return True

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
                    now = time.monotonic()
                    wait = due.at - now
                    if wait <= 0:
                        heapq.heappop(self._heap)
                        handle = due.handle
                        if handle.paused and not handle.stopping:
                            continue  # out of the heap: resume() puts it back
                        if self._address_busy(handle, now):
                            continue
                        handle.turn += 1  # any other entry of this site is now stale
                        handle.running = True
                        return handle
                    self._ready.wait(wait)
                else:
                    self._ready.wait(1.0)

    def _work(self) -> None:
        while True:
            handle = self._next_due()
            if handle is None:
                return
            crawl = handle.crawl
            if self._resolve(handle):
                continue
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


def run_sites(
    crawls: list[SiteCrawl],
    *,
    threads: int = 8,
    on_progress=None,
    interval: float = 2.0,
    ip_interval: float = 0.0,
    address_of: Callable[[SiteCrawl], str | None] | None = None,
) -> None:
    """Crawl ``crawls`` to the end on a private engine (``manage.py crawl``, benchmarks, tests).

    Interrupted (Ctrl-C), it stops every site, the fetches under way included, and waits for them
    to end before the interruption goes on up.
    """
    engine = CrawlEngine(threads=threads, ip_interval=ip_interval, address_of=address_of)
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
