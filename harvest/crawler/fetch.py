"""Fetching one URL the way a WARC file needs it: the bytes as sent, a payload digest, limits kept.

A :class:`Fetcher` holds the settings of a harvest (user agent, address
policy, timeouts, size and time caps, digest algorithm); each site crawl
takes a :class:`FetchSession` from it, which keeps one connection alive per
host and turns every request into an :class:`Exchange`, never an exception.

What the server sent is kept as it sent it: the body is read from the socket
without undoing its ``Content-Encoding`` (a gzip page is stored gzipped),
only the transfer chunking is removed, and the headers are then adjusted to
match (``Transfer-Encoding: chunked`` dropped, ``Content-Length`` set to the
de-chunked length). The payload digest is computed while reading, over that
de-chunked entity body. The request head is recorded as the connection wrote
it on the wire.

Every connection goes through the address guard
(:func:`webarchive.netguard.guarded_pool_manager`), so an address the policy
refuses (loopback, private networks, cloud metadata…) is never contacted: it
becomes ``Exchange.error_code`` (a :class:`~harvest.crawler.outcomes.FetchError`, for machines)
and ``Exchange.error`` (its words, for people). urllib3 is used directly, not through requests:
requests adds some 0.6 ms of Python to every request, most of a crawler's
time per URL.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.client
import io
import select
import socket
import ssl
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import BinaryIO

from urllib3 import Timeout
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    InsecureRequestWarning,
    LocationValueError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util import parse_url

from harvest.crawler import defaults
from harvest.crawler.outcomes import FetchError
from webarchive.netguard import (
    AddressRefused,
    GuardedHTTPConnection,
    GuardedHTTPSConnection,
    ResolutionTimeout,
    address_refusal,
    error_causes,
    guarded_pool_manager,
)

DIGEST_ALGORITHMS = ("sha256", "sha1")
ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
ACCEPT_ENCODING = "gzip, deflate"  # only what decoded_body() can undo
SPOOL_BYTES = 1024 * 1024  # bodies up to this size stay in memory
READ_BYTES = 64 * 1024
POLL_SECONDS = 1.0  # the longest a body read waits before the stop and the deadlines are looked at again
HOSTS_KEPT = 10  # hosts of one site crawl whose connection is kept alive
HTTP_VERSIONS = {9: "HTTP/0.9", 10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}
# What asking can raise for reasons of the network, the server or the URL (ValueError: unparsable URLs).
_REQUEST_ERRORS = (HTTPError, AddressRefused, OSError, ValueError, http.client.HTTPException)


def format_digest(digester, algorithm: str) -> str:
    """A hashlib object's digest as WARC writes it: ``algorithm:BASE32``."""
    return f"{algorithm}:{base64.b32encode(digester.digest()).decode('ascii')}"


@dataclass
class Exchange:
    """One HTTP request and its response, as the WARC records need them.

    ``error_code`` and ``error`` are set (and the response fields are empty) when no response was
    received: why, as a :class:`FetchError`, and in words. ``body`` holds the entity body as sent
    (content-encoded, not chunked); ``truncated`` says why it was cut ("length", "time",
    "disconnect", or what ``fetch(interrupted=…)`` or its ``deadline`` said: "stopped", "deadline").
    """

    url: str
    method: str = "GET"
    request_head: bytes = b""
    request_body: bytes = b""  # what a POST sent (browser capture); written after the head
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    duration: float = 0.0
    peer_ip: str | None = None
    error_code: FetchError | None = None
    error: str | None = None
    status: int = 0
    reason: str = ""
    http_version: str = ""
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: BinaryIO = field(default_factory=io.BytesIO)
    body_length: int = 0
    truncated: str | None = None
    payload_digest: str = ""
    content_type: str = ""
    charset: str | None = None

    def header(self, name: str) -> str | None:
        """The first value of the response header ``name`` (case-insensitive), or None."""
        wanted = name.lower()
        return next((value for key, value in self.headers if key.lower() == wanted), None)

    def decoded_body(self, limit: int = 20 * 1024 * 1024) -> bytes:
        """The body with its Content-Encoding undone, at most ``limit`` bytes; b"" if it cannot be decoded.

        Decoded chunk by chunk, and no further than ``limit``: a small gzip bomb never becomes a big
        string (only the first ``limit`` bytes of what it decodes to are ever held).
        """
        codings = [
            coding.strip().lower()
            for coding in (self.header("Content-Encoding") or "").split(",")
            if coding.strip() and coding.strip().lower() != "identity"
        ]
        try:
            self.body.seek(0)
            if not codings:
                return self.body.read(limit)
            if any(coding not in _WBITS for coding in codings):
                return b""
            chunks = _chunks(self.body)
            for coding in reversed(codings):  # applied in order, so undone in reverse
                chunks = _inflating(chunks, coding)
            out = bytearray()
            for chunk in chunks:
                out += chunk[: limit - len(out)]
                if len(out) >= limit:
                    break
            return bytes(out)
        except (zlib.error, ValueError, OSError):  # ValueError: a closed body
            return b""
        finally:
            if not self.body.closed:
                self.body.seek(0)

    def close(self) -> None:
        """Free the body (its temporary file, if it grew past memory)."""
        self.body.close()


