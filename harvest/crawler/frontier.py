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

from collections import deque
from dataclasses import dataclass

from harvest.crawler.urls import fingerprint, is_dynamic


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
        return True

    def add_page(self, candidate: Candidate) -> bool:
        """Queue a page behind the pages already waiting."""
        if not self.mark_seen(candidate.url):
            return False
        (self._dynamic if is_dynamic(candidate.url) else self._static).append(candidate)
        return True

    def pop(self) -> Candidate | None:
        """The next URL to fetch, or None when the frontier is empty."""
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

    def clear(self) -> None:
        """Drop everything still queued (the crawl is stopping); what was seen stays seen."""
        self._components.clear()
        self._static.clear()
        self._dynamic.clear()
