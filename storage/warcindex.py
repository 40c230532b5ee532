"""Reading WARC and ARC files into capture-index entries, the fields of a CDXJ line.

The entries are those pywb's indexer (``cdxj-indexer``) writes for the same
file: ``response``, ``revisit``, ``resource`` and ``metadata`` records (not
``warcinfo``, ``request``, nor a resource or metadata record of
``application/warc-fields``), the SURT key from the ``surt`` library (:mod:`storage.urlkeys`), the
14-digit date, the MIME type as the index writes it (``warc/revisit`` for a
revisit), the HTTP status, the payload digest, and the offset and length of
the record in the file (of its gzip member in a compressed file).

Gzip WARC files with one member per record (what crawlers write) are read by
a fast path: each member is inflated (ISA-L's inflate, else :mod:`zlib`) just far enough to find
where it ends, and only its head (WARC and HTTP headers) is parsed, by
warcio's header parser. Every other file (ARC, uncompressed WARC, a
gzip member holding several records, a record without a payload digest) is
read with warcio's ``ArchiveIterator``.

A file that is not a WARC or ARC file, or that is torn (a record cut short),
raises :class:`WarcReadError` with the byte where reading failed; callers
index a file all or nothing.

This module does not use Django: it is shared by ``index_warcs``, the
benchmarks and the tests.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import mmap
import operator
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException
from warcio.timeutils import iso_date_to_timestamp
from warcio.warcwriter import BufferWARCWriter

from storage.urlkeys import url_key

try:  # ISA-L's inflate: the same bytes (and the same checks of each member's CRC and size), a third sooner
    from isal import isal_zlib as _inflating
except ImportError:  # pragma: no cover (isal is in requirements.txt; zlib gives the same entries)
    _inflating = zlib
INFLATE_ERRORS = (zlib.error, _inflating.error)

INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})
WARC_FIELDS = "application/warc-fields"
REVISIT_MIME = "warc/revisit"
SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")
WHOLE_FILE_GZIP = (
    "one gzip stream for the whole file, not one gzip member per record: a record cannot be read at "
    "its offset (recompress the file with `warcio recompress`, then index the new file)"
)
HEAD_BYTES = 64 * 1024  # a record's WARC and HTTP headers must fit in this much inflated data
FIRST_WINDOW = 4096
MAX_WINDOW = 1024 * 1024
_MIME_END = re.compile(r"[;\s]")
_CONTENT_TYPE = re.compile(rb"\r\ncontent-type:([^\r\n]*)", re.IGNORECASE)  # the first one, as warcio
_INDEXED_FIELDS = re.compile(  # over the head decoded once (CR and LF end any UTF-8 sequence)
    r"\r\n(warc-(?:type|target-uri|date|record-id|payload-digest)|content-(?:type|length))[ \t]*:([^\r\n]*)",
    re.IGNORECASE | re.ASCII,
)
_BYTES_SPACE = " \t\n\r\x0b\x0c"  # what bytes.strip() strips (str.strip() would strip more)
_WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
_WARC_PARSER = StatusAndHeadersParser(["WARC/1.1", "WARC/1.0", "WARC/0.18", "WARC/0.17"])
_HTTP_PARSER = StatusAndHeadersParser([], verify=False)


@dataclass(slots=True)
class Entry:
    """One capture-index entry: what a CDXJ line says about a record."""

    urlkey: str
    timestamp: str  # 14 digits, UTC
    url: str
    record_type: str
    mime: str
    status: int | None
    digest: str
    length: int
    offset: int
    record_id: str = ""

    def cdxj(self, filename: str) -> str:
        """The record as a CDXJ line, field for field what cdxj-indexer writes."""
        return cdxj_line(self, filename)


class WarcReadError(Exception):
    """A file that cannot be indexed: not WARC/ARC, or torn at ``offset``."""

    def __init__(self, name: str, offset: int, reason: str):
        self.name, self.offset, self.reason = name, offset, reason
        super().__init__(name, offset, reason)  # picklable: files are read in other processes

    def __str__(self) -> str:
        return f"{self.name}: cannot read at byte {self.offset}: {self.reason}"


def cdx_mime(content_type: str | None) -> str:
    """A Content-Type value as CDX indexes write it: up to the first ``;`` or space, case kept."""
    return _MIME_END.split(content_type or "", maxsplit=1)[0].strip()


def cdxj_line(entry: Entry, filename: str) -> str:
    """``urlkey timestamp {json}``, the JSON keys in cdxj-indexer's order, absent when empty."""
    import json

    fields = {"url": entry.url}
    if entry.mime:
        fields["mime"] = entry.mime
    if entry.status is not None:
        fields["status"] = str(entry.status)
    if entry.digest:
        fields["digest"] = entry.digest
    fields["length"] = str(entry.length)
    fields["offset"] = str(entry.offset)
    fields["filename"] = filename
    return f"{entry.urlkey} {entry.timestamp} {json.dumps(fields)}"


