"""Redirect discovery (harvest.preload.redirects) against the test website.

The test website answers for other host names with ``add_redirect_host``; the
DNS (outside the machine) is replaced, as in the crawler's tests, by a table
that sends those names to the site's loopback addresses and knows no other.
``url_for`` only adds the site's port to the start URLs.
"""

import itertools
import socket
import threading
import time

import pytest

from harvest.preload.redirects import THREAD_NAME, Redirect, RedirectSettings, discover_redirects
from webarchive import netguard
from webarchive.netguard import AddressPolicy
from webarchive.testsite import TestSite

SITE_ONLY = AddressPolicy.allowing(["127.0.0.1/32"])  # the test site's own address, not its CDN's


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, hosts=2) as site:  # 127.0.0.2 plays an intranet host
        yield site


class FakeDNS:
    """Names to addresses; a name not in the table does not exist. Counts lookups, and those at once."""

    def __init__(self):
        self.addresses: dict[str, str] = {}
        self.lookups: list[str] = []
        self.www_lookups = 0
        self.running = 0
        self.most_running = 0
        self.delay = 0.0
        self._lock = threading.Lock()

    def add(self, *names: str, address: str = "127.0.0.1") -> None:
        for name in names:
            self.addresses[name] = address

    def getaddrinfo(self, host, port, *args, **kwargs):
        with self._lock:
            self.lookups.append(host)
            self.www_lookups += host.startswith("www.")
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        try:
            if self.delay:
                time.sleep(self.delay)  # so that lookups of checks in flight overlap
            if host not in self.addresses:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            return [
                (socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (self.addresses[host], port))
            ]
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def dns(monkeypatch):
    fake = FakeDNS()
    monkeypatch.setattr(netguard.socket, "getaddrinfo", fake.getaddrinfo)
    return fake


def options(site, **changes) -> RedirectSettings:
    values = {"timeout": 5.0, "concurrency": 4, "url_for": lambda host: f"http://{host}:{site.port}/"}
    return RedirectSettings(**{**values, **changes})


def discover(site, domains, *, policy=SITE_ONLY, **changes) -> list[Redirect]:
    return sorted(discover_redirects(domains, options(site, **changes), policy=policy), key=repr)


def requests_for(site, host: str) -> list:
    return [
        request for request in list(site.requests) if request.headers.get("host", "").startswith(f"{host}:")
    ]


def discovery_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith(THREAD_NAME)]


def test_a_redirect_of_the_domain_to_another_registered_domain_is_found(site, dns, settings):
    dns.add("old-name.fr", "www.old-name.fr")
    site.add_redirect_host("old-name.fr", "http://new-name.fr/")

    assert discover(site, ["old-name.fr"], user_agent="") == [
        Redirect(domain="old-name.fr", target="new-name.fr", url="http://new-name.fr/")
    ]
    # Both start URLs asked, with the crawler's user agent, heads only; the other domain only named.
    asked = requests_for(site, "old-name.fr") + requests_for(site, "www.old-name.fr")
    assert [(request.method, request.path) for request in asked] == [("GET", "/"), ("GET", "/")]
    assert {request.headers["user-agent"] for request in asked} == {settings.HARVEST_USER_AGENT}
    assert "new-name.fr" not in dns.lookups


def test_a_redirect_of_www_to_another_registered_domain_is_found(site, dns):
    dns.add("only-www.fr", "www.only-www.fr")
    site.add_redirect_host("www.only-www.fr", "https://www.fresh-name.co.uk/welcome", status=302)

    assert discover(site, ["only-www.fr"], user_agent="test-agent") == [
        Redirect(domain="only-www.fr", target="fresh-name.co.uk", url="https://www.fresh-name.co.uk/welcome")
    ]
    assert requests_for(site, "www.only-www.fr")[-1].headers["user-agent"] == "test-agent"


def test_one_redirect_per_distinct_target(site, dns):
    dns.add("twice.fr", "www.twice.fr", "split.fr", "www.split.fr")
    site.add_redirect_host("twice.fr", "http://twice-target.fr/")
    site.add_redirect_host("www.twice.fr", "http://www.twice-target.fr/home")
    site.add_redirect_host("split.fr", "http://split-one.fr/")
    site.add_redirect_host("www.split.fr", "http://split-two.fr/")

    found = discover(site, ["twice.fr", "split.fr"])

    assert [(redirect.domain, redirect.target) for redirect in found] == [
        ("split.fr", "split-one.fr"),
        ("split.fr", "split-two.fr"),
        ("twice.fr", "twice-target.fr"),
    ]


