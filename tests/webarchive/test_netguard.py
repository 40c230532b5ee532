"""webarchive.netguard: which addresses are refused, and connections that keep to checked addresses."""

import socket
import time

import pytest
import requests

from tests.testsite_fixtures import self_signed_certificate
from webarchive import netguard
from webarchive.netguard import (
    METADATA_ADDRESSES,
    AddressPolicy,
    AddressRefused,
    GuardedAdapter,
    ResolutionTimeout,
    address_refusal,
    resolve,
)
from webarchive.testsite import TestSite

REFUSED = [
    # address, words the reason must contain
    ("127.0.0.1", "loopback"),
    ("127.255.0.9", "loopback"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "special-purpose"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.254", "private"),
    ("192.168.1.10", "private"),
    ("169.254.1.1", "link-local"),
    ("100.64.0.1", "shared"),
    ("100.127.255.254", "shared"),
    ("224.0.0.251", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("192.0.0.8", "special-purpose"),
    ("192.0.2.1", "documentation"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("198.18.0.1", "special-purpose"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("2001:db8::1", "documentation"),
    ("2001::1", "special-purpose"),  # Teredo
    ("64:ff9b:1::1", "special-purpose"),
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated)
    ("4000::1", "reserved"),  # outside 2000::/3
    # IPv4-mapped IPv6: judged by the IPv4 address
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:7f00:1", "loopback"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:192.168.0.1", "private"),
    ("::ffff:100.64.0.1", "shared"),
    # IPv4 reached through NAT64 or 6to4
    ("64:ff9b::7f00:1", "127.0.0.1, a loopback"),
    ("64:ff9b::a00:1", "10.0.0.1, a private"),
    ("2002:7f00:1::1", "127.0.0.1, a loopback"),
    ("2002:c0a8:1::1", "192.168.0.1, a private"),
    # cloud metadata services, whatever the spelling
    ("169.254.169.254", "metadata"),
    ("::ffff:169.254.169.254", "metadata"),
    ("::ffff:a9fe:a9fe", "metadata"),
    ("64:ff9b::a9fe:a9fe", "metadata"),
    ("2002:a9fe:a9fe::1", "metadata"),
    ("169.254.170.2", "metadata"),
    ("100.100.100.200", "Alibaba"),
    ("fd00:ec2::254", "metadata"),
    ("fd20:ce::254", "Google"),
    # not an address at all
    ("example.org", "not an IP address"),
    ("", "not an IP address"),
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "172.32.0.1",  # just after 172.16/12
    "100.128.0.1",  # just after 100.64/10
    "169.255.0.1",  # just after 169.254/16
    "11.0.0.1",
    "2606:4700:4700::1111",
    "2a00:1450:4007:80f::200e",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",  # IPv4-mapped public address
    "64:ff9b::808:808",  # NAT64 to a public address
    "2002:808:808::1",  # 6to4 of a public address
]


@pytest.mark.parametrize(("address", "words"), REFUSED)
def test_address_refusal_refuses(address, words):
    reason = address_refusal(address)
    assert reason is not None, address
    assert words in reason


@pytest.mark.parametrize("address", ALLOWED)
def test_address_refusal_allows_public_addresses(address):
    assert address_refusal(address) is None


@pytest.mark.parametrize("address", sorted(str(ip) for ip in METADATA_ADDRESSES))
def test_metadata_addresses_are_refused_by_every_policy(address):
    assert "metadata" in address_refusal(address)
    assert AddressPolicy(allow_private=True).refusal(address) is not None
    assert AddressPolicy.allowing(["0.0.0.0/0", "::/0"]).refusal(address) is not None


def test_policy_allow_private_and_allowed_networks():
    assert AddressPolicy().refusal("10.0.0.1") is not None
    assert AddressPolicy(allow_private=True).refusal("10.0.0.1") is None
    assert AddressPolicy(allow_private=True).refusal("::1") is None
    only_local = AddressPolicy.allowing(["127.0.0.1/32"])
    assert only_local.refusal("127.0.0.1") is None
    assert "loopback" in only_local.refusal("127.0.0.2")
    assert "private" in only_local.refusal("10.0.0.1")
    assert only_local.refusal("8.8.8.8") is None
    assert "metadata" in AddressPolicy.allowing(["169.254.0.0/16"]).refusal("169.254.169.254")
    assert AddressPolicy.allowing(["169.254.0.0/16"]).refusal("169.254.1.1") is None


def test_resolve_localhost_and_a_name_that_does_not_exist():
    assert "127.0.0.1" in resolve("localhost", 80)
    started = time.monotonic()
    with pytest.raises(socket.gaierror):
        resolve("no-such-host.invalid", 80)
    # .invalid never resolves (RFC 2606); here it must fail at once, not wait on a DNS server.
    assert time.monotonic() - started < 2


def test_resolve_gives_up_after_its_timeout(monkeypatch):
    def hanging_getaddrinfo(*args, **kwargs):
        time.sleep(3)
        return []

    monkeypatch.setattr(netguard.socket, "getaddrinfo", hanging_getaddrinfo)
    started = time.monotonic()
    with pytest.raises(ResolutionTimeout):
        resolve("slow-dns.test", 80, timeout=0.2)
    assert time.monotonic() - started < 1


def fake_dns(monkeypatch, answers):
    """Make socket.getaddrinfo answer ``answers[name]`` (a list: one answer per call, the last repeats)."""
    real = socket.getaddrinfo
    calls = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            calls.append(host)
            sequence = answers[host]
            address = sequence[min(len([c for c in calls if c == host]), len(sequence)) - 1]
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "getaddrinfo", getaddrinfo)
    return calls


def guarded_session(policy, **adapter_options):
    session = requests.Session()
    session.trust_env = False
    adapter = GuardedAdapter(policy, **adapter_options)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


@pytest.fixture
def listener():
    """A listening socket nobody should connect to: a connection would wait in its backlog."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.2)
        yield server


def assert_no_connection(server):
    with pytest.raises(TimeoutError):
        server.accept()


def test_adapter_refuses_before_connecting(listener):
    port = listener.getsockname()[1]
    with guarded_session(AddressPolicy()) as session, pytest.raises(AddressRefused) as refused:
        session.get(f"http://127.0.0.1:{port}/", timeout=2)
    assert refused.value.address == "127.0.0.1"
    assert "loopback" in refused.value.reason
    assert_no_connection(listener)


def test_adapter_refuses_a_name_resolving_to_a_private_address(listener):
    port = listener.getsockname()[1]
    with guarded_session(AddressPolicy()) as session, pytest.raises(AddressRefused) as refused:
        session.get(f"http://localhost:{port}/", timeout=2)
    assert refused.value.host == "localhost"
    assert_no_connection(listener)


def test_adapter_defeats_dns_rebinding(monkeypatch, listener):
    """The name looks public when checked, then resolves to loopback: the connection is refused."""
    port = listener.getsockname()[1]
    calls = fake_dns(monkeypatch, {"rebind.test": ["93.184.216.34", "127.0.0.1"]})
    checked = resolve("rebind.test", port)
    assert checked == ["93.184.216.34"]
    assert address_refusal(checked[0]) is None  # what a naive "check, then connect" would trust
    with guarded_session(AddressPolicy()) as session, pytest.raises(AddressRefused) as refused:
        session.get(f"http://rebind.test:{port}/", timeout=2)
    assert refused.value.address == "127.0.0.1"
    assert calls == ["rebind.test", "rebind.test"]
    assert_no_connection(listener)


def test_adapter_refuses_a_name_with_one_bad_address_among_good_ones(testsite):
    policy = AddressPolicy.allowing(["127.0.0.1/32"])
    resolver = {"mixed.test": ["127.0.0.1", "10.0.0.1"]}
    with (
        guarded_session(policy, resolver=lambda host, port: resolver[host]) as session,
        pytest.raises(AddressRefused) as refused,
    ):
        session.get(f"http://mixed.test:{testsite.port}/ok", timeout=2)
    assert refused.value.address == "10.0.0.1"


def test_adapter_connects_to_the_checked_address_and_keeps_the_host_name(testsite):
    policy = AddressPolicy.allowing(["127.0.0.1/32"])
    resolved = []

    def resolver(host, port):
        resolved.append((host, port))
        return ["127.0.0.1"]

    with guarded_session(policy, resolver=resolver) as session:
        response = session.get(f"http://archive-site.test:{testsite.port}/ok?guarded", timeout=2)
    assert response.status_code == 200
    assert resolved == [("archive-site.test", testsite.port)]
    received = [r for r in testsite.requests_to("/ok") if "guarded" in r.query]
    assert received[-1].headers["host"] == f"archive-site.test:{testsite.port}"


def test_adapter_default_resolver_checks_what_it_connects_to(monkeypatch, testsite):
    fake_dns(monkeypatch, {"local-name.test": ["127.0.0.1"]})
    url = f"http://local-name.test:{testsite.port}/ok"
    with guarded_session(AddressPolicy.allowing(["127.0.0.1/32"])) as session:
        assert session.get(url, timeout=2).status_code == 200
    with guarded_session(AddressPolicy()) as session, pytest.raises(AddressRefused):
        session.get(url, timeout=2)


def test_adapter_refuses_proxies(testsite):
    with (
        guarded_session(AddressPolicy(allow_private=True)) as session,
        pytest.raises(ValueError, match="proxy"),
    ):
        session.get(testsite.url("/ok"), proxies={"http": "http://127.0.0.1:9"}, timeout=2)


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    return self_signed_certificate(tmp_path_factory.mktemp("tls"), "archive-site.test")


def test_adapter_keeps_tls_verification_on_the_host_name(certificate):
    cert, key = certificate
    policy = AddressPolicy.allowing(["127.0.0.1/32"])
    with (
        TestSite(tls=(cert, key)) as secure,
        guarded_session(policy, resolver=lambda host, port: ["127.0.0.1"]) as session,
    ):
        # SNI and the certificate check use the name, though the socket goes to 127.0.0.1 …
        response = session.get(f"https://archive-site.test:{secure.port}/ok", verify=cert, timeout=2)
        assert response.status_code == 200
        assert secure.requests_to("/ok")[-1].headers["host"] == f"archive-site.test:{secure.port}"
        # … so a name the certificate does not cover fails, though it is the same address.
        with pytest.raises(requests.exceptions.SSLError, match="Hostname mismatch"):
            session.get(f"https://other-site.test:{secure.port}/ok", verify=cert, timeout=2)
