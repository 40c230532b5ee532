"""The DNS check of a broad-crawl preparation: is each domain (or ``www.`` + it) resolvable?

A domain is live when an A or AAAA query for the name or for ``www.`` + the name gets
an address. ``check_domains`` streams: it pulls names from any iterable as lookups
finish, keeps at most ``concurrency`` of them in flight or waiting to be handed over,
and yields a ``DnsResult`` for each as it completes (in no particular order).

Queries are built and answers parsed with dnspython (names, messages, rcodes; TCP for
truncated answers through ``dns.asyncquery``), but the UDP transport is our own: one
socket per nameserver, answers matched to queries by id and question. dnspython's
asyncio resolver opens a socket per query, which caps it near 2,000 queries/s on this
machine, far below what a local resolver serves (see docs/benchmarks.md).

The order of queries wastes as few as possible: A for the name, then AAAA, then the same
for ``www.`` + the name; an NXDOMAIN for a name skips its AAAA query (the name does not
exist for any type), and the first address ends the lookup. A timeout, server failure or
refusal is tried again ``retries`` times (on the next nameserver, if there are several);
when the tries are used up the lookup ends with that reason: the name's own servers
answer for ``www.`` + the name too, so asking them again would only cost time.

Nameservers given by the caller are checked against an address policy before any socket is
opened (``check_domains(..., policy=...)``): a preparation must not be
usable to send queries to this machine, the internal network or a cloud metadata service. The
system's nameservers (/etc/resolv.conf) are the machine's own configuration and are not checked.

The event loop is a private one, run in the calling thread while results are awaited and
paused while the consumer handles them; the time it spends paused does not count towards
the queries' timeouts, so a slow consumer does not turn answers into timeouts.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ipaddress
import random
import socket
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import dns.asyncquery
import dns.exception
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.resolver

from webarchive.netguard import AddressPolicy, AddressRefused

_A, _AAAA = dns.rdatatype.A, dns.rdatatype.AAAA
_STEPS = ((False, _A), (False, _AAAA), (True, _A), (True, _AAAA))  # (www., type), in this order
_HEADER = struct.Struct("!HHHHHH")
_RECURSION_DESIRED = 0x0100
_QR, _TC = 0x8000, 0x0200
_NOERROR, _SERVFAIL, _NXDOMAIN, _REFUSED = 0, 2, 3, 5
_TRIED_AGAIN = {_SERVFAIL: "server failure", _REFUSED: "refused"}
_RECEIVE_BUFFER = 4 * 2**20  # the kernel caps it (net.core.rmem_max); bursts of answers fit


@dataclass(frozen=True)
class DnsSettings:
    """How to resolve: which nameservers, how long to wait, how often to try, how many at once."""

    nameservers: tuple[tuple[str, int], ...] = ()  # empty: the system's (/etc/resolv.conf)
    timeout: float = 2.0  # per try
    retries: int = 1  # extra tries after a timeout, SERVFAIL or REFUSED (not after NXDOMAIN)
    concurrency: int = 500  # lookups in flight

    def __post_init__(self):
        if not self.timeout > 0:
            raise ValueError(f"the DNS timeout must be more than 0 seconds, not {self.timeout}")
        if self.retries < 0:
            raise ValueError(f"DNS retries cannot be negative ({self.retries})")
        if not 1 <= self.concurrency <= 50_000:
            raise ValueError(f"DNS concurrency must be between 1 and 50,000, not {self.concurrency}")


@dataclass(frozen=True)
class DnsResult:
    """The outcome of one domain's lookup."""

    name: str  # the domain as given
    live: bool  # an A or AAAA answer for name or www.name
    detail: str  # "" when live, else a short reason: "no such domain", "no address", "timeout", …


@dataclass
class DnsStats:
    """What a ``check_domains`` run has sent so far (pass one in to watch it)."""

    queries: int = 0  # over UDP or TCP, tries again included
    retries: int = 0  # tries again after a timeout, server failure or refusal
    timeouts: int = 0  # tries that got no answer in time


def parse_nameserver(text: str) -> tuple[str, int]:
    """``("127.0.0.1", 53)`` from ``127.0.0.1``, ``127.0.0.1:5353``, ``::1`` or ``[::1]:53``."""
    value = text.strip()
    host, port = value, "53"
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{text!r} is not a nameserver: write an IPv6 address with a port as [::1]:53")
        port = rest[1:] if rest else port
    elif value.count(":") == 1:
        host, port = value.split(":")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a nameserver: give an IP address with an optional port,"
            " as 127.0.0.1, 127.0.0.1:5353, ::1 or [::1]:53"
        ) from None
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"{text!r} is not a nameserver: the port must be a number from 1 to 65535")
    return str(address), int(port)


