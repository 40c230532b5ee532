"""Rendering pages in Chromium: a pool of browsers per crawl process, driven by Playwright.

A page to render is handed to :meth:`BrowserPool.render` with the answer the
crawler already has for it and a ``serve`` function that answers the browser's
requests (how a page is opened and routed: :mod:`harvest.crawler.tab`). The
browser itself never reaches a host: it is started with a host resolver that
resolves nothing and a proxy that does not exist, so that whatever could slip
past the routing (a WebSocket, a prefetch) fails instead of reaching the network.

Playwright's sync API is bound to the thread that started it, so each browser
of the pool lives in a thread of its own and renders one page at a time; the
caller (a crawl engine's fetch thread) waits for the result. A page that hangs
(a script spinning forever blocks every call into it) is ended by killing its
browser, which the slot starts again for the next page; a crashed tab (a page
over its memory budget, ``--max-old-space-size``) ends that page only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import secrets
import shutil
import signal
import threading
import time
from pathlib import Path

from harvest.crawler import behaviours, defaults
from harvest.crawler.tab import (
    BrowserAnswer,
    RenderOptions,
    RenderResult,
    Serve,
    render_page,
    short_error,
)

logger = logging.getLogger(__name__)

BEHAVIOURS = behaviours.NAMES
LAUNCH_SECONDS = 30.0  # starting a browser may take this long before the page's own time counts
GRACE_SECONDS = 10.0  # beyond the page's time: closing, the screenshot, a slow answer being written
RELEASE_SECONDS = 60.0  # after a hung page's browser is killed, the most its slot may take to let go
MARKER = "--webarchive-browser="  # a switch chromium ignores; finds a slot's browser process to kill


def chromium_executable() -> str | None:
    """Debian's chromium, or the first ``chromium`` on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


class _Job:
    def __init__(self, url: str, document: BrowserAnswer, serve: Serve, options: RenderOptions):
        self.url = url
        self.document = document
        self.serve = serve
        self.options = options
        self.started: float | None = None  # when a slot's browser began the page
        self.slot: _Slot | None = None
        self.result: RenderResult | None = None
        self.done = threading.Event()
        self.cancelled = False
        self.lock = threading.Lock()  # held while serve() runs for this page

    def cancel(self) -> None:
        """No request of this page reaches the crawler any more (waits for the one being served)."""
        self.cancelled = True
        if self.lock.acquire(timeout=RELEASE_SECONDS):
            self.lock.release()


class BrowserPool:
    """``size`` browsers, each rendering one page at a time; started when first needed."""

    def __init__(
        self,
        *,
        size: int = defaults.BROWSERS,
        executable: str | None = None,
        heap_mb: int = defaults.BROWSER_HEAP_MB,
        grace_seconds: float = GRACE_SECONDS,
        name: str = "browser",
    ):
        if size < 1:
            raise ValueError("a browser pool needs at least one browser")
        self.size = size
        self.executable = executable or chromium_executable()
        self.heap_mb = heap_mb
        self.grace_seconds = grace_seconds  # past a page's time, before its browser is taken to be hung
        self.name = name
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._free = threading.Semaphore(size)  # browsers not promised to a page
        self._in_use = 0
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self._closed = False
        self.restarts = 0  # browsers started again after they died or were killed

    @property
    def in_use(self) -> int:
        """Browsers promised to pages (rendering, or about to)."""
        with self._lock:
            return self._in_use

    def reserve(self) -> bool:
        """Take a browser for a page to come, if one is free (never waits); see :meth:`render`."""
        if not self._free.acquire(blocking=False):
            return False
        with self._lock:
            self._in_use += 1
        return True

    def render(
        self,
        url: str,
        document: BrowserAnswer,
        serve: Serve,
        options: RenderOptions,
        *,
        reserved: bool = False,
    ) -> RenderResult:
        """Render ``url`` (answered with ``document``) in a browser of the pool; waits for the result.

        ``reserved``: the caller holds a browser from :meth:`reserve` (given back here); otherwise
        this waits for one.
        """
        if not reserved:
            self._free.acquire()
            with self._lock:
                self._in_use += 1
        try:
            job = _Job(url, document, serve, options)
            with self._lock:
                if self._closed:
                    return RenderResult(url, error="the browser pool is closed")
                while len(self._slots) < self.size:
                    slot = _Slot(self, len(self._slots))
                    self._slots.append(slot)
                    slot.start()
            self._jobs.put(job)
            return self._wait(job)
        finally:
            with self._lock:
                self._in_use -= 1
            self._free.release()

    def close(self) -> None:
        """Stop every browser (pages being rendered end with an error)."""
        with self._lock:
            self._closed = True
            slots = list(self._slots)
        for _ in slots:
            self._jobs.put(None)
        for slot in slots:
            slot.join(timeout=GRACE_SECONDS)
            if slot.is_alive():
                slot.kill_browser()

    def _wait(self, job: _Job) -> RenderResult:
        options = job.options
        while not job.done.wait(0.2):
            started = job.started
            if started is None:
                continue  # still queued, or its browser starting (bounded by LAUNCH_SECONDS there)
            if time.monotonic() < started + options.page_seconds + self.grace_seconds:
                continue
            slot = job.slot
            logger.warning("page %s hung past %ss: its browser is killed", job.url, options.page_seconds)
            if slot is not None:
                slot.kill_browser()
            if not job.done.wait(RELEASE_SECONDS):
                job.cancel()
                if slot is not None:
                    slot.abandon()
                return RenderResult(job.url, error=f"page hung past {options.page_seconds:g} s")
            result = job.result or RenderResult(job.url)
            result.error = f"page hung past {options.page_seconds:g} s"
            return result
        return job.result or RenderResult(job.url, error="no result")