def test_a_redirect_within_the_registered_domain_yields_nothing(site, dns):
    dns.add("same.fr", "www.same.fr")
    site.add_redirect_host("same.fr", f"http://www.same.fr:{site.port}/home")

    assert discover(site, ["same.fr"]) == []
    # It was followed (and the site answered 404 there).
    assert [request.path for request in requests_for(site, "www.same.fr")] == ["/home", "/"]


def test_a_chain_of_redirects_ending_on_another_domain_yields_its_target(site, dns):
    dns.add("chain.fr", "www.chain.fr")
    site.add_redirect_host("chain.fr", f"http://www.chain.fr:{site.port}/step-1")
    site.add_redirect_host("www.chain.fr", "/step-2", path="/step-1", status=307)
    site.add_redirect_host(
        "www.chain.fr", "http://chain-end.org/landing?from=chain", path="/step-2", status=308
    )

    assert discover(site, ["chain.fr"]) == [
        Redirect(domain="chain.fr", target="chain-end.org", url="http://chain-end.org/landing?from=chain")
    ]


@pytest.mark.parametrize(("max_hops", "found"), [(4, False), (5, True)])
def test_too_many_hops_stop_the_chain(site, dns, max_hops, found):
    name = f"hops-{max_hops}.fr"
    dns.add(name, f"www.{name}")
    for hop in range(4):  # / -> /1 -> /2 -> /3 -> /4, then the other domain on the fifth redirect
        site.add_redirect_host(name, f"/{hop + 1}", path="/" if hop == 0 else f"/{hop}")
    site.add_redirect_host(name, "http://far-away.fr/", path="/4")

    result = discover(site, [name], max_hops=max_hops)

    assert [redirect.target for redirect in result] == (["far-away.fr"] if found else [])
    assert len(requests_for(site, name)) == max_hops


def test_a_redirect_loop_within_the_domain_ends(site, dns):
    dns.add("loop.fr", "www.loop.fr")
    site.add_redirect_host("loop.fr", "/again")
    site.add_redirect_host("loop.fr", "/", path="/again")

    assert discover(site, ["loop.fr"], max_hops=50) == []
    assert len(requests_for(site, "loop.fr")) == 2


def test_a_relative_location_is_resolved_against_the_url_asked(site, dns):
    dns.add("relative.fr", "www.relative.fr")
    site.add_redirect_host("relative.fr", "moved")
    site.add_redirect_host("relative.fr", "//www.relative-target.net/x", path="/moved")

    assert discover(site, ["relative.fr"]) == [
        Redirect(domain="relative.fr", target="relative-target.net", url="http://www.relative-target.net/x")
    ]
    assert [request.path for request in requests_for(site, "relative.fr")] == ["/", "/moved"]


@pytest.mark.parametrize(
    ("location", "target"),
    [
        ("http://BÜCHER.de/", "xn--bcher-kva.de"),  # IDN in punycode, lower case
        ("http://printer.lan/", None),  # no public suffix: no registered domain
        ("http://co.uk/", None),  # a public suffix is not a domain
        ("http://127.0.0.3/", None),  # an address is no domain to add
        ("ftp://files.other.fr/", None),  # cannot be harvested
        ("mailto:webmaster@other.fr", None),
        ("http://[not-an-address/", None),
    ],
)
def test_only_harvestable_registered_domains_are_targets(site, dns, location, target):
    name = f"target-{abs(hash(location))}.fr"
    dns.add(name, f"www.{name}")
    site.add_redirect_host(name, location)

    assert [redirect.target for redirect in discover(site, [name])] == ([target] if target else [])


def test_the_address_guard_refuses_a_redirect_to_a_private_address(site, dns):
    dns.add("guarded.fr", "www.guarded.fr")
    dns.add("intranet.guarded.fr", address="127.0.0.2")
    site.add_redirect_host("guarded.fr", f"http://intranet.guarded.fr:{site.port}/")
    site.add_redirect_host("intranet.guarded.fr", "http://secret-target.fr/")

    assert discover(site, ["guarded.fr"], policy=SITE_ONLY) == []
    assert not [request for request in list(site.requests) if request.host_index == 1]
    # Only the guard stopped it: with 127.0.0.2 allowed, the redirect is there.
    allowed = AddressPolicy.allowing(["127.0.0.0/8"])
    assert [redirect.target for redirect in discover(site, ["guarded.fr"], policy=allowed)] == [
        "secret-target.fr"
    ]


