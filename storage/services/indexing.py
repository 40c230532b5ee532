"""Writes to the capture index: whole files (``index_warcs``, recovery) and a crawler's records as written.

A file is indexed all or nothing, in one transaction: its earlier rows are
replaced, so indexing a file again is harmless. On PostgreSQL rows are loaded
with ``COPY``; elsewhere with bulk inserts.
"""

from __future__ import annotations

import heapq
import logging
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from storage.models import Capture, WarcFile
from storage.services import fulltext
from storage.warcindex import Entry, FileReading, cdx_mime, read_file, url_key
from webarchive.tasks import enqueue, spool_queue

logger = logging.getLogger(__name__)

BATCH = 2000
COPY_COLUMNS = (
    "urlkey",
    "timestamp",
    "url",
    "record_type",
    "mime",
    "status",
    "digest",
    "length",
    "offset",
    "record_id",
    "warc_file_id",
    "job_id",
)
SORT_CHUNK_LINES = 500_000  # --cdxj: lines sorted in memory before they spill to a temporary file


class IndexConflict(Exception):
    """A different file of the same name is already in the archive."""


@dataclass
class IndexedFile:
    """What indexing one file did."""

    warc_file: WarcFile
    captures: int
    replaced: int
    entries: list[Entry] = field(default_factory=list, repr=False)


def warc_file_index(
    *,
    path: str | Path | None = None,
    reading: FileReading | None = None,
    job_id: int | None = None,
    keep_entries: bool = False,
    texts: bool = True,
) -> IndexedFile:
    """Index one WARC/ARC file into the capture index, replacing its earlier rows; register it as a WarcFile.

    Give the file's ``path``, or a ``reading`` of it already made (``index_warcs`` reads files in
    other processes). A file already in the archive under the same name must have the same checksum
    (the same bytes, perhaps moved): anything else is refused with :class:`IndexConflict`. A torn or
    non-WARC file raises :class:`~storage.warcindex.WarcReadError` and nothing of it is indexed.
    Its documents then go into the full-text index (``texts``; ``index_warcs`` reads them itself, in
    its worker processes).
    """
    if reading is None:
        reading = read_file(path)  # all of it before touching the database: all or nothing
    path, entries = reading.path, reading.entries
    existing = WarcFile.objects.filter(name=path.name).first()
    if existing is not None and existing.sha256 and existing.sha256 != reading.sha256 and existing.closed_at:
        raise IndexConflict(
            _("%(name)s: another file of this name is already in the archive (%(path)s, SHA-256 %(sha)s).")
            % {"name": path.name, "path": existing.path, "sha": existing.sha256}
        )
    now = timezone.now()
    with transaction.atomic():
        if existing is None:
            warc = WarcFile(
                name=path.name,
                origin=WarcFile.Origin.IMPORTED,
                job_id=job_id,
                created_at=datetime.fromtimestamp(path.stat().st_mtime, UTC),
            )
        else:
            warc = WarcFile.objects.select_for_update().get(pk=existing.pk)
            if job_id is not None:
                warc.job_id = job_id
        warc.path = str(path)
        warc.size = reading.size
        warc.sha256 = reading.sha256
        warc.closed_at = warc.closed_at or now
        warc.indexed_at = now
        if not warc.records:
            warc.records = len(entries)
        warc.save()
        replaced = Capture.objects.filter(warc_file=warc).delete()[0] if existing is not None else 0
        _load(entries, warc_file_id=warc.pk, job_id=warc.job_id)
    if texts:
        fulltext.file_text_index(path, entries)
    return IndexedFile(warc, len(entries), replaced, entries if keep_entries else [])


def _load(entries: Iterable[Entry], *, warc_file_id: int, job_id: int | None) -> None:
    if connection.vendor == "postgresql":
        columns = ", ".join(f'"{name}"' for name in COPY_COLUMNS)
        statement = f"COPY storage_capture ({columns}) FROM STDIN"
        with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
            for lines in _copy_lines(entries, warc_file_id=warc_file_id, job_id=job_id):
                copy.write(lines)
        return
    batch: list[Capture] = []
    for entry in entries:
        batch.append(_capture(entry, warc_file_id=warc_file_id, job_id=job_id))
        if len(batch) >= BATCH:
            Capture.objects.bulk_create(batch)
            batch.clear()
    Capture.objects.bulk_create(batch)


COPY_LINES = 5000  # lines written to COPY at a time
COPY_NULL = "\\N"


def _copy_lines(entries: Iterable[Entry], *, warc_file_id: int, job_id: int | None) -> Iterator[str]:
    """The entries as the lines of COPY's text format, a few thousand at a time (written here rather
    than by psycopg's ``write_row``, several times slower per row). A line with a character COPY must
    escape (backslash, tab, newline, carriage return) is written field by field, escaped."""
    job = COPY_NULL if job_id is None else str(job_id)
    end = f"\t{warc_file_id}\t{job}\n"
    lines: list[str] = []
    for entry in entries:
        status = entry.status
        code = COPY_NULL if status is None else status
        line = (
            f"{entry.urlkey}\t{_timestamp_text(entry.timestamp)}\t{entry.url}\t{entry.record_type}"
            f"\t{entry.mime}\t{code}\t{entry.digest}\t{entry.length}\t{entry.offset}\t{entry.record_id}"
        )
        if line.count("\t") != 9 or line.count("\\") != (status is None) or "\n" in line or "\r" in line:
            line = _copy_line_escaped(entry)
        lines.append(line + end)
        if len(lines) >= COPY_LINES:
            yield "".join(lines)
            lines = []
    if lines:
        yield "".join(lines)


