"""robots.txt, fetched once per host of a site crawl and kept for the rest of it (parsed by protego).

What a robots.txt answer means, as most crawlers read it: a 2xx body holds
the rules; a 4xx (no robots.txt) allows everything; a 5xx or a network error
also allows everything here, because the host's pages will then fail on their
own and an archive prefers trying to refusing; the annotation in the crawl
log says which case applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from protego import Protego


@dataclass
class HostRobots:
    """What one host's robots.txt said."""

    rules: Protego | None  # None: everything allowed
    note: str  # why: "robots:ok", "robots:none" (4xx), "robots:error" (5xx or no answer)
    sitemaps: list[str] = field(default_factory=list)


class RobotsCache:
    """robots.txt of each host a site crawl touches, asked by URL."""

    def __init__(self, user_agent: str):
        # Rules are matched on the product token, the part before the version and the contact URL.
        self.agent = user_agent.split("/", 1)[0].split(" ", 1)[0] or "*"
        self._hosts: dict[str, HostRobots] = {}

    @staticmethod
    def robots_url(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}/robots.txt"

    @staticmethod
    def key(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}"

    def known(self, url: str) -> bool:
        return self.key(url) in self._hosts

    def record(self, url: str, *, status: int | None, body: bytes) -> HostRobots:
        """Keep what the robots.txt of ``url``'s host answered (``status`` None: no answer at all)."""
        if status is not None and 200 <= status < 300:
            text = body.decode("utf-8", errors="replace")
            try:
                rules = Protego.parse(text)
            except Exception:  # protego is tolerant; a parser bug must not stop the crawl
                entry = HostRobots(None, "robots:unparsable")
            else:
                entry = HostRobots(rules, "robots:ok", list(rules.sitemaps))
        elif status is not None and 400 <= status < 500:
            entry = HostRobots(None, "robots:none")
        else:
            entry = HostRobots(None, "robots:error")
        self._hosts[self.key(url)] = entry
        return entry

    def allowed(self, url: str) -> bool:
        entry = self._hosts.get(self.key(url))
        if entry is None or entry.rules is None:
            return True
        return entry.rules.can_fetch(url, self.agent)

    def crawl_delay(self, url: str) -> float:
        """The host's Crawl-delay for our agent, 0 when none."""
        entry = self._hosts.get(self.key(url))
        if entry is None or entry.rules is None:
            return 0.0
        delay = entry.rules.crawl_delay(self.agent)
        return float(delay) if delay else 0.0