def _chunks(stream: BinaryIO) -> Iterator[bytes]:
    while chunk := stream.read(READ_BYTES):
        yield chunk


# gzip is also sent as zlib by some servers: 32 + 15 accepts both headers.
_WBITS = {"gzip": 32 + zlib.MAX_WBITS, "x-gzip": 32 + zlib.MAX_WBITS, "deflate": None}


def _inflating(chunks: Iterator[bytes], coding: str) -> Iterator[bytes]:
    """``chunks`` with ``coding`` undone, at most READ_BYTES decoded at a time (whatever the ratio)."""
    decompressor = None
    for chunk in chunks:
        pending = chunk
        while pending:
            if decompressor is None:
                decompressor = zlib.decompressobj(_wbits(coding, pending))
            elif decompressor.eof:
                if coding == "deflate" or pending[:1] != b"\x1f":
                    return  # bytes after the end of the stream are not content
                decompressor = zlib.decompressobj(_wbits(coding, pending))  # another gzip member
            decoded = decompressor.decompress(pending, READ_BYTES)
            pending = decompressor.unconsumed_tail or (decompressor.unused_data if decompressor.eof else b"")
            if decoded:
                yield decoded


def _wbits(coding: str, start: bytes) -> int:
    wbits = _WBITS[coding]
    if wbits is not None:
        return wbits
    # "deflate" means zlib-wrapped by the standard, but many servers send raw deflate.
    if len(start) >= 2 and start[0] & 0x0F == 8 and (start[0] << 8 | start[1]) % 31 == 0:
        return zlib.MAX_WBITS
    return -zlib.MAX_WBITS


def media_type(value: str | None) -> tuple[str, str | None]:
    """The lower-case MIME type and the charset (or None) of a Content-Type header value."""
    if not value:
        return "", None
    mime, *parameters = value.split(";")
    charset = None
    for parameter in parameters:
        name, _, found = parameter.partition("=")
        if name.strip().lower() == "charset":
            charset = found.strip().strip("\"'").lower() or None
            break
    return mime.strip().lower(), charset


class Fetcher:
    """The fetch settings of one harvest; hands out a :class:`FetchSession` per site crawl.

    ``address_check(ip)`` returns why an address must not be contacted, or
    None (e.g. ``AddressPolicy(...).refusal``); without one, only public
    addresses are allowed. ``verify_tls=False`` archives sites whose
    certificate is invalid (expired, self-signed), as archiving crawlers often do.
    """

    def __init__(
        self,
        *,
        user_agent: str,
        address_check: Callable[[str], str | None] | None = None,
        connect_timeout: float = defaults.CONNECT_TIMEOUT,
        read_timeout: float = defaults.READ_TIMEOUT,
        max_response_bytes: int = defaults.MAX_RESPONSE_BYTES,
        max_fetch_seconds: float = defaults.MAX_FETCH_SECONDS,
        digest_algorithm: str = defaults.DIGEST_ALGORITHM,
        verify_tls: bool = True,
    ):
        if digest_algorithm not in DIGEST_ALGORITHMS:
            raise ValueError(f"unsupported digest algorithm {digest_algorithm!r}")
        if not verify_tls:  # deliberate: one warning per request would say nothing new
            warnings.filterwarnings("ignore", category=InsecureRequestWarning)
        self.user_agent = user_agent
        self.address_check = address_check or address_refusal
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_response_bytes = max_response_bytes
        self.max_fetch_seconds = max_fetch_seconds
        self.digest_algorithm = digest_algorithm
        self.verify_tls = verify_tls

    def session(self) -> FetchSession:
        """A new session for one site crawl (used by one thread at a time)."""
        return FetchSession(self)


