"""The DNS check (harvest.preload.dns) against a real resolver: dnsmasq on 127.0.0.1 (tests.dns_server).

Failures dnsmasq cannot be made to give (server failure, refusal, silence) come from
``ScriptedServer``, a UDP socket on 127.0.0.1 that answers every query with one rcode, or
not at all, and counts the queries it got.
"""

from __future__ import annotations

import itertools
import os
import select
import socket
import threading
import time

import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from harvest.preload.dns import DnsResult, DnsSettings, check_domains, parse_nameserver
from tests.dns_server import dns_server

SERVED = {
    "v4.test": "192.0.2.1",  # A only
    "v6.test": "2001:db8::1",  # AAAA only
    "www.wwwonly.test": "192.0.2.2",  # only www. has an address
    "both.test": ["192.0.2.3", "2001:db8::3"],
    "host.parent.test": "192.0.2.4",  # parent.test exists (it has a child) without an address
}


def check(names, *servers, **options) -> dict[str, DnsResult]:
    settings = DnsSettings(nameservers=tuple(servers), **{"timeout": 2.0, **options})
    results = {}
    for result in check_domains(names, settings):
        assert result.name not in results
        results[result.name] = result
    return results


class ScriptedServer:
    """A nameserver on 127.0.0.1 answering every query with ``rcode`` (None: never answering)."""

    def __init__(self, rcode: int | None):
        self.rcode = rcode
        self.queries: list[tuple[str, str]] = []  # (name, type) as received
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.address = self.sock.getsockname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self.sock.close()

    def _serve(self):
        while not self._stop.is_set():
            if not select.select([self.sock], [], [], 0.02)[0]:
                continue
            data, peer = self.sock.recvfrom(65535)
            query = dns.message.from_wire(data)
            question = query.question[0]
            self.queries.append(
                (question.name.to_text(omit_final_dot=True), dns.rdatatype.to_text(question.rdtype))
            )
            if self.rcode is not None:
                response = dns.message.make_response(query)
                response.set_rcode(self.rcode)
                self.sock.sendto(response.to_wire(), peer)


