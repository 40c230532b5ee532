"""One site crawl: the frontier, the scope, robots.txt and politeness of one website, one URL per step.

A :class:`SiteCrawl` does no waiting of its own. Each call of :meth:`step`
fetches one URL (robots.txt first, for a host not seen yet), queues the links
found, hands the exchange to the WARC writer and the line to the crawl log,
and says when the site may be asked again: the politeness delay is served by
the engine (``engine.CrawlEngine``), which meanwhile uses the thread for other
sites. The writer's thread writes the records and the log lines in the order
handed while the next request goes out; the crawl ends once they are written.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from harvest.crawler import defaults
from harvest.crawler.crawllog import ERROR_STATUS, NO_ANSWER, error_annotation, log_line
from harvest.crawler.dedup import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    DedupIndex,
    Original,
    conditional_headers,
    freshened_headers,
    same_payload,
    stored_exchange,
)
from harvest.crawler.extractors import Document, ExtractOptions, extract
from harvest.crawler.extractors.html import HTML_TYPES
from harvest.crawler.extractors.streams import MANIFEST_TYPES, is_manifest
from harvest.crawler.fetch import Exchange, FetchSession
from harvest.crawler.frontier import Candidate, Frontier
from harvest.crawler.outcomes import (  # the stop reasons, which harvest.worker imports from here
    BYTE_LIMIT,
    COMPLETED,
    FAILED,
    OBJECT_LIMIT,
    OPERATOR,
    TIME_LIMIT,
    CrawlError,
    FetchError,
)
from harvest.crawler.rendering import RENDER_OFF, AnswerCache, PageRender, answer_of, wants_render
from harvest.crawler.robots import RobotsCache
from harvest.crawler.scope import Scope
from harvest.crawler.tab import ALL_BEHAVIOURS, BrowserAnswer
from harvest.crawler.traps import TrapGuard
from harvest.crawler.urls import canonicalize, fingerprint, host_of
from harvest.crawler.warc import Writes

logger = logging.getLogger(__name__)

# Documents whose links are extracted; everything else is stored and not read.
EXTRACTED_TYPES = (
    "",  # untyped: the extractors sniff
    "text/html",
    "image/svg+xml",
    "application/json",
    "application/manifest+json",
    "application/xhtml+xml",
    "text/css",
    "application/javascript",
    "text/javascript",
    "application/x-javascript",
    "application/xml",
    "text/xml",
    "text/plain",
    "application/x-gzip",
    "application/gzip",
    *sorted(MANIFEST_TYPES),  # HLS playlists and DASH manifests (and by name, see _queue_links)
)
NAVIGATION_HOPS = frozenset("LM")
REQUISITE_CHAIN = 5  # components of components outside the scope, at most this deep (CSS imports…)
RENDER_WAIT = 0.2  # seconds before a site whose page waits for a browser asks again
QUEUES_EVERY = 2.0  # seconds between two readings of a site's biggest queues
EXTERNAL_LINKS_KEPT = 10_000  # distinct external URLs counted per site; beyond, only the total
EXTERNAL_SOURCES_KEPT = 3  # pages that link to each external URL kept (discovered sites show them)
# Why a fetch was cut short by the crawl rather than by the server or the fetch caps (Exchange.truncated).
STOPPED = "stopped"
DEADLINE = "deadline"


@dataclass
class SiteSettings:
    """Everything one site crawl is told: its seeds, scope, politeness and budget (plain values)."""

    seeds: list[str]
    domain: str | None = None
    depth_policy: str = defaults.DEPTH_POLICY
    clicks: int = defaults.CLICKS
    max_hops: int = defaults.MAX_HOPS
    accept_rules: list[str] = field(default_factory=list)
    reject_rules: list[str] = field(default_factory=list)
    crawler_traps: list[str] = field(default_factory=list)
    obey_robots: bool = True
    min_delay: float = defaults.MIN_DELAY
    max_delay: float = defaults.MAX_DELAY
    delay_factor: float = defaults.DELAY_FACTOR
    max_request_rate: int = 0  # requests per minute, 0 = no limit of its own
    extract_javascript: bool = True
    extract_sitemaps: bool = True
    extract_forms: bool = False
    stream_variants: str = defaults.STREAM_VARIANTS  # "all" or "best" (extractors.streams)
    max_objects: int = -1  # -1: no limit
    max_bytes: int = -1
    deadline: float | None = None  # time.time() after which the crawl stops (time limit)
    max_path_repeats: int = defaults.TRAP_PATH_REPEATS
    max_per_directory: int = defaults.TRAP_PER_DIRECTORY
    max_per_script: int = defaults.TRAP_PER_SCRIPT
    calendar_years_back: int = defaults.TRAP_CALENDAR_YEARS_BACK  # dates further back, or ahead, are traps
    calendar_years_ahead: int = defaults.TRAP_CALENDAR_YEARS_AHEAD
    dedup_verify: bool = False  # confirm a digest match byte for byte against the stored original
    # Browser capture (harvest.crawler.rendering): "off", "seeds" or "all" (every HTML page in scope).
    render: str = RENDER_OFF
    behaviours: tuple[str, ...] = ALL_BEHAVIOURS
    render_page_seconds: float = defaults.RENDER_PAGE_SECONDS
    render_behaviour_seconds: float = defaults.RENDER_BEHAVIOUR_SECONDS
    viewport: tuple[int, int] = defaults.VIEWPORT
    render_cache_bytes: int = defaults.RENDER_CACHE_BYTES  # answers kept to give the browser again
    # What one hostile site can make the worker hold (docs/harvesting.md, "Limits a hostile site meets").
    max_queued_urls: int = defaults.MAX_QUEUED_URLS
    extract_max_bytes: int = defaults.EXTRACT_MAX_BYTES
    extract_max_html_bytes: int = defaults.EXTRACT_MAX_HTML_BYTES
    extract_max_links: int = defaults.EXTRACT_MAX_LINKS
    # News front pages (docs/curation.md): the pages one click from a seed that earlier runs captured
    # (fingerprints, see urls.fingerprint) are not fetched again; those fetched are listed in the report.
    news: bool = False
    known_pages: frozenset[int] = field(default_factory=frozenset)

    @property
    def site(self) -> str:
        return self.domain or (host_of(self.seeds[0]) if self.seeds else "")


@dataclass
class SiteProgress:
    """A snapshot of a site crawl, for the progress store."""

    urls_done: int
    urls_queued: int
    bytes: int
    errors: int
    rate: float  # URLs per second over the last half minute
    current_url: str
    stop_reason: str  # "" while running
    error: str
    duplicates: int = 0  # revisits written instead of responses
    duplicate_bytes: int = 0  # payload bytes they did not store again
    # The hosts and path prefixes with the most URLs queued (Frontier.biggest_queues), a few seconds old.
    biggest_queues: dict = field(default_factory=dict)


class SiteCrawl:
    """The crawl of one website, advanced one URL at a time by :meth:`step`."""

    def __init__(
        self,
        settings: SiteSettings,
        *,
        session: FetchSession,
        writer=None,
        crawl_log=None,
        dedup: DedupIndex | None = None,
        browsers=None,
    ):
        self.settings = settings
        # A browser.BrowserPool to render pages in, or None (then nothing is rendered, whatever the settings).
        self.browsers = browsers if settings.render != RENDER_OFF else None
        self.session = session
        self.writer = writer  # a warc.WarcWriter, or None to fetch without keeping anything (tests)
        self.crawl_log = crawl_log  # a crawllog.CrawlLog, or None
        self.dedup = dedup if writer is not None else None  # earlier captures: revisits, conditional requests
        # Records (and log lines) written by the writer's thread, unless a revisit needs the capture
        # before it written (dedup) or a browser the body after it (rendering): then in the step.
        self._hands_off = writer is not None and self.dedup is None and self.browsers is None
        self._writes = Writes()  # what this crawl handed to the writer's thread
        self.scope = Scope(
            seeds=[],
            policy=settings.depth_policy,
            clicks=settings.clicks,
            max_hops=settings.max_hops,
            accept=settings.accept_rules,
            reject=settings.reject_rules,
            traps=settings.crawler_traps,
            domain=settings.domain,
        )
        self.traps = TrapGuard(
            max_path_repeats=settings.max_path_repeats,
            max_per_directory=settings.max_per_directory,
            max_per_script=settings.max_per_script,
            calendar_years=(settings.calendar_years_back, settings.calendar_years_ahead),
        )
        self.options = ExtractOptions(
            javascript=settings.extract_javascript,
            forms=settings.extract_forms,
            sitemaps=settings.extract_sitemaps,
            max_links=settings.extract_max_links,
            max_bytes=settings.extract_max_bytes,
            stream_variants=settings.stream_variants,
        )
        self.robots = RobotsCache(session.fetcher.user_agent)
        self.frontier = Frontier()
        self.waiting: deque[Candidate] = deque()  # held back until their host's robots.txt is known
        self.left_queued = 0  # what was still queued when the crawl ended (stopped, or at a limit)
        self.site = settings.site
        self.seed_hosts: set[str] = set()
        self.urls_done = 0  # URLs with a response stored
        self.bytes = 0
        self.errors = 0  # URLs without a response, and 4xx/5xx answers
        self.status_counts: Counter[int] = Counter()
        self.status_bytes: Counter[int] = Counter()
        self.mime_counts: Counter[str] = Counter()  # stored answers by MIME type, for the statistics
        self.mime_bytes: Counter[str] = Counter()
        self.external_links: Counter[str] = Counter()
        self.external_sources: dict[str, list[str]] = {}  # the first pages linking to each
        self.external_total = 0
        self.trapped = 0
        self.queue_full = 0  # links not queued because the frontier was full
        self.links_skipped = 0  # links beyond a document's cap
        self.documents_cut = 0  # documents read for links only up to the byte cap
        self.duplicates = 0  # revisits written instead of responses
        self.duplicate_bytes = 0  # payload bytes they did not store again
        self.collisions = 0  # digest matches whose bytes differed (stored in full)
        self.pages_rendered = 0
        self.render_failures = 0  # pages whose rendering ended in an error (stored all the same)
        self.render_errors: list[dict] = []  # the first few of them, for the report
        self.rendered_urls: set[int] = set()  # fingerprints of what the browser fetched (not asked again)
        self.answers = AnswerCache(settings.render_cache_bytes if self.browsers is not None else 0)
        # A page fetched and waiting for a free browser: (candidate, answer). Its site waits, no thread does.
        self._waiting_render: tuple[Candidate, BrowserAnswer] | None = None
        self.current_url = ""
        self.stop_reason = ""
        self.error = ""
        self.error_code: CrawlError | None = None  # why it failed, for machines; ``error`` says it in words
        self.broken = False  # ended by a fault of the crawler itself, not of the website
        self.started = time.time()
        self._stop_requested = ""
        self._samples: deque[tuple[float, int]] = deque(maxlen=64)
        self._lock = threading.Lock()  # progress() is read from another thread
        # Steering (rules added while it runs): kept here by the watcher, applied by the fetch thread.
        self._new_rules: list[tuple[list[str], list[str]]] = []
        self.steered_out = 0  # queued URLs dropped by rules added while it ran
        self._queues: dict = {}
        self._queues_at = 0.0
        self.new_pages: list[str] = []  # news: the pages captured that no earlier run had
        self.known_skipped = 0  # news: links to pages earlier runs captured, not fetched again
        for url in settings.seeds:
            self.add_seed(url)
        if not len(self.frontier):
            self.error_code, self.error = CrawlError.NO_VALID_SEED, "No valid seed URL."

    # -- what the engine calls -------------------------------------------------------------

    def request_stop(self, reason: str = OPERATOR) -> None:
        """Ask the crawl to end at its next step, with ``reason`` (operator, or time limit).

        A fetch under way is cut at once (its record kept, marked truncated "stopped").
        """
        self._stop_requested = reason
        self.session.interrupt()

    def overdue(self) -> bool:
        """Whether the time limit has passed and no stop has been asked for yet.

        Whoever watches the crawl then stops it (``SiteHandle.stop_if_overdue``): the fetch looks
        at the deadline between reads of the body, but a server sending its headers a byte at a
        time is only cut from outside.
        """
        deadline = self.settings.deadline
        return deadline is not None and not self._stop_requested and time.time() >= deadline

    def step(self) -> float | None:
        """Fetch one URL. Returns the delay (s) before the next step, or None when the crawl has ended."""
        self._writes.check()  # a record handed earlier could not be written: the crawl fails (fail())
        self.apply_steering()
        reason = self._stop_reason()
        if reason:
            self._finish(reason)
            return None
        if self._waiting_render is not None:
            return self._render_waiting()
        candidate = self._next_candidate()
        if candidate is None:
            if not self.urls_done and self.errors:
                if self.error_code is None:
                    self.error_code, self.error = CrawlError.NO_SEED_FETCHED, "No seed could be fetched."
                self._finish(FAILED)
            else:
                self._finish(COMPLETED)
            return None
        robots_url = self.robots.robots_url(candidate.url)
        if (self.settings.obey_robots or candidate.hop_path == "") and not self.robots.known(candidate.url):
            # robots.txt first: its rules decide this URL, its Sitemap lines feed the crawl.
            self.waiting.appendleft(candidate)
            return self._fetch_robots(robots_url, via=candidate.url)
        if self.settings.obey_robots and not self.robots.allowed(candidate.url):
            self._log_no_answer(candidate, NO_ANSWER["robots"], ["robots:disallowed"])
            return 0.0
        previous, stored = self._previous_capture(candidate.url)
        exchange = self._fetch(candidate.url, conditional_headers(stored) if stored is not None else None)
        busy = exchange.duration  # the politeness delay follows from the time the site took to answer
        handed = False
        try:
            if stored is not None and exchange.error is None and exchange.status == 304:
                # as deep as the first time: the stored page's links
                notes = self._queue_links(candidate, stored)
                self._store_not_modified(candidate, exchange, previous, stored, notes)
                if wants_render(self, candidate, stored):
                    busy += self._render(candidate, stored)
            else:
                notes = self._queue_links(candidate, exchange) if exchange.error is None else []
                handed = self._store(candidate, exchange, notes, stored=stored)
                if self.settings.news and exchange.error is None:
                    self._note_new_page(candidate, exchange.status)
                if not handed and wants_render(self, candidate, exchange):
                    busy += self._render(candidate, exchange)
        finally:
            if not handed:
                exchange.close()
            if stored is not None:
                stored.close()
        self._snapshot_queues()
        return self._delay(candidate.url, busy)

    def _render(self, candidate: Candidate, exchange: Exchange) -> float:
        """Render the page now if a browser is free, else keep it for a later step (the thread goes)."""
        document = answer_of(exchange)
        if self.browsers.reserve():
            return PageRender(self, candidate, document, reserved=True).run()
        self._waiting_render = (candidate, document)
        return 0.0

    def _render_waiting(self) -> float:
        """The page kept for a browser: rendered if one is free now; else asked again shortly."""
        if not self.browsers.reserve():
            return RENDER_WAIT
        candidate, document = self._waiting_render
        self._waiting_render = None
        return self._delay(candidate.url, PageRender(self, candidate, document, reserved=True).run())

    # -- steering (what an engineer changes while the crawl runs) ------------------------------

    def add_rules(self, *, reject: list[str] = (), traps: list[str] = ()) -> None:
        """Reject and trap rules that apply from the next step on, to new links and to what is queued
        (called from any thread; the fetch thread applies them, see :meth:`apply_steering`)."""
        with self._lock:
            self._new_rules.append((list(reject), list(traps)))

    def apply_steering(self) -> None:
        """Apply the rules added since the last step: queued URLs they match are dropped (they stay
        seen, so never queued again). Called by the thread that steps the crawl, or while none does."""
        with self._lock:
            pending, self._new_rules = self._new_rules, []
        if not pending:
            return
        for reject, traps in pending:
            self.scope.add_rules(reject=reject, traps=traps)
        blocked = self.scope.is_trap_or_rejected
        dropped = self.frontier.drop(lambda url: blocked(url) is not None)
        kept = [candidate for candidate in self.waiting if blocked(candidate.url) is None]
        dropped += len(self.waiting) - len(kept)
        self.waiting = deque(kept)
        with self._lock:
            self.steered_out += dropped
        self._snapshot_queues(force=True)

    def set_budget(self, *, max_objects: int, max_bytes: int) -> str:
        """Change the site's budget while it runs; returns the limit it has reached ("" if none)."""
        self.settings.max_objects = max_objects
        self.settings.max_bytes = max_bytes
        if 0 <= max_objects <= self.urls_done:
            return OBJECT_LIMIT
        if 0 <= max_bytes <= self.bytes:
            return BYTE_LIMIT
        return ""

    def _snapshot_queues(self, *, force: bool = False) -> None:
        """Read the biggest queues every QUEUES_EVERY seconds at most (in the thread that steps)."""
        now = time.monotonic()
        if force or now - self._queues_at >= QUEUES_EVERY:
            queues = self.frontier.biggest_queues()
            with self._lock:
                self._queues, self._queues_at = queues, now

    def fail(self, error: BaseException) -> None:
        """End the crawl because something in the crawler itself broke."""
        self.error_code, self.error = CrawlError.BROKEN, f"{type(error).__name__}: {error}"
        self.broken = True
        self._finish(FAILED)

    def progress(self) -> SiteProgress:
        now = time.time()
        with self._lock:
            self._samples.append((now, self.urls_done))
            while len(self._samples) > 2 and now - self._samples[0][0] > 30:
                self._samples.popleft()
            first_time, first_done = self._samples[0]
            span = now - first_time
            rate = (self.urls_done - first_done) / span if span > 0 else 0.0
            return SiteProgress(
                urls_done=self.urls_done,
                urls_queued=len(self.frontier) + len(self.waiting) + self.left_queued,
                bytes=self.bytes,
                errors=self.errors,
                rate=round(rate, 2),
                current_url=self.current_url,
                stop_reason=self.stop_reason,
                error=self.error,
                duplicates=self.duplicates,
                duplicate_bytes=self.duplicate_bytes,
                biggest_queues=self._queues if not self.stop_reason else {},
            )

    def report(self) -> dict:
        """The per-domain report kept at the end of the crawl."""
        return {
            "site": self.site,
            "seeds": self.settings.seeds,
            "stop_reason": self.stop_reason,
            "error": self.error,
            "error_code": self.error_code or "",
            "urls": self.urls_done,
            "bytes": self.bytes,
            "errors": self.errors,
            "trapped": self.trapped,
            "steered_out": self.steered_out,
            "queue_full": self.queue_full,
            "links_skipped": self.links_skipped,
            "documents_cut": self.documents_cut,
            "duplicates": self.duplicates,
            "duplicate_bytes": self.duplicate_bytes,
            "collisions": self.collisions,
            "status_codes": {str(code): count for code, count in sorted(self.status_counts.items())},
            "status_bytes": {str(code): size for code, size in sorted(self.status_bytes.items())},
            "mime_types": {
                mime: [count, self.mime_bytes[mime]] for mime, count in sorted(self.mime_counts.items())
            },
            "external_links": self.external_total,
            "seconds": round(time.time() - self.started, 3),
            **(
                {"new_pages": self.new_pages, "known_pages_skipped": self.known_skipped}
                if self.settings.news
                else {}
            ),
            # Saved rules RE2 cannot run (from before patterns were checked with it): not applied.
            **({"skipped_rules": self.scope.skipped_rules} if self.scope.skipped_rules else {}),
            **(
                {
                    "pages_rendered": self.pages_rendered,
                    "render_failures": self.render_failures,
                    "render_errors": self.render_errors,
                }
                if self.browsers is not None
                else {}
            ),
        }

    # -- seeds, scope and links ------------------------------------------------------------

    def add_seed(self, url: str) -> None:
        canonical = canonicalize(url)
        if canonical is None:
            return
        self.scope.add_seed(canonical)
        self.seed_hosts.add(host_of(canonical))
        # The seed is fetched whatever the rules say (it is a requisite of the crawl itself).
        self.frontier.add_component(Candidate(canonical, "", "", True))
        if self.settings.extract_sitemaps:
            sitemap = RobotsCache.key(canonical) + "/sitemap.xml"
            self.frontier.add_component(Candidate(sitemap, "P", canonical, True))

    def _queue_links(self, candidate: Candidate, exchange: Exchange) -> list[str]:
        """Queue the links of ``exchange``; the crawl log annotations saying what the limits left out."""
        if exchange.status >= 400:
            return []
        redirect = exchange.status >= 300
        if (
            not redirect
            and exchange.content_type not in EXTRACTED_TYPES
            and not is_manifest(candidate.url, exchange.content_type)  # an .m3u8 sent as octet-stream
        ):
            return []
        notes = []
        body = b""  # a redirect's links are in its headers
        if not redirect:
            settings = self.settings
            html = exchange.content_type in HTML_TYPES or not exchange.content_type
            limit = settings.extract_max_html_bytes if html else settings.extract_max_bytes
            body = exchange.decoded_body(limit + 1)  # decoded in chunks, never further than this
            if len(body) > limit:
                body = body[:limit]
                notes.append(f"links-read:{limit}-bytes")
                self.documents_cut += 1
        document = Document(
            url=candidate.url,
            status=exchange.status,
            headers=exchange.headers,
            content_type=exchange.content_type,
            charset=exchange.charset,
            body=body,
        )
        found = extract(document, self.options)
        del document, body
        if found.skipped:
            notes.append(f"links-skipped:{found.skipped}")
            self.links_skipped += found.skipped
        full = self.queue_full
        for link in found.links:
            self._consider(candidate, link.url, link.hop)
        if self.queue_full > full:
            notes.append(f"queue-full:{self.queue_full - full}")
        return notes

    def _consider(self, source: Candidate, url: str, hop: str) -> None:
        canonical = canonicalize(url)
        if canonical is None or self.frontier.seen(canonical):
            return
        if len(self.frontier) + len(self.waiting) >= self.settings.max_queued_urls:
            self.queue_full += 1  # not marked seen: a later page may queue it when there is room
            return
        hop_path = source.hop_path + hop
        if self._known_page(canonical, hop):
            return
        if hop == "R":
            if source.is_seed:  # a seed's redirect: its target is a seed too
                self.scope.add_seed(canonical)
                self.seed_hosts.add(host_of(canonical))
                self.frontier.add_component(Candidate(canonical, hop_path, source.url, True))
                return
            follow = source.follow and self.scope.decide(canonical, hop_path) is None
            self.frontier.add_component(Candidate(canonical, hop_path, source.url, follow))
            return
        if hop in NAVIGATION_HOPS:
            if not source.follow:
                return
            reason = self.scope.decide(canonical, hop_path)
            if reason is not None:
                if reason == "out-of-scope" and host_of(canonical) not in self.seed_hosts:
                    self._count_external(canonical, source.url)
                return
            if self._trapped(canonical):
                return
            self.frontier.add_page(Candidate(canonical, hop_path, source.url, True))
            return
        if hop == "X":
            # A string in a script only counts when it is in scope: it is a guess, not a component.
            if (
                source.follow
                and self.scope.decide(canonical, hop_path) is None
                and not self._trapped(canonical)
            ):
                self.frontier.add_page(Candidate(canonical, hop_path, source.url, True))
            return
        # E (and P): a component; fetched even outside the scope, but never its links.
        if not source.follow and _requisite_depth(source.hop_path) >= REQUISITE_CHAIN:
            return
        if self.scope.is_trap_or_rejected(canonical) is not None:
            self.trapped += 1
            return
        follow = source.follow and self.scope.decide(canonical, hop_path) is None
        self.frontier.add_component(Candidate(canonical, hop_path, source.url, follow))

    def _known_page(self, canonical: str, hop: str) -> bool:
        """News: a link to a page an earlier run captured (marked seen: counted once, never queued)."""
        if not self.settings.known_pages or (hop not in NAVIGATION_HOPS and hop != "X"):
            return False
        if fingerprint(canonical) not in self.settings.known_pages:
            return False
        self.frontier.mark_seen(canonical)
        self.known_skipped += 1
        return True

    def _note_new_page(self, candidate: Candidate, status: int) -> None:
        """News: a page (not a seed, not a component) captured with a 2xx answer is a new article."""
        if 200 <= status < 300 and not candidate.is_seed and candidate.hop_path[-1:] in ("L", "M", "X"):
            self.new_pages.append(candidate.url)

    def _trapped(self, url: str) -> bool:
        if self.traps.check(url) is not None:
            self.trapped += 1
            return True
        return False

    def _count_external(self, url: str, source: str) -> None:
        self.external_total += 1
        if url in self.external_links or len(self.external_links) < EXTERNAL_LINKS_KEPT:
            self.external_links[url] += 1
            sources = self.external_sources.setdefault(url, [])
            if len(sources) < EXTERNAL_SOURCES_KEPT and source not in sources:
                sources.append(source)

    # -- fetching and storing ---------------------------------------------------------------

    def _next_candidate(self) -> Candidate | None:
        while True:
            candidate = self.waiting.popleft() if self.waiting else self.frontier.pop()
            # A URL a rendered page already made the browser fetch is not asked for again.
            if (
                candidate is None
                or not self.rendered_urls
                or fingerprint(candidate.url) not in self.rendered_urls
            ):
                return candidate

    def _fetch(self, url: str, headers: dict | None = None, **options) -> Exchange:
        with self._lock:
            self.current_url = url
        deadline = self.settings.deadline
        if deadline is not None:
            crawl_deadline = time.monotonic() + (deadline - time.time())  # as the fetch measures time
            if options.get("deadline") is None or crawl_deadline <= options["deadline"]:
                options["deadline"] = crawl_deadline
                options["deadline_reason"] = DEADLINE
        return self.session.fetch(url, headers=headers or None, interrupted=self._interrupted, **options)

    def _interrupted(self) -> str | None:
        """Why the fetch under way must end now (asked by it between reads)."""
        if not self._stop_requested:
            return None
        return DEADLINE if self._stop_requested == TIME_LIMIT else STOPPED

    def _fetch_robots(self, robots_url: str, *, via: str) -> float:
        exchange = self._fetch(robots_url)
        handed = False
        try:
            status = exchange.status if exchange.error is None else None
            entry = self.robots.record(robots_url, status=status, body=exchange.decoded_body(1024 * 1024))
            handed = self._store(Candidate(robots_url, "P", via, False), exchange, annotations=[entry.note])
            if self.settings.extract_sitemaps and host_of(robots_url) in self.seed_hosts:
                for sitemap in entry.sitemaps:
                    canonical = canonicalize(sitemap)
                    if canonical is not None:
                        self.frontier.add_component(Candidate(canonical, "P", robots_url, True))
        finally:
            if not handed:
                exchange.close()
        return self._delay(robots_url, exchange.duration)

    def _store(
        self,
        candidate: Candidate,
        exchange: Exchange,
        annotations: list[str] | None = None,
        *,
        stored: Exchange | None = None,
    ) -> bool:
        """Store and log an exchange; True if it was handed to the writer (which closes it, once stored)."""
        notes = list(annotations or [])
        if exchange.error is not None:
            code = exchange.error_code or FetchError.OTHER
            notes.append(error_annotation(code, exchange.error))
            self._log_no_answer(candidate, ERROR_STATUS[code], notes)
            return False
        if exchange.truncated:
            notes.append(f"truncated:{exchange.truncated}")
        line = {
            "when": exchange.started_at,
            "status": exchange.status,
            "size": exchange.body_length,
            "mime": exchange.content_type,
            "duration": exchange.duration,
            "digest": exchange.payload_digest,
            "annotations": notes,
        }
        if self._hands_off:
            self._count(exchange, saved=None, mime=exchange.content_type)
            # One task for the writer's thread: the records, then the log line.
            log = (lambda written: self._write_log(candidate, line)) if self.crawl_log is not None else None
            self.writer.submit_exchange(
                exchange, writes=self._writes, digest_algorithm=self.session.digest_algorithm, then=log
            )
            return True
        saved = None
        if self.writer is not None:
            original = self._original_of(exchange, stored, notes)
            if original is not None:
                self.writer.write_revisit(exchange, profile=IDENTICAL_PAYLOAD, original=original)
                notes.append("duplicate:digest")
                saved = exchange.body_length
            else:
                written = self.writer.write_exchange(exchange, digest_algorithm=self.session.digest_algorithm)
                self._remember(exchange, written)
        self._count(exchange, saved=saved, mime=exchange.content_type)
        self._log(candidate, **line)
        return False

    # -- deduplication -----------------------------------------------------------------------

    def _previous_capture(self, url: str) -> tuple[Original | None, Exchange | None]:
        """The last capture of ``url`` and its stored response, when a conditional request can use them."""
        if self.dedup is None:
            return None, None
        previous = self.dedup.previous(url)
        if previous is None:
            return None, None
        stored = stored_exchange(previous)
        if stored is not None and not conditional_headers(stored):
            stored.close()  # no validators: nothing to ask the server
            stored = None
        return previous, stored

    def _original_of(self, exchange: Exchange, stored: Exchange | None, notes: list[str]) -> Original | None:
        """The earlier capture ``exchange`` can be a revisit of, or None to store it in full."""
        if self.dedup is None or exchange.truncated or not exchange.body_length:
            return None  # an empty payload: a revisit would save nothing
        original = self.dedup.original(exchange.payload_digest)
        if original is None or not self.settings.dedup_verify:
            return original
        if stored is None or stored.payload_digest != original.digest:
            stored = stored_exchange(original, check_digest=False)  # the bytes are compared below
            opened = stored
        else:
            opened = None
        try:
            if stored is None:
                notes.append("duplicate:original-unreadable")
                return None
            if not same_payload(stored.body, exchange.body):
                notes.append("duplicate:collision")
                with self._lock:
                    self.collisions += 1
                logger.warning(
                    "digest collision: %s and %s (%s) share %s but not their bytes; stored in full",
                    exchange.url,
                    original.url,
                    original.date,
                    original.digest,
                )
                return None
            return original
        finally:
            if opened is not None:
                opened.close()

    def _remember(self, exchange: Exchange, written: list) -> None:
        if self.dedup is None or not written or exchange.truncated or not exchange.body_length:
            return
        response = written[0]
        self.dedup.remember(
            Original(
                url=response.target_uri,
                date=_iso_date(response.date),
                record_id=response.record_id,
                digest=response.payload_digest,
                path=str(self.writer.directory / response.filename),
                offset=response.offset,
            )
        )

    def _store_not_modified(
        self, candidate: Candidate, exchange: Exchange, previous: Original, stored: Exchange, notes: list[str]
    ) -> None:
        """A 304 to a conditional request: a server-not-modified revisit of the previous capture."""
        head = Exchange(
            url=exchange.url,
            status=stored.status,
            reason=stored.reason,
            http_version=stored.http_version,
            headers=freshened_headers(stored, exchange),
        )
        self.writer.write_revisit(exchange, profile=SERVER_NOT_MODIFIED, original=previous, head=head)
        self._count(exchange, saved=stored.body_length, mime=stored.content_type)
        self._log(
            candidate,
            when=exchange.started_at,
            status=exchange.status,
            size=exchange.body_length,
            mime=stored.content_type,
            duration=exchange.duration,
            digest=previous.digest,
            annotations=["duplicate:server-not-modified", *notes],
        )

    def _count(self, exchange: Exchange, *, saved: int | None, mime: str) -> None:
        """Count a stored answer; ``saved``: the payload bytes a revisit did not store again."""
        with self._lock:
            self.urls_done += 1
            self.bytes += exchange.body_length
            self.status_counts[exchange.status] += 1
            self.status_bytes[exchange.status] += exchange.body_length
            self.mime_counts[mime] += 1
            self.mime_bytes[mime] += exchange.body_length
            if exchange.status >= 400:
                self.errors += 1
            if saved is not None:
                self.duplicates += 1
                self.duplicate_bytes += saved

    def _log_no_answer(self, candidate: Candidate, status: int, annotations: list[str]) -> None:
        """Log a URL that got no answer; ``status``: why, a negative status of crawllog.NO_ANSWER."""
        with self._lock:
            self.errors += 1
        self._log(
            candidate,
            when=datetime.now(UTC),
            status=status,
            size=0,
            mime="",
            duration=0.0,
            digest="",
            annotations=annotations,
        )

    def _log(self, candidate: Candidate, **fields) -> None:
        if self.crawl_log is None:
            return
        if self._hands_off:  # after the records handed before it, by the writer's thread
            self.writer.submit_call(self._writes, lambda: self._write_log(candidate, fields))
        else:
            self._write_log(candidate, fields)

    def _write_log(self, candidate: Candidate, fields: dict) -> None:
        self.crawl_log.write(
            log_line(
                url=candidate.url, hop_path=candidate.hop_path, via=candidate.via, site=self.site, **fields
            )
        )

    # -- politeness and stopping -------------------------------------------------------------

    def _delay(self, url: str, duration: float) -> float:
        settings = self.settings
        delay = min(max(settings.delay_factor * duration, settings.min_delay), settings.max_delay)
        if settings.max_request_rate > 0:
            delay = max(delay, 60.0 / settings.max_request_rate)
        if settings.obey_robots:
            delay = max(delay, self.robots.crawl_delay(url))
        return delay

    def _stop_reason(self) -> str:
        settings = self.settings
        if self._stop_requested:
            return self._stop_requested
        if settings.deadline is not None and time.time() >= settings.deadline:
            return TIME_LIMIT
        if 0 <= settings.max_objects <= self.urls_done:
            return OBJECT_LIMIT
        if 0 <= settings.max_bytes <= self.bytes:
            return BYTE_LIMIT
        return ""

    def _finish(self, reason: str) -> None:
        # Ended once its records and log lines are written: whoever waits for the end reads them.
        self._writes.wait()
        if self._writes.error is not None and not self.broken:
            error = self._writes.error
            self.error_code, self.error = CrawlError.BROKEN, f"{type(error).__name__}: {error}"
            self.broken = True
            reason = FAILED
        with self._lock:
            self.stop_reason = reason
            self.current_url = ""
            self.left_queued = len(self.frontier) + len(self.waiting)
        self.frontier.clear()
        self.waiting.clear()
        self._waiting_render = None
        self.session.close()


def _iso_date(stamp: str) -> str:
    """14 digits as a WARC-Date (ISO 8601, UTC)."""
    return f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]}Z"


def _requisite_depth(hop_path: str) -> int:
    """How many component hops end the path (E, X or P letters after the last link)."""
    return len(hop_path) - len(hop_path.rstrip("EXP"))