class _CheckPolicy:
    """Adapts a plain ``address_check`` function to what GuardedAdapter expects of a policy."""

    def __init__(self, check: Callable[[str], str | None]):
        self.refusal = check


class _Recorder:
    """What the last request of a session put on the wire, filled in by its connection."""

    request_head = b""
    peer_address: str | None = None
    connection = None  # the connection of the request in flight (interrupt() shuts its socket)


class _RecordingMixin:
    """Reports to the session's recorder what the connection sends, and where to."""

    def __init__(self, *args, recorder: _Recorder, **kwargs):
        self._recorder = recorder
        super().__init__(*args, **kwargs)

    def endheaders(self, message_body=None, *, encode_chunked=False):
        # http.client sends its header buffer joined exactly like this.
        head = b"\r\n".join([*self._buffer, b"", b""])
        super().endheaders(message_body, encode_chunked=encode_chunked)  # opens a new connection
        self._recorder.request_head = head
        self._recorder.peer_address = self.peer_address
        self._recorder.connection = self


class _RecordingHTTPConnection(_RecordingMixin, GuardedHTTPConnection):
    pass


class _RecordingHTTPSConnection(_RecordingMixin, GuardedHTTPSConnection):
    pass


class FetchSession:
    """Fetches for one site crawl, with one kept-alive connection per host; never follows redirects."""

    def __init__(self, fetcher: Fetcher):
        self.fetcher = fetcher
        self.digest_algorithm = fetcher.digest_algorithm
        self._recorder = _Recorder()
        self._headers = {
            "User-Agent": fetcher.user_agent,
            "Accept": ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,
            "Connection": "keep-alive",
        }
        self._timeout = Timeout(connect=fetcher.connect_timeout, read=fetcher.read_timeout)
        self._manager = guarded_pool_manager(
            _CheckPolicy(fetcher.address_check),
            num_pools=HOSTS_KEPT,
            maxsize=1,
            cert_reqs="CERT_REQUIRED" if fetcher.verify_tls else "CERT_NONE",
        )
        # The pools of the hosts asked lately, by (scheme, host, port): asked directly, not through the
        # manager, which would parse the URL twice and build a pool key at every request.
        self._pools: dict[tuple, object] = {}

    def fetch(
        self,
        url: str,
        *,
        headers: dict | None = None,
        method: str = "GET",
        body: bytes | None = None,
        deadline: float | None = None,
        deadline_reason: str = "time",
        interrupted: Callable[[], str | None] | None = None,
    ) -> Exchange:
        """Ask for ``url`` (GET unless the browser says otherwise); problems end up in ``Exchange.error``.

        ``headers`` replace the session's own of the same name; ``deadline`` (``time.monotonic()``)
        cuts the answer short like the harvest's time cap, whichever comes first (``truncated`` is then
        ``deadline_reason``). ``interrupted()`` is asked between reads of the body (at least every
        POLL_SECONDS, however slowly the server sends): a reason it returns ("stopped") cuts the body
        there. A thread that wants the fetch ended sooner than that calls :meth:`interrupt`.
        """
        limits = _Limits(deadline, deadline_reason, interrupted)
        exchange, stale = self._attempt(url, headers, method, body, limits)
        if stale and method in ("GET", "HEAD") and limits.reason() is None:  # a kept-alive connection
            exchange, _ = self._attempt(url, headers, method, body, limits)  # the server had closed
        return exchange

    def interrupt(self) -> None:
        """End the request in flight now, from another thread (its ``interrupted()`` says why).

        A read that waits for the next bytes of a stalled chunk header would otherwise wait until
        the read timeout; shutting the socket down wakes it at once.
        """
        connection = self._recorder.connection
        sock = getattr(connection, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._pools.clear()
        self._manager.clear()

    def __enter__(self) -> FetchSession:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _attempt(
        self, url: str, headers: dict | None, method: str, body: bytes | None, limits: _Limits
    ) -> tuple[Exchange, bool]:
        fetcher = self.fetcher
        self._recorder.request_head = b""
        self._recorder.peer_address = None
        self._recorder.connection = None
        started_at = datetime.now(UTC)
        start = time.monotonic()
        try:
            pool, target = self._pool(url)
            response = pool.urlopen(
                method,
                target,
                body=body,
                headers=_merged(self._headers, headers) if headers else self._headers,
                redirect=False,
                retries=False,
                assert_same_host=False,
                preload_content=False,
                decode_content=False,
                timeout=self._timeout,
            )
        except _REQUEST_ERRORS as error:
            interrupted = limits.reason()
            code, text = (FetchError.INTERRUPTED, interrupted) if interrupted else classify_error(error)
            exchange = Exchange(
                url=url,
                method=method,
                request_head=self._recorder.request_head,
                request_body=body or b"",
                started_at=started_at,
                duration=time.monotonic() - start,
                peer_ip=self._recorder.peer_address,
                error_code=code,
                error=text,
            )
            return exchange, _is_stale_connection(error)
        raw = response
        exchange = Exchange(
            url=url,
            method=method,
            request_head=self._recorder.request_head,
            request_body=body or b"",
            started_at=started_at,
            peer_ip=self._recorder.peer_address,
            status=response.status,
            reason=raw.reason or "",
            http_version=HTTP_VERSIONS.get(raw.version, "HTTP/1.1"),
        )
        sent_headers = _headers_as_sent(raw)
        exchange.body = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (Exchange.close)
        try:
            self._read_body(response, exchange, cap=start + fetcher.max_fetch_seconds, limits=limits)
        finally:
            if exchange.truncated:  # bytes left unread: the connection cannot be used again
                response.close()
            response.release_conn()
        exchange.duration = time.monotonic() - start
        exchange.body.seek(0)
        exchange.headers = _dechunked(sent_headers, exchange.body_length) if raw.chunked else sent_headers
        exchange.content_type, exchange.charset = media_type(exchange.header("Content-Type"))
        return exchange, False

    def _pool(self, url: str):
        """The connection pool of ``url``'s host, recording what its connections send; and the request target.

        As the pool manager does it (the same parse, the same pools), without its work per request.
        """
        parsed = parse_url(url)
        key = (parsed.scheme, parsed.host, parsed.port)
        pool = self._pools.get(key)
        if pool is None or pool.pool is None:  # not asked lately, or closed by the manager (its LRU)
            pool = self._manager.connection_from_host(parsed.host, port=parsed.port, scheme=parsed.scheme)
            if pool.conn_kw.get("recorder") is not self._recorder:
                pool.ConnectionCls = (
                    _RecordingHTTPSConnection if pool.scheme == "https" else _RecordingHTTPConnection
                )
                pool.conn_kw["recorder"] = self._recorder
            self._pools.pop(key, None)
            self._pools[key] = pool
            if len(self._pools) > HOSTS_KEPT:
                del self._pools[next(iter(self._pools))]  # the longest unused
        return pool, parsed.request_uri

    def _read_body(self, response, exchange: Exchange, *, cap: float, limits: _Limits) -> None:
        """Read the body, looking at the caps, the deadline and ``interrupted()`` between reads.

        A read is only made when bytes are there to read (or within POLL_SECONDS), so a server
        sending a byte now and then holds the thread no longer than the next look at the limits;
        only a read inside a chunk header can wait longer, up to the read timeout, deadline or
        :meth:`interrupt`.
        """
        fetcher = self.fetcher
        raw = response
        connection = raw.connection
        digester = hashlib.new(self.digest_algorithm)
        length = 0
        last_bytes = time.monotonic()
        while True:
            now = time.monotonic()
            reason = limits.reason(now)
            if reason is None and (now >= cap or now - last_bytes >= fetcher.read_timeout):
                reason = "time"
            if reason is not None:
                exchange.truncated = reason
                break
            until = min(cap, last_bytes + fetcher.read_timeout, limits.deadline or cap)
            sock = getattr(connection, "sock", None)
            if sock is not None:
                if not _body_waiting(raw, sock, min(POLL_SECONDS, until - now)):
                    continue
                sock.settimeout(max(until - time.monotonic(), 0.001))
            try:
                chunk = raw.read1(READ_BYTES, decode_content=False)
            except ReadTimeoutError:
                exchange.truncated = limits.reason() or "time"
                break
            except (ProtocolError, Urllib3SSLError, OSError, http.client.HTTPException):
                exchange.truncated = limits.reason() or "disconnect"
                break
            if not chunk:
                break
            last_bytes = time.monotonic()
            room = fetcher.max_response_bytes - length
            if len(chunk) > room:
                chunk = chunk[:room]
                exchange.truncated = "length"
            exchange.body.write(chunk)
            digester.update(chunk)
            length += len(chunk)
            if exchange.truncated:
                break
        exchange.body_length = length
        exchange.payload_digest = format_digest(digester, self.digest_algorithm)


class _Limits:
    """What may end a fetch besides its own caps: a deadline, and ``interrupted()``."""

    def __init__(self, deadline: float | None, deadline_reason: str, interrupted):
        self.deadline = deadline
        self.deadline_reason = deadline_reason
        self.interrupted = interrupted

    def reason(self, now: float | None = None) -> str | None:
        """Why the fetch must end now, or None."""
        if self.interrupted is not None:
            reason = self.interrupted()
            if reason:
                return reason
        if self.deadline is not None and (now or time.monotonic()) >= self.deadline:
            return self.deadline_reason
        return None


def _body_waiting(response, sock, wait: float) -> bool:
    """Whether a read of the body would find bytes: already buffered, or arriving within ``wait`` s.

    Reads with a short socket timeout cannot be used for this: a timeout inside urllib3 closes the
    connection, and http.client may have consumed part of a chunk header. So the buffered reader is
    peeked at without blocking, then the socket polled.
    """
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True
    answer = getattr(response, "_fp", None)  # http.client's response
    reader = getattr(answer, "fp", None)  # and its buffered reader of the socket
    if reader is None or getattr(answer, "length", None) == 0:
        return True  # the body is complete, or empty (a 304, a HEAD): the read says so at once
    sock.settimeout(0)  # a peek at an empty buffer then reads nothing rather than waiting
    try:
        if reader.peek(1):
            return True
    except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
        pass
    except (OSError, ValueError):
        return True  # let the read say what is wrong
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(wait, 0) * 1000))


