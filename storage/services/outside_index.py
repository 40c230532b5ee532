"""The capture index written by crawlers outside the archive (the UK Web Archive's OutbackCDX role).

A WARC file written elsewhere is first made known to the archive (:func:`warc_file_register_outside`,
``manage.py register_warcs``): read whole with warcio (a file that is not WARC/ARC, or is torn, is
refused), its size and SHA-256 taken (and compared with the ones the sender gives). Its captures are
then what the outside crawler posts (``POST /api/cdx/``, :func:`capture_lines_add`): CDXJ lines
(``urlkey timestamp {json}``, what ``cdxj-indexer`` and pywb write) or space-separated CDX lines
(CDX11 ``N b a m s k r M S V g`` by default, or the columns of a `` CDX …`` header line, as Heritrix
and OutbackCDX clients send them), each naming its file by name.

Semantics, all or nothing: every line is checked (the file known, closed and not retired; offset
and length inside it; a 14-digit timestamp; an http(s)/ftp URL; and the record at that offset read
with warcio: a response, revisit, resource or metadata record of that URL and that date, exactly
``length`` bytes long). One bad line refuses the whole body, listing every bad line by number, and
nothing is written. Posting lines again is harmless: a line whose file and offset are already in
the index with the same URL and date is left as it is (a different one at that place is a bad
line). The rows are committed when the request returns, so ``/cdx`` and replay see them at once,
as they see a crawl's captures.

The SURT key is computed here (:mod:`storage.urlkeys`), not taken from the line: the index must
hold one key per URL whatever tool wrote the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

from storage.models import Capture, WarcFile
from storage.warcindex import INDEXED_TYPES, REVISIT_MIME, WarcReadError, read_file
from storage.warcindex import url_key as surt_key

CDX11 = "NbamskrMSVg"
KNOWN_COLUMNS = frozenset(CDX11)
NEEDED_COLUMNS = frozenset("baSVg")  # timestamp, URL, length, offset, file name
URL_SCHEMES = frozenset({"http", "https", "ftp"})
ERRORS_SHOWN = 100  # a body of bad lines is answered with the first ones, and their count
_TIMESTAMP = re.compile(r"\d{14}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class OutsideFileRefused(Exception):
    """A file that cannot be registered: the reason."""


class CaptureLinesRefused(Exception):
    """Posted lines refused, nothing written: the bad lines (number, reason), or one reason for all."""

    def __init__(self, reason: str, errors: list[LineError] | None = None):
        self.reason, self.errors = reason, errors or []
        super().__init__(reason)


@dataclass(frozen=True)
class LineError:
    """A bad line: its number (from 1, blank and header lines counted) and why it is refused."""

    line: int
    error: str


@dataclass
class CaptureLinesAdded:
    """What a body of lines did: captures written, lines already in the index."""

    written: int = 0
    unchanged: int = 0
    captures: list[Capture] = field(default_factory=list, repr=False)


# -- registering a file -----------------------------------------------------------------------------


def allowed_roots() -> list[Path]:
    """The directories the API may register outside files from (``CDX_WRITE_ALLOWED_ROOTS``)."""
    return [Path(root).resolve() for root in settings.CDX_WRITE_ALLOWED_ROOTS]


@transaction.atomic
def warc_file_register_outside(
    *, path: str | Path, sha256: str = "", size: int | None = None, roots: list[Path] | None = None
) -> WarcFile:
    """Make a WARC file written elsewhere a file of the archive, its index to come from its crawler.

    ``roots``: the directories the file must be in (the API's callers name paths on our disks).
    """
    path = Path(path)
    if roots is not None:
        resolved = path.resolve()
        if not any(root == resolved or root in resolved.parents for root in roots):
            raise OutsideFileRefused(
                _("%(path)s is not in a directory open to registration (CDX_WRITE_ALLOWED_ROOTS).")
                % {"path": path}
            )
    sha256 = sha256.strip().lower()
    if sha256 and not _SHA256.fullmatch(sha256):
        raise OutsideFileRefused(_("%(sha)s is not a SHA-256 (64 hexadecimal digits).") % {"sha": sha256})
    try:
        reading = read_file(path)  # the whole file, as warcio reads it: a torn file is refused here
    except WarcReadError as error:
        raise OutsideFileRefused(str(error)) from error
    if sha256 and sha256 != reading.sha256:
        raise OutsideFileRefused(
            _("%(name)s reads as SHA-256 %(found)s, not %(sha)s.")
            % {"name": path.name, "found": reading.sha256, "sha": sha256}
        )
    if size is not None and size != reading.size:
        raise OutsideFileRefused(
            _("%(name)s has %(found)d bytes, not %(size)d.")
            % {"name": path.name, "found": reading.size, "size": size}
        )
    existing = WarcFile.objects.select_for_update().filter(name=path.name).first()
    if existing is not None:
        if existing.sha256 == reading.sha256 and existing.retired_at is None:
            return existing  # registered before: the same bytes, nothing to do
        raise OutsideFileRefused(
            _("%(name)s: another file of this name is already in the archive (%(path)s, SHA-256 %(sha)s).")
            % {"name": path.name, "path": existing.path, "sha": existing.sha256 or "?"}
        )
    now = timezone.now()
    warc = WarcFile(
        name=path.name,
        path=str(reading.path),
        origin=WarcFile.Origin.IMPORTED,
        size=reading.size,
        sha256=reading.sha256,
        records=len(reading.entries),
        created_at=datetime.fromtimestamp(reading.path.stat().st_mtime, UTC),
        closed_at=now,
        # Its captures come from its crawler's lines: the ingest chain must not index it itself.
        indexed_at=now,
    )
    warc.full_clean()
    warc.save()
    return warc


# -- reading lines ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    number: int
    timestamp: str
    url: str
    mime: str
    status: int | None
    digest: str
    length: int
    offset: int
    filename: str


def _parse(body: bytes) -> tuple[list[_Line], list[LineError]]:
    lines, errors = [], []
    columns: str | None = None
    for number, raw in enumerate(body.split(b"\n"), start=1):
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            errors.append(LineError(number, _("not UTF-8 text")))
            continue
        if not text:
            continue
        if text.startswith("CDX ") or text == "CDX":
            columns = "".join(text.split()[1:])
            unknown = sorted(set(columns) - KNOWN_COLUMNS)
            missing = sorted(NEEDED_COLUMNS - set(columns))
            if unknown or missing or len(set(columns)) != len(columns):
                errors.append(
                    LineError(
                        number,
                        _("a CDX header needs the columns b a S V g, once each, among %(known)s")
                        % {"known": CDX11},
                    )
                )
                columns = None
            continue
        try:
            lines.append(_cdxj(number, text) if _is_cdxj(text) else _cdx(number, text, columns))
        except ValueError as error:
            errors.append(LineError(number, str(error)))
    return lines, errors


def _is_cdxj(text: str) -> bool:
    parts = text.split(" ", 2)
    return len(parts) == 3 and parts[2].startswith("{")


def _cdxj(number: int, text: str) -> _Line:
    _key, timestamp, blob = text.split(" ", 2)
    try:
        fields = json.loads(blob)
    except json.JSONDecodeError as error:
        raise ValueError(_("bad JSON: %(error)s") % {"error": error}) from error
    if not isinstance(fields, dict):
        raise ValueError(_("the JSON of a CDXJ line must be an object"))
    missing = [name for name in ("url", "length", "offset", "filename") if name not in fields]
    if missing:
        raise ValueError(_("missing in the JSON: %(names)s") % {"names": ", ".join(missing)})
    return _line(
        number,
        timestamp=timestamp,
        url=fields["url"],
        mime=fields.get("mime", ""),
        status=fields.get("status"),
        digest=fields.get("digest", ""),
        length=fields["length"],
        offset=fields["offset"],
        filename=fields["filename"],
    )


def _cdx(number: int, text: str, columns: str | None) -> _Line:
    values = text.split()
    if columns is None:
        if len(values) != len(CDX11):
            raise ValueError(
                _("%(count)d fields: not a CDXJ line, nor a CDX11 line (11 fields) without a CDX header")
                % {"count": len(values)}
            )
        columns = CDX11
    if len(values) != len(columns):
        raise ValueError(
            _("%(count)d fields, the CDX header says %(wanted)d")
            % {"count": len(values), "wanted": len(columns)}
        )
    fields = dict(zip(columns, values, strict=True))
    return _line(
        number,
        timestamp=fields["b"],
        url=fields["a"],
        mime=fields.get("m", ""),
        status=fields.get("s"),
        digest=fields.get("k", ""),
        length=fields["S"],
        offset=fields["V"],
        filename=fields["g"],
    )


def _line(number: int, *, timestamp, url, mime, status, digest, length, offset, filename) -> _Line:
    if not isinstance(timestamp, str) or not _TIMESTAMP.fullmatch(timestamp):
        raise ValueError(_("timestamp %(value)r is not 14 digits (yyyyMMddhhmmss)") % {"value": timestamp})
    try:
        datetime.strptime(timestamp, "%Y%m%d%H%M%S")
    except ValueError as error:
        raise ValueError(_("timestamp %(value)s is not a date") % {"value": timestamp}) from error
    if not isinstance(url, str) or not _good_url(url):
        raise ValueError(_("URL %(value)r is not an http, https or ftp URL with a host") % {"value": url})
    return _Line(
        number=number,
        timestamp=timestamp,
        url=url,
        mime=_text(mime, "mime", 255),
        status=_status(status),
        digest=_text(digest, "digest", 140),
        length=_number(length, "length", least=1),
        offset=_number(offset, "offset", least=0),
        filename=_text(filename, "filename", 255) or "-",
    )


def _good_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
        surt_key(url)
    except ValueError:
        return False
    return parts.scheme.lower() in URL_SCHEMES and bool(parts.hostname) and not any(c.isspace() for c in url)


def _text(value, name: str, longest: int) -> str:
    if not isinstance(value, str):
        raise ValueError(_("%(name)s must be text") % {"name": name})
    value = "" if value == "-" else value
    if len(value) > longest:
        raise ValueError(_("%(name)s is longer than %(count)d characters") % {"name": name, "count": longest})
    return value


def _status(value) -> int | None:
    if value in (None, "", "-"):
        return None
    try:
        status = int(value)
    except (TypeError, ValueError):
        status = 0
    if not 100 <= status <= 599:
        raise ValueError(_("status %(value)r is not an HTTP status") % {"value": value})
    return status


def _number(value, name: str, *, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise ValueError(_("%(name)s %(value)r is not a whole number") % {"name": name, "value": value})
    number = int(value)
    if number < least:
        raise ValueError(_("%(name)s must be at least %(least)d") % {"name": name, "least": least})
    return number


# -- checking and writing ---------------------------------------------------------------------------


_GZIP_START = b"\x1f\x8b"
_WARC_START = b"WARC/"


def _read_record(stream, line: _Line) -> tuple[str, str]:
    """The record at the line's offset, checked against the line: (record type, record ID).

    A record starts as the file's first one does: a gzip member in a compressed file, ``WARC/`` in
    an uncompressed WARC file. Anywhere else warcio would read the bytes as whatever they resemble
    (the middle of a deflate stream can pass for an ARC record), so they are refused before.
    """
    stream.seek(0)
    first = stream.read(len(_WARC_START))
    stream.seek(line.offset)
    here = stream.read(len(_WARC_START))
    for start in (_GZIP_START, _WARC_START):
        if first.startswith(start) and not here.startswith(start):
            raise ValueError(_("no WARC record at offset %(offset)d") % {"offset": line.offset})
    stream.seek(line.offset)
    try:
        records = ArchiveIterator(stream)
        record = next(records)
        kind = record.rec_type
        target = record.rec_headers.get_header("WARC-Target-URI") or ""
        date = record.rec_headers.get_header("WARC-Date") or ""
        record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
        records.read_to_end(record)
        length = records.get_record_length()
    except Exception as error:  # whatever warcio makes of bytes that are not a record: a bad line
        raise ValueError(_("no WARC record at offset %(offset)d") % {"offset": line.offset}) from error
    if kind not in INDEXED_TYPES:
        raise ValueError(
            _("the record at offset %(offset)d is a %(kind)s record, not a capture")
            % {"offset": line.offset, "kind": kind}
        )
    if target != line.url:
        raise ValueError(
            _("the record at offset %(offset)d is of %(found)s, not %(url)s")
            % {"offset": line.offset, "found": target, "url": line.url}
        )
    if date and iso_date_to_timestamp(date) != line.timestamp:
        raise ValueError(
            _("the record at offset %(offset)d was captured at %(found)s, not %(timestamp)s")
            % {"offset": line.offset, "found": iso_date_to_timestamp(date), "timestamp": line.timestamp}
        )
    if length != line.length:
        raise ValueError(
            _("the record at offset %(offset)d is %(found)d bytes long, not %(length)d")
            % {"offset": line.offset, "found": length, "length": line.length}
        )
    return kind, record_id


@transaction.atomic
def capture_lines_add(*, body: bytes) -> CaptureLinesAdded:
    """Add a crawler's CDXJ or CDX lines to the capture index: all of them, or none (the bad lines)."""
    if len(body) > settings.CDX_WRITE_MAX_BYTES:
        raise CaptureLinesRefused(
            _("The body has more than %(limit)d bytes: send the lines in smaller parts.")
            % {"limit": settings.CDX_WRITE_MAX_BYTES}
        )
    lines, errors = _parse(body)
    if not lines and not errors:
        raise CaptureLinesRefused(_("No CDXJ or CDX line in the body."))
    names = {line.filename for line in lines}
    # Locked in one order: two posts for the same file take turns, so a line is written once.
    files = {
        warc.name: warc for warc in WarcFile.objects.select_for_update().filter(name__in=names).order_by("pk")
    }
    existing = _indexed(list(files.values()), sorted({line.offset for line in lines}))
    added = CaptureLinesAdded()
    seen: dict[tuple[int, int], _Line] = {}
    streams: dict[str, object] = {}
    try:
        for line in lines:
            try:
                capture = _capture(line, files, existing, seen, streams)
            except ValueError as error:
                errors.append(LineError(line.number, str(error)))
                continue
            if capture is None:
                added.unchanged += 1
            else:
                added.captures.append(capture)
    finally:
        for stream in streams.values():
            stream.close()
    if errors:
        errors.sort(key=lambda error: error.line)
        raise CaptureLinesRefused(
            _("%(count)d bad lines: nothing was written.") % {"count": len(errors)}, errors
        )
    Capture.objects.bulk_create(added.captures, batch_size=1000)
    added.written = len(added.captures)
    return added


def _indexed(files, offsets: list[int]) -> dict[tuple[int, int], dict]:
    """The captures already at these offsets of these files (the lines' places only, in chunks)."""
    found = {}
    for start in range(0, len(offsets), 1000):
        rows = Capture.objects.filter(warc_file__in=files, offset__in=offsets[start : start + 1000])
        for row in rows.values("warc_file_id", "offset", "url", "timestamp"):
            found[(row["warc_file_id"], row["offset"])] = row
    return found


def _capture(line: _Line, files, existing, seen, streams) -> Capture | None:
    warc = files.get(line.filename)
    if warc is None:
        raise ValueError(_("no file %(name)s in the archive (register it first)") % {"name": line.filename})
    if warc.retired_at is not None or warc.is_open:
        raise ValueError(_("file %(name)s is retired or still being written") % {"name": line.filename})
    if line.offset + line.length > warc.size:
        raise ValueError(
            _("offset %(offset)d + length %(length)d is beyond the end of %(name)s (%(size)d bytes)")
            % {"offset": line.offset, "length": line.length, "name": warc.name, "size": warc.size}
        )
    place = (warc.pk, line.offset)
    stamp = datetime.strptime(line.timestamp, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    earlier = seen.get(place)
    if earlier is not None:
        if (earlier.url, earlier.timestamp) != (line.url, line.timestamp):
            raise ValueError(
                _("line %(number)d says another capture is at this offset") % {"number": earlier.number}
            )
        return None
    seen[place] = line
    indexed = existing.get(place)
    if indexed is not None:
        if (indexed["url"], indexed["timestamp"]) != (line.url, stamp):
            raise ValueError(
                _("the index already has %(url)s at offset %(offset)d of %(name)s")
                % {"url": indexed["url"], "offset": line.offset, "name": warc.name}
            )
        return None
    if warc.name not in streams:
        try:
            streams[warc.name] = warc.spool_bytes()
        except OSError as error:
            raise ValueError(_("file %(name)s cannot be read now") % {"name": warc.name}) from error
    kind, record_id = _read_record(streams[warc.name], line)
    return Capture(
        urlkey=surt_key(line.url),
        timestamp=stamp,
        url=line.url,
        record_type=kind,
        mime=REVISIT_MIME if kind == "revisit" else line.mime,
        status=line.status,
        digest=line.digest,
        length=line.length,
        offset=line.offset,
        record_id=record_id,
        warc_file=warc,
        job_id=warc.job_id,
    )
