"""One page in a browser tab: the routing of its requests, the behaviours, what is read from it.

A page is opened in a new browser context answered with what the crawler already
has for it. Every request the browser makes afterwards (scripts, XHR and
``fetch()``, images, fonts, media, frames) is intercepted by Playwright's routing
and given to ``serve``, which fetches it through the crawler's own path (address
guard, robots, scope, budget, WARC, dedup, index) and returns the answer, or a
reason to refuse it. Service workers are blocked, WebSockets closed, pop-ups
closed; a navigation of the page itself is refused and remembered. The browser
process and its pool are :mod:`harvest.crawler.browser`'s.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harvest.crawler import behaviours, defaults

logger = logging.getLogger(__name__)

ALL_BEHAVIOURS = behaviours.NAMES

TEXT_LIMIT = 2 * 1024 * 1024  # characters of a rendered page's text kept
LINKS_LIMIT = 10_000  # links read from one rendered page
SCREENSHOT_SECONDS = 10.0  # the most a screenshot may take

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


@dataclass(frozen=True)
class RenderOptions:
    """How one page is rendered (from the job's template)."""

    behaviours: tuple[str, ...] = ALL_BEHAVIOURS
    page_seconds: float = defaults.RENDER_PAGE_SECONDS
    behaviour_seconds: float = defaults.RENDER_BEHAVIOUR_SECONDS
    viewport: tuple[int, int] = defaults.VIEWPORT
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


class _Visit:
    """One page in one browser context: the routing of its requests and what is in flight."""

    def __init__(self, job, context, deadline: float):
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
                    answer = short_error(error)
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


def render_page(browser, job) -> RenderResult:
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
            result.behaviours["load"] = f"not loaded in time ({short_error(error)})"
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
            result.screenshot = page.screenshot(type="png", timeout=SCREENSHOT_SECONDS * 1000)
    except PlaywrightError as error:
        if visit.crashed:
            result.error = "the page crashed (over its memory budget?)"
        elif not browser.is_connected():
            result.error = "the browser died"
        else:
            result.error = short_error(error)
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


def short_error(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:200]