def _merged(own: dict[str, str], given: dict[str, str]) -> dict[str, str]:
    """The session's headers with ``given`` ones in place of those of the same name (any case)."""
    replaced = {name.lower() for name in given}
    return {**{name: value for name, value in own.items() if name.lower() not in replaced}, **given}


def _headers_as_sent(raw) -> list[tuple[str, str]]:
    # http.client's message keeps every header line in order, with its case and its repeats.
    message = getattr(getattr(raw, "_original_response", None), "msg", None)
    if message is not None:
        # items() runs each header through the email policy, which leaves http.client's str as they are.
        lines = getattr(message, "_headers", None)
        if lines is None:
            lines = message.items()
        return [(str(name), str(value)) for name, value in lines]
    return list(raw.headers.iteritems())


def _dechunked(headers: list[tuple[str, str]], length: int) -> list[tuple[str, str]]:
    """The headers of a chunked response once its body is stored whole: length given, chunking gone."""
    result: list[tuple[str, str]] = []
    length_placed = False
    for name, value in headers:
        lower = name.lower()
        if lower == "transfer-encoding":
            codings = [c.strip() for c in value.split(",") if c.strip() and c.strip().lower() != "chunked"]
            if codings:  # another transfer coding (rare) still applies to the stored bytes
                result.append((name, ", ".join(codings)))
            if not length_placed:
                result.append(("Content-Length", str(length)))
                length_placed = True
        elif lower == "content-length":
            if not length_placed:
                result.append((name, str(length)))
                length_placed = True
        else:
            result.append((name, value))
    if not length_placed:
        result.append(("Content-Length", str(length)))
    return result