def _closed_port() -> tuple[str, int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()


# Answers --------------------------------------------------------------------------------------------


def test_a_aaaa_www_and_missing_names_with_the_fewest_queries():
    with dns_server(SERVED) as server:
        before = server.queries_answered()
        results = check(
            ["v4.test", "v6.test", "wwwonly.test", "both.test", "parent.test", "missing.test"], server.address
        )
        queries = server.queries_answered() - before
    assert results == {
        "v4.test": DnsResult("v4.test", True, ""),
        "v6.test": DnsResult("v6.test", True, ""),
        "wwwonly.test": DnsResult("wwwonly.test", True, ""),
        "both.test": DnsResult("both.test", True, ""),
        "parent.test": DnsResult("parent.test", False, "no address"),
        "missing.test": DnsResult("missing.test", False, "no such domain"),
    }
    # v4 1 (A), v6 2 (A, AAAA), wwwonly 3 (A, AAAA, www A), both 1, parent 3 (A, AAAA, www A: NXDOMAIN),
    # missing 2 (A: NXDOMAIN, so no AAAA; www A: NXDOMAIN, so no www AAAA)
    assert queries == 12


def test_names_are_matched_whatever_their_case_and_a_final_dot():
    with dns_server(SERVED) as server:
        results = check(["V4.Test", "both.test."], server.address)
    assert results["V4.Test"].live and results["both.test."].live


def test_a_truncated_answer_is_asked_again_over_tcp():
    many = [f"192.0.2.{i}" for i in range(1, 101)]  # 100 addresses: more than 512 bytes over UDP
    with dns_server({"many.test": many}) as server:
        assert check(["many.test"], server.address) == {"many.test": DnsResult("many.test", True, "")}


def test_invalid_names_are_reported_without_a_query():
    with ScriptedServer(rcode=None) as silent:
        results = check(["", "a..b.test", "x" * 64 + ".test"], silent.address, timeout=0.05)
    assert {name: result.live for name, result in results.items()} == dict.fromkeys(results, False)
    assert all(result.detail.startswith("invalid name") for result in results.values())
    assert silent.queries == []


# Failures and retries ----------------------------------------------------------------------------


def test_silence_is_a_timeout_after_the_retries_and_the_name_is_not_asked_further():
    with ScriptedServer(rcode=None) as silent:
        results = check(["quiet.test"], silent.address, timeout=0.05, retries=2)
        time.sleep(0.05)
    assert results["quiet.test"] == DnsResult("quiet.test", False, "timeout")
    assert silent.queries == [("quiet.test", "A")] * 3  # one try and two retries; no www. behind it


def test_a_port_where_nothing_listens_is_a_timeout():
    results = check(["nobody.test"], _closed_port(), timeout=0.05, retries=1)
    assert results["nobody.test"] == DnsResult("nobody.test", False, "timeout")


@pytest.mark.parametrize(
    ("rcode", "retries", "detail", "queries"),
    [
        (dns.rcode.SERVFAIL, 1, "server failure", [("broken.test", "A")] * 2),
        (dns.rcode.SERVFAIL, 0, "server failure", [("broken.test", "A")]),
        (dns.rcode.REFUSED, 2, "refused", [("broken.test", "A")] * 3),
        (dns.rcode.NOTIMP, 2, "server answered NOTIMP", [("broken.test", "A")]),
        # NXDOMAIN is an answer, never tried again: the name, then www., once each
        (dns.rcode.NXDOMAIN, 3, "no such domain", [("broken.test", "A"), ("www.broken.test", "A")]),
    ],
)
def test_failures_tried_again_or_not(rcode, retries, detail, queries):
    with ScriptedServer(rcode=rcode) as server:
        results = check(["broken.test"], server.address, retries=retries)
    assert results["broken.test"] == DnsResult("broken.test", False, detail)
    assert server.queries == queries


def test_a_retry_goes_to_the_next_nameserver():
    with ScriptedServer(rcode=None) as silent, dns_server(SERVED) as server:
        results = check(["v4.test"], silent.address, server.address, timeout=0.1, retries=1)
    assert results["v4.test"] == DnsResult("v4.test", True, "")
    assert silent.queries == [("v4.test", "A")]


def test_a_failing_domain_is_live_once_the_resolver_knows_it():
    with dns_server({"other.test": "192.0.2.9"}) as server:
        assert not check(["later.test"], server.address)["later.test"].live
        server.serve({"other.test": "192.0.2.9", "later.test": "192.0.2.10"})
        assert check(["later.test"], server.address)["later.test"] == DnsResult("later.test", True, "")
        server.serve({"other.test": "192.0.2.9"})
        assert check(["later.test"], server.address)["later.test"].detail == "no such domain"


# Scale and streaming -----------------------------------------------------------------------------


def _kind(i: int) -> str:
    return ("v4", "v6", "www", "missing", "noaddress")[i % 5]


def test_5000_domains_in_one_run():
    served = {}
    for i in range(5000):
        kind = _kind(i)
        if kind == "v4":
            served[f"d{i}.bulk.test"] = f"10.0.{i // 256}.{i % 256}"
        elif kind == "v6":
            served[f"d{i}.bulk.test"] = f"2001:db8::{i:x}"
        elif kind == "www":
            served[f"www.d{i}.bulk.test"] = f"10.1.{i // 256}.{i % 256}"
        elif kind == "noaddress":
            served[f"mail.d{i}.bulk.test"] = f"10.2.{i // 256}.{i % 256}"
    with dns_server(served, cache_size=20_000) as server:
        results = check((f"d{i}.bulk.test" for i in range(5000)), server.address, concurrency=200)
    assert len(results) == 5000
    expected = {"v4": "", "v6": "", "www": "", "missing": "no such domain", "noaddress": "no address"}
    wrong = [
        result
        for i in range(5000)
        if (result := results[f"d{i}.bulk.test"]).detail != expected[_kind(i)]
        or result.live != (expected[_kind(i)] == "")
    ]
    assert wrong == []


def test_names_are_pulled_only_as_results_are_taken():
    pulled = 0

    def names():
        nonlocal pulled
        for i in range(20_000):
            pulled += 1
            yield f"d{i}.stream.test"

    served = {f"d{i}.stream.test": f"10.3.{i // 256 % 256}.{i % 256}" for i in range(20_000)}
    concurrency, taken, most_ahead = 100, 0, 0
    with dns_server(served, cache_size=40_000) as server:
        results = check_domains(names(), DnsSettings(nameservers=(server.address,), concurrency=concurrency))
        for result in results:
            taken += 1
            most_ahead = max(most_ahead, pulled - taken)
            assert result.live, result
    assert taken == 20_000
    assert most_ahead < concurrency  # names in flight or waiting for the consumer, never more


def test_a_slow_consumer_does_not_turn_answers_into_timeouts():
    served = {f"d{i}.slow.test": "192.0.2.1" for i in range(300)}
    with dns_server(served) as server:
        settings = DnsSettings(nameservers=(server.address,), timeout=0.2, retries=0, concurrency=100)
        results = []
        for result in check_domains((f"d{i}.slow.test" for i in range(300)), settings):
            if len(results) % 100 == 0:
                time.sleep(0.5)  # longer than the timeout, while 100 queries are on the wire
            results.append(result)
    assert [result for result in results if not result.live] == []


def test_stopping_early_closes_everything():
    def open_files() -> int:
        return len(os.listdir("/proc/self/fd"))

    with ScriptedServer(rcode=None) as silent:
        before = open_files()
        results = check_domains(
            (f"d{i}.test" for i in itertools.count()),
            DnsSettings(nameservers=(silent.address,), timeout=0.05, retries=0, concurrency=10),
        )
        first = next(results)
        assert first == DnsResult(first.name, False, "timeout")
        results.close()
        sent = len(silent.queries)
        time.sleep(0.2)
        assert len(silent.queries) == sent  # nothing more is asked
        assert open_files() == before  # sockets and the event loop's selector closed


def test_an_error_from_the_names_reaches_the_consumer():
    def names():
        yield "a.test"
        raise OSError("the list broke")

    with ScriptedServer(rcode=dns.rcode.NXDOMAIN) as server, pytest.raises(OSError, match="the list broke"):
        list(check_domains(names(), DnsSettings(nameservers=(server.address,))))


# Settings ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1", ("127.0.0.1", 53)),
        (" 127.0.0.1:5353 ", ("127.0.0.1", 5353)),
        ("::1", ("::1", 53)),
        ("[::1]:53", ("::1", 53)),
        ("[2001:DB8::1]", ("2001:db8::1", 53)),
    ],
)
def test_parse_nameserver(text, expected):
    assert parse_nameserver(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "IP address"),
        ("ns1.example.org", "IP address"),
        ("127.0.0.1:", "port"),
        ("127.0.0.1:0", "port"),
        ("127.0.0.1:65536", "port"),
        ("127.0.0.1:dns", "port"),
        ("[::1", r"\[::1\]:53"),
        ("[::1]53", r"\[::1\]:53"),
        ("300.1.1.1", "IP address"),
    ],
)
def test_parse_nameserver_refuses(text, message):
    with pytest.raises(ValueError, match=message):
        parse_nameserver(text)


@pytest.mark.parametrize("options", [{"timeout": 0}, {"retries": -1}, {"concurrency": 0}])
def test_settings_out_of_range(options):
    with pytest.raises(ValueError):
        DnsSettings(**options)
