"""Which network addresses the archive may connect to, and connections that keep to them.

Anything that fetches a URL given by a user or found on the web (the online
check of a proposed URL, later the crawler) must not be usable to reach this
machine, the library's internal network or a cloud metadata service
(server-side request forgery). Three pieces:

- :func:`address_refusal` says why an IP address must not be contacted
  (loopback, private, link-local, multicast, shared 100.64/10, reserved,
  unspecified, cloud metadata…), or ``None`` for a public internet address.
  IPv6 addresses that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``,
  NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) are judged by that IPv4 address
  too. :class:`AddressPolicy` adds the exceptions a deployment or a test
  allows; cloud metadata addresses are refused by every policy.
- :func:`resolve` is ``socket.getaddrinfo`` reduced to a list of addresses,
  with an optional time limit.
- :class:`GuardedAdapter` is a ``requests`` transport adapter that connects
  only to addresses it has checked.

Defence against DNS rebinding
-----------------------------
Checking the name first (``resolve`` + ``address_refusal``) and then letting
``requests`` connect is not enough: ``requests``/urllib3 resolve the name a
second time when they open the socket, and a hostile DNS server with a zero
TTL can answer a public address to the check and ``127.0.0.1`` or
``169.254.169.254`` to the connection. So the connection itself is guarded:
the adapter's urllib3 connections override ``_new_conn`` (the one place where
urllib3 turns a host name into a socket) to resolve the host once, check
*every* address it resolves to (one refused address refuses the host: a name
that mixes public and private addresses is not trustworthy), and then open the
TCP connection to one of those checked IP addresses, never to the name. Only
the socket is affected: urllib3 still sends ``Host:`` with the host name, and
for HTTPS still uses the host name for SNI and certificate verification
(``server_hostname`` is taken from the connection's ``host``, not from the
peer address), so TLS stays as strict as usual. Redirects are not followed by
the adapter; whoever follows them sends a new request, which goes through the
same check. A connection kept alive in the pool was opened to a checked
address, so reusing it is safe.

This is sounder than connecting normally and then checking
``sock.getpeername()``: that would already have sent a TCP handshake to the
forbidden host (enough for port scanning or for a blind request to a service
that acts on connection), while here no packet leaves for an address that was
not checked. The resolver can be replaced (``GuardedAdapter(resolver=…)``) so
that a caller that has already resolved and reported the addresses — the URL
check records them on each hop — pins the connection to exactly those.

Proxies are not supported by the guard (a proxy resolves the name itself, so
the check would have to happen there): the adapter refuses to be used with
one, and sessions using it should set ``trust_env = False`` so that
``HTTP(S)_PROXY`` from the environment is ignored.
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.poolmanager import PoolManager
from urllib3.util.timeout import _DEFAULT_TIMEOUT

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


# The reasons are English unless the application installs its translation (webarchive.apps does,
# in the web and worker processes); the crawler core uses this module without Django.
_translate: Callable[[str], str] = str


def set_translation(gettext: Callable[[str], str]) -> None:
    """Translate the reasons given from now on with ``gettext`` (Django's, once it is set up)."""
    global _translate
    _translate = gettext


def _(message: str) -> str:
    return _translate(message)


Resolver = Callable[[str, int], list[str]]

# Instance metadata and similar host-only services of cloud platforms: reaching
# them from a server can leak its credentials. Refused whatever the policy.
METADATA_ADDRESSES: dict[IPAddress, str] = {
    ipaddress.ip_address(address): provider
    for address, provider in (
        ("169.254.169.254", "AWS, Google Cloud, Azure, OpenStack, DigitalOcean, Oracle, Hetzner…"),
        ("169.254.170.2", "AWS ECS task credentials"),
        ("169.254.170.23", "AWS EKS Pod Identity"),
        ("169.254.0.23", "Tencent Cloud"),
        ("169.254.42.42", "Scaleway"),
        ("100.100.100.200", "Alibaba Cloud"),
        ("192.0.0.192", "Oracle Cloud Classic"),
        ("168.63.129.16", "Azure WireServer"),
        ("fd00:ec2::254", "AWS IPv6"),
        ("fd00:ec2::23", "AWS EKS Pod Identity IPv6"),
        ("fd20:ce::254", "Google Cloud IPv6"),
        ("fd00:42::42", "Scaleway IPv6"),
    )
}

NAT64_PREFIX = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052, the IPv4 address is the last 32 bits
SIXTOFOUR_PREFIX = ipaddress.ip_network("2002::/16")  # RFC 3056, the IPv4 address follows the prefix
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")

# Explicit tables (from the IANA special-purpose address registries) rather than
# ipaddress's is_private/is_global, whose answers changed between Python 3.11
# patch releases. First match wins, so the most precise reason comes first.
_UNSPECIFIED = "unspecified"
_LOOPBACK = "loopback"
_LINK_LOCAL = "link-local"
_MULTICAST = "multicast"
_SHARED = "shared"
_PRIVATE = "private"
_SPECIAL = "special"
_DOCUMENTATION = "documentation"
_RESERVED = "reserved"
_SITE_LOCAL = "site-local"

_SPECIAL_NETWORKS = [
    (ipaddress.ip_network(network), kind)
    for network, kind in (
        ("0.0.0.0/32", _UNSPECIFIED),
        ("0.0.0.0/8", _SPECIAL),  # "this network"
        ("127.0.0.0/8", _LOOPBACK),
        ("169.254.0.0/16", _LINK_LOCAL),
        ("224.0.0.0/4", _MULTICAST),
        ("100.64.0.0/10", _SHARED),  # RFC 6598, carrier-grade NAT
        ("10.0.0.0/8", _PRIVATE),
        ("172.16.0.0/12", _PRIVATE),
        ("192.168.0.0/16", _PRIVATE),
        ("192.0.0.0/24", _SPECIAL),  # IETF protocol assignments
        ("192.0.2.0/24", _DOCUMENTATION),
        ("198.51.100.0/24", _DOCUMENTATION),
        ("203.0.113.0/24", _DOCUMENTATION),
        ("198.18.0.0/15", _SPECIAL),  # benchmarking
        ("192.88.99.0/24", _SPECIAL),  # former 6to4 relay anycast
        ("240.0.0.0/4", _RESERVED),  # with 255.255.255.255, the broadcast address
        ("::/128", _UNSPECIFIED),
        ("::1/128", _LOOPBACK),
        ("64:ff9b:1::/48", _SPECIAL),  # local-use IPv4/IPv6 translation
        ("100::/64", _SPECIAL),  # discard-only
        ("2001::/23", _SPECIAL),  # IETF protocol assignments, Teredo
        ("2001:db8::/32", _DOCUMENTATION),
        ("3fff::/20", _DOCUMENTATION),
        ("5f00::/16", _SPECIAL),  # segment routing (SRv6) identifiers
        ("fc00::/7", _PRIVATE),  # unique local addresses
        ("fe80::/10", _LINK_LOCAL),
        ("fec0::/10", _SITE_LOCAL),
        ("ff00::/8", _MULTICAST),
    )
]


def _kind_reason(kind: str) -> str:
    return {
        _UNSPECIFIED: _("the unspecified address (“any address”)"),
        _LOOPBACK: _("a loopback address (this machine itself)"),
        _LINK_LOCAL: _("a link-local address (the local network segment)"),
        _MULTICAST: _("a multicast address"),
        _SHARED: _("a shared address (carrier-grade NAT, 100.64.0.0/10)"),
        _PRIVATE: _("a private network address"),
        _SPECIAL: _("a special-purpose address, not on the public internet"),
        _DOCUMENTATION: _("an address reserved for documentation"),
        _RESERVED: _("a reserved address"),
        _SITE_LOCAL: _("a site-local IPv6 address"),
    }[kind]


class AddressRefused(Exception):
    """A connection to a host was not made because one of its addresses is not allowed.

    Deliberately not an ``OSError``: urllib3 and requests wrap and retry those,
    while this one must reach the caller as it is.
    """

    def __init__(self, host: str, address: str, reason: str):
        self.host = host
        self.address = address
        self.reason = reason
        super().__init__(f"{host} resolves to {address}: {reason}")


class ResolutionTimeout(TimeoutError):
    """The DNS lookup did not answer in time."""


def parse_address(address: str | IPAddress) -> IPAddress:
    """An ``ipaddress`` object from a string, without the ``%scope`` of a link-local IPv6 address."""
    if isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address):
        return address
    text = str(address).strip().strip("[]").split("%", 1)[0]
    return ipaddress.ip_address(text)