def test_the_default_policy_is_the_crawlers(site, dns, settings):
    dns.add("default-policy.fr", "www.default-policy.fr")
    site.add_redirect_host("default-policy.fr", "http://default-target.fr/")

    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    assert discover(site, ["default-policy.fr"], policy=None) == []
    assert requests_for(site, "default-policy.fr") == []
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    assert [redirect.target for redirect in discover(site, ["default-policy.fr"], policy=None)] == [
        "default-target.fr"
    ]


def test_unreachable_domains_yield_nothing_and_raise_nothing(site, dns):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    dns.add("closed.fr", "www.closed.fr")
    dns.add("reachable.fr", "www.reachable.fr")
    site.add_redirect_host("reachable.fr", "http://reached.fr/")
    port_of = {"closed.fr": closed_port, "www.closed.fr": closed_port}

    found = discover(
        site,
        ["closed.fr", "no-such-name.fr", "reachable.fr", "", "bad name.fr"],
        url_for=lambda host: f"http://{host}:{port_of.get(host, site.port)}/",
    )

    assert [(redirect.domain, redirect.target) for redirect in found] == [("reachable.fr", "reached.fr")]
    assert {"closed.fr", "www.closed.fr", "no-such-name.fr", "www.no-such-name.fr"} <= set(dns.lookups)


def test_many_domains_stream_through_with_bounded_work_in_flight(site, dns):
    total, concurrency = 2000, 8
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    redirecting = {5: "first-moved.fr", 1000: "middle-moved.fr", total - 1: "last-moved.fr"}
    names = [f"name-{index}.fr" for index in range(total)]
    for index, target in redirecting.items():
        dns.add(names[index], f"www.{names[index]}")
        site.add_redirect_host(names[index], f"http://{target}/")
    pulled = 0
    most_ahead = 0
    www_asked = 0
    threads: set[str] = set()

    def url_for(host):
        nonlocal www_asked
        threads.add(threading.current_thread().name)
        www_asked += host.startswith("www.")
        if host.removeprefix("www.") in dns.addresses:
            return f"http://{host}:{site.port}/"
        return f"http://127.0.0.1:{closed_port}/"  # the others do not answer (quicker than asking the site)

    def source():
        nonlocal pulled, most_ahead
        for name in names:
            pulled += 1
            # A check is nearly over once it asks for www.: the rest are in flight or waiting to start.
            most_ahead = max(most_ahead, pulled - www_asked)
            yield name

    settings = options(site, concurrency=concurrency, url_for=url_for)
    found = list(discover_redirects(source(), settings, policy=SITE_ONLY))

    assert sorted((redirect.domain, redirect.target) for redirect in found) == sorted(
        (names[index], target) for index, target in redirecting.items()
    )
    assert pulled == total
    assert most_ahead <= concurrency
    assert 1 < len(threads) <= concurrency
    assert discovery_threads() == []


def test_a_consumer_that_stops_early_leaves_no_thread(site, dns):
    dns.add("early-0.fr", "www.early-0.fr")
    site.add_redirect_host("early-0.fr", "http://early-target.fr/")
    pulled = 0

    def endless():
        nonlocal pulled
        for index in itertools.count():
            pulled += 1
            dns.add(f"early-{index}.fr", f"www.early-{index}.fr")
            yield f"early-{index}.fr"

    for redirect in discover_redirects(endless(), options(site, concurrency=6), policy=SITE_ONLY):
        assert redirect.target == "early-target.fr"
        break
    assert discovery_threads() == []

    redirects = discover_redirects(endless(), options(site, concurrency=6), policy=SITE_ONLY)
    assert next(redirects).target == "early-target.fr"
    assert discovery_threads()
    redirects.close()
    assert discovery_threads() == []
    taken = pulled
    assert list(redirects) == []
    assert pulled == taken  # the endless list is no longer read


def test_settings_are_checked():
    with pytest.raises(ValueError, match="concurrency"):
        discover_redirects([], RedirectSettings(concurrency=0))
    with pytest.raises(ValueError, match="max_hops"):
        discover_redirects([], RedirectSettings(max_hops=0))
