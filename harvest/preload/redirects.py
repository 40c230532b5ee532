"""Redirect discovery: which other registered domains the live domains of a broad crawl redirect to.

For each domain, ``http://domain/`` and ``http://www.domain/`` are asked for,
and their redirects followed while they stay on the domain (``a.fr`` →
``www.a.fr/home`` → …), at most ``max_hops`` of them. The first ``Location``
that leads to another registered domain (``old-name.fr`` → ``new-name.fr``)
is a :class:`Redirect`; that URL is not requested, the other domain is only
named. A location on a host without a public suffix (``intranet.lan``), on
an IP address, or that cannot be harvested (``ftp:``, ``mailto:``) is no
domain to add and ends the chain.

Only response heads are read: each request is a ``GET`` (some servers do not
redirect ``HEAD``), its body is never read, and the connection is closed
instead of being drained. Every connection goes through the address guard
(:func:`webarchive.netguard.guarded_pool_manager`): a host resolving to an
address the policy refuses (loopback, private networks, cloud metadata…) is
never contacted, and its chain ends there. Network and HTTP failures of one
domain end that domain's check, never the run.

Domains are checked by a pool of threads, taken lazily from the iterable,
never more than ``concurrency`` at a time, so a list of millions streams
through in bounded memory; results come in the order checks finish. A
consumer that stops iterating (``break``, ``close()``) stops the pool: the
checks in flight end after their current request and no thread is left.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from urllib.parse import urljoin

from django.core.exceptions import ValidationError
from urllib3 import Timeout
from urllib3.exceptions import HTTPError

from harvest.validators import domain_name_normalise
from webarchive.addresses import address_policy
from webarchive.netguard import AddressPolicy, AddressRefused, guarded_pool_manager, is_ip_literal
from webarchive.urlnorm import normalise_url, registered_domain, url_host

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
THREAD_NAME = "redirect-discovery"
# What asking can raise for reasons of the network, the server or the URL (as the crawler's fetcher).
_REQUEST_ERRORS = (HTTPError, AddressRefused, OSError, ValueError, http.client.HTTPException)


@dataclass(frozen=True)
class RedirectSettings:
    """How redirect discovery asks: time limit, domains in flight, hops, user agent, start URLs."""

    timeout: float = 10.0  # seconds, for the DNS lookup and connection, and again for the answer
    concurrency: int = 50  # domains in flight
    max_hops: int = 5  # redirects followed per start URL
    user_agent: str = ""  # empty: the crawler's (settings.HARVEST_USER_AGENT)
    url_for: Callable[[str], str] | None = None  # host -> start URL; default "http://{host}/"


@dataclass(frozen=True)
class Redirect:
    """A live domain whose home page redirects to another registered domain."""

    domain: str  # the live domain checked
    target: str  # the registered domain its redirect leads to (different from domain)
    url: str  # the first URL on the other domain


def discover_redirects(
    domains: Iterable[str], settings: RedirectSettings, *, policy: AddressPolicy | None = None
) -> Iterator[Redirect]:
    """The redirects of ``domains`` to other registered domains, one per domain and target, lazily.

    ``policy`` is the address guard's (default: public addresses, and private ones
    when ``WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES`` is set, as for the crawler).
    """
    if settings.concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    if settings.max_hops < 1:
        raise ValueError("max_hops must be at least 1")
    if policy is None:
        policy = address_policy()
    discoverer = _Discoverer(settings, policy=policy, user_agent=settings.user_agent or _default_user_agent())
    return _discover(discoverer, domains, settings.concurrency)


def _default_user_agent() -> str:
    from django.conf import settings

    return settings.HARVEST_USER_AGENT


def _default_url(host: str) -> str:
    return f"http://{host}/"


def _discover(discoverer: _Discoverer, domains: Iterable[str], concurrency: int) -> Iterator[Redirect]:
    source = iter(domains)
    pending: set[Future[list[Redirect]]] = set()
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=THREAD_NAME)
    try:
        exhausted = False
        while True:
            # Take no more domains than there are free threads: the iterable may hold millions.
            while not exhausted and len(pending) < concurrency:
                try:
                    domain = next(source)
                except StopIteration:
                    exhausted = True
                else:
                    pending.add(executor.submit(discoverer.domain_redirects, domain))
            if not pending:
                return
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield from future.result()
    finally:
        # Also when the consumer stops early: checks in flight end after their current request.
        discoverer.stopping.set()
        executor.shutdown(wait=True, cancel_futures=True)
        discoverer.close()


class _Discoverer:
    """Checks one domain at a time per thread; shares one guarded pool manager between threads."""

    def __init__(self, settings: RedirectSettings, *, policy: AddressPolicy, user_agent: str):
        self.max_hops = settings.max_hops
        self.url_for = settings.url_for or _default_url
        self.stopping = threading.Event()
        # Connection: close, since each host is asked once or twice and the body is never read.
        self._headers = {"User-Agent": user_agent, "Accept": "*/*", "Connection": "close"}
        self._timeout = Timeout(connect=settings.timeout, read=settings.timeout)
        self._manager = guarded_pool_manager(policy, num_pools=2 * settings.concurrency, maxsize=1)

    def close(self) -> None:
        self._manager.clear()

    def domain_redirects(self, domain: str) -> list[Redirect]:
        """The redirects of ``http://domain/`` and ``http://www.domain/``, one per target."""
        home = registered_domain(domain)
        hosts = [domain] if is_ip_literal(domain) else [domain, f"www.{domain}"]
        found: dict[str, Redirect] = {}
        for host in hosts:
            redirect = self._follow(domain, home, self.url_for(host))
            if redirect is not None:
                found.setdefault(redirect.target, redirect)
        return list(found.values())

    def _follow(self, domain: str, home: str, url: str) -> Redirect | None:
        """Where the redirects from ``url`` leave ``home``, or None."""
        visited = {url}
        for _hop in range(self.max_hops):
            if self.stopping.is_set():
                return None
            location = self._location(url)
            if not location:
                return None
            try:
                url = normalise_url(urljoin(url, location.strip()))
            except ValueError:  # InvalidURL, or a Location urljoin cannot parse ("http://[oops/")
                return None
            host = url_host(url)
            if is_ip_literal(host):  # an address is no domain to add; a private one must not be
                return None
            if registered_domain(host) != home:
                try:
                    target = domain_name_normalise(registered_domain(host))
                except ValidationError:  # no public suffix (intranet.lan, localhost)
                    return None
                return Redirect(domain=domain, target=target, url=url)
            if url in visited:  # a loop within the domain
                return None
            visited.add(url)
        return None

    def _location(self, url: str) -> str | None:
        """The ``Location`` of a redirect answered to ``url``, or None (no redirect, or no answer)."""
        try:
            response = self._manager.urlopen(
                "GET",
                url,
                headers=self._headers,
                redirect=False,
                retries=False,
                preload_content=False,
                decode_content=False,
                timeout=self._timeout,
            )
        except _REQUEST_ERRORS:
            return None
        try:
            if response.status not in REDIRECT_STATUSES:
                return None
            return response.headers.get("Location")
        finally:
            response.close()  # closes the connection: the body is not read, nor drained
            response.release_conn()