def metadata_provider(address: str | IPAddress) -> str | None:
    """Whose metadata service ``address`` is (also as an IPv4-mapped IPv6 address), or ``None``."""
    try:
        ip = parse_address(address)
    except ValueError:
        return None
    for candidate in (ip, *_embedded_ipv4(ip)):
        if candidate in METADATA_ADDRESSES:
            return METADATA_ADDRESSES[candidate]
    return None


def address_refusal(address: str | IPAddress) -> str | None:
    """Why the archive must not connect to ``address``, or ``None`` if it is a public address."""
    try:
        ip = parse_address(address)
    except ValueError:
        return _("“%(address)s” is not an IP address") % {"address": address}
    provider = metadata_provider(ip)
    if provider:
        return _("a cloud metadata service address (%(provider)s)") % {"provider": provider}
    if ip.version == 6:
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is the IPv4 address itself
            return address_refusal(ip.ipv4_mapped)
        if ip in NAT64_PREFIX:  # reaches the IPv4 address through a NAT64 gateway
            return _embedded_refusal(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    for network, kind in _SPECIAL_NETWORKS:
        if ip.version == network.version and ip in network:
            return _kind_reason(kind)
    if ip.version == 6:
        if ip not in GLOBAL_UNICAST_V6:
            return _("a reserved address")
        if ip in SIXTOFOUR_PREFIX:
            return _embedded_refusal(ip.sixtofour)
    return None


def _embedded_refusal(ipv4: ipaddress.IPv4Address) -> str | None:
    reason = address_refusal(ipv4)
    if reason is None:
        return None
    return _("an IPv6 address leading to the IPv4 address %(ipv4)s, %(reason)s") % {
        "ipv4": ipv4,
        "reason": reason,
    }


def _embedded_ipv4(ip: IPAddress) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address leads to: IPv4-mapped, NAT64 and 6to4."""
    if ip.version != 6:
        return []
    found = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in NAT64_PREFIX:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    return found


@dataclass(frozen=True)
class AddressPolicy:
    """Which addresses may be contacted: public ones, plus what the deployment allows.

    ``allow_private`` allows every address except cloud metadata services (a
    development machine checking sites on localhost); ``allowed_networks``
    allows only some (an intranet the library harvests, the test website).
    """

    allow_private: bool = False
    allowed_networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    @classmethod
    def allowing(cls, networks: Iterable[str]) -> AddressPolicy:
        return cls(allowed_networks=tuple(ipaddress.ip_network(network) for network in networks))

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why this policy refuses ``address``, or ``None``."""
        try:
            ip = parse_address(address)
        except ValueError:
            return address_refusal(address)
        provider = metadata_provider(ip)
        if provider:
            return address_refusal(ip)
        if self.allow_private or any(ip in network for network in self.allowed_networks):
            return None
        return address_refusal(ip)


def is_ip_literal(host: str) -> bool:
    try:
        parse_address(host)
    except ValueError:
        return False
    return True


# Nameservers this process asks instead of the system's resolver (use_nameservers), or None.
_dns_resolver = None
DNS_CACHE_SIZE = 100_000  # answers kept by the process's own resolver (for their TTL)
DNS_DEFAULT_LIFETIME = 10.0  # seconds for a lookup given no time limit


def use_nameservers(nameservers: Iterable[str]) -> None:
    """Resolve names through these DNS servers (``address`` or ``address:port``, ``[v6]:port``)
    instead of the system's resolver, in this whole process; none goes back to the system's.

    A crawl worker given its own caching resolver (``HARVEST_DNS_SERVERS``) asks it directly, with
    a time limit per lookup and no thread per lookup, as broad crawlers do. Raises ``ValueError``
    for a server that is not an IP address and port.
    """
    global _dns_resolver
    servers = [_nameserver(entry.strip()) for entry in nameservers if entry.strip()]
    if not servers:
        _dns_resolver = None
        return
    import dns.nameserver
    import dns.resolver

    resolver = dns.resolver.Resolver(configure=False)
    resolver.nameservers = [dns.nameserver.Do53Nameserver(address, port) for address, port in servers]
    resolver.cache = dns.resolver.LRUCache(DNS_CACHE_SIZE)
    _dns_resolver = resolver


def _nameserver(entry: str) -> tuple[str, int]:
    address, port = entry, 53
    if entry.startswith("["):
        address, _, rest = entry[1:].partition("]")
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"not a nameserver address: {entry!r}")
            port = _port(entry, rest[1:])
    elif entry.count(":") == 1:
        address, _, text = entry.partition(":")
        port = _port(entry, text)
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(f"a nameserver is an IP address (and :port), not {entry!r}") from None
    return address, port