def archive_files(paths: list[str | Path]) -> Iterator[Path]:
    """The WARC and ARC files among ``paths``, directories walked (sorted, hidden files skipped)."""
    for path in map(Path, paths):
        if path.is_dir():
            for found in sorted(path.rglob("*")):
                if found.is_file() and found.name.endswith(SUFFIXES) and not found.name.startswith("."):
                    yield found
        else:
            yield path


def _entry_rows(entries: list[Entry]) -> list[tuple]:
    """Entries as plain tuples: what goes between processes (pickling tuples is a few times quicker)."""
    return [_entry_row(entry) for entry in entries]


_entry_row = operator.attrgetter(
    "urlkey", "timestamp", "url", "record_type", "mime", "status", "digest", "length", "offset", "record_id"
)


class _EntriesByRows:
    """Pickled with its entries as tuples (a reading comes back from a worker process)."""

    entries: list[Entry]

    def __getstate__(self):
        state = dict(self.__dict__)
        state["entries"] = _entry_rows(self.entries)
        return state

    def __setstate__(self, state):
        state["entries"] = [Entry(*row) for row in state["entries"]]
        self.__dict__.update(state)


@dataclass
class FileReading(_EntriesByRows):
    """One file read for the index: its entries, size and SHA-256 (what registering it needs)."""

    path: Path
    size: int
    sha256: str
    entries: list[Entry]


def read_file(path: str | Path) -> FileReading:
    """Read a whole file: entries and checksum (picklable: ``index_warcs`` reads files in parallel)."""
    path = Path(path).resolve()
    if not path.is_file():
        raise WarcReadError(path.name, 0, "no such file")
    entries = list(read_entries(path))
    with path.open("rb") as stream:
        sha256 = hashlib.file_digest(stream, "sha256").hexdigest()
    return FileReading(path, path.stat().st_size, sha256, entries)


def read_file_or_error(path: str | Path) -> FileReading | WarcReadError:
    """:func:`read_file`, with the error returned rather than raised (for a process pool's map)."""
    try:
        return read_file(path)
    except WarcReadError as error:
        return error


# -- a large file in parts: read side by side, joined into the file's reading -------------------------


@dataclass(frozen=True)
class Part:
    """A stretch of a file read by itself: the whole file (``whole``: :func:`read_file`), or the gzip
    members that start from the first member at or after ``start`` up to ``end`` (the next part's
    ``start``, or the file's size)."""

    path: Path
    start: int
    end: int
    whole: bool = False


@dataclass
class PartReading(_EntriesByRows):
    """The gzip members of a part: from ``start`` (where the first member was found; None: none starts
    in the part) to ``stop`` (where the last one ends), their entries; or the error or ``simple``
    False (the file needs the general reader) met on the way. The first part also gives the whole
    file's SHA-256."""

    part: Part
    start: int | None
    stop: int
    entries: list[Entry]
    sha256: str = ""
    error: WarcReadError | None = None
    simple: bool = True