class _Slot(threading.Thread):
    """One browser, in the thread that drives it."""

    def __init__(self, pool: BrowserPool, number: int):
        super().__init__(name=f"{pool.name}-{number}", daemon=True)
        self.pool = pool
        self.number = number
        self.token = secrets.token_hex(8)
        self.playwright = None
        self.browser = None
        self.abandoned = False

    def run(self) -> None:
        try:
            while not self.abandoned:
                job = self.pool._jobs.get()
                if job is None:
                    break
                self._take(job)
        finally:
            self._stop_browser()

    def abandon(self) -> None:
        """This slot is stuck: a new one takes its place, it leaves after its page."""
        self.abandoned = True
        with self.pool._lock:
            if self in self.pool._slots and not self.pool._closed:
                index = self.pool._slots.index(self)
                replacement = _Slot(self.pool, self.number)
                self.pool._slots[index] = replacement
                replacement.start()

    def kill_browser(self) -> None:
        """SIGKILL this slot's chromium (the browser process; its tabs go with it)."""
        for pid in _processes_with(MARKER + self.token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def _take(self, job: _Job) -> None:
        job.slot = self
        try:
            if job.cancelled:
                job.result = RenderResult(job.url, error="cancelled")
                return
            try:
                self._ensure_browser()
            except Exception as error:  # no chromium, or it would not start: the page stays unrendered
                job.result = RenderResult(job.url, error=f"the browser could not start: {short_error(error)}")
                self._stop_browser()
                return
            job.started = time.monotonic()
            job.result = render_page(self.browser, job)
            if not self.browser.is_connected():
                self.pool.restarts += 1
                self._stop_browser()
        except Exception as error:  # a fault of ours: the page is unrendered, the slot lives on
            logger.exception("rendering %s failed", job.url)
            job.result = RenderResult(job.url, error=short_error(error))
            self._stop_browser()
        finally:
            job.done.set()

    def _ensure_browser(self) -> None:
        if self.browser is not None and self.browser.is_connected():
            return
        self._stop_browser()
        if self.pool.executable is None:
            raise RuntimeError("no chromium found (set HARVEST_BROWSER_EXECUTABLE)")
        from playwright.sync_api import sync_playwright  # only crawl workers that render load it

        self.playwright = sync_playwright().start()
        self.browser = self.playwright.chromium.launch(
            executable_path=self.pool.executable,
            headless=True,
            args=chromium_args(self.pool.heap_mb, MARKER + self.token),
            timeout=LAUNCH_SECONDS * 1000,
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
        )

    def _stop_browser(self) -> None:
        browser, playwright = self.browser, self.playwright
        self.browser = self.playwright = None
        for stop in (getattr(browser, "close", None), getattr(playwright, "stop", None)):
            if stop is None:
                continue
            try:
                stop()
            except Exception:  # already dead: nothing to close
                logger.debug("closing a dead browser", exc_info=True)
        self.kill_browser()


# Chromium calls home (updates, safe browsing, sync) without these; on a closed network it would only fail.
QUIET_SWITCHES = (
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_args(heap_mb: int, marker: str) -> list[str]:
    """Chromium's switches: no network of its own, no calling home, a memory budget per page."""
    args = [
        *QUIET_SWITCHES,
        "--disable-default-apps",
        "--disable-extensions",
        "--disable-dev-shm-usage",
        "--mute-audio",
        "--autoplay-policy=no-user-gesture-required",
        # Nothing resolves and every connection would go to a proxy that is not there: the only way
        # out is the routing, hence the crawler's guarded fetching.
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        f"--js-flags=--max-old-space-size={int(heap_mb)}",
        marker,
    ]
    if os.geteuid() == 0:  # chromium refuses to run as root with its sandbox
        args.insert(0, "--no-sandbox")
    return args


def _processes_with(marker: str) -> list[int]:
    """The ids of the processes whose command line holds ``marker`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in arguments:
            found.append(int(entry.name))
    return found
