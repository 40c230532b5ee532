"""selection.urlcheck.check_url against the test website, over real sockets on 127.0.0.1."""

import json
import socket
import threading
import time
from datetime import datetime

import pytest

from selection.choices import CheckStatus
from selection.urlcheck import UrlCheckResult, check_url, run_check
from tests.testsite_fixtures import self_signed_certificate
from webarchive import netguard
from webarchive.netguard import AddressPolicy
from webarchive.testsite import TestSite

# The test website is on 127.0.0.1: this policy lets the first hop through and
# refuses every other loopback, private or reserved address, as in production.
ONLY_THE_TEST_SITE = AddressPolicy.allowing(["127.0.0.1/32"])


def check(url, **options):
    """check_url with private addresses allowed (the test website is on 127.0.0.1)."""
    options.setdefault("allow_private", True)
    options.setdefault("timeout", 2)
    return check_url(url, **options)


def hops(result):
    return [(hop.url, hop.status_code) for hop in result.hops]


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_ok(testsite):
    url = testsite.url("/ok")
    result = check(url)
    assert result.status == CheckStatus.OK
    assert result.message == "The server answered 200 OK."
    assert result.final_url == url
    assert hops(result) == [(url, 200)]
    hop = result.hops[0]
    assert hop.addresses == ["127.0.0.1"]
    assert hop.location == ""
    assert hop.error == ""
    assert 0 <= hop.elapsed_ms < 2000
    assert result.selectable
    checked_at = datetime.fromisoformat(result.checked_at)
    assert checked_at.tzinfo is not None
    assert abs(time.time() - checked_at.timestamp()) < 60


def test_a_chain_of_three_301(testsite):
    result = check(testsite.url("/redirect/3"))
    assert result.status == CheckStatus.REDIRECT
    assert hops(result) == [
        (testsite.url("/redirect/3"), 301),
        (testsite.url("/redirect/2"), 301),
        (testsite.url("/redirect/1"), 301),
        (testsite.url("/ok"), 200),
    ]
    assert [hop.location for hop in result.hops] == [
        testsite.url("/redirect/2"),
        testsite.url("/redirect/1"),
        testsite.url("/ok"),
        "",
    ]
    assert result.final_url == testsite.url("/ok")
    assert result.message == f"It redirects to {testsite.url('/ok')}, which answers 200 OK (3 redirects)."
    assert all(hop.addresses == ["127.0.0.1"] for hop in result.hops)
    assert result.selectable


def test_a_302(testsite):
    result = check(testsite.url("/redirect-302"))
    assert result.status == CheckStatus.REDIRECT
    assert hops(result) == [(testsite.url("/redirect-302"), 302), (testsite.url("/ok"), 200)]
    assert result.final_url == testsite.url("/ok")


def test_a_relative_location_is_resolved_against_the_hop(testsite):
    result = check(testsite.url("/redirect-relative"))
    assert result.status == CheckStatus.REDIRECT
    assert result.hops[0].location == "ok?via=relative"
    assert result.final_url == testsite.url("/ok?via=relative")
    assert hops(result)[-1] == (testsite.url("/ok?via=relative"), 200)


def test_max_redirects_is_a_limit_not_an_error(testsite):
    assert check(testsite.url("/redirect/3"), max_redirects=3).status == CheckStatus.REDIRECT
    result = check(testsite.url("/redirect/5"), max_redirects=3)
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message.startswith("More than 3 redirects.")
    assert len(result.hops) == 4
    assert not result.selectable


def test_redirect_loop(testsite):
    result = check(testsite.url("/loop"))
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == f"The redirects go round in a loop (back to {testsite.url('/loop')})."
    assert hops(result) == [(testsite.url("/loop"), 302)]


def test_a_redirect_to_the_same_url_with_a_new_cookie_is_not_a_loop(testsite):
    url = testsite.url("/cookie-redirect")
    result = check(url)
    assert result.status == CheckStatus.REDIRECT
    assert hops(result) == [(url, 302), (url, 200)]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/not-found", "The server answered 404 Not Found."),
        ("/error", "The server answered 500 Internal Server Error."),
    ],
)
def test_an_error_answer_is_invalid(testsite, path, message):
    result = check(testsite.url(path))
    assert result.status == CheckStatus.INVALID
    assert result.message == message
    assert result.final_url == ""
    assert not result.selectable


def test_an_error_after_a_redirect_says_where(testsite):
    result = check(testsite.url("/redirect-to?url=/not-found"))
    assert result.status == CheckStatus.INVALID
    assert result.message == (
        f"The server answered 404 Not Found. (At {testsite.url('/not-found')}, after 1 redirect.)"
    )
    assert hops(result)[-1] == (testsite.url("/not-found"), 404)