def _port(entry: str, text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"not a port in the nameserver {entry!r}")
    return int(text)


def _query(resolver, host: str, timeout: float | None) -> list[str]:
    """IPv4 then IPv6 addresses of ``host`` from the configured nameservers."""
    import dns.exception
    import dns.resolver

    addresses: list[str] = []
    lifetime = timeout if timeout is not None else DNS_DEFAULT_LIFETIME
    for rdtype in ("A", "AAAA"):
        try:
            answer = resolver.resolve(host, rdtype, search=False, lifetime=lifetime)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            continue
        except dns.exception.Timeout as error:
            raise ResolutionTimeout(f"no DNS answer for {host} within {lifetime:g} s") from error
        except (dns.resolver.NoNameservers, dns.exception.DNSException) as error:
            raise socket.gaierror(socket.EAI_AGAIN, f"{host}: {error}") from error
        addresses.extend(record.address for record in answer if record.address not in addresses)
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, f"{host} does not resolve")
    return addresses


def resolve(host: str, port: int, *, timeout: float | None = None) -> list[str]:
    """The addresses ``host`` resolves to for a TCP connection, in the resolver's order.

    Raises ``socket.gaierror`` when the name does not resolve, and
    :class:`ResolutionTimeout` when ``timeout`` (seconds) passes first: the
    system resolver has no time limit of its own, so the lookup then runs in a
    daemon thread that is abandoned. With nameservers of its own (:func:`use_nameservers`)
    the process asks them directly instead.
    """
    resolver = _dns_resolver
    if resolver is not None:
        if is_ip_literal(host):
            return [str(parse_address(host))]
        return _query(resolver, host, timeout)
    if timeout is None:
        return _getaddrinfo(host, port)
    outcome: dict[str, object] = {}
    done = threading.Event()

    def lookup() -> None:
        try:
            outcome["addresses"] = _getaddrinfo(host, port)
        except BaseException as error:  # handed over to the waiting thread
            outcome["error"] = error
        finally:
            done.set()

    threading.Thread(target=lookup, name=f"resolve {host}", daemon=True).start()
    if not done.wait(timeout):
        raise ResolutionTimeout(f"no DNS answer for {host} within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["addresses"]  # type: ignore[return-value]


def _getaddrinfo(host: str, port: int) -> list[str]:
    addresses: list[str] = []
    for _family, _type, _proto, _canonname, sockaddr in socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    ):
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def connect_checked(
    host: str,
    port: int,
    *,
    policy: AddressPolicy,
    resolver: Resolver | None = None,
    timeout: float | object | None = _DEFAULT_TIMEOUT,
    source_address: tuple[str, int] | None = None,
    socket_options: Iterable[tuple[int, int, int | bytes]] | None = None,
) -> socket.socket:
    """A TCP socket to one of the addresses of ``host``, all of them checked first.

    ``resolver`` replaces :func:`resolve`, which is otherwise limited to ``timeout``.
    Raises :class:`AddressRefused` if any address is refused, ``socket.gaierror``
    if the name does not resolve, ``TimeoutError`` or ``OSError`` if no address
    accepts the connection.
    """
    host = host.strip("[]")
    if is_ip_literal(host):
        addresses = [host]
    elif resolver is not None:
        addresses = resolver(host, port)
    else:
        limit = timeout if isinstance(timeout, int | float) else None
        addresses = resolve(host, port, timeout=limit)
    if not addresses:
        raise socket.gaierror(socket.EAI_NONAME, f"no address for {host}")
    for address in addresses:
        reason = policy.refusal(address)
        if reason:
            raise AddressRefused(host, address, reason)
    last_error: OSError | None = None
    for address in addresses:
        try:
            return _open_socket(parse_address(address), port, timeout, source_address, socket_options)
        except OSError as error:
            last_error = error
    assert last_error is not None
    raise last_error