def _refused(error: AddressRefused) -> str:
    return f"address refused: {error.address} is {error.reason}"


def _dns_failed(error: socket.gaierror) -> str:
    return f"DNS lookup failed: {error.strerror or error}"


def _tls_failed(error: BaseException) -> str:
    if isinstance(error, ssl.SSLCertVerificationError) and error.verify_message:
        return f"TLS error: certificate verify failed: {error.verify_message}"
    return f"TLS error: {error}"


def _http_failed(error: http.client.HTTPException) -> str:
    if "more than" in str(error) and "headers" in str(error):
        return "too many headers"
    if isinstance(error, http.client.LineTooLong):
        return "header line too long"
    return f"invalid HTTP response: {error}"[:200]


def _connect_timed_out(error: BaseException) -> bool:
    # urllib3's NewConnectionError is a ConnectTimeoutError too (for compatibility), whatever its cause.
    return isinstance(error, ConnectTimeoutError) and not isinstance(error, NewConnectionError)


def _connect_failed(error: NewConnectionError) -> str:
    reason = next((cause for cause in error_causes(error) if isinstance(cause, OSError)), error)
    return f"connection failed: {reason}"[:200]


def _kind(*kinds: type[BaseException]) -> Callable[[BaseException], bool]:
    return lambda error: isinstance(error, kinds)


