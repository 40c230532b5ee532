"""Which URLs a site crawl follows: the depth policy, the hop limit and the curators' rules.

The depth policies are ``harvest.choices.DepthPolicy`` values:

- ``page``: the seeds only (their requisites are fetched anyway, see the engine);
- ``clicks``: at most ``clicks`` navigation hops (``L`` and ``M`` letters of the
  hop path) from a seed, without leaving the seeds' registered domain;
- ``path``: the seed's host, under the seed's directory (its path up to and
  including the last ``/``);
- ``host``: the seed's host (``www.`` + host and host without ``www.`` are the
  same host; the scheme does not matter; another port is another host);
- ``domain``: the registered domain and all its subdomains.

Precedence: reject rules and trap rules win over everything, then the hop
limit, then seeds are always in scope, then the policy, and an accept rule
brings an otherwise out-of-scope URL in. All rules are regular expressions
searched in the canonical URL, by RE2: in time proportional to the URL,
whatever the rule (the URLs come from crawled sites, the rules from users).
A rule RE2 cannot run (a back-reference, a look-around, saved before rules
were checked with RE2) is skipped, logged and listed in ``skipped_rules``:
one bad rule does not stop a crawl.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from functools import cache

import re2
import tldextract

from .urls import canonicalize, host_of

logger = logging.getLogger(__name__)

POLICIES = ("page", "clicks", "path", "host", "domain")
CLICK_HOPS = frozenset("LM")

OUT_OF_SCOPE = "out-of-scope"
MAX_HOPS = "max-hops"
REJECTED = "rejected"
TRAP = "trap"
# RE2's memory for one rule: webarchive.patterns.MAX_MEMORY, which validated it (a test keeps them equal).
RULE_MAX_MEMORY = 8 << 20


@cache
def _suffix_list() -> tldextract.TLDExtract:
    # The public suffix list snapshot shipped inside tldextract: never fetched, never cached on disk.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def registered_domain(host: str) -> str:
    """``news.bbc.co.uk`` → ``bbc.co.uk``; an IP address or a bare name is its own domain."""
    host = host.lower().rstrip(".")
    if host.startswith("["):
        return host
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    parts = _suffix_list()(host)
    if parts.domain and parts.suffix:
        return f"{parts.domain}.{parts.suffix}"
    return host


def _hostname(host_and_port: str) -> str:
    if host_and_port.startswith("["):
        return host_and_port.partition("]")[0] + "]"
    return host_and_port.partition(":")[0]


def _same_host_key(host_and_port: str) -> str:
    return host_and_port.removeprefix("www.")


def _path(canonical_url: str) -> str:
    after_scheme = canonical_url.partition("://")[2]
    start = after_scheme.find("/")
    return after_scheme[start:].partition("?")[0] if start >= 0 else "/"


def compile_rule(rule: str):
    """A curator's rule compiled by RE2: matched in time proportional to the URL, whatever the rule.

    ``re2.error`` if RE2 cannot run it (back-references, look-around…). The rules were validated by
    ``webarchive.patterns`` when they were saved, with the same memory bound.
    """
    options = re2.Options()
    options.max_mem = RULE_MAX_MEMORY
    options.log_errors = False
    options.never_capture = True  # only whether a rule matches is asked
    return re2.compile(rule, options)


def _any_match(rules: list, url: str) -> bool:
    if not rules:
        return False
    # Encoded once for all the rules; "surrogatepass": a URL that is not canonical may hold a lone one.
    text = url.encode("utf-8", "surrogatepass")
    return any(rule.search(text) for rule in rules)


def _error_text(error: re2.error) -> str:
    message = error.args[0] if error.args else ""
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)


class Scope:
    """Decides, for a URL reached by a hop path, whether the crawl follows it as a page."""

    def __init__(
        self,
        *,
        seeds: list[str],
        policy: str,
        clicks: int = 1,
        max_hops: int = 20,
        accept: Iterable[str] = (),
        reject: Iterable[str] = (),
        traps: Iterable[str] = (),
        domain: str | None = None,
    ):
        if policy not in POLICIES:
            raise ValueError(f"Unknown depth policy {policy!r}; expected one of {', '.join(POLICIES)}.")
        self.policy = policy
        self.clicks = clicks
        self.max_hops = max_hops
        # Rules RE2 cannot run (saved before rules were checked with RE2): skipped, not fatal to the crawl.
        self.skipped_rules: list[dict[str, str]] = []
        self._accept = self._compile(accept, "accept")
        self._reject = self._compile(reject, "reject")
        self._traps = self._compile(traps, "trap")
        self._seeds: set[str] = set()
        self._hosts: set[str] = set()
        self._directories: set[tuple[str, str]] = set()
        self._domains: set[str] = set()
        if domain:
            canonical_domain = canonicalize(f"http://{domain.strip()}/")
            self._domains.add(_hostname(host_of(canonical_domain)) if canonical_domain else domain.lower())
        for seed in seeds:
            self.add_seed(seed)

    def _compile(self, rules: Iterable[str], kind: str) -> list:
        compiled = []
        for rule in rules:
            try:
                compiled.append(compile_rule(rule))
            except re2.error as error:
                reason = _error_text(error)
                self.skipped_rules.append({"kind": kind, "rule": rule, "error": reason})
                logger.warning("%s rule %r skipped: RE2 cannot run it (%s)", kind, rule, reason)
        return compiled

    def add_rules(self, *, reject: Iterable[str] = (), traps: Iterable[str] = ()) -> None:
        """More reject and trap rules, from now on (an engineer steering the running crawl)."""
        self._reject = [*self._reject, *self._compile(reject, "reject")]
        self._traps = [*self._traps, *self._compile(traps, "trap")]

    def add_seed(self, url: str) -> None:
        """Make ``url`` a seed (e.g. the target of a seed's redirect): always in scope, and a scope root."""
        canonical = canonicalize(url)
        if canonical is None:
            return
        self._seeds.add(canonical)
        host = host_of(canonical)
        self._hosts.add(_same_host_key(host))
        path = _path(canonical)
        self._directories.add((_same_host_key(host), path[: path.rfind("/") + 1]))
        self._domains.add(registered_domain(_hostname(host)))

    @property
    def seeds(self) -> frozenset[str]:
        """The canonical seeds."""
        return frozenset(self._seeds)

    def decide(self, url: str, hop_path: str) -> str | None:
        """``None`` if ``url`` is a page to follow, else why not: out-of-scope, max-hops, rejected or trap."""
        canonical = canonicalize(url)
        if canonical is None:
            return OUT_OF_SCOPE
        blocked = self._blocked(canonical)
        if blocked:
            return blocked
        if len(hop_path) > self.max_hops:
            return MAX_HOPS
        if canonical in self._seeds or self._within_policy(canonical, hop_path):
            return None
        if _any_match(self._accept, canonical):
            return None
        return OUT_OF_SCOPE

    def is_trap_or_rejected(self, url: str) -> str | None:
        """Only the reject and trap rules ("rejected", "trap" or ``None``), for requisites out of scope."""
        return self._blocked(canonicalize(url) or url)

    def _blocked(self, canonical: str) -> str | None:
        if _any_match(self._reject, canonical):
            return REJECTED
        if _any_match(self._traps, canonical):
            return TRAP
        return None

    def _within_policy(self, canonical: str, hop_path: str) -> bool:
        policy = self.policy
        if policy == "page":
            return False
        host = host_of(canonical)
        if policy == "host":
            return _same_host_key(host) in self._hosts
        if policy == "path":
            key = _same_host_key(host)
            path = _path(canonical)
            return any(
                key == seed_host and (path.startswith(directory) or path == directory[:-1])
                for seed_host, directory in self._directories
            )
        if not self._in_domain(_hostname(host)):
            return False
        if policy == "clicks":
            return sum(hop_path.count(letter) for letter in CLICK_HOPS) <= self.clicks
        return True  # "domain"

    def _in_domain(self, hostname: str) -> bool:
        return any(hostname == domain or hostname.endswith("." + domain) for domain in self._domains)