def file_parts(path: str | Path, part_bytes: int) -> list[Part]:
    """A file cut into parts of about ``part_bytes`` (so that processes reading side by side finish
    together); a file that is small, not a gzip WARC, or not readable is one whole part.

    The cuts are only where a part starts looking for its first gzip member: :func:`join_parts` checks
    that each part starts exactly where the previous one stopped, so the parts read together the
    records one reading of the whole file reads, or the file is read again whole."""
    path = Path(path).resolve()
    whole = [Part(path, 0, 0, whole=True)]
    if part_bytes < 1 or not path.name.endswith(".warc.gz"):
        return whole
    try:
        size = path.stat().st_size
        with path.open("rb") as stream:
            magic = stream.read(2)
    except OSError:
        return whole
    count = size // part_bytes
    if magic != b"\x1f\x8b" or count < 2:
        return whole
    cuts = [size * index // count for index in range(count)] + [size]
    return [Part(path, start, end) for start, end in itertools.pairwise(cuts)]


def read_unit(part: Part) -> FileReading | WarcReadError | PartReading:
    """What a worker process reads: a whole file (:func:`read_file_or_error`) or a part of one."""
    return read_file_or_error(part.path) if part.whole else read_part(part)


def read_part(part: Part) -> PartReading:
    """The entries of the gzip members of one part of a file (see :func:`file_parts`)."""
    name = part.path.name
    reading = PartReading(part, None, part.start, [])
    try:
        with part.path.open("rb") as stream:
            data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
            if part.start == 0:
                stream.seek(0)
                reading.sha256 = hashlib.file_digest(stream, "sha256").hexdigest()
    except (OSError, ValueError) as error:
        reading.error = WarcReadError(name, part.start, f"unreadable ({error})")
        return reading
    with data:
        start = 0 if part.start == 0 else _member_start(name, data, part.start, part.end)
        if start is None:
            return reading
        reading.start = reading.stop = start
        try:
            for entry, stop in _scan_members(name, data, start, part.end):
                if entry is not None:
                    reading.entries.append(entry)
                reading.stop = stop
        except _NotSimple:
            reading.simple = False
        except WarcReadError as error:
            reading.error = error
    return reading


def _member_start(name: str, data: mmap.mmap, start: int, end: int) -> int | None:
    """The first place at or after ``start`` (before ``end``) where a gzip member holding a WARC record
    starts; None if there is none (the bytes of a member may look like a gzip header: it must inflate)."""
    position = start
    while (found := data.find(b"\x1f\x8b\x08", position, end + 2)) >= 0 and found < end:
        try:
            head, _inflated, _next = inflate_member(name, data, found)
        except WarcReadError:
            head = b""
        if head.startswith(b"WARC/"):
            return found
        position = found + 1
    return None


def join_parts(parts: list[Part], readings: list) -> FileReading | WarcReadError | None:
    """The reading of a whole file from the readings of its parts (in file order), the error one reading
    of the whole file would meet, or None when the file must be read again whole (a member that is
    not one simple record, a cut the parts do not agree on)."""
    if len(parts) == 1 and parts[0].whole:
        return readings[0]
    path = parts[0].path
    entries: list[Entry] = []
    position = 0  # where the members read so far end
    for part, reading in zip(parts, readings, strict=True):
        if reading.start is None:  # no member starts in this part: the previous one must cover it
            if position < part.end:
                return None
            continue
        if reading.start != position:
            return None
        if reading.error is not None:
            return reading.error
        if not reading.simple:
            return None
        entries += reading.entries
        position = reading.stop
    size = path.stat().st_size
    if position != size:
        return None
    return FileReading(path, size, readings[0].sha256, entries)


def read_entries(path: str | Path) -> Iterator[Entry]:
    """The capture-index entries of one WARC or ARC file, in file order."""
    path = Path(path)
    with path.open("rb") as stream:
        try:
            data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:  # an empty file cannot be mapped
            raise WarcReadError(path.name, 0, "empty file") from None
    with data:
        if data[:2] == b"\x1f\x8b" and not path.name.endswith((".arc.gz", ".arc")):
            entries = _gzip_members(path.name, data)
            if entries is not None:
                yield from entries
                return
        yield from _warcio_entries(path)


# -- the fast path: gzip members, one record each ----------------------------------------------------


class _NotSimple(Exception):
    """The file needs the general reader (several records in a member, no payload digest…)."""


def _gzip_members(name: str, data: mmap.mmap) -> list[Entry] | None:
    """Entries of a gzip-per-record WARC file, or None if it is not one."""
    try:
        return [entry for entry, _end in _scan_members(name, data) if entry is not None]
    except _NotSimple:
        return None


def inflate_member(
    name: str, data, start: int, *, complete: bool = False, first_window: int = FIRST_WINDOW
) -> tuple[bytes, int, int]:
    """Inflate the gzip member at ``start`` of ``data`` (bytes or mmap): its first ``HEAD_BYTES``
    (all of it when ``complete``), how many bytes it inflates to, and where the next member starts."""
    inflater = _inflating.decompressobj(31)
    parts: list[bytes] = []
    head = bytearray()
    inflated = 0
    position, window = start, first_window
    while True:
        chunk = data[position : position + window]
        if not chunk:
            raise WarcReadError(name, start, "truncated gzip member (the file ends inside a record)")
        try:
            out = inflater.decompress(chunk)
        except INFLATE_ERRORS as error:
            raise WarcReadError(name, start, f"not gzip data ({error})") from None
        if inflater.eof and position == start:  # the usual member, small: inflated at once
            end = position + len(chunk) - len(inflater.unused_data)
            return (out if complete else out[:HEAD_BYTES]), len(out), end
        inflated += len(out)
        if complete:
            parts.append(out)
        elif len(head) < HEAD_BYTES:
            head += out[: HEAD_BYTES - len(head)]
        if inflater.eof:
            position += len(chunk) - len(inflater.unused_data)
            break
        position += len(chunk)
        window = min(window * 2, MAX_WINDOW)
    return (b"".join(parts) if complete else bytes(head)), inflated, position


def _scan_members(
    name: str, data: mmap.mmap, position: int = 0, end: int | None = None
) -> Iterator[tuple[Entry | None, int]]:
    """(entry or None, where its member ends) for each member starting from ``position`` before ``end``."""
    end = len(data) if end is None else end
    while position < end:
        start = position
        head, inflated, position = inflate_member(name, data, start)
        yield _member_entry(name, head, inflated, start, position - start), position


@dataclass(slots=True)
class _Head:
    """What the index needs from a record's head: WARC fields (lower-case names), HTTP status and type."""

    fields: dict[str, str]
    block_start: int  # where the record's block starts in the inflated member
    status: str | None = None
    http_type: str | None = None
    http_parsed: bool = False


def _member_entry(name: str, head: bytes, inflated: int, offset: int, length: int) -> Entry | None:
    parsed = _split_head(head) or _warcio_head(name, head, offset)
    fields = parsed.fields
    declared = fields.get("content-length", "")
    if not declared.strip().isdigit():
        raise WarcReadError(name, offset, "WARC record without a Content-Length")
    expected = parsed.block_start + int(declared) + 4  # the record's block, then CRLF CRLF
    if inflated != expected:
        if inflated > expected:
            raise _NotSimple  # several records in one member
        raise WarcReadError(name, offset, "record shorter than its Content-Length")
    record_type = fields.get("warc-type", "")
    content_type = fields.get("content-type", "")
    if not _indexed(record_type, content_type):
        return None
    digest = fields.get("warc-payload-digest")
    if not digest:
        raise _NotSimple  # warcio computes the digest cdxj-indexer would
    status = None
    mime = ""
    if record_type in ("response", "revisit") and content_type.startswith("application/http"):
        if not parsed.http_parsed:
            _split_http_head(parsed, head)
        if parsed.status is not None:
            status = _status(parsed.status)
            mime = cdx_mime(parsed.http_type)
        else:
            mime = ""
    elif record_type != "response":  # a response that is not HTTP (dns:, …): cdxj-indexer has no MIME type
        mime = cdx_mime(content_type)
    if record_type == "revisit":
        mime = REVISIT_MIME
    url = _target_uri(fields.get("warc-target-uri", ""))
    return Entry(
        urlkey=url_key(url),
        timestamp=_timestamp(fields.get("warc-date", "")),
        url=url,
        record_type=record_type,
        mime=mime,
        status=status,
        digest=digest,
        length=length,
        offset=offset,
        record_id=fields.get("warc-record-id", ""),
    )


def _timestamp(date: str) -> str:
    """A WARC-Date as 14 digits: sliced when it has the usual form, else by warcio."""
    if _WARC_DATE.fullmatch(date):
        return date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
    return iso_date_to_timestamp(date)


def _split_head(head: bytes) -> _Head | None:
    """The WARC headers split on CRLF: the common case, quickly.

    warcio's parser (which also reads bare-LF lines, and the rest of what real files hold) takes
    over whenever this one is not sure; it is several times slower, and indexing is bound by this.
    """
    if not head.startswith(b"WARC/"):
        return None
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return None
    if head.find(b"\r\n ", 0, end + 2) >= 0 or head.find(b"\r\n\t", 0, end + 2) >= 0:  # folded lines
        return _Head(_fields(head[:end].split(b"\r\n")[1:], "utf-8"), end + 4)  # every field, line by line
    # Only the fields the index uses; the first of a repeated name, as warcio.
    fields = {
        name.lower(): value.strip(_BYTES_SPACE)
        for name, value in reversed(_INDEXED_FIELDS.findall(head[: end + 2].decode("utf-8", "replace")))
    }
    return _Head(fields, end + 4)


def _split_http_head(parsed: _Head, head: bytes) -> None:
    """The HTTP status and Content-Type of a CRLF head, quickly; else warcio's parser."""
    start = parsed.block_start
    end = head.find(b"\r\n\r\n", start)
    status_line = head[start : head.find(b"\r\n", start)].split(None, 2)
    if end < 0 or len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
        _http_head(parsed, head)
        return
    found = _CONTENT_TYPE.search(head, start, end + 2)
    parsed.status = status_line[1].decode("ascii", "replace")
    parsed.http_type = found[1].strip().decode("iso-8859-1") if found else None
    parsed.http_parsed = True


def _fields(lines: list[bytes], encoding: str) -> dict[str, str]:
    """``Name: value`` lines as a dict of lower-case names (the first of repeated names, as warcio)."""
    found: dict[str, str] = {}
    name = ""
    for line in lines:
        if line[:1] in (b" ", b"\t"):  # a folded line continues the previous value
            if name in found:
                found[name] += " " + line.strip().decode(encoding, "replace")
            continue
        key, colon, value = line.partition(b":")
        if not colon:
            continue
        name = key.strip().lower().decode("ascii", "replace")
        if name not in found:
            found[name] = value.strip().decode(encoding, "replace")
    return found


def _warcio_head(name: str, head: bytes, offset: int) -> _Head:
    stream = io.BytesIO(head)
    try:
        headers = _WARC_PARSER.parse(stream)
    except (StatusAndHeadersParserException, EOFError, ValueError):
        if offset == 0:
            raise _NotSimple from None  # an ARC file under a .warc.gz name: warcio says what it is
        raise WarcReadError(name, offset, "not a WARC record") from None
    fields: dict[str, str] = {}
    for key, value in headers.headers:
        fields.setdefault(key.lower(), value)
    return _Head(fields, stream.tell())


def _http_head(parsed: _Head, head: bytes) -> None:
    """The HTTP status and Content-Type by warcio's parser (bare LF lines, odd status lines…)."""
    stream = io.BytesIO(head)
    stream.seek(parsed.block_start)
    try:
        headers = _HTTP_PARSER.parse(stream)
    except (StatusAndHeadersParserException, EOFError, ValueError):
        headers = None
    if headers is not None and headers.statusline:
        parsed.status = headers.get_statuscode()
        parsed.http_type = headers.get_header("Content-Type")
    elif stream.tell() >= HEAD_BYTES:
        raise _NotSimple  # HTTP headers longer than the head we kept
    parsed.http_parsed = True


# -- the general path: warcio -----------------------------------------------------------------------


def _warcio_entries(path: Path) -> Iterator[Entry]:
    name = path.name
    digester = BufferWARCWriter()
    with path.open("rb") as stream:
        records = ArchiveIterator(stream, arc2warc=True)
        start = 0  # where the record being read starts (warcio knows its offset only once it is read)
        try:
            for record in records:
                record_type = record.rec_type
                if not record_type or record.length is None:  # warcio's reading of cut headers
                    at = records.get_record_offset()
                    raise WarcReadError(name, at, "the file ends inside a record's headers (it is torn)")
                if not (record.rec_headers.get_header("Content-Length") or "").strip().isdigit():
                    # warcio reads any line of words as an ARC header; a real one has a length
                    raise WarcReadError(name, start, "not a WARC or ARC record (no valid length)")
                content_type = record.rec_headers.get_header("Content-Type") or ""
                indexed = _indexed(record_type, content_type)
                if indexed and not record.rec_headers.get_header("WARC-Payload-Digest"):
                    digester.ensure_digest(record, block=False, payload=True)  # reads the payload
                _read_to_end(name, start, record)
                offset, length = records.get_record_offset(), records.get_record_length()
                start = offset + length
                if indexed:
                    yield _record_entry(record, offset, length)
        except ArchiveLoadFailed as error:
            if "non-chunked gzip" in str(error):
                raise WarcReadError(name, 0, WHOLE_FILE_GZIP) from None
            raise WarcReadError(name, max(start, 0), " ".join(str(error).split())) from None
        except (zlib.error, EOFError, OSError) as error:
            raise WarcReadError(name, start, f"unreadable ({error})") from None


def _read_to_end(name: str, offset: int, record) -> None:
    """Read what is left of the record's block; a record shorter than its declared length is torn."""
    stream = record.raw_stream
    read = 0
    while chunk := stream.read(MAX_WINDOW):
        read += len(chunk)
    consumed = getattr(stream, "limit", None)
    if consumed:  # warcio's LimitReader: bytes of the declared length not delivered
        raise WarcReadError(name, offset, "record shorter than its declared length (the file is torn)")


def _record_entry(record, offset: int, length: int) -> Entry:
    headers = record.rec_headers
    record_type = record.rec_type
    if record_type == "revisit":
        mime = REVISIT_MIME
    elif record_type in ("response", "request"):
        mime = cdx_mime(record.http_headers.get_header("Content-Type")) if record.http_headers else ""
    else:
        mime = cdx_mime(headers.get_header("Content-Type"))
    status = None
    if record_type in ("response", "revisit") and record.http_headers:
        status = _status(record.http_headers.get_statuscode())
    url = _target_uri(headers.get_header("WARC-Target-URI") or "")
    return Entry(
        urlkey=url_key(url),
        timestamp=iso_date_to_timestamp(headers.get_header("WARC-Date") or ""),
        url=url,
        record_type=record_type,
        mime=mime,
        status=status,
        digest=headers.get_header("WARC-Payload-Digest") or "",
        length=length,
        offset=offset,
        record_id=headers.get_header("WARC-Record-ID") or "",
    )


def _indexed(record_type: str, content_type: str) -> bool:
    if record_type not in INDEXED_TYPES:
        return False
    return not (record_type in ("resource", "metadata") and content_type == WARC_FIELDS)


def _status(code: str | None) -> int | None:
    return int(code) if code and code.isdigit() and len(code) <= 3 else None


def _target_uri(uri: str) -> str:
    return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri
