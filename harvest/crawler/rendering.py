"""The browser side of a site crawl: a page rendered in Chromium, every request of it through the crawler.

After the site crawl has fetched and stored a page the template says to
render, :class:`PageRender` opens it in a browser of the process's pool
(``browser.BrowserPool``), answering the page itself with what was just
fetched. Each request the browser then makes is served here, on the same
path as the plain crawler's: the trap and reject rules (requisites are
fetched outside the scope, as always), robots.txt, the budget and the time
limit, the address guard (inside the fetch session), the WARC writer with its
request/response pairs and revisits, the crawl log and the capture index.
A URL the site crawl already holds is answered from a small cache of its
answers, without asking the site again.

Politeness: the browser's requests go one at a time on the site's
connections, never in parallel, spaced by the site's request rate and its
robots.txt Crawl-delay when it has them; after the page, the site rests for
the politeness delay computed over the whole render, as after one fetch.

What the rendered page gave goes back into the crawl: the links of its DOM
(including those made by script) and where it tried to navigate, as
navigation links; its text as a ``resource`` record ``urn:text:<url>``, and
for a seed a screenshot as ``urn:screenshot:<url>`` (image/png).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict

from harvest.crawler.crawllog import NO_ANSWER
from harvest.crawler.fetch import Exchange
from harvest.crawler.frontier import Candidate
from harvest.crawler.outcomes import FetchError
from harvest.crawler.tab import BrowserAnswer, BrowserRequest, RenderOptions, RenderResult
from harvest.crawler.urls import canonicalize, fingerprint

logger = logging.getLogger(__name__)

RENDER_OFF, RENDER_SEEDS, RENDER_ALL = "off", "seeds", "all"
RENDERED_TYPES = ("text/html", "application/xhtml+xml")
CACHE_ITEM_BYTES = 2 * 1024 * 1024  # answers larger than this are asked again when a page needs them
ANSWER_BYTES = 100 * 1024 * 1024  # the most of one decoded body handed to the browser
SCREENSHOT_PREFIX = "urn:screenshot:"
SCREENSHOT_TYPE = "image/png"
TEXT_PREFIX = "urn:text:"
RENDER_ERRORS_KEPT = 20
# What the browser is told of a request the crawler could not fetch (a key of tab.ABORT_CODES), by
# the fetch's error code; any other error is "failed".
ABORT_REASONS = {
    FetchError.REFUSED: "refused",
    FetchError.DNS: "dns",
    FetchError.CONNECT_TIMEOUT: "timeout",
    FetchError.TIMEOUT: "timeout",
    FetchError.CONNECTION_REFUSED: "connect",
    FetchError.CONNECT: "connect",
    FetchError.RESET: "connect",
}


class AnswerCache:
    """The decoded answers a site crawl already holds, by URL, bounded by their total size."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.size = 0
        self._answers: OrderedDict[str, BrowserAnswer] = OrderedDict()

    def get(self, url: str) -> BrowserAnswer | None:
        answer = self._answers.get(url)
        if answer is not None:
            self._answers.move_to_end(url)
        return answer

    def put(self, url: str, answer: BrowserAnswer) -> None:
        if len(answer.body) > min(CACHE_ITEM_BYTES, self.max_bytes) or url in self._answers:
            return
        self._answers[url] = answer
        self.size += len(answer.body)
        while self.size > self.max_bytes:
            _, dropped = self._answers.popitem(last=False)
            self.size -= len(dropped.body)


def answer_of(exchange: Exchange) -> BrowserAnswer:
    """What the browser is given for a stored exchange: its status, headers and decoded body."""
    return BrowserAnswer(
        status=exchange.status,
        headers=list(exchange.headers),
        body=exchange.decoded_body(ANSWER_BYTES) if exchange.body_length else b"",
    )


def wants_render(crawl, candidate: Candidate, exchange: Exchange) -> bool:
    """Whether the template asks for this page to be rendered (a whole HTML page in scope)."""
    settings = crawl.settings
    if crawl.browsers is None or settings.render == RENDER_OFF or crawl.stop_reason:
        return False
    if exchange.error is not None or exchange.status != 200 or exchange.truncated:
        return False
    if exchange.content_type not in RENDERED_TYPES or not candidate.follow:
        return False
    return settings.render == RENDER_ALL or candidate.is_seed


