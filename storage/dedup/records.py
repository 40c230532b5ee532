"""The records of one WARC file, by offset: gzip members of one record each, or plain records.

What every stage of the pipeline reads with. A file is mapped in memory; a
gzip member is inflated with :mod:`zlib` (the technique of
:mod:`storage.warcindex`: a window that grows until the member ends), its WARC
head split on CRLF (warcio's parser when the lines are odd), and the payload
sliced out of the inflated bytes. A member holding several records, a record
shorter than its Content-Length, bytes that are not gzip or not WARC raise
:class:`~storage.warcindex.WarcReadError` with the byte where reading failed.

The *payload* compared byte for byte is what follows the HTTP head in the
block, as stored; its digest is the SHA-256 of that entity body, de-chunked
when the head still says ``Transfer-Encoding: chunked`` (as warcio computes it).
"""

from __future__ import annotations

import base64
import hashlib
import io
import mmap
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.statusandheaders import StatusAndHeadersParser, StatusAndHeadersParserException
from warcio.timeutils import iso_date_to_timestamp

from storage.warcindex import HEAD_BYTES, WHOLE_FILE_GZIP, WarcReadError, inflate_member

FIRST_WINDOW = 16 * 1024
COPY_BYTES = 8 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b"
_WARC_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
_CHUNKED = re.compile(rb"\ntransfer-encoding[ \t]*:[^\r\n]*chunked", re.IGNORECASE)
_HTTP_CONTENT_TYPE = re.compile(rb"\ncontent-type[ \t]*:([^\r\n]*)", re.IGNORECASE)
_WARC_PARSER = StatusAndHeadersParser(["WARC/1.1", "WARC/1.0", "WARC/0.18", "WARC/0.17"])


@dataclass(slots=True)
class Record:
    """One record read at ``offset``: its inflated bytes (all, or the head only) and WARC fields."""

    offset: int
    length: int  # in the file: of the gzip member, or of the plain record
    content: bytes  # the record inflated; only its first HEAD_BYTES unless ``complete``
    complete: bool
    fields: dict[str, str]  # WARC header fields: lower-case names, the first of repeated ones
    block_start: int  # where the block starts in ``content``
    block_length: int

    @property
    def record_type(self) -> str:
        return self.fields.get("warc-type", "")

    @property
    def record_id(self) -> str:
        return self.fields.get("warc-record-id", "")

    @property
    def block_end(self) -> int:
        return self.block_start + self.block_length

    def is_http(self) -> bool:
        return self.fields.get("content-type", "").lower().startswith("application/http")

    def payload_start(self) -> int | None:
        """Where the payload starts in ``content`` (after the HTTP head); None if not within the head read."""
        start, end = self.block_start, min(self.block_end, len(self.content))
        if not self.is_http():
            return start
        found = self.content.find(b"\r\n\r\n", start, end)
        if found >= 0:
            return found + 4
        found = self.content.find(b"\n\n", start, end)  # bare LF heads, as warcio reads them
        if found >= 0:
            return found + 2
        return None if not self.complete and end < self.block_end else self.block_end

    def http_head(self) -> bytes:
        """The HTTP head (status line and headers, blank line included): a revisit's block."""
        return self.content[self.block_start : self.payload_start()]

    def payload(self) -> memoryview:
        """The payload as stored (the record must be complete)."""
        return memoryview(self.content)[self.payload_start() : self.block_end]

    def mime(self) -> str:
        """The payload's MIME type as CDX indexes write it ("" for a response that is not HTTP)."""
        if not self.is_http():
            return ""
        start = self.payload_start() or min(len(self.content), self.block_end)
        found = _HTTP_CONTENT_TYPE.search(self.content, self.block_start, start)
        value = found[1].strip().decode("iso-8859-1") if found else ""
        return re.split(r"[;\s]", value, maxsplit=1)[0]

    def chunked(self) -> bool:
        return self.is_http() and bool(_CHUNKED.search(self.content, self.block_start, self.payload_start()))

    def timestamp(self) -> str:
        """The WARC-Date as 14 digits."""
        date = self.fields.get("warc-date", "")
        if _WARC_DATE.fullmatch(date):
            return date[0:4] + date[5:7] + date[8:10] + date[11:13] + date[14:16] + date[17:19]
        try:
            return iso_date_to_timestamp(date)
        except (ValueError, IndexError):
            return "0" * 14

    def target_uri(self) -> str:
        uri = self.fields.get("warc-target-uri", "")
        return uri[1:-1] if uri.startswith("<") and uri.endswith(">") else uri


def payload_sha256(record: Record) -> bytes:
    """SHA-256 of the entity body (de-chunked if the HTTP head says chunked and it is)."""
    payload = record.payload()
    if record.chunked():
        dechunked = dechunk(bytes(payload))
        if dechunked is not None:
            return hashlib.sha256(dechunked).digest()
    return hashlib.sha256(payload).digest()


def digest_string(raw: bytes, algorithm: str = "sha256") -> str:
    """A digest as WARC writes it: ``algorithm:BASE32``."""
    return f"{algorithm}:{base64.b32encode(raw).decode('ascii')}"


def dechunk(data: bytes) -> bytes | None:
    """The body of a chunked transfer coding, or None if ``data`` is not one."""
    out = bytearray()
    position, size = 0, len(data)
    while position < size:
        line_end = data.find(b"\r\n", position)
        if line_end < 0:
            return None
        try:
            length = int(data[position:line_end].split(b";")[0].strip(), 16)
        except ValueError:
            return None
        position = line_end + 2
        if length == 0:
            return bytes(out)
        if position + length > size:
            return None
        out += data[position : position + length]
        position += length + 2
    return None