class NameserverRefused(AddressRefused):
    """A nameserver on an address the policy refuses: no query is sent to it."""

    def __str__(self):
        return f"{self.host} is not allowed as a nameserver: {self.reason}"


def system_nameservers() -> tuple[tuple[str, int], ...]:
    """The nameservers of /etc/resolv.conf, as dnspython reads them."""
    try:
        resolver = dns.resolver.Resolver()
    except dns.resolver.NoResolverConfiguration:
        raise ValueError("no nameserver in /etc/resolv.conf: give one") from None
    servers = []
    for server in resolver.nameservers:
        try:
            address = str(ipaddress.ip_address(str(server)))
        except ValueError:
            continue  # a DNS-over-HTTPS URL or the like: not for this check
        servers.append((address, resolver.nameserver_ports.get(str(server), resolver.port)))
    if not servers:
        raise ValueError("no plain DNS nameserver in /etc/resolv.conf: give one")
    return tuple(servers)


def check_domains(
    names: Iterable[str],
    settings: DnsSettings,
    *,
    stats: DnsStats | None = None,
    policy: AddressPolicy | None = None,
) -> Iterator[DnsResult]:
    """Resolve every name, yielding its result as soon as it is known (order not kept).

    With ``policy``, every nameserver of ``settings`` is checked first, and one it refuses raises
    :class:`NameserverRefused` before any query is sent (the preparation always passes its
    policy; without one, as in the benchmark, the nameservers are the caller's own)."""
    if policy is not None:
        for address, port in settings.nameservers:
            reason = policy.refusal(address)
            if reason:
                raise NameserverRefused(_nameserver_text(address, port), address, reason)
    checker = _Checker(names, settings, stats if stats is not None else DnsStats())
    try:
        yield from checker.results()
    finally:
        checker.close()


# The machinery -------------------------------------------------------------------------------------


class _Lookup:
    """One domain on its way through the four queries."""

    __slots__ = ("name", "nodata", "step", "tries", "wire", "www_wire")

    def __init__(self, name: str, wire: bytes, www_wire: bytes | None):
        self.name = name
        self.wire = wire
        self.www_wire = www_wire
        self.step = 0
        self.tries = 0
        self.nodata = False  # some name exists without an address (rather than not at all)


class _Query:
    """One query on the wire, waiting for its answer until ``deadline``."""

    __slots__ = ("deadline", "lookup", "qid", "qtype", "question", "server")

    def __init__(self, lookup, server, qid, question, deadline, qtype):
        self.lookup = lookup
        self.server = server
        self.qid = qid
        self.question = question
        self.deadline = deadline
        self.qtype = qtype


class _Server:
    """A nameserver: a connected UDP socket and the queries waiting on it, by id."""

    def __init__(self, address: str, port: int):
        self.address, self.port = address, port
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RECEIVE_BUFFER)
            self.sock.connect((address, port))
        except OSError:
            self.sock.close()
            raise
        self.waiting: dict[int, _Query] = {}

    def new_id(self) -> int:
        while True:
            qid = random.getrandbits(16)
            if qid not in self.waiting:
                return qid