class PageRender:
    """Rendering one page of a site crawl; :meth:`run` returns the seconds spent fetching for it.

    ``document`` is what the site crawl fetched for the page (``answer_of``); ``reserved`` says the
    site crawl already holds a browser of the pool (``BrowserPool.reserve``).
    """

    def __init__(self, crawl, candidate: Candidate, document: BrowserAnswer, *, reserved: bool = False):
        self.crawl = crawl
        self.page = candidate
        self.document = document
        self.reserved = reserved
        self.fetch_seconds = 0.0
        self._last_fetch = 0.0

    def run(self) -> float:
        crawl = self.crawl
        settings = crawl.settings
        seed = self.page.is_seed
        document = self.document
        crawl.answers.put(self.page.url, document)
        options = RenderOptions(
            behaviours=tuple(settings.behaviours),
            page_seconds=settings.render_page_seconds,
            behaviour_seconds=settings.render_behaviour_seconds,
            viewport=tuple(settings.viewport),
            screenshot=seed,
            user_agent=crawl.session.fetcher.user_agent,
        )
        result = crawl.browsers.render(self.page.url, document, self.serve, options, reserved=self.reserved)
        self._keep(result, seed=seed)
        return self.fetch_seconds

    # -- the browser's requests ------------------------------------------------------------------

    def serve(self, request: BrowserRequest) -> BrowserAnswer | str:
        """Answer one request of the browser through the crawler (called in the browser's thread)."""
        crawl = self.crawl
        url = canonicalize(request.url)
        if url is None:
            return "rejected"
        repeatable = request.method == "GET"
        if repeatable:
            cached = crawl.answers.get(url)
            if cached is not None:
                return cached
        if crawl._stop_reason():
            return "budget"
        candidate = Candidate(url, self.page.hop_path + "E", self.page.url, False)
        if crawl.scope.is_trap_or_rejected(url) is not None:
            crawl.trapped += 1
            return "rejected"
        if crawl.settings.obey_robots and not crawl.robots.known(url):
            self._pace(url, request.deadline)
            crawl._fetch_robots(crawl.robots.robots_url(url), via=self.page.url)
            self._last_fetch = time.monotonic()
        if crawl.settings.obey_robots and not crawl.robots.allowed(url):
            crawl._log_no_answer(candidate, NO_ANSWER["robots"], ["robots:disallowed", "browser"])
            return "robots"
        candidate.follow = self.page.follow and crawl.scope.decide(url, candidate.hop_path) is None
        self._pace(url, request.deadline)
        exchange = crawl._fetch(
            request.url,
            request.headers,
            method=request.method,
            body=request.body,
            deadline=request.deadline,
        )
        self._last_fetch = time.monotonic()
        self.fetch_seconds += exchange.duration
        try:
            crawl._store(candidate, exchange, ["browser"])
            if repeatable:
                crawl.frontier.mark_seen(url)
                crawl.rendered_urls.add(fingerprint(url))
            if exchange.error is not None:
                return ABORT_REASONS.get(exchange.error_code, "failed")
            if candidate.follow:
                crawl._queue_links(candidate, exchange)  # what the plain crawler would have found in it
            answer = answer_of(exchange)
            if repeatable and exchange.status == 200 and not exchange.truncated:
                crawl.answers.put(url, answer)
            return answer
        finally:
            exchange.close()

    def _pace(self, url: str, deadline: float) -> None:
        """Space the page's requests by the site's request rate and Crawl-delay (not its delay factor)."""
        settings = self.crawl.settings
        gap = 60.0 / settings.max_request_rate if settings.max_request_rate > 0 else 0.0
        if settings.obey_robots:
            gap = max(gap, self.crawl.robots.crawl_delay(url))
        wait = min(self._last_fetch + gap - time.monotonic(), deadline - time.monotonic())
        if wait > 0:
            time.sleep(wait)

    # -- what the page gave -----------------------------------------------------------------------

    def _keep(self, result: RenderResult, *, seed: bool) -> None:
        crawl = self.crawl
        with crawl._lock:
            crawl.pages_rendered += 1
            if result.error:
                crawl.render_failures += 1
                if len(crawl.render_errors) < RENDER_ERRORS_KEPT:
                    crawl.render_errors.append({"url": self.page.url, "error": result.error})
        if result.error:
            logger.warning("rendering %s: %s", self.page.url, result.error)
        logger.debug(
            "rendered %s in %.1f s, %d requests: %s",
            self.page.url,
            result.seconds,
            result.requests,
            result.behaviours,
        )
        for link in [*result.links, *result.navigations]:
            crawl._consider(self.page, link, "L")
        if crawl.writer is None:
            return
        if seed and result.screenshot:
            crawl.writer.write_resource(
                target_uri=SCREENSHOT_PREFIX + self.page.url,
                content_type="image/png",
                payload=result.screenshot,
            )
        if result.text:
            crawl.writer.write_resource(
                target_uri=TEXT_PREFIX + self.page.url,
                content_type="text/plain; charset=utf-8",
                payload=result.text.encode("utf-8", "replace"),
            )