def _copy_line_escaped(entry: Entry) -> str:
    texts = (entry.urlkey, _timestamp_text(entry.timestamp), entry.url, entry.record_type, entry.mime)
    more = (entry.digest, str(entry.length), str(entry.offset), entry.record_id)
    status = COPY_NULL if entry.status is None else str(entry.status)
    return "\t".join([*map(_copy_escape, texts), status, *map(_copy_escape, more)])


def _copy_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _capture(entry: Entry, *, warc_file_id: int, job_id: int | None) -> Capture:
    return Capture(
        urlkey=entry.urlkey,
        timestamp=datetime.strptime(entry.timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC),
        url=entry.url,
        record_type=entry.record_type,
        mime=entry.mime,
        status=entry.status,
        digest=entry.digest,
        length=entry.length,
        offset=entry.offset,
        record_id=entry.record_id,
        warc_file_id=warc_file_id,
        job_id=job_id,
    )


def _timestamp_text(stamp: str) -> str:
    return f"{stamp[0:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[8:10]}:{stamp[10:12]}:{stamp[12:14]}+00"


# -- sorted CDXJ ------------------------------------------------------------------------------------


class CdxjSorter:
    """Collects CDXJ lines and writes them sorted (byte order, as ``LC_ALL=C sort``), spilling to disk."""

    def __init__(self):
        self._lines: list[str] = []
        self._chunks: list = []

    def add(self, lines: Iterable[str]) -> None:
        self._lines.extend(lines)
        if len(self._lines) >= SORT_CHUNK_LINES:
            self._spill()

    def write(self, out: str | Path) -> int:
        self._lines.sort(key=_byte_order)
        streams = [_chunk_lines(chunk) for chunk in self._chunks]
        count = 0
        target = Path(out)
        temporary = target.with_name(f".{target.name}.tmp")
        with temporary.open("w", encoding="utf-8", newline="\n") as output:
            for line in heapq.merge(*streams, iter(self._lines), key=_byte_order):
                output.write(line + "\n")
                count += 1
        os.replace(temporary, target)
        for chunk in self._chunks:
            chunk.close()
        return count

    def _spill(self) -> None:
        self._lines.sort(key=_byte_order)
        chunk = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")  # noqa: SIM115 (closed in write)
        chunk.writelines(line + "\n" for line in self._lines)
        chunk.seek(0)
        self._chunks.append(chunk)
        self._lines = []


def _byte_order(line: str) -> bytes:
    return line.encode("utf-8")


def _chunk_lines(chunk) -> Iterator[str]:
    for line in chunk:
        yield line.rstrip("\n")


# -- real time: a crawler's records -----------------------------------------------------------------


class CaptureRecorder:
    """Indexes the records a crawler writes, in batches: ``record`` is called as each one is written
    (under the WARC writer's lock: it only queues), ``flush`` from the crawl's progress loop.

    A file's row is created (open, no checksum yet) at its first capture so that the capture can
    point to it; it is completed when the file is closed and registered.
    """

    def __init__(self, *, job_id: int | None, directory: str | Path):
        self.job_id = job_id
        self.directory = Path(directory).resolve()
        self._pending: list = []
        self._lock = threading.Lock()
        self._file_ids: dict[str, int] = {}

    def record(self, info) -> None:
        """Queue a record the writer has just written (harvest.crawler.warc.RecordInfo)."""
        if info.record_type not in Capture.RecordType.values:
            return
        if info.record_type in ("resource", "metadata") and info.content_type == "application/warc-fields":
            return
        with self._lock:
            self._pending.append(info)

    def flush(self) -> int:
        """Write the queued captures to the index; returns how many."""
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return 0
        rows = []
        for info in pending:
            url = info.target_uri
            rows.append(
                Capture(
                    urlkey=url_key(url),
                    timestamp=datetime.strptime(info.date, "%Y%m%d%H%M%S").replace(tzinfo=UTC),
                    url=url,
                    record_type=info.record_type,
                    mime="warc/revisit" if info.record_type == "revisit" else cdx_mime(info.content_type),
                    status=info.status,
                    digest=info.payload_digest or "",
                    length=info.length,
                    offset=info.offset,
                    record_id=info.record_id,
                    warc_file_id=self._file_id(info.filename),
                    job_id=self.job_id,
                )
            )
        Capture.objects.bulk_create(rows, batch_size=BATCH)
        documents = fulltext.document_capture_ids(rows)
        if documents:
            # Read from their records by a worker of this machine: the file may be in its spool only.
            enqueue("storage.index_texts", documents, queue=spool_queue())
        return len(rows)

    def _file_id(self, name: str) -> int:
        found = self._file_ids.get(name)
        if found is None:
            warc, _created = WarcFile.objects.get_or_create(
                name=name,
                defaults={
                    "path": str(self.directory / name),
                    "machine": settings.MACHINE_NAME,
                    "job_id": self.job_id,
                    "created_at": timezone.now(),
                    "origin": WarcFile.Origin.CRAWLED,
                },
            )
            found = self._file_ids[name] = warc.pk
        return found


def warc_file_register(*, info, job_id: int | None) -> WarcFile:
    """Record a closed WARC file (idempotent: a file is registered once, by name)."""
    warc, _created = WarcFile.objects.update_or_create(
        name=info.name,
        defaults={
            "path": str(info.path),
            "machine": settings.MACHINE_NAME,
            "size": info.size,
            "sha256": info.sha256,
            "records": info.records,
            "job_id": job_id,
            "created_at": info.created_at,
            "closed_at": info.closed_at,
            "recovered": info.recovered,
            "indexed_at": info.closed_at,  # its captures were indexed as they were written
        },
    )
    return warc
