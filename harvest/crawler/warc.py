"""Writing WARC files (WARC/1.1, one gzip member per record) for the site crawls of one harvest job.

One :class:`WarcWriter` is shared by the site crawls a process runs for a job:
each exchange is written as a ``response`` and a ``request`` record, adjacent
and under one lock, so that threads never interleave inside a pair. Files
start with a ``warcinfo`` record and are rolled at a size limit, a record is
never split between two files.

A site crawl hands its exchanges to the writer (:meth:`WarcWriter.submit_exchange`) rather than
writing them itself: a thread of the writer builds and writes the records (the block digests, the
gzip compression, the index callback) while the next request of the site goes out, in the order
they were handed, within a memory budget (``QUEUE_BYTES``: a site crawl waits for room beyond it).
What went wrong is kept for the crawl that handed it (:class:`Writes`), which asks before each of
its steps and waits for every one of its records to be written before it ends.

The digests are ours, not warcio's: the payload digest is the one the fetcher
computed over the entity body as received, the block digest is computed here
over the exact bytes of the block, both with the harvest's algorithm (warcio
would otherwise add SHA-1 digests of its own). The HTTP head is written as
the server sent it (latin-1 bytes back as they came, no re-encoding).

While written, a file is named ``<name>.open`` and holds an exclusive
``flock``: a file left ``.open`` without a lock was left by a writer that died
(SIGKILL, power loss). :func:`~harvest.crawler.recovery.recover_open_files` cuts such a file after
its last complete gzip member and gives it its final name.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import re
import secrets
import tempfile
import threading
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.timeutils import datetime_to_iso_date

from harvest.crawler.dedup import Original
from harvest.crawler.fetch import DIGEST_ALGORITHMS, SPOOL_BYTES, Exchange, format_digest

logger = logging.getLogger(__name__)

WARC_VERSION = "WARC/1.1"
COMPRESS_LEVEL = 6  # warcio's own gzip uses 9: much slower for a percent or two
OPEN_SUFFIX = ".open"
READ_BYTES = 1024 * 1024
WRITE_BUFFER = 256 * 1024
COMPRESS_BYTES = 64 * 1024  # of a body given to gzip at a time
# What the records waiting for the writer thread may hold in memory (their bodies up to the fetcher's
# in-memory spool, their heads); a site crawl handing more waits for room. And at most this many.
QUEUE_BYTES = 8 * 1024 * 1024
QUEUE_ITEMS = 512
# The writer's thread, woken by a first task, waits up to WAKE_SECONDS for this many (or bytes).
WAKE_TASKS = 16
WAKE_BYTES = 512 * 1024
WAKE_SECONDS = 0.02
HTTP_RESPONSE = "application/http; msgtype=response"
HTTP_REQUEST = "application/http; msgtype=request"
WARC_FIELDS = "application/warc-fields"
DEFAULT_WARCINFO = {
    "format": "WARC File Format 1.1",
    "conformsTo": "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
}
# What a file name says: {prefix}-{job}-{YYYYMMDDhhmmss}-{serial}-{host}.warc.gz (search, not match).
# WARC 1.1 names four truncation reasons; the crawler's own ("stopped", "deadline") are written as the
# nearest of them, and kept as they are in the crawl log ("truncated:stopped").
WARC_TRUNCATION_REASONS = ("length", "time", "disconnect", "unspecified")
_TRUNCATED_AS = {"deadline": "time"}


def warc_truncated(reason: str) -> str:
    """The ``WARC-Truncated`` value of an exchange cut for ``reason``."""
    reason = _TRUNCATED_AS.get(reason, reason)
    return reason if reason in WARC_TRUNCATION_REASONS else "unspecified"


FILE_NAME = re.compile(r"-(?P<job>\d+)-(?P<stamp>\d{14})-\d{5,}-[^/]*\.warc\.gz$")


@dataclass
class RecordInfo:
    """Where a record was written and what it holds (for indexing)."""

    filename: str
    offset: int
    length: int  # of the record's gzip member
    record_id: str
    record_type: str
    target_uri: str
    date: str  # 14 digits, UTC
    content_type: str  # of the payload, as sent ("text/html; charset=utf-8"), "" when there is none
    status: int | None
    payload_digest: str | None


@dataclass
class WarcFileInfo:
    """A finished WARC file."""

    name: str
    path: Path
    size: int
    sha256: str  # hex, of the whole compressed file
    records: int
    created_at: datetime
    closed_at: datetime
    recovered: bool = False
    cut_bytes: int = 0


class _Block:
    """A record block as one stream: the head bytes, then (a known length of) the body file."""

    def __init__(self, head: bytes, body: BinaryIO | None = None, body_length: int = 0, body_start: int = 0):
        self.head = head
        self.body = body
        self.body_length = body_length if body is not None else 0
        self.body_start = body_start
        self.length = len(head) + self.body_length

    def digests(self, algorithm: str, *, payload: bool) -> tuple[str, str | None]:
        """The block digest and (if asked) the digest of the body alone, checking the body's length."""
        block = hashlib.new(algorithm, self.head)
        body = hashlib.new(algorithm) if payload else None
        read = 0
        if self.body is not None:
            self.body.seek(self.body_start)
            while chunk := self.body.read(min(READ_BYTES, self.body_length - read)):
                block.update(chunk)
                if body is not None:
                    body.update(chunk)
                read += len(chunk)
            self.body.seek(self.body_start)
        if read != self.body_length:
            raise ValueError(f"the body holds {read} bytes, not {self.body_length}")
        return format_digest(block, algorithm), format_digest(body, algorithm) if body is not None else None

    def write_to(self, file: _OpenFile, head: bytes) -> None:
        """Write ``head`` (the WARC headers), this block and the record's end into ``file``."""
        if self.body is None:
            file.write(head + self.head + b"\r\n\r\n")
            return
        self.body.seek(self.body_start)
        if self.body_length <= COMPRESS_BYTES:  # most records: one call to zlib, one GIL hand-over
            body = self.body.read(self.body_length)
            if len(body) != self.body_length:
                raise ValueError(
                    f"record block of {len(self.head) + len(body)} bytes, {self.length} announced"
                )
            file.write(b"".join((head, self.head, body, b"\r\n\r\n")))
            return
        file.write(head + self.head)
        delivered = 0
        while delivered < self.body_length and (
            chunk := self.body.read(min(COMPRESS_BYTES, self.body_length - delivered))
        ):
            file.write(chunk)
            delivered += len(chunk)
        if delivered != self.body_length:
            raise ValueError(f"record block of {len(self.head) + delivered} bytes, {self.length} announced")
        file.write(b"\r\n\r\n")