class _Checker:
    def __init__(self, names: Iterable[str], settings: DnsSettings, stats: DnsStats):
        self.names = iter(names)
        self.settings = settings
        self.stats = stats
        self.loop = asyncio.new_event_loop()
        self.servers: list[_Server] = []
        try:
            for address, port in settings.nameservers or system_nameservers():
                self.servers.append(_Server(address, port))
        except BaseException:
            self.close()
            raise
        self.next_server = 0
        self.active = 0  # lookups started and not finished
        self.exhausted = False  # no more names
        self.done: list[DnsResult] = []  # finished, not yet handed to the consumer
        self.timeouts: collections.deque[_Query] = collections.deque()  # in deadline order
        self.tcp_tasks: set[asyncio.Task] = set()
        self.wakeup: asyncio.Future | None = None
        self.error: BaseException | None = None
        self.paused = 0.0  # seconds the loop stood still while the consumer had the results
        self.sweeper: asyncio.TimerHandle | None = None
        self.sweep_every = max(0.005, min(0.1, settings.timeout / 10))

    # The consumer's side: run the loop until some results are ready, hand them over, go on.

    def results(self) -> Iterator[DnsResult]:
        for server in self.servers:
            self.loop.add_reader(server.sock.fileno(), self._read, server)
        self.sweeper = self.loop.call_later(self.sweep_every, self._sweep)
        self._fill()
        while True:
            if self.error is not None:
                raise self.error
            if self.done:
                batch, self.done = self.done, []
                stopped = time.monotonic()
                yield from batch
                self.paused += time.monotonic() - stopped
                self._fill()
                continue
            if self.exhausted and not self.active:
                return
            self.wakeup = self.loop.create_future()
            self.loop.run_until_complete(self.wakeup)

    def close(self) -> None:
        """Stop everything under way: sockets closed, TCP queries cancelled, the loop closed."""
        if self.loop.is_closed():
            return
        if self.sweeper is not None:
            self.sweeper.cancel()
        for task in self.tcp_tasks:
            task.cancel()
        if self.tcp_tasks:
            self.loop.run_until_complete(asyncio.gather(*self.tcp_tasks, return_exceptions=True))
        for server in self.servers:
            self.loop.remove_reader(server.sock.fileno())
            server.sock.close()
        self.loop.close()

    def _wake(self) -> None:
        if self.wakeup is not None and not self.wakeup.done():
            self.wakeup.set_result(None)

    def _now(self) -> float:
        return self.loop.time() - self.paused

    # Starting and ending lookups.

    def _fill(self) -> None:
        """Start lookups until ``concurrency`` names are in flight or waiting for the consumer."""
        limit = self.settings.concurrency
        while not self.exhausted and self.active + len(self.done) < limit:
            try:
                name = next(self.names)
            except StopIteration:
                self.exhausted = True
            except BaseException as error:  # the consumer sees it where it iterates
                self.exhausted = True
                self.error = error
            else:
                self._start(name)
        if self.exhausted and not self.active:
            self._wake()

    def _start(self, name: str) -> None:
        try:
            wire = _name_wire(name)
            if wire == b"\0":
                raise ValueError("empty")
        except (dns.exception.DNSException, UnicodeError, ValueError) as error:
            self.done.append(DnsResult(name, False, f"invalid name ({_reason(error)})"))
            self._wake()
            return
        www_wire = b"\x03www" + wire if len(wire) + 4 <= 255 else None
        self.active += 1
        self._send(_Lookup(name, wire, www_wire))

    def _finish(self, lookup: _Lookup, live: bool, detail: str = "") -> None:
        self.active -= 1
        self.done.append(DnsResult(lookup.name, live, detail))
        self._wake()

    def _next_step(self, lookup: _Lookup, step: int) -> None:
        if step >= 2 and lookup.www_wire is None:
            step = 4
        if step >= 4:
            self._finish(lookup, False, "no address" if lookup.nodata else "no such domain")
            return
        lookup.step, lookup.tries = step, 0
        self._send(lookup)

    def _failed(self, lookup: _Lookup, reason: str) -> None:
        """A try got no usable answer: try again, or end the lookup with ``reason``."""
        if lookup.tries < self.settings.retries:
            lookup.tries += 1
            self.stats.retries += 1
            self._send(lookup)
        else:
            self._finish(lookup, False, reason)

    # The wire.

    def _send(self, lookup: _Lookup) -> None:
        www, qtype = _STEPS[lookup.step]
        servers = self.servers
        server = servers[self.next_server % len(servers)]
        self.next_server += 1
        qid = server.new_id()
        question = (lookup.www_wire if www else lookup.wire) + struct.pack("!HH", qtype, 1)
        query = _Query(lookup, server, qid, question, self._now() + self.settings.timeout, qtype)
        server.waiting[qid] = query
        self.timeouts.append(query)
        self.stats.queries += 1
        # A full buffer or an unreachable server: the query ends as a timeout, and is tried again.
        with contextlib.suppress(OSError):
            server.sock.send(_HEADER.pack(qid, _RECURSION_DESIRED, 1, 0, 0, 0) + question)

    def _read(self, server: _Server) -> None:
        receive, waiting = server.sock.recv, server.waiting
        for _ in range(self.settings.concurrency + 16):  # then let the timers run too
            try:
                data = receive(65535)
            except BlockingIOError:
                break
            except OSError:
                continue  # an ICMP error for an earlier query (nothing listens): that query times out
            if len(data) < 12:
                continue
            qid, flags = int.from_bytes(data[0:2], "big"), int.from_bytes(data[2:4], "big")
            query = waiting.get(qid)
            if (
                query is None
                or not flags & _QR
                or data[12 : 12 + len(query.question)].lower() != query.question
            ):
                continue  # late (already timed out), stray or forged
            del waiting[qid]
            query.deadline = -1.0  # answered: the sweeper drops it
            if flags & _TC:
                self._over_tcp(query)
            else:
                self._answer(query, flags & 0xF, data)

    def _answer(self, query: _Query, rcode: int, data: bytes) -> None:
        lookup = query.lookup
        if rcode == _NOERROR:
            if data[6:8] != b"\0\0" and _has_address(data, query.qtype, 12 + len(query.question)):
                self._finish(lookup, True)
                return
            lookup.nodata = True
            self._next_step(lookup, lookup.step + 1)
        elif rcode == _NXDOMAIN:
            self._next_step(lookup, 2 if lookup.step < 2 else 4)  # no such name, whatever the type
        elif rcode in _TRIED_AGAIN:
            self._failed(lookup, _TRIED_AGAIN[rcode])
        else:
            self._finish(lookup, False, f"server answered {dns.rcode.to_text(rcode)}")

    def _sweep(self) -> None:
        now, timeouts = self._now(), self.timeouts
        while timeouts and timeouts[0].deadline <= now:
            query = timeouts.popleft()
            if query.deadline < 0:
                continue  # answered in time
            del query.server.waiting[query.qid]
            self.stats.timeouts += 1
            self._failed(query.lookup, "timeout")
        self.sweeper = self.loop.call_later(self.sweep_every, self._sweep)

    def _over_tcp(self, query: _Query) -> None:
        """A truncated answer: ask again over TCP (rare for A and AAAA)."""
        self.stats.queries += 1
        task = self.loop.create_task(self._tcp(query))
        self.tcp_tasks.add(task)
        task.add_done_callback(self.tcp_tasks.discard)

    async def _tcp(self, query: _Query) -> None:
        wire = _HEADER.pack(query.qid, _RECURSION_DESIRED, 1, 0, 0, 0) + query.question
        try:
            answer = await dns.asyncquery.tcp(
                dns.message.from_wire(wire),
                query.server.address,
                timeout=self.settings.timeout,
                port=query.server.port,
            )
        except (dns.exception.Timeout, TimeoutError):
            self.stats.timeouts += 1
            self._failed(query.lookup, "timeout")
        except (OSError, dns.exception.DNSException) as error:
            self._failed(query.lookup, f"TCP query failed ({_reason(error)})")
        else:
            self._answer(query, answer.rcode() & 0xF, answer.to_wire())


