"""Politeness across sites: one IP address is not hammered by the many domains it hosts.

Real parts: a DNS server (dnsmasq, tests.dns_server) that makes several domain names point at one
loopback address, a small web server on 127.0.0.1 and 127.0.0.2 that answers every host name with
a site of a few pages (links relative to the host), and the crawler's engine (harvest.crawler.engine)
resolving through that DNS server (webarchive.netguard.use_nameservers) as a crawl worker given
HARVEST_DNS_SERVERS does.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harvest.crawler.engine import CrawlEngine, run_sites, site_address
from harvest.crawler.fetch import Fetcher
from harvest.crawler.site import SiteCrawl, SiteSettings
from tests.components import require_component
from tests.dns_server import dns_server, dnsmasq_available
from webarchive import netguard
from webarchive.netguard import AddressPolicy

PAGES = 4
REQUESTS = PAGES + 3  # each site: robots.txt, /sitemap.xml (404), its home and PAGES pages


class _Sites(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        host = (self.headers.get("Host") or "").split(":")[0]
        self.server.log.append((time.monotonic(), self.server.server_address[0], host, self.path))
        if self.path == "/robots.txt":
            body = b"User-agent: *\nDisallow:\n"
            kind = "text/plain"
        elif self.path == "/" or self.path.startswith("/p"):
            links = "".join(f'<a href="/p{n}.html">{n}</a>' for n in range(PAGES))
            body = f"<html><body><h1>{host}</h1>{links}</body></html>".encode()
            kind = "text/html"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def servers():
    """The same port on 127.0.0.1 and 127.0.0.2, one request log for both."""
    log: list[tuple[float, str, str, str]] = []
    first = ThreadingHTTPServer(("127.0.0.1", 0), _Sites)
    port = first.server_address[1]
    second = ThreadingHTTPServer(("127.0.0.2", port), _Sites)
    running = []
    for server in (first, second):
        server.log = log
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        running.append(server)
    yield port, log
    for server in running:
        server.shutdown()
        server.server_close()


@pytest.fixture
def names():
    """Domain names served by a real DNS server, resolved by the crawler through it."""
    require_component("dnsmasq", dnsmasq_available(), "a real DNS server gives several names one address")
    served = {
        "shared-one.test": "127.0.0.1",
        "shared-two.test": "127.0.0.1",
        "shared-three.test": "127.0.0.1",
        "alone.test": "127.0.0.2",
    }
    with dns_server(served) as server:
        netguard.use_nameservers([server.nameserver])
        try:
            yield server
        finally:
            netguard.use_nameservers([])


def _crawls(port: int, hosts: list[str]) -> list[SiteCrawl]:
    fetcher = Fetcher(user_agent="webarchive-test/1", address_check=AddressPolicy(allow_private=True).refusal)
    return [
        SiteCrawl(
            SiteSettings(
                seeds=[f"http://{host}:{port}/"], domain=host, min_delay=0.0, max_delay=0.0, delay_factor=0.0
            ),
            session=fetcher.session(),
        )
        for host in hosts
    ]


def _starts(log, address: str) -> list[float]:
    return sorted(at for at, server, _host, _path in log if server == address)


def test_domains_on_one_address_share_its_interval(servers, names):
    port, log = servers
    hosts = ["shared-one.test", "shared-two.test", "shared-three.test"]
    interval = 0.2
    crawls = _crawls(port, hosts)

    run_sites(crawls, threads=4, ip_interval=interval)

    # Every site was crawled whole (robots.txt, its home, its pages), each under its own name…
    for crawl, host in zip(crawls, hosts, strict=True):
        assert crawl.stop_reason == "completed"
        assert {path for _at, _server, name, path in log if name == host} == {
            "/robots.txt",
            "/sitemap.xml",
            "/",
            *(f"/p{n}.html" for n in range(PAGES)),
        }
    # …and the address got its requests no faster than one per interval (the sites themselves
    # had no delay): three sites together went no faster than one polite one. The server sees
    # each request arrive a little after the engine let it start (a new connection resolves and
    # connects first), so the span is what is compared: only its two ends can be late.
    starts = _starts(log, "127.0.0.1")
    assert len(starts) == 3 * REQUESTS
    assert starts[-1] - starts[0] >= (len(starts) - 1) * interval * 0.9


def test_an_address_of_its_own_is_not_held_back_by_the_others(servers, names):
    port, log = servers
    crawls = _crawls(port, ["shared-one.test", "shared-two.test", "alone.test"])
    engine = CrawlEngine(threads=4, ip_interval=0.2)
    handles = [engine.submit(crawl) for crawl in crawls]
    for handle in handles:
        assert handle.wait(60)
    engine.shutdown()

    # The engine counted each address apart, and put each site on the address its name has.
    assert set(engine._ip_free) == {"127.0.0.1", "127.0.0.2"}
    assert [handle.address for handle in handles] == ["127.0.0.1", "127.0.0.1", "127.0.0.2"]
    # The site alone on its address was spaced by the interval only, not by the two shared ones:
    # its requests are spaced like theirs, while the shared address served twice as many.
    assert len(_starts(log, "127.0.0.2")) == REQUESTS
    assert len(_starts(log, "127.0.0.1")) == 2 * REQUESTS
    alone = _starts(log, "127.0.0.2")
    shared = _starts(log, "127.0.0.1")
    # While the shared address was busy with its 12 requests, the lone site finished its 6.
    assert alone[-1] < shared[-1]


def test_without_an_interval_sites_are_polite_each_on_their_own(servers, names):
    port, _log = servers
    engine = CrawlEngine(threads=4)
    handles = [engine.submit(crawl) for crawl in _crawls(port, ["shared-one.test", "shared-two.test"])]
    for handle in handles:
        assert handle.wait(60)
    engine.shutdown()
    assert engine._ip_free == {}
    assert all(handle.crawl.stop_reason == "completed" for handle in handles)


def test_a_name_that_does_not_resolve_has_no_address_and_fails_as_usual(servers, names):
    port, _log = servers
    [crawl] = _crawls(port, ["missing.test"])
    assert site_address(crawl) is None
    run_sites([crawl], threads=1, ip_interval=0.2)
    assert crawl.urls_done == 0
    assert crawl.errors >= 1


def test_nameservers_are_addresses_and_ports():
    with pytest.raises(ValueError, match="IP address"):
        netguard.use_nameservers(["dns.example:53"])
    with pytest.raises(ValueError, match="port"):
        netguard.use_nameservers(["127.0.0.1:99999"])
    with pytest.raises(ValueError, match="nameserver"):
        netguard.use_nameservers(["[::1]x"])
    # An address alone means port 53; nothing was changed by the refused ones.
    assert netguard._nameserver("127.0.0.1") == ("127.0.0.1", 53)
    assert netguard._nameserver("[::1]:5353") == ("::1", 5353)
    assert netguard._dns_resolver is None
    with pytest.raises(ValueError, match="ip_interval"):
        CrawlEngine(ip_interval=-1)
