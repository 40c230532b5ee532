"""The queue of URLs one site crawl still has to fetch, and the fingerprints of those it has seen.

Breadth-first by page links, with two refinements from the INA site crawler:

- a page's components (images, scripts, style sheets, frames, redirects) go
  into a queue that is always served first, so they are fetched right after
  the page that needs them, while the page is still fresh;
- pages with dynamic-looking URLs (query strings, scripts) and static ones
  wait in separate queues that are served in turn, so that a parameter
  explosion at one end of the site does not starve the rest of it.

Seen URLs are kept as 64-bit fingerprints in a set, not as strings: about
70 bytes per URL, so a 100,000-URL site needs some 7 MB.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from harvest.crawler.urls import fingerprint, is_dynamic

BIGGEST_QUEUES = 10  # hosts and path prefixes reported by biggest_queues()
PREFIX_SEGMENTS = 2  # directories of the longest path prefix counted ("host/site/calendar/")


@dataclass(slots=True)
class Candidate:
    """A URL waiting to be fetched: how it was reached and whether its links are followed."""

    url: str
    hop_path: str  # letters from the seed, "" for a seed
    via: str  # the URL it was found on ("" for a seed)
    follow: bool  # in scope: its links are followed; a requisite outside the scope: only its components

    @property
    def is_seed(self) -> bool:
        """A seed, or where a seed's redirects led (a hop path of R letters only)."""
        return self.hop_path.strip("R") == ""


class Frontier:
    """Components first, then pages breadth-first, static and dynamic in turn; each URL at most once."""

    def __init__(self):
        self._components: deque[Candidate] = deque()
        self._static: deque[Candidate] = deque()
        self._dynamic: deque[Candidate] = deque()
        self._seen: set[int] = set()
        self._dynamic_turn = False
        # What is queued, per host and per path prefix (host and first one or two directories): kept
        # as URLs come and go, so the biggest queues of a site are read without walking its frontier.
        self.hosts: Counter[str] = Counter()
        self.prefixes: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._components) + len(self._static) + len(self._dynamic)

    def seen(self, url: str) -> bool:
        return fingerprint(url) in self._seen

    def mark_seen(self, url: str) -> bool:
        """Remember ``url``; False if it was already known."""
        key = fingerprint(url)
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    @property
    def seen_count(self) -> int:
        return len(self._seen)

    def add_component(self, candidate: Candidate) -> bool:
        """Queue a requisite (or a redirect target) to be fetched before any other page."""
        if not self.mark_seen(candidate.url):
            return False
        self._components.append(candidate)
        self._counted(candidate.url, 1)
        return True

    def add_page(self, candidate: Candidate) -> bool:
        """Queue a page behind the pages already waiting."""
        if not self.mark_seen(candidate.url):
            return False
        (self._dynamic if is_dynamic(candidate.url) else self._static).append(candidate)
        self._counted(candidate.url, 1)
        return True

    def pop(self) -> Candidate | None:
        """The next URL to fetch, or None when the frontier is empty."""
        candidate = self._pop()
        if candidate is not None:
            self._counted(candidate.url, -1)
        return candidate

    def _pop(self) -> Candidate | None:
        if self._components:
            return self._components.popleft()
        if self._static and self._dynamic:
            self._dynamic_turn = not self._dynamic_turn
            return (self._dynamic if self._dynamic_turn else self._static).popleft()
        if self._static:
            return self._static.popleft()
        if self._dynamic:
            return self._dynamic.popleft()
        return None

    def drop(self, unwanted: Callable[[str], bool]) -> int:
        """Remove the queued URLs ``unwanted(url)`` is true of (a rule added while the crawl runs);
        they stay seen, so they are not queued again. Returns how many."""
        dropped = 0
        for queue in (self._components, self._static, self._dynamic):
            kept = deque()
            for candidate in queue:
                if unwanted(candidate.url):
                    self._counted(candidate.url, -1)
                    dropped += 1
                else:
                    kept.append(candidate)
            queue.clear()
            queue.extend(kept)
        return dropped

    def biggest_queues(self, top: int = BIGGEST_QUEUES) -> dict[str, list[list]]:
        """The hosts and path prefixes with the most queued URLs, ``top`` of each, biggest first."""
        return {
            "hosts": [[key, count] for key, count in heapq.nlargest(top, self.hosts.items(), key=_count)],
            "paths": [[key, count] for key, count in heapq.nlargest(top, self.prefixes.items(), key=_count)],
        }

    def _counted(self, url: str, change: int) -> None:
        host, prefixes = _queue_keys(url)
        for counter, key in ((self.hosts, host), *((self.prefixes, prefix) for prefix in prefixes)):
            count = counter[key] + change
            if count > 0:
                counter[key] = count
            else:
                del counter[key]

    def clear(self) -> None:
        """Drop everything still queued (the crawl is stopping); what was seen stays seen."""
        self._components.clear()
        self._static.clear()
        self._dynamic.clear()
        self.hosts.clear()
        self.prefixes.clear()


def _count(item: tuple[str, int]) -> int:
    return item[1]


def _queue_keys(url: str) -> tuple[str, list[str]]:
    """A queued URL's host, and its path prefixes: its host with its first directory, and with its
    first two (``host/site/``, ``host/site/calendar/``), or its host alone for a file at its root."""
    parts = urlsplit(url)
    host = parts.netloc
    directories = parts.path.lstrip("/").split("/")[:-1][:PREFIX_SEGMENTS]
    if not directories:
        return host, [f"{host}/"]
    return host, ["/".join([host, *directories[:depth], ""]) for depth in range(1, len(directories) + 1)]
