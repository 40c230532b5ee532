"""Rendering pages in Chromium: a pool of browsers per crawl process, driven by Playwright.

A page to render is handed to :meth:`BrowserPool.render` with the answer the
crawler already has for it and a ``serve`` function. Every request the browser
makes afterwards (scripts, XHR and ``fetch()``, images, fonts, media, frames)
is intercepted by Playwright's routing and given to ``serve``, which fetches it
through the crawler's own path (address guard, robots, scope, budget, WARC,
dedup, index) and returns the answer, or a reason to refuse it. The browser
itself never reaches a host: it is started with a host resolver that resolves
nothing and a proxy that does not exist, so that whatever could slip past the
routing (a WebSocket, a prefetch, a service worker) fails instead of reaching
the network; service workers are blocked outright.

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harvest.crawler import behaviours

logger = logging.getLogger(__name__)

BEHAVIOURS = behaviours.NAMES
LAUNCH_SECONDS = 30.0  # starting a browser may take this long before the page's own time counts
GRACE_SECONDS = 10.0  # beyond the page's time: closing, the screenshot, a slow answer being written
RELEASE_SECONDS = 60.0  # after a hung page's browser is killed, the most its slot may take to let go
TEXT_LIMIT = 2 * 1024 * 1024  # characters of a rendered page's text kept
LINKS_LIMIT = 10_000  # links read from one rendered page
MARKER = "--webarchive-browser="  # a switch chromium ignores; finds a slot's browser process to kill

# Abort reasons Playwright knows (route.abort), by what the crawler said.
ABORT_CODES = {
    "refused": "blockedbyclient",
    "robots": "blockedbyclient",
    "rejected": "blockedbyclient",
    "budget": "blockedbyclient",
    "navigation": "aborted",
    "dns": "namenotresolved",
    "timeout": "timedout",
    "connect": "connectionrefused",
}
# Headers of the browser's requests that the crawler sets itself, or that make no sense to send on.
NOT_FORWARDED = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "content-length",
        "accept-encoding",  # only what the crawler can decode and store
        "range",  # media is fetched whole, and answered whole
        "if-range",
        "if-none-match",
        "if-modified-since",
        "proxy-connection",
        "proxy-authorization",
        "upgrade",
        "transfer-encoding",
    }
)
# Headers of an answer the browser must not see again: the body it gets is decoded and whole.
NOT_FULFILLED = frozenset(
    {"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"}
)


def chromium_executable() -> str | None:
    """Debian's chromium, or the first ``chromium`` on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


@dataclass(frozen=True)
class RenderOptions:
    """How one page is rendered (from the job's template)."""

    behaviours: tuple[str, ...] = BEHAVIOURS
    page_seconds: float = 30.0
    behaviour_seconds: float = 10.0
    viewport: tuple[int, int] = (1366, 768)
    screenshot: bool = False
    user_agent: str = ""  # appended to Chromium's own, so that sites see a browser and who runs it


@dataclass
class BrowserRequest:
    """A request the browser makes, as the crawler needs it."""

    url: str
    method: str
    headers: dict[str, str]
    body: bytes | None
    resource_type: str
    deadline: float  # time.monotonic() by which the page must be done