@dataclass
class _Record:
    """A record ready to be written, and what its RecordInfo will say beyond the WARC headers."""

    headers: list[tuple[str, str]]
    block: _Block
    warc_content_type: str
    content_type: str = ""
    status: int | None = None
    payload_digest: str | None = None

    def info(self, filename: str, offset: int, length: int) -> RecordInfo:
        fields = dict(self.headers)
        return RecordInfo(
            filename=filename,
            offset=offset,
            length=length,
            record_id=fields["WARC-Record-ID"],
            record_type=fields["WARC-Type"],
            target_uri=fields.get("WARC-Target-URI", ""),
            date=re.sub(r"\D", "", fields["WARC-Date"])[:14],
            content_type=self.content_type,
            status=self.status,
            payload_digest=self.payload_digest,
        )


class _OpenFile:
    """The file being written: one gzip member per record; its size and SHA-256 follow every byte."""

    def __init__(self, *, name: str, path: Path, fd: int, created_at: datetime):
        self.name = name
        self.path = path
        self.open_path = path.with_name(name + OPEN_SUFFIX)
        self.fd = fd
        self.created_at = created_at
        self.size = 0
        self.records = 0
        self.sha256 = hashlib.sha256()
        self.warcinfo_id = ""
        self._pending = bytearray()
        self._compressor = None

    def begin_member(self, size: int) -> None:
        """Start the gzip member of a record of ``size`` bytes."""
        self._compressor = _compressor(size)

    def write(self, data: bytes) -> None:
        self._emit(self._compressor.compress(data))

    def end_member(self) -> None:
        self._emit(self._compressor.flush())
        self._compressor = None
        self._write_pending()
        self.records += 1

    def mark(self) -> tuple:
        return self.size, self.records, self.sha256.copy()

    def rollback(self, mark: tuple) -> None:
        """Forget what was written since ``mark`` (a record that failed half-way)."""
        self.size, self.records, self.sha256 = mark
        self._pending.clear()
        self._compressor = None
        os.ftruncate(self.fd, self.size)
        os.lseek(self.fd, self.size, os.SEEK_SET)

    def _emit(self, data: bytes) -> None:
        if data:
            self._pending += data
            self.sha256.update(data)
            self.size += len(data)
            if len(self._pending) >= WRITE_BUFFER:
                self._write_pending()

    def _write_pending(self) -> None:
        view = memoryview(self._pending)
        while view:
            view = view[os.write(self.fd, view) :]
        view.release()
        self._pending.clear()


