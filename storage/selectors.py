"""Reads of the capture index and of the archive's files, for the Access pages.

Every query keeps to the indexes of ``storage_capture``: a URL is an equality or a range on the SURT
key, served by the (urlkey, timestamp) index; a job's captures go through the (job, urlkey) index and
a file's through its foreign key. Counts (by year and month, MIME type, status) are aggregated by
the database over the matched rows; rows themselves are fetched a page at a time.

Prefix ranges are the CDX API's (:func:`storage.cdx.key_range`, after pywb's ``calc_search_range``), so
that a search here finds what pywb's queries find.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import BinaryIO

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import ExtractMonth, ExtractYear
from django.utils import timezone
from django.utils.translation import gettext as _
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParserException

from storage.cdx import key_range
from storage.models import Capture
from storage.services.replication import warc_file_open
from storage.warcindex import url_key

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 64 * 1024
SHOWN_MIMES = 20  # rows of the "by MIME type" counts; the rest are summed as "others"


# -- keys and ranges ----------------------------------------------------------------------------------


def _after(key: str) -> str:
    """The smallest key greater than every key starting with ``key``."""
    return key[:-1] + chr(ord(key[-1]) + 1)


def exact_key(url: str) -> str:
    """The SURT key the index holds ``url`` under (http/https, ``www.`` and case folded, as pywb does)."""
    return url_key(url)


def prefix_key_range(url: str) -> tuple[str, str]:
    """``[start, end)``: the keys of every URL starting with ``url`` (the CDX API's ``matchType=prefix``)."""
    start, end = key_range(url, "prefix")
    return start, end


def host_key(host: str) -> str:
    """The SURT form of a host name: ``www.example.com`` → ``com,example``."""
    return url_key(f"http://{host}/").removesuffix(")/")


def domain_filter(host: str) -> Q:
    """The captures of a host and its subdomains, on any port.

    Three key prefixes: ``com,example)`` (the host), ``com,example,`` (subdomains) and
    ``com,example:`` (the host on another port); not ``com,example-shop)`` which sorts between them.
    The enclosing range lets the database walk one stretch of the key index, in key order.
    """
    key = host_key(host)
    prefixes = [f"{key})", f"{key},", f"{key}:"]
    parts = Q()
    for prefix in prefixes:
        parts |= Q(urlkey__gte=prefix, urlkey__lt=_after(prefix))
    return Q(urlkey__gte=prefixes[0], urlkey__lt=_after(prefixes[-1])) & parts


# -- counts -------------------------------------------------------------------------------------------


@dataclass
class MonthCount:
    year: int
    month: int
    count: int

    @property
    def first_day(self) -> date:
        return date(self.year, self.month, 1)


@dataclass
class YearCount:
    """A year of captures: its count and the count of each month that has any."""

    year: int
    count: int = 0
    months: dict[int, MonthCount] = field(default_factory=dict)

    def month_cells(self) -> list[MonthCount | None]:
        """Twelve cells, January first: the month's count, or ``None`` for a month without captures."""
        return [self.months.get(month) for month in range(1, 13)]


def captures_by_month(captures: QuerySet) -> list[YearCount]:
    """How many of ``captures`` fall in each year and month (in the site's time zone, as every time the
    pages show), latest first."""
    zone = timezone.get_current_timezone()
    rows = (
        captures.order_by()
        .annotate(year=ExtractYear("timestamp", tzinfo=zone), month=ExtractMonth("timestamp", tzinfo=zone))
        .values("year", "month")
        .annotate(count=Count("pk"))
        .order_by("-year", "-month")
    )
    years: dict[int, YearCount] = {}
    for row in rows:
        year = years.setdefault(row["year"], YearCount(row["year"]))
        year.count += row["count"]
        year.months[row["month"]] = MonthCount(row["year"], row["month"], row["count"])
    return list(years.values())


def period_captures(captures: QuerySet, year: int, month: int | None = None) -> QuerySet:
    """``captures`` of one year, or of one month of it (in the site's time zone), the most recent first."""
    zone = timezone.get_current_timezone()
    start = datetime(year, month or 1, 1, tzinfo=zone)
    if month is None or month == 12:
        end = datetime(year + 1, 1, 1, tzinfo=zone)
    else:
        end = datetime(year, month + 1, 1, tzinfo=zone)
    return captures.filter(timestamp__gte=start, timestamp__lt=end).order_by("-timestamp", "-pk")


def url_summaries(captures: QuerySet, *, after: str = "", limit: int) -> list[dict]:
    """The distinct URLs (SURT keys) of ``captures`` in key order, after ``after``, at most ``limit`` + 1.

    Each: ``urlkey``, ``sample_url`` (one of the URLs stored under the key), ``captures``, ``first``
    and ``last``. One more row than asked tells the caller that another page follows; keyset paging
    (``after`` = the last key shown) keeps every page one walk along the key index.
    """
    if after:
        captures = captures.filter(urlkey__gt=after)
    rows = (
        captures.order_by()
        .values("urlkey")
        .annotate(captures=Count("pk"), first=Min("timestamp"), last=Max("timestamp"), sample_url=Min("url"))
        .order_by("urlkey")
    )
    return list(rows[: limit + 1])


def capture_counts(captures: QuerySet) -> dict:
    """Totals of ``captures``, and how many there are of each MIME type (the commonest) and each status."""
    totals = captures.order_by().aggregate(count=Count("pk"), size=Sum("length"))
    mimes = list(
        captures.order_by()
        .values("mime")
        .annotate(count=Count("pk"))
        .order_by("-count", "mime")[: SHOWN_MIMES + 1]
    )
    others = 0
    if len(mimes) > SHOWN_MIMES:
        others = totals["count"] - sum(row["count"] for row in mimes[:SHOWN_MIMES])
        mimes = mimes[:SHOWN_MIMES]
    statuses = list(captures.order_by().values("status").annotate(count=Count("pk")).order_by("status"))
    return {
        "total": totals["count"],
        "size": totals["size"] or 0,
        "mimes": mimes,
        "other_mimes": others,
        "statuses": statuses,
    }


def capture_neighbours(capture: Capture, captures: QuerySet) -> tuple[Capture | None, Capture | None]:
    """The captures of the same URL (SURT key) just before and just after ``capture``, among ``captures``."""
    same = captures.filter(urlkey=capture.urlkey)
    stamp, pk = capture.timestamp, capture.pk
    previous = (
        same.filter(Q(timestamp__lt=stamp) | Q(timestamp=stamp, pk__lt=pk))
        .order_by("-timestamp", "-pk")
        .first()
    )
    following = (
        same.filter(Q(timestamp__gt=stamp) | Q(timestamp=stamp, pk__gt=pk))
        .order_by("timestamp", "pk")
        .first()
    )
    return previous, following


# -- the record in its file ---------------------------------------------------------------------------


class RecordUnavailable(Exception):
    """A capture's record cannot be read: its file is missing or unreadable, or not as the index says."""


@dataclass
class RecordHeaders:
    """A record's WARC (or ARC) header fields, and its HTTP status line and headers when it has them."""

    warc: list[tuple[str, str]]
    http_status: str = ""
    http: list[tuple[str, str]] = field(default_factory=list)


def _open_record(capture: Capture):
    """The capture's file, open and positioned at its record; its size is checked against the index."""
    warc_file = capture.warc_file
    path = warc_file.location()
    try:
        stream = warc_file_open(warc_file)
    except FileNotFoundError:
        if warc_file.machine and warc_file.machine != settings.MACHINE_NAME:
            raise RecordUnavailable(
                _(
                    "No replica of %(name)s can be read yet, and its copy is on crawl machine %(machine)s, "
                    "where it was written."
                )
                % {"name": warc_file.name, "machine": warc_file.machine}
            ) from None
        raise RecordUnavailable(
            _("The file %(name)s is not on disk (expected at %(path)s).")
            % {"name": warc_file.name, "path": path}
        ) from None
    except OSError as error:
        raise RecordUnavailable(
            _("The file %(name)s cannot be read: %(error)s.")
            % {"name": warc_file.name, "error": error.strerror}
        ) from error
    size = stream.seek(0, io.SEEK_END)  # a file or a storage node's stream (no file number)
    if capture.offset + capture.length > size:
        stream.close()
        raise RecordUnavailable(
            _(
                "The index places this record at bytes %(start)d to %(end)d of %(name)s, "
                "but the file has only %(size)d bytes."
            )
            % {
                "start": capture.offset,
                "end": capture.offset + capture.length,
                "name": warc_file.name,
                "size": size,
            }
        )
    stream.seek(capture.offset)
    return stream


def _read_record(capture: Capture, stream):
    """The record at the stream's position (warcio's), checked against the index's record id."""
    try:
        record = next(iter(ArchiveIterator(stream)), None)
    except (ArchiveLoadFailed, StatusAndHeadersParserException, OSError, EOFError, zlib.error) as error:
        raise RecordUnavailable(
            _("No record could be read at byte %(offset)d of %(name)s: %(error)s.")
            % {"offset": capture.offset, "name": capture.warc_file.name, "error": error}
        ) from error
    if record is None:
        raise RecordUnavailable(
            _("No record at byte %(offset)d of %(name)s.")
            % {"offset": capture.offset, "name": capture.warc_file.name}
        )
    record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
    if capture.record_id and record_id and record_id != capture.record_id:
        raise RecordUnavailable(
            _(
                "The record at byte %(offset)d of %(name)s is %(found)s, not %(expected)s: "
                "the index is out of date."
            )
            % {
                "offset": capture.offset,
                "name": capture.warc_file.name,
                "found": record_id,
                "expected": capture.record_id,
            }
        )
    return record


def capture_headers(capture: Capture) -> RecordHeaders:
    """The headers of the capture's record, read from its file at its offset (only the headers)."""
    with _open_record(capture) as stream:
        record = _read_record(capture, stream)
        headers = RecordHeaders(warc=list(record.rec_headers.headers))
        http = record.http_headers
        if http is not None:
            headers.http_status = f"{http.protocol} {http.statusline}".strip()
            headers.http = list(http.headers)
        return headers


class RecordBytes:
    """The capture's record as stored in its file, decompressed, in chunks; closes the file when done.

    A gzip WARC holds each record in its own gzip member, of ``length`` bytes at ``offset``: that
    member is inflated. An uncompressed file's record is those bytes as they are.
    """

    def __init__(self, capture: Capture):
        self._stream = _open_record(capture)
        self._remaining = capture.length
        self._compressed = self._stream.read(2) == GZIP_MAGIC
        self._stream.seek(capture.offset)

    def __iter__(self) -> Iterator[bytes]:
        try:
            inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if self._compressed else None
            while self._remaining > 0:
                chunk = self._stream.read(min(CHUNK, self._remaining))
                if not chunk:
                    break
                self._remaining -= len(chunk)
                if inflate is None:
                    yield chunk
                    continue
                data = inflate.decompress(chunk)
                if data:
                    yield data
                if inflate.eof:
                    break
            if inflate is not None:
                tail = inflate.flush()
                if tail:
                    yield tail
        finally:
            self.close()

    def close(self) -> None:
        self._stream.close()


class RecordPayload:
    """The payload of the capture's record (a resource record's block, a response's body), in chunks.

    Its headers are read when it is made (:class:`RecordUnavailable` then, not in the middle of a
    response); ``content_type`` is the payload's (the record's, or the HTTP message's). Iterating
    closes the file when done.
    """

    def __init__(self, capture: Capture):
        self._stream = _open_record(capture)
        try:
            self._record = _read_record(capture, self._stream)
        except BaseException:
            self._stream.close()
            raise
        headers = self._record.http_headers or self._record.rec_headers
        self.content_type = headers.get_header("Content-Type") or ""

    def __iter__(self) -> Iterator[bytes]:
        try:
            content = self._record.content_stream()
            while chunk := content.read(CHUNK):
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        self._stream.close()


class _PayloadReader(io.RawIOBase):
    """The payload of a capture's record as a readable stream (warcio's content stream, unchunked)."""

    def __init__(self, capture: Capture):
        self._stream = _open_record(capture)
        try:
            self._content = _read_record(capture, self._stream).content_stream()
        except BaseException:
            self._stream.close()
            raise

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._content.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
        super().close()


def record_payload_stream(capture: Capture) -> BinaryIO:
    """The payload of the capture's record, opened for reading from a replica (or where it was written);
    OSError when it cannot be read (what is wrong in words)."""
    try:
        return io.BufferedReader(_PayloadReader(capture), CHUNK)
    except RecordUnavailable as error:
        raise OSError(str(error)) from error
