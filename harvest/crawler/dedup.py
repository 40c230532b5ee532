"""Crawl-time deduplication: what a site crawl needs to write revisits instead of responses.

A :class:`DedupIndex` answers two questions for the crawler: which earlier
capture holds a payload with this digest (:meth:`DedupIndex.original`), and
what was the last capture of this URL (:meth:`DedupIndex.previous`, for
conditional requests). The application's index reads the capture index
(``storage.services.dedup``); :class:`MemoryDedupIndex` remembers what one
process wrote, and is what the crawler tests use.

The original's bytes are read back from its WARC file (:func:`stored_exchange`):
to confirm a match byte for byte, to extract the links of a page the server
says has not changed, and to build the head of a server-not-modified revisit.
That head is the stored response freshened by the 304 (RFC 9111, 4.3.4): its
status line and headers, updated with the header fields the 304 sent. pywb
replays a revisit with the revisit's own HTTP head and the original's payload;
a literal "304 Not Modified" head would replay as an empty answer. The 304
itself stays in the crawl log.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from harvest.crawler.fetch import SPOOL_BYTES, Exchange, format_digest, media_type

logger = logging.getLogger(__name__)

IDENTICAL_PAYLOAD = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
OPEN_SUFFIX = ".open"
READ_BYTES = 256 * 1024
MEMORY_ENTRIES = 200_000  # digests and URLs one process remembers of what it wrote
# What a 304 does not update in the stored head (RFC 9111 3.2: the body's own framing and coding).
_NOT_FRESHENED = frozenset({"content-length", "content-encoding", "transfer-encoding", "content-range"})


@dataclass(frozen=True)
class Original:
    """An earlier capture holding a payload: what a revisit refers to, and where its record is."""

    url: str
    date: str  # its WARC-Date, ISO 8601
    record_id: str
    digest: str
    path: str  # its WARC file (while being written, the same name with ".open")
    offset: int
    # Where the file's bytes are once the spool copy is gone (its replicas on storage nodes).
    opener: Callable[[], BinaryIO] | None = field(default=None, compare=False, repr=False)


class DedupIndex(Protocol):
    """Earlier captures, by payload digest and by URL."""

    def original(self, digest: str) -> Original | None:
        """The earliest capture whose payload has ``digest``, or None."""

    def previous(self, url: str) -> Original | None:
        """The latest capture of ``url`` with a 2xx response stored in full, or None."""

    def remember(self, original: Original) -> None:
        """A response the crawler has just written (it becomes an original for what follows)."""


class MemoryDedupIndex:
    """What this process wrote, in memory (bounded: the oldest entries are forgotten first)."""

    def __init__(self, *, limit: int = MEMORY_ENTRIES):
        self.limit = limit
        self._by_digest: OrderedDict[str, Original] = OrderedDict()
        self._by_url: OrderedDict[str, Original] = OrderedDict()
        self._lock = threading.Lock()

    def original(self, digest: str) -> Original | None:
        with self._lock:
            return self._by_digest.get(digest)

    def previous(self, url: str) -> Original | None:
        with self._lock:
            return self._by_url.get(url)

    def remember(self, original: Original) -> None:
        with self._lock:
            self._by_digest.setdefault(original.digest, original)  # the first one stays the original
            self._by_url[original.url] = original
            self._by_url.move_to_end(original.url)
            for table in (self._by_digest, self._by_url):
                while len(table) > self.limit:
                    table.popitem(last=False)


def stored_exchange(original: Original, *, check_digest: bool = True) -> Exchange | None:
    """The original's response read back from its WARC file, or None if it cannot be read whole.

    The payload is checked against the original's digest (unless the caller is
    about to compare the bytes themselves): a record that does not hold what the
    index says it holds is never used.
    """
    stream = _open_record(original)
    if stream is None:
        return None
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (closed by Exchange.close)
    try:
        with stream:
            record = next(iter(ArchiveIterator(stream, check_digests=False)), None)
            if record is None or record.rec_type != "response" or record.http_headers is None:
                body.close()
                return None
            algorithm = original.digest.partition(":")[0].lower() or "sha256"
            digester = hashlib.new(algorithm)
            length = 0
            while chunk := record.raw_stream.read(READ_BYTES):
                body.write(chunk)
                digester.update(chunk)
                length += len(chunk)
            http = record.http_headers
    except (OSError, ValueError, ArchiveLoadFailed, EOFError) as error:
        logger.warning("original %s in %s unreadable: %s", original.url, _where(original), error)
        body.close()
        return None
    if check_digest and format_digest(digester, algorithm) != original.digest:
        logger.warning("original %s in %s does not have its digest", original.url, _where(original))
        body.close()
        return None
    body.seek(0)
    status_line = http.get_statuscode()
    exchange = Exchange(
        url=original.url,
        status=int(status_line) if status_line.isdigit() else 0,
        reason=http.statusline.partition(" ")[2],
        http_version=http.protocol or "HTTP/1.1",
        headers=list(http.headers),
        body=body,
        body_length=length,
        payload_digest=original.digest,
    )
    exchange.content_type, exchange.charset = media_type(exchange.header("Content-Type"))
    return exchange


def conditional_headers(stored: Exchange) -> dict[str, str]:
    """The validators of a stored response as request headers (empty when it had none)."""
    headers = {}
    if etag := stored.header("ETag"):
        headers["If-None-Match"] = etag
    if modified := stored.header("Last-Modified"):
        headers["If-Modified-Since"] = modified
    return headers


def freshened_headers(stored: Exchange, not_modified: Exchange) -> list[tuple[str, str]]:
    """The stored response's headers updated with those a 304 sent (RFC 9111, 4.3.4)."""
    sent = {}
    for name, value in not_modified.headers:
        if name.lower() not in _NOT_FRESHENED:
            sent.setdefault(name.lower(), []).append((name, value))
    headers = [(name, value) for name, value in stored.headers if name.lower() not in sent]
    for values in sent.values():
        headers.extend(values)
    return headers