def _open_socket(ip, port, timeout, source_address, socket_options) -> socket.socket:
    # Straight to the IP address: no second name lookup can happen here.
    family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
    target = (str(ip), port) if ip.version == 4 else (str(ip), port, 0, 0)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        for option in socket_options or ():
            sock.setsockopt(*option)
        if timeout is not _DEFAULT_TIMEOUT:
            sock.settimeout(timeout)
        if source_address:
            sock.bind(source_address)
        sock.connect(target)
    except BaseException:
        sock.close()
        raise
    return sock


class _Guard:
    """What the guarded connections of one adapter share."""

    def __init__(self, policy: AddressPolicy, resolver: Resolver | None):
        self.policy = policy
        self.resolver = resolver


class _GuardedConnectionMixin:
    """Replaces urllib3's name-to-socket step (``_new_conn``) with :func:`connect_checked`."""

    # The checked IP address the socket is connected to (the crawler records it in its WARC files).
    peer_address: str | None = None

    def __init__(self, *args, guard: _Guard, **kwargs):
        self._guard = guard
        super().__init__(*args, **kwargs)

    def _new_conn(self) -> socket.socket:
        try:
            sock = connect_checked(
                self._dns_host,
                self.port,
                policy=self._guard.policy,
                resolver=self._guard.resolver,
                timeout=self.timeout,
                source_address=self.source_address,
                socket_options=self.socket_options,
            )
        except socket.gaierror as error:
            raise NameResolutionError(self.host, self, error) from error
        except TimeoutError as error:  # socket.timeout and ResolutionTimeout
            raise ConnectTimeoutError(
                self, f"Connection to {self.host} timed out. (connect timeout={self.timeout})"
            ) from error
        except OSError as error:
            raise NewConnectionError(self, f"Failed to establish a new connection: {error}") from error
        try:
            self.peer_address = str(sock.getpeername()[0])
        except OSError:  # reset already: the request on it fails and says so
            self.peer_address = None
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class _GuardedPoolManager(PoolManager):
    def __init__(self, *args, guard: _Guard, **kwargs):
        self._guard = guard
        super().__init__(*args, **kwargs)

    def _new_pool(self, scheme, host, port, request_context=None):
        pool = super()._new_pool(scheme, host, port, request_context)
        pool.ConnectionCls = GuardedHTTPSConnection if scheme == "https" else GuardedHTTPConnection
        pool.conn_kw = {**pool.conn_kw, "guard": self._guard}
        return pool