def test_no_answer_within_the_timeout(testsite):
    started = time.monotonic()
    result = check(testsite.url("/slow?seconds=2"), timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == "No answer within 0.5 s from 127.0.0.1."
    assert result.hops[0].status_code is None
    assert "timed out" in result.hops[0].error


def test_the_body_is_not_downloaded(testsite):
    # /drip sends its headers at once, then its body over 5 s: only the headers are waited for.
    started = time.monotonic()
    result = check(testsite.url("/drip?seconds=5"), timeout=3)
    assert result.status == CheckStatus.OK
    assert time.monotonic() - started < 1.5


def test_no_dns_entry():
    started = time.monotonic()
    result = check("http://no-such-host.invalid/page", allow_private=False)
    assert time.monotonic() - started < 3
    assert result.status == CheckStatus.INVALID
    assert result.message == "No DNS entry for no-such-host.invalid."
    assert result.hops[0].addresses == []
    assert result.hops[0].status_code is None


def test_a_dns_failure_that_is_not_a_missing_entry_is_unreachable(monkeypatch):
    def failing_getaddrinfo(*args, **kwargs):
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(netguard.socket, "getaddrinfo", failing_getaddrinfo)
    result = check("http://dns-down.test/")
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == "The DNS lookup of dns-down.test failed (Temporary failure in name resolution)."


def test_the_test_site_itself_is_refused_without_private_addresses(testsite):
    result = check(testsite.url("/refused-probe"), allow_private=False)
    assert result.status == CheckStatus.REFUSED
    assert (
        result.message
        == "127.0.0.1 is a loopback address (this machine itself): the archive does not connect to it."
    )
    assert result.hops[0].addresses == ["127.0.0.1"]
    assert result.hops[0].status_code is None
    assert testsite.requests_to("/refused-probe") == []  # nothing was sent
    assert not result.selectable


def test_a_name_resolving_to_a_private_address_is_refused(testsite):
    result = check(f"http://localhost:{testsite.port}/refused-probe", allow_private=False)
    assert result.status == CheckStatus.REFUSED
    assert result.message.startswith("localhost resolves to 127.0.0.1, a loopback address")
    assert testsite.requests_to("/refused-probe") == []


def test_allow_private_defaults_to_the_setting(testsite, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    assert check_url(testsite.url("/ok"), timeout=2).status == CheckStatus.REFUSED
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    assert check_url(testsite.url("/ok"), timeout=2).status == CheckStatus.OK


def test_metadata_addresses_are_refused_even_with_private_addresses_allowed():
    result = check("http://169.254.169.254/latest/meta-data/", allow_private=True, timeout=0.5)
    assert result.status == CheckStatus.REFUSED
    assert "169.254.169.254 is a cloud metadata service address" in result.message


@pytest.mark.parametrize(
    ("target", "address", "reason"),
    [
        ("http://127.0.0.2/", "127.0.0.2", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254", "metadata"),
        ("http://10.0.0.1/admin", "10.0.0.1", "private"),
        ("http://192.168.1.1/", "192.168.1.1", "private"),
        ("http://100.64.0.1/", "100.64.0.1", "shared"),
        ("http://[::1]/", "::1", "loopback"),
        ("http://[::ffff:127.0.0.2]/", "::ffff:127.0.0.2", "loopback"),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254", "metadata"),
    ],
)
def test_a_redirect_to_a_refused_address_is_refused(testsite, target, address, reason):
    start = testsite.url(f"/redirect-to?url={target}")
    result = run_check(start, policy=ONLY_THE_TEST_SITE, timeout=0.5)
    assert result.status == CheckStatus.REFUSED
    assert [hop.status_code for hop in result.hops] == [302, None]
    assert result.hops[0].location == target
    assert result.hops[1].addresses == [address]
    assert reason in result.hops[1].error
    assert f"{address} is a" in result.message
    assert reason in result.message
    assert "after 1 redirect" in result.message


def test_a_redirect_to_a_name_resolving_to_a_private_address_is_refused(testsite, monkeypatch):
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "intranet.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("10.1.2.3", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "getaddrinfo", getaddrinfo)
    result = run_check(
        testsite.url("/redirect-to?url=http://intranet.test/wiki"), policy=ONLY_THE_TEST_SITE, timeout=0.5
    )
    assert result.status == CheckStatus.REFUSED
    assert result.message.startswith("intranet.test resolves to 10.1.2.3, a private network address")
    assert result.hops[1].url == "http://intranet.test/wiki"
    assert result.hops[1].addresses == ["10.1.2.3"]


def test_the_check_connects_only_to_the_address_it_checked(testsite, monkeypatch):
    """DNS rebinding: the name answers 127.0.0.1 (allowed) once, then 10.0.0.1; no second lookup happens."""
    real = socket.getaddrinfo
    lookups = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host == "rebind.test":
            lookups.append(host)
            address = "127.0.0.1" if len(lookups) == 1 else "10.0.0.1"
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(netguard.socket, "getaddrinfo", getaddrinfo)
    url = f"http://rebind.test:{testsite.port}/ok?rebind"
    result = run_check(url, policy=ONLY_THE_TEST_SITE, timeout=2)
    assert result.status == CheckStatus.OK
    assert result.hops[0].addresses == ["127.0.0.1"]
    assert lookups == ["rebind.test"]
    received = [request for request in testsite.requests_to("/ok") if "rebind" in request.query]
    assert received[-1].headers["host"] == f"rebind.test:{testsite.port}"


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("ftp://example.org/file", "Only http and https URLs can be harvested, not “ftp”."),
        ("mailto:someone@example.org", "Only http and https URLs can be harvested, not “mailto”."),
        ("http://user:secret@example.org/", "cannot contain a user name or password"),
    ],
)
def test_a_redirect_to_a_url_that_cannot_be_harvested_is_invalid(testsite, target, words):
    result = check(testsite.url(f"/redirect-to?url={target}"))
    assert result.status == CheckStatus.INVALID
    assert result.message.startswith(f"It redirects to “{target}”, which cannot be harvested:")
    assert words in result.message
    assert len(result.hops) == 1


@pytest.fixture
def plain_tcp_server():
    """A TCP server that is not a TLS server: it says a line of text and hangs up."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _address = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.sendall(b"HELLO, this is not TLS\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def test_tls_error(plain_tcp_server):
    result = check(f"https://127.0.0.1:{plain_tcp_server}/")
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == (
        "The secure connection to 127.0.0.1 failed: the site does not speak HTTPS on this port, "
        "or refused the secure connection."
    )
    assert result.hops[0].status_code is None
    assert "SSL" in result.hops[0].error  # the technical text is kept, for engineers


def test_a_redirect_to_https_on_a_port_without_tls(testsite):
    result = check(testsite.url("/redirect-to-https"))
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message.startswith("The secure connection to 127.0.0.1 failed: ")
    assert hops(result) == [
        (testsite.url("/redirect-to-https"), 301),
        (f"https://127.0.0.1:{testsite.port}/ok", None),
    ]


def test_an_untrusted_certificate_is_a_tls_error(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "127.0.0.1")
    with TestSite(tls=(cert, key)) as secure:
        result = check(secure.url("/ok"))
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == (
        "The secure connection to 127.0.0.1 failed: the site's certificate is self-signed: "
        "no certification authority vouches for it."
    )


def test_a_certificate_for_another_name_is_said_so_in_words(tmp_path, settings):
    cert, key = self_signed_certificate(tmp_path, "other.example")
    settings.SELECTION_URL_CHECK_CA_BUNDLE = cert  # trusted: only its name is wrong
    with TestSite(tls=(cert, key)) as secure:
        result = check(secure.url("/ok"))
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == (
        "The secure connection to 127.0.0.1 failed: the site's certificate is not valid for this name."
    )
    assert "Error" not in result.message and "[SSL" not in result.message


def test_connection_refused():
    port = free_port()
    result = check(f"http://127.0.0.1:{port}/")
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message == f"127.0.0.1 refused the connection on port {port}."
    assert result.hops[0].addresses == ["127.0.0.1"]


def test_the_user_agent_is_the_configured_one(testsite, settings):
    settings.SELECTION_URL_CHECK_USER_AGENT = "archive-check-test/9"
    check(testsite.url("/ok?user-agent-probe"))
    received = [request for request in testsite.requests_to("/ok") if "user-agent-probe" in request.query]
    assert len(received) == 1
    assert received[0].method == "GET"
    assert received[0].headers["user-agent"] == "archive-check-test/9"


def test_the_settings_give_the_defaults(testsite, settings):
    settings.SELECTION_URL_CHECK_MAX_REDIRECTS = 2
    settings.SELECTION_URL_CHECK_TIMEOUT = 0.5
    result = check_url(testsite.url("/redirect/3"), allow_private=True)
    assert result.message.startswith("More than 2 redirects.")
    result = check_url(testsite.url("/slow?seconds=2"), allow_private=True)
    assert result.message == "No answer within 0.5 s from 127.0.0.1."


def test_a_url_that_is_not_valid_is_invalid_without_any_request():
    result = check("ftp://example.org/")
    assert result.status == CheckStatus.INVALID
    assert result.hops == []
    assert "Only http and https" in result.message


def test_the_result_round_trips_through_json(testsite):
    result = check(testsite.url("/redirect/2"))
    again = UrlCheckResult.from_dict(json.loads(json.dumps(result.as_dict())))
    assert again == result
    assert again.hops[0].status_code == 301


def test_a_chain_of_slow_redirects_is_cut_by_the_total_time_limit(testsite):
    """Each hop is within the per-request timeout, but together they are not."""
    ok = testsite.url("/ok")
    second = testsite.url(f"/slow?seconds=0.4&then={ok}")
    first = testsite.url(f"/slow?seconds=0.4&then={second.replace('&', '%26')}")
    result = run_check(first, policy=ONLY_THE_TEST_SITE, timeout=2, total_timeout=0.6)
    assert result.status == CheckStatus.UNREACHABLE
    assert result.message.startswith("The check took longer than 0.6 s.")
    assert len(result.hops) == 2
    relaxed = run_check(first, policy=ONLY_THE_TEST_SITE, timeout=2, total_timeout=5)
    assert (relaxed.status, relaxed.final_url) == (CheckStatus.REDIRECT, ok)