# Most precise first: the first kind found anywhere in the chain of causes names the error.
_ERROR_KINDS: list[tuple[Callable[[BaseException], bool], FetchError, Callable[..., str]]] = [
    (_kind(AddressRefused), FetchError.REFUSED, _refused),
    (_kind(ResolutionTimeout), FetchError.DNS, lambda error: "DNS lookup timed out"),
    (_kind(socket.gaierror), FetchError.DNS, _dns_failed),
    (_kind(ConnectionRefusedError), FetchError.CONNECTION_REFUSED, lambda error: "connection refused"),
    (_connect_timed_out, FetchError.CONNECT_TIMEOUT, lambda error: "connection timed out"),
    (_kind(NewConnectionError), FetchError.CONNECT, _connect_failed),
    (_kind(ReadTimeoutError, TimeoutError), FetchError.TIMEOUT, lambda error: "timed out"),
    (_kind(ssl.SSLError), FetchError.TLS, _tls_failed),
    (
        _kind(http.client.RemoteDisconnected),
        FetchError.DISCONNECTED,
        lambda error: "closed by the server without a response",
    ),
    (
        _kind(ConnectionResetError, BrokenPipeError, ConnectionAbortedError),
        FetchError.RESET,
        lambda error: "connection reset",
    ),
    (_kind(http.client.HTTPException), FetchError.PROTOCOL, _http_failed),
    (
        _kind(
            LocationValueError,  # unparsable, or a scheme other than http(s)
            UnicodeError,
        ),
        FetchError.INVALID_URL,
        lambda error: f"invalid URL: {error}"[:200],
    ),
]


def classify_error(error: BaseException) -> tuple[FetchError, str]:
    """Why a request failed: its code, and a short human reason ("connection refused", "timed out"…)."""
    causes = list(error_causes(error))
    for matches, code, describe in _ERROR_KINDS:
        for cause in causes:
            if matches(cause):
                return code, describe(cause)
    return FetchError.OTHER, str(error)[:200] or type(error).__name__


def _is_stale_connection(error: BaseException) -> bool:
    """Whether the server dropped the connection before answering (a kept-alive one it had closed)."""
    causes = list(error_causes(error))
    if any(isinstance(cause, AddressRefused | TimeoutError | ConnectionRefusedError) for cause in causes):
        return False
    return any(isinstance(cause, ConnectionResetError | BrokenPipeError) for cause in causes)