class Writes:
    """What one site crawl handed to a writer's thread: how many are not written yet, the first failure.

    Used by one site crawl at a time (its fetch thread hands, the writer's thread finishes).
    """

    def __init__(self):
        self._done = threading.Condition()
        self.pending = 0
        self.error: BaseException | None = None  # the first failure; later hand-offs are dropped

    def check(self) -> None:
        """Raise the failure of a write handed earlier, if there was one."""
        if self.error is not None:
            raise self.error

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until everything handed has been written (or dropped); False if ``timeout`` passed."""
        with self._done:
            return self._done.wait_for(lambda: self.pending == 0, timeout)

    def _handed(self) -> None:
        with self._done:
            self.pending += 1

    def _finished(self, error: BaseException | None) -> None:
        with self._done:
            if error is not None and self.error is None:
                self.error = error
            self.pending -= 1
            if self.pending == 0:
                self._done.notify_all()


@dataclass
class _Task:
    """Something handed to the writer's thread: ``run`` it in order, unless its crawl already failed."""

    run: Callable[[], object]
    writes: Writes
    cost: int  # bytes of memory it holds until run
    discard: Callable[[], None] | None = None  # frees what it holds when it is not run


class WarcWriter:
    """Writes the WARC files of one job; thread-safe, shared by the site crawls of a process.

    Files are named ``{prefix}-{job_id}-{YYYYMMDDhhmmss}-{serial:05}-{host}.warc.gz``
    (``.open`` added while written) and rolled once they reach ``max_size``.
    ``on_record`` and ``on_file_closed`` are called under the writer's lock: keep them quick (and
    thread-safe: records handed with :meth:`submit_exchange` are written by the writer's own thread).
    """

    def __init__(
        self,
        *,
        directory: str | Path,
        prefix: str,
        job_id: int | str,
        host: str,
        max_size: int = 1_000_000_000,
        warcinfo: dict[str, str],
        on_file_closed: Callable[[WarcFileInfo], None] | None = None,
        on_record: Callable[[RecordInfo], None] | None = None,
        digest_algorithm: str = "sha256",
    ):
        if digest_algorithm not in DIGEST_ALGORITHMS:
            raise ValueError(f"unsupported digest algorithm {digest_algorithm!r}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.prefix = _name_part(prefix)
        self.job_id = _name_part(str(job_id))
        self.host = _name_part(host)
        self.max_size = max_size
        self.warcinfo = {**DEFAULT_WARCINFO, **warcinfo}
        self.on_file_closed = on_file_closed
        self.on_record = on_record
        self.digest_algorithm = digest_algorithm
        self.files: list[WarcFileInfo] = []  # the files this writer has closed
        self._serial = 0
        self._file: _OpenFile | None = None
        self._lock = threading.Lock()
        # What the writer's thread has to do, in the order it was handed (started at the first hand-off).
        self._tasks: deque[_Task] = deque()
        self._queued_bytes = 0
        self._queue = threading.Lock()
        self._ready = threading.Condition(self._queue)  # for the writer's thread: a task, or close()
        self._room = threading.Condition(self._queue)  # for those handing: room in the budget
        self._thread: threading.Thread | None = None
        self._idle = False  # the writer's thread waits for a task
        self._closing = False

    def submit_exchange(
        self,
        exchange: Exchange,
        *,
        writes: Writes,
        digest_algorithm: str | None = None,
        then: Callable[[list[RecordInfo]], None] | None = None,
    ) -> None:
        """Have the writer's thread write ``exchange`` (as :meth:`write_exchange` does), then close it.

        Returns at once, unless the records waiting already hold ``QUEUE_BYTES``: then once there is
        room. The exchange is the writer's from now on. ``then(records)`` is called in the writer's
        thread once written; a failure is kept in ``writes`` (see :class:`Writes`).
        """

        def run() -> None:
            try:
                written = self.write_exchange(exchange, digest_algorithm=digest_algorithm)
            finally:
                exchange.close()
            if then is not None:
                then(written)

        cost = len(exchange.request_head) + 2048 + min(exchange.body_length, SPOOL_BYTES)
        self._hand(_Task(run, writes, cost, exchange.close))

    def submit_call(self, writes: Writes, call: Callable[[], object]) -> None:
        """Have the writer's thread call ``call()`` after what ``writes`` handed before (a crawl log line)."""
        self._hand(_Task(call, writes, 256))

    def _hand(self, task: _Task) -> None:
        task.writes._handed()
        with self._queue:
            # Room for it, or nothing else waiting (a body beyond the budget goes alone).
            self._room.wait_for(
                lambda: (
                    not self._closing
                    and (
                        not self._tasks
                        or (self._queued_bytes + task.cost <= QUEUE_BYTES and len(self._tasks) < QUEUE_ITEMS)
                    )
                )
            )
            self._tasks.append(task)
            self._queued_bytes += task.cost
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="warc-writer", daemon=True)
                self._thread.start()
            elif self._idle and (len(self._tasks) in (1, WAKE_TASKS) or self._queued_bytes >= WAKE_BYTES):
                self._ready.notify()

    def _work(self) -> None:
        """The writer's thread: run what was handed, in order, until :meth:`close` says to stop."""
        while True:
            with self._queue:
                if not self._tasks:
                    # Asleep until a task comes, then up to WAKE_SECONDS more for a batch to gather:
                    # each wake-up is a context switch, and a GIL hand-over the fetch thread waits for.
                    self._idle = True
                    while not self._tasks and not self._closing:
                        self._ready.wait()
                    if not self._closing and len(self._tasks) < WAKE_TASKS:
                        self._ready.wait(WAKE_SECONDS)
                    self._idle = False
                if not self._tasks:
                    return
                task = self._tasks[0]  # left in the queue while it runs: close() waits for it
            error = None
            if task.writes.error is not None:  # its crawl failed: what it handed since is dropped
                if task.discard is not None:
                    task.discard()
            else:
                try:
                    task.run()
                except BaseException as failure:  # kept for the crawl that handed it
                    error = failure
                    logger.exception("writing to the WARC files failed")
            with self._queue:
                self._tasks.popleft()
                self._queued_bytes -= task.cost
                self._room.notify_all()
            task.writes._finished(error)

    def write_exchange(self, exchange: Exchange, *, digest_algorithm: str | None = None) -> list[RecordInfo]:
        """Write a response record and its request record, adjacent; nothing for an exchange with an error."""
        if exchange.error is not None:
            return []
        algorithm = digest_algorithm or _algorithm_of(exchange.payload_digest) or self.digest_algorithm
        response_id, request_id = _record_id(), _record_id()
        block = _Block(_http_head(exchange), exchange.body, exchange.body_length)
        payload_known = _algorithm_of(exchange.payload_digest) == algorithm
        block_digest, payload_digest = block.digests(algorithm, payload=not payload_known)
        payload_digest = exchange.payload_digest if payload_known else payload_digest
        response = _Record(
            [
                *_common_headers("response", response_id, _warc_date(exchange.started_at), exchange.url),
                *([("WARC-IP-Address", exchange.peer_ip)] if exchange.peer_ip else []),
                ("WARC-Concurrent-To", request_id),
                *([("WARC-Truncated", warc_truncated(exchange.truncated))] if exchange.truncated else []),
                ("WARC-Payload-Digest", payload_digest),
                ("WARC-Block-Digest", block_digest),
            ],
            block,
            HTTP_RESPONSE,
            content_type=exchange.header("Content-Type") or "",
            status=exchange.status,
            payload_digest=payload_digest,
        )
        return self._write([response, self._request_record(exchange, request_id, response_id, algorithm)])

    def write_revisit(
        self,
        exchange: Exchange,
        *,
        profile: str,
        original: Original,
        head: Exchange | None = None,
        digest_algorithm: str | None = None,
    ) -> list[RecordInfo]:
        """Write a ``revisit`` record of ``original`` and the request record, adjacent.

        The block is the HTTP head alone: the exchange's own, or ``head``'s (for a
        server-not-modified revisit, the stored response freshened by the 304).
        """
        if exchange.error is not None:
            return []
        algorithm = digest_algorithm or _algorithm_of(original.digest) or self.digest_algorithm
        head = head or exchange
        revisit_id, request_id = _record_id(), _record_id()
        block = _Block(_http_head(head))
        revisit = _Record(
            [
                *_common_headers("revisit", revisit_id, _warc_date(exchange.started_at), exchange.url),
                *([("WARC-IP-Address", exchange.peer_ip)] if exchange.peer_ip else []),
                ("WARC-Concurrent-To", request_id),
                ("WARC-Profile", profile),
                ("WARC-Refers-To-Target-URI", original.url),
                ("WARC-Refers-To-Date", original.date),
                ("WARC-Refers-To", original.record_id),
                ("WARC-Payload-Digest", original.digest),
                ("WARC-Block-Digest", block.digests(algorithm, payload=False)[0]),
            ],
            block,
            HTTP_RESPONSE,
            content_type=head.header("Content-Type") or "",
            status=head.status,
            payload_digest=original.digest,
        )
        return self._write([revisit, self._request_record(exchange, request_id, revisit_id, algorithm)])

    @staticmethod
    def _request_record(exchange: Exchange, request_id: str, concurrent_to: str, algorithm: str) -> _Record:
        block = _Block(exchange.request_head + exchange.request_body)
        return _Record(
            [
                *_common_headers("request", request_id, _warc_date(exchange.started_at), exchange.url),
                ("WARC-Concurrent-To", concurrent_to),
                ("WARC-Block-Digest", block.digests(algorithm, payload=False)[0]),
            ],
            block,
            HTTP_REQUEST,
        )

    def write_metadata(
        self,
        *,
        target_uri: str,
        content_type: str,
        payload: bytes | BinaryIO,
        concurrent_to: str | None = None,
    ) -> RecordInfo:
        """Write a ``metadata`` record (crawl log, reports…) about ``target_uri``."""
        return self._write_whole("metadata", target_uri, content_type, payload, concurrent_to)

    def write_resource(
        self,
        *,
        target_uri: str,
        content_type: str,
        payload: bytes | BinaryIO,
        concurrent_to: str | None = None,
    ) -> RecordInfo:
        """Write a ``resource`` record: something the crawler made, e.g. a rendered page's screenshot."""
        return self._write_whole("resource", target_uri, content_type, payload, concurrent_to)

    def _write_whole(
        self,
        record_type: str,
        target_uri: str,
        content_type: str,
        payload: bytes | BinaryIO,
        concurrent_to: str | None,
    ) -> RecordInfo:
        """A record whose block is ``payload`` as it is (no HTTP message in it)."""
        if isinstance(payload, bytes | bytearray | memoryview):
            stream = None
            block = _Block(bytes(payload))
        else:
            stream = _seekable(payload)
            start = stream.tell()
            block = _Block(b"", stream, stream.seek(0, os.SEEK_END) - start, start)
        try:
            digest, _ = block.digests(self.digest_algorithm, payload=False)
            headers = [
                *_common_headers(record_type, _record_id(), _warc_date(datetime.now(UTC)), target_uri),
                *([("WARC-Concurrent-To", concurrent_to)] if concurrent_to else []),
                ("WARC-Payload-Digest", digest),  # the payload is the whole block
                ("WARC-Block-Digest", digest),
            ]
            record = _Record(headers, block, content_type, content_type=content_type, payload_digest=digest)
            return self._write([record])[0]
        finally:
            if stream is not None and stream is not payload:
                stream.close()

    def close(self) -> None:
        """Write what was handed, then finish the current file (it gets its final name).

        The next write starts a new file (and a hand-off, a new thread).
        """
        with self._queue:
            thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                self._closing = True
                self._ready.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
            with self._queue:
                self._thread = None
                self._closing = False
                self._room.notify_all()
        with self._lock:
            self._close_file()

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- records -----------------------------------------------------------------------------

    def _write(self, records: list[_Record]) -> list[RecordInfo]:
        """Write ``records`` one after the other in the current file, all or none of them."""
        written: list[RecordInfo] = []
        with self._lock:
            if self._file is not None and self._file.size >= self.max_size:
                self._close_file()
            if self._file is None:
                self._open_file()
            file = self._file
            mark = file.mark()
            try:
                for record in records:
                    offset = file.size
                    self._write_record(file, record)
                    written.append(record.info(file.name, offset, file.size - offset))
            except BaseException:
                file.rollback(mark)
                raise
            if self.on_record is not None:
                for info in written:
                    self.on_record(info)
        return written

    def _write_record(self, file: _OpenFile, record: _Record) -> None:
        # The WARC head as warcio writes it (the writer's headers, then Content-Type and Content-Length),
        # made here: warcio's writer took a third of the time of a record, for a few lines of text.
        headers = record.headers
        if file.warcinfo_id:
            headers = [*headers, ("WARC-Warcinfo-ID", file.warcinfo_id)]
        block = record.block
        head = "".join(
            [
                f"{WARC_VERSION}\r\n",
                *[f"{name}: {value}\r\n" for name, value in headers],
                f"Content-Type: {record.warc_content_type}\r\nContent-Length: {block.length}\r\n\r\n",
            ]
        )
        head = head.encode("utf-8")
        file.begin_member(len(head) + block.length + 4)
        block.write_to(file, head)
        file.end_member()

    # -- files -------------------------------------------------------------------------------

    def _open_file(self) -> None:
        created_at = datetime.now(UTC)
        stamp = created_at.strftime("%Y%m%d%H%M%S")
        while True:
            name = f"{self.prefix}-{self.job_id}-{stamp}-{self._serial:05d}-{self.host}.warc.gz"
            self._serial += 1
            path = self.directory / name
            fd = _create_locked(path.with_name(name + OPEN_SUFFIX))
            if fd is None:
                continue
            if path.exists():  # closed by another writer of the same name since we looked
                os.unlink(path.with_name(name + OPEN_SUFFIX))
                os.close(fd)
                continue
            break
        file = _OpenFile(name=name, path=path, fd=fd, created_at=created_at)
        fields = "".join(
            f"{key}: {' '.join(str(value).split())}\r\n" for key, value in self.warcinfo.items() if value
        )
        block = _Block(fields.encode("utf-8"))
        warcinfo = _Record(
            [
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", _record_id()),
                ("WARC-Date", _warc_date(created_at)),
                ("WARC-Filename", name),
                ("WARC-Block-Digest", block.digests(self.digest_algorithm, payload=False)[0]),
            ],
            block,
            WARC_FIELDS,
        )
        try:
            self._write_record(file, warcinfo)
        except BaseException:
            os.unlink(file.open_path)
            os.close(fd)
            raise
        file.warcinfo_id = dict(warcinfo.headers)["WARC-Record-ID"]
        self._file = file
        if self.on_record is not None:
            self.on_record(warcinfo.info(name, 0, file.size))

    def _close_file(self) -> None:
        file = self._file
        if file is None:
            return
        self._file = None
        try:
            os.fsync(file.fd)
            os.rename(file.open_path, file.path)  # still locked: no recovery can take it meanwhile
        finally:
            os.close(file.fd)
        info = WarcFileInfo(
            name=file.name,
            path=file.path,
            size=file.size,
            sha256=file.sha256.hexdigest(),
            records=file.records,
            created_at=file.created_at,
            closed_at=datetime.now(UTC),
        )
        self.files.append(info)
        if self.on_file_closed is not None:
            self.on_file_closed(info)