@dataclass
class BrowserAnswer:
    """What the browser is given for a request: the status, the headers and the decoded body."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes


# serve() answers a request, or says why it is refused (a key of ABORT_CODES or any text).
Serve = Callable[[BrowserRequest], "BrowserAnswer | str"]


@dataclass
class RenderResult:
    """What rendering one page gave: the links of the rendered DOM, its text, a screenshot, or an error."""

    url: str
    links: list[str] = field(default_factory=list)
    navigations: list[str] = field(default_factory=list)  # where the page tried to go (not followed)
    text: str = ""
    screenshot: bytes | None = None
    behaviours: dict[str, str] = field(default_factory=dict)  # name: how it ended
    requests: int = 0  # requests the browser made besides the page itself
    seconds: float = 0.0
    error: str = ""


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
        size: int = 2,
        executable: str | None = None,
        heap_mb: int = 512,
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
                job.result = RenderResult(job.url, error=f"the browser could not start: {_short(error)}")
                self._stop_browser()
                return
            job.started = time.monotonic()
            job.result = _render(self.browser, job)
            if not self.browser.is_connected():
                self.pool.restarts += 1
                self._stop_browser()
        except Exception as error:  # a fault of ours: the page is unrendered, the slot lives on
            logger.exception("rendering %s failed", job.url)
            job.result = RenderResult(job.url, error=_short(error))
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


class _Visit:
    """One page in one browser context: the routing of its requests and what is in flight."""

    def __init__(self, job: _Job, context, deadline: float):
        self.job = job
        self.context = context
        self.deadline = deadline
        self.page = None
        self.document_served = False
        self.navigations: list[str] = []
        self.requests = 0
        self.inflight = 0
        self.quiet_since = time.monotonic()
        self.crashed = False

    def route(self, route) -> None:
        request = route.request
        job = self.job
        url = request.url
        if request.is_navigation_request() and _is_main_frame(request):
            if not self.document_served and _same_page(url, job.url):
                self.document_served = True
                answer = job.document
                route.fulfill(status=answer.status, headers=_fulfilled_headers(answer), body=answer.body)
                return
            # Leaving the page (a script's redirect, a clicked link): not now; the crawler queues it.
            if len(self.navigations) < LINKS_LIMIT:
                self.navigations.append(url)
            route.abort(ABORT_CODES["navigation"])
            return
        self.requests += 1
        # Everything asked of Playwright is asked before the lock: a Playwright call lets the other
        # requests' handlers run (greenlets, in this same thread), which must not find the lock held.
        browser_request = BrowserRequest(
            url=url,
            method=request.method,
            headers={
                name: value
                for name, value in request.all_headers().items()
                if name.lower() not in NOT_FORWARDED and not name.startswith(":")
            },
            body=request.post_data_buffer if request.method not in ("GET", "HEAD") else None,
            resource_type=request.resource_type,
            deadline=self.deadline,
        )
        answer: BrowserAnswer | str
        with job.lock:
            if job.cancelled or time.monotonic() >= self.deadline:
                answer = "budget"
            else:
                try:
                    answer = job.serve(browser_request)
                except Exception as error:  # the crawler's fault: this request fails, the page goes on
                    logger.exception("serving %s to the browser failed", url)
                    answer = _short(error)
        if isinstance(answer, str):
            route.abort(ABORT_CODES.get(answer, "failed"))
        else:
            route.fulfill(status=answer.status, headers=_fulfilled_headers(answer), body=answer.body)

    def request_started(self, request) -> None:
        self.inflight += 1

    def request_ended(self, request) -> None:
        self.inflight = max(0, self.inflight - 1)
        if self.inflight == 0:
            self.quiet_since = time.monotonic()

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def settle(self, *, quiet: float = 0.3, most: float = 5.0) -> None:
        """Let the page work until no request has been in flight for ``quiet`` seconds (or ``most``).

        The quiet time counts from now at the earliest: what was just done (a scroll, a click) has a
        frame or two to start its requests before the page is taken to be idle.
        """
        start = time.monotonic()
        until = min(start + most, self.deadline)
        while time.monotonic() < until:
            now = time.monotonic()
            if self.inflight == 0 and now - max(self.quiet_since, start) >= quiet:
                return
            self.page.wait_for_timeout(50)


def _render(browser, job: _Job) -> RenderResult:
    """Open the page, run the behaviours, read links, text and screenshot; never raises for the page."""
    from playwright.sync_api import Error as PlaywrightError

    options = job.options
    started = time.monotonic()
    deadline = started + options.page_seconds
    result = RenderResult(job.url)
    width, height = options.viewport
    context = browser.new_context(
        viewport={"width": width, "height": height},
        service_workers="block",
        user_agent=_user_agent(browser, options.user_agent),
        ignore_https_errors=True,
        accept_downloads=False,
    )
    visit = _Visit(job, context, deadline)
    try:
        context.route("**/*", visit.route)
        context.route_web_socket("**/*", lambda socket: socket.close())
        page = visit.page = context.new_page()
        context.on("page", lambda other: other.close() if other is not page else None)  # popups
        page.on("crash", lambda _: setattr(visit, "crashed", True))
        page.on("request", visit.request_started)
        page.on("requestfinished", visit.request_ended)
        page.on("requestfailed", visit.request_ended)
        page.set_default_timeout(max(1.0, options.page_seconds) * 1000)
        try:
            page.goto(job.url, wait_until="load", timeout=max(1.0, visit.remaining()) * 1000)
        except PlaywrightError as error:
            if visit.crashed or not browser.is_connected():
                raise
            result.behaviours["load"] = f"not loaded in time ({_short(error)})"
        visit.settle(most=min(5.0, max(0.0, visit.remaining())))
        for name in behaviours.sequence(options.behaviours):
            seconds = min(options.behaviour_seconds, visit.remaining())
            label = name if name not in result.behaviours else f"{name} again"
            if label == "scroll again" and result.behaviours.get("click", "").endswith("(0 clicked)"):
                continue  # the clicks added nothing to scroll through
            if seconds <= 0:
                result.behaviours[label] = "no time left"
                continue
            result.behaviours[label] = behaviours.run(name, page, visit, seconds)
        result.links = _links(page)
        result.text = str(page.evaluate(behaviours.TEXT) or "")[:TEXT_LIMIT]
        if options.screenshot:
            page.evaluate("window.scrollTo(0, 0)")
            result.screenshot = page.screenshot(type="png", timeout=GRACE_SECONDS * 1000)
    except PlaywrightError as error:
        if visit.crashed:
            result.error = "the page crashed (over its memory budget?)"
        elif not browser.is_connected():
            result.error = "the browser died"
        else:
            result.error = _short(error)
    finally:
        result.navigations = visit.navigations
        result.requests = visit.requests
        result.seconds = round(time.monotonic() - started, 3)
        with contextlib.suppress(PlaywrightError):
            context.close()
    return result


def _links(page) -> list[str]:
    """The links of the rendered page and its frames, at most LINKS_LIMIT."""
    links: list[str] = []
    seen: set[str] = set()
    for frame in page.frames:
        try:
            found = frame.evaluate(behaviours.LINKS, LINKS_LIMIT)
        except Exception:  # a frame gone meanwhile
            logger.debug("links of a frame of %s not read", page.url, exc_info=True)
            continue
        for link in found or []:
            if isinstance(link, str) and link not in seen and len(links) < LINKS_LIMIT:
                seen.add(link)
                links.append(link)
    return links


def _user_agent(browser, suffix: str) -> str:
    # Chromium's own string without "Headless": sites that sniff for a browser get one.
    major = (browser.version or "0").split(".")[0]
    agent = (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{major}.0.0.0 Safari/537.36"
    )
    return f"{agent} {suffix}".strip()


def _fulfilled_headers(answer: BrowserAnswer) -> dict[str, str]:
    headers: dict[str, str] = {}
    for name, value in answer.headers:
        lower = name.lower()
        if lower in NOT_FULFILLED:
            continue
        headers[lower] = f"{headers[lower]}\n{value}" if lower in headers else value
    return headers


def _is_main_frame(request) -> bool:
    try:
        return request.frame.parent_frame is None
    except Exception:  # a request of a popup or a service worker: not the page's own frame
        return False


def _same_page(url: str, wanted: str) -> bool:
    return url.split("#", 1)[0] == wanted.split("#", 1)[0]


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


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