def guarded_pool_manager(policy, *, resolver: Resolver | None = None, **kwargs) -> PoolManager:
    """A urllib3 PoolManager whose connections go only to addresses ``policy`` allows.

    The same guard as :class:`GuardedAdapter`, without ``requests`` on top (the crawler, which
    pays for every microsecond of a request). ``kwargs`` go to PoolManager.
    """
    return _GuardedPoolManager(guard=_Guard(policy, resolver), **kwargs)


class GuardedAdapter(HTTPAdapter):
    """A ``requests`` adapter whose connections go only to addresses ``policy`` allows.

    Mount it for ``http://`` and ``https://`` on a session with ``trust_env =
    False``. A refused address raises :class:`AddressRefused` from
    ``session.get()``; everything else behaves as with the default adapter.
    ``resolver(host, port) -> list[str]`` replaces the DNS lookup (default
    :func:`resolve`, limited to the connect timeout).
    """

    def __init__(self, policy: AddressPolicy | None = None, *, resolver: Resolver | None = None, **kwargs):
        self._guard = _Guard(policy or AddressPolicy(), resolver)
        super().__init__(**kwargs)

    @property
    def policy(self) -> AddressPolicy:
        return self._guard.policy

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        self._pool_connections = connections
        self._pool_maxsize = maxsize
        self._pool_block = block
        self.poolmanager = _GuardedPoolManager(
            num_pools=connections, maxsize=maxsize, block=block, guard=self._guard, **pool_kwargs
        )

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        raise ValueError("GuardedAdapter cannot be used through a proxy (the proxy would resolve the name)")


def error_causes(error: BaseException) -> Iterator[BaseException]:
    """The error and everything it wraps (requests → urllib3 → socket/ssl), outermost first."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [getattr(current, "reason", None), current.__cause__, current.__context__, *current.args]
        pending.extend(item for item in wrapped if isinstance(item, BaseException))