def _compressor(size: int):
    """A gzip compressor for ``size`` bytes: its window no larger than they need.

    zlib makes and clears some 256 kB of state for each compressor: for the few kB of most records,
    more time than compressing them (80 µs against 20 for a request record). A window (and hash
    table) sized to the record compresses it as well, in a fraction of that.
    """
    wbits = min(max(size + 262, 512).bit_length(), zlib.MAX_WBITS)  # 262: deflate's look-ahead margin
    return zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, 16 + wbits, min(8, wbits - 6))


def _create_locked(open_path: Path) -> int | None:
    """A new file at ``open_path``, locked before anyone can see it; None if the name is taken."""
    # Created under a hidden name, locked, then linked: recovery never sees an unlocked new file.
    temporary = open_path.with_name(f".{open_path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        try:
            os.link(temporary, open_path)
        except FileExistsError:
            os.close(fd)
            return None
    except BaseException:
        os.close(fd)
        raise
    finally:
        os.unlink(temporary)
    return fd


def _name_part(text: str) -> str:
    """``text`` made safe inside a file name (no path separators, no spaces)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")
    return cleaned or "unknown"


def _http_head(exchange: Exchange) -> bytes:
    """The HTTP response head as the server sent it (http.client decoded it as latin-1: back to bytes)."""
    status_line = f"{exchange.status} {exchange.reason}"
    head = StatusAndHeaders(status_line, list(exchange.headers), protocol=exchange.http_version).to_str()
    return head.encode("iso-8859-1", "replace") + b"\r\n"


def _record_id() -> str:
    return StatusAndHeadersParser.make_warc_id()


def _common_headers(record_type: str, record_id: str, date: str, target_uri: str) -> list[tuple[str, str]]:
    return [
        ("WARC-Type", record_type),
        ("WARC-Record-ID", record_id),
        ("WARC-Date", date),
        ("WARC-Target-URI", target_uri),
    ]


def _warc_date(moment: datetime) -> str:
    return datetime_to_iso_date(moment.astimezone(UTC).replace(tzinfo=None), use_micros=True)


def _algorithm_of(digest: str | None) -> str | None:
    algorithm = (digest or "").partition(":")[0].lower()
    return algorithm if algorithm in DIGEST_ALGORITHMS else None


def _seekable(payload: BinaryIO) -> BinaryIO:
    """``payload`` itself if it can be read twice (for the digest, then the record), else a copy."""
    try:
        payload.seek(payload.tell())
        return payload
    except (AttributeError, OSError, ValueError):
        copy = tempfile.SpooledTemporaryFile(max_size=READ_BYTES)  # noqa: SIM115 (closed by the caller)
        while chunk := payload.read(READ_BYTES):
            copy.write(chunk)
        copy.seek(0)
        return copy