class Source:
    """One WARC file mapped in memory, read record by record or at an offset."""

    def __init__(self, path: Path, name: str | None = None):
        self.path = Path(path)
        self.name = name or self.path.name
        try:
            with self.path.open("rb") as stream:
                self.data = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            raise WarcReadError(self.name, 0, "no such file") from None
        except ValueError:  # an empty file cannot be mapped
            raise WarcReadError(self.name, 0, "empty file") from None
        self.size = len(self.data)
        self.compressed = self.data[:2] == GZIP_MAGIC

    def close(self) -> None:
        self.data.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def records(self, *, complete: bool) -> Iterator[Record]:
        """Every record in file order; inflated whole if ``complete``, else only its head."""
        position = 0
        while position < self.size:
            record = self._read(position, complete=complete)
            yield record
            position = record.offset + record.length

    def record_at(self, offset: int, length: int | None = None) -> Record:
        """The complete record at ``offset`` (of ``length`` bytes in the file, if known)."""
        if not 0 <= offset < self.size:
            raise WarcReadError(self.name, offset, "no record there (the file is shorter)")
        record = self._read(offset, complete=True)
        if length is not None and record.length != length:
            raise WarcReadError(self.name, offset, f"record of {record.length} bytes, not {length}")
        return record

    def raw(self, start: int, end: int) -> Iterator[bytes]:
        """The file's bytes from ``start`` to ``end``, in pieces of a bounded size."""
        while start < end:
            piece = min(end, start + COPY_BYTES)
            yield self.data[start:piece]
            start = piece

    def _read(self, offset: int, *, complete: bool) -> Record:
        if self.compressed:
            return self._member(offset, complete=complete)
        return self._plain(offset)

    def _member(self, start: int, *, complete: bool) -> Record:
        name = self.name
        content, inflated, position = inflate_member(
            name, self.data, start, complete=complete, first_window=FIRST_WINDOW
        )
        fields, block_start, block_length = _warc_head(name, start, content)
        expected = block_start + block_length + 4  # the block, then CRLF CRLF
        if inflated > expected:
            if start == 0:
                raise WarcReadError(name, start, WHOLE_FILE_GZIP)
            raise WarcReadError(name, start, "several records in one gzip member (recompress the file)")
        if inflated < expected:
            raise WarcReadError(name, start, "record shorter than its Content-Length (the file is torn)")
        return Record(start, position - start, content, complete, fields, block_start, block_length)

    def _plain(self, start: int) -> Record:
        head = self.data[start : start + HEAD_BYTES]
        fields, block_start, block_length = _warc_head(self.name, start, head)
        length = block_start + block_length + 4
        if start + length > self.size:
            raise WarcReadError(self.name, start, "record shorter than its Content-Length (the file is torn)")
        content = head if length <= len(head) else self.data[start : start + length]
        return Record(start, length, content, True, fields, block_start, block_length)


def _warc_head(name: str, offset: int, content: bytes) -> tuple[dict[str, str], int, int]:
    """The WARC fields, where the block starts and its length; CRLF lines quickly, else warcio's parser."""
    end = content.find(b"\r\n\r\n") if content.startswith(b"WARC/") else -1
    if end >= 0:
        fields = _fields(content[:end].split(b"\r\n")[1:])
        block_start = end + 4
    else:
        stream = io.BytesIO(content)
        try:
            headers = _WARC_PARSER.parse(stream)
        except (StatusAndHeadersParserException, EOFError, ValueError):
            raise WarcReadError(name, offset, "not a WARC record") from None
        fields = {}
        for key, value in headers.headers:
            fields.setdefault(key.lower(), value)
        block_start = stream.tell()
    declared = fields.get("content-length", "").strip()
    if not declared.isdigit():
        raise WarcReadError(name, offset, "WARC record without a valid Content-Length")
    return fields, block_start, int(declared)


def _fields(lines: list[bytes]) -> dict[str, str]:
    found: dict[str, str] = {}
    name = ""
    for line in lines:
        if line[:1] in (b" ", b"\t"):  # a folded line continues the previous value
            if name in found:
                found[name] += " " + line.strip().decode("utf-8", "replace")
            continue
        key, colon, value = line.partition(b":")
        if not colon:
            continue
        name = key.strip().lower().decode("ascii", "replace")
        if name not in found:
            found[name] = value.strip().decode("utf-8", "replace")
    return found


def sniff(path: Path) -> str:
    """What a file holds: ``warc`` or ``arc``; WarcReadError (at byte 0) for anything else."""
    name = path.name
    try:
        with path.open("rb") as stream:
            start = stream.read(64 * 1024)
    except OSError as error:
        raise WarcReadError(name, 0, f"cannot be read ({error.strerror})") from None
    if not start:
        raise WarcReadError(name, 0, "empty file")
    if start[:2] == GZIP_MAGIC:
        try:
            start = zlib.decompressobj(31).decompress(start, 64)
        except zlib.error as error:
            raise WarcReadError(name, 0, f"not gzip data ({error})") from None
    if start.startswith(b"WARC/"):
        return "warc"
    if start.startswith(b"filedesc://"):
        return "arc"
    raise WarcReadError(name, 0, "neither a WARC nor an ARC file")