def same_payload(first: BinaryIO, second: BinaryIO) -> bool:
    """Whether two bodies hold the same bytes (both read from the start, then rewound)."""
    try:
        first.seek(0)
        second.seek(0)
        while True:
            a = first.read(READ_BYTES)
            b = second.read(READ_BYTES)
            if len(a) != len(b):
                # Reads of a file may come shorter than asked: compare what both have, carry the rest.
                a, b = _even(first, a, second, b)
            if a != b:
                return False
            if not a:
                return True
    finally:
        first.seek(0)
        second.seek(0)


def _even(first: BinaryIO, a: bytes, second: BinaryIO, b: bytes) -> tuple[bytes, bytes]:
    while len(a) < len(b) and (more := first.read(len(b) - len(a))):
        a += more
    while len(b) < len(a) and (more := second.read(len(a) - len(b))):
        b += more
    return a, b


def _where(original: Original) -> str:
    return f"{original.path} at byte {original.offset}"


def _open_record(original: Original) -> BinaryIO | None:
    path = Path(original.path)
    # A file being written carries ".open" until it is closed: try the name it has now first.
    names = [path, path.with_name(path.name + OPEN_SUFFIX)]
    if path.name.endswith(OPEN_SUFFIX):
        names = [path, path.with_name(path.name[: -len(OPEN_SUFFIX)])]
    for candidate in names:
        try:
            stream = candidate.open("rb")
        except OSError:
            continue
        stream.seek(original.offset)
        return stream
    if original.opener is not None:
        try:
            stream = original.opener()
        except OSError:
            return None
        stream.seek(original.offset)
        return stream
    return None


def answer(question) -> None:
    """Answer one question a dedup index queued for a thread with database access (``(function,
    argument, future)``): the asking thread gets the answer, or the error."""
    function, argument, future = question
    if future.set_running_or_notify_cancel():
        try:
            future.set_result(function(argument))
        except Exception as error:  # the asking thread gets it
            future.set_exception(error)