def _has_address(data: bytes, qtype: int, question_end: int) -> bool:
    """Whether a NOERROR answer holds a record of the type asked (not only a CNAME, say).

    A walk over the answer section's records, reading only their types: parsing whole
    messages with dnspython took most of the time of a lookup. A malformed answer has none."""
    count, at, end = int.from_bytes(data[6:8], "big"), question_end, len(data)
    try:
        for _ in range(count):
            while True:  # the owner name: labels, ended by a zero or a compression pointer
                length = data[at]
                if length >= 0xC0:
                    at += 2
                    break
                at += length + 1
                if length == 0:
                    break
            if int.from_bytes(data[at : at + 2], "big") == qtype:
                return at + 10 <= end
            at += 10 + int.from_bytes(data[at + 8 : at + 10], "big")
    except IndexError:
        return False
    return False


def _name_wire(name: str) -> bytes:
    """The name in wire form, lower case; plain ASCII names without dnspython (the hot path)."""
    if name.isascii() and "\\" not in name:
        labels = name.lower().removesuffix(".").split(".")
        if all(0 < len(label) < 64 for label in labels) and len(name) < 254:
            return b"".join(len(label).to_bytes(1, "big") + label.encode() for label in labels) + b"\0"
    return dns.name.from_text(name).canonicalize().to_wire()


def _nameserver_text(address: str, port: int) -> str:
    """A nameserver as it is written (parse_nameserver's input): 127.0.0.1:5353, [::1]:53."""
    if port == 53:
        return address
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def _reason(error: BaseException) -> str:
    return str(error) or type(error).__name__
