"""Stage 0, conversion: an ARC file as a WARC file (one gzip member per record), by warcio.

The converted file is what the later stages read in place of the ARC file; the
validate stage compares its captures with the ARC file's (:func:`conversion_check`)
before the ARC file may be retired.
Record ids are derived from the ARC file's name and the record's place in it
(warcio would draw random ones), so that converting again gives the same bytes.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.timeutils import iso_date_to_timestamp, timestamp_to_iso_date
from warcio.warcwriter import WARCWriter

from storage.dedup.workfiles import PipelineError, atomic

_NAMESPACE = uuid.UUID("5d1f3c1e-8f6e-4c59-9d55-6a2b4f0e7a01")  # ours: ids of converted ARC records


def convert_arc(*, path: Path, name: str, out: Path) -> int:
    """Write ``path`` (ARC, gzip or not) to ``out`` as gzip WARC; the number of records written."""
    written = 0
    with path.open("rb") as stream, path.open("rb") as heads, atomic(out, "wb") as target:
        writer = WARCWriter(target, gzip=True)
        records = ArchiveIterator(stream, arc2warc=True)
        # The same records as the ARC file declares them: warcio's conversion calls every record
        # application/http, so a record that is not HTTP (dns:, whois:) gets its own MIME back.
        declared = ArchiveIterator(heads)
        try:
            for number, (record, arc_record) in enumerate(zip(records, declared, strict=False)):
                if not record.rec_type or record.length is None:
                    raise PipelineError(
                        f"{name}: cannot read at byte {records.get_record_offset()}: the file is torn"
                    )
                record_id = f"<urn:uuid:{uuid.uuid5(_NAMESPACE, f'{name}#{number}')}>"
                record.rec_headers.replace_header("WARC-Record-ID", record_id)
                if record.rec_type == "response" and record.http_headers is None:
                    mime = arc_record.rec_headers.get_header("content-type") or "application/octet-stream"
                    record.content_type = mime  # what the writer writes as Content-Type
                writer.write_record(record)
                written += 1
        except (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError) as error:
            offset = getattr(records, "offset", 0)
            reason = " ".join(str(error).split())
            raise PipelineError(f"{name}: cannot read at byte {offset}: {reason}") from None
    return written


# Validating a conversion (WARCrefs' step 4): the converted file's manifest compared with the ARC's.

MAX_PROBLEMS = 20  # per file: the count says how many more there are
_READ = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Capture:
    """One capture record of a manifest, as warcio reads it from an ARC or a WARC file."""

    url: str
    date: str  # 14 digits
    status: str  # "-" when not HTTP
    mime: str  # the HTTP Content-Type, else the record's declared type
    sha256: str  # of the payload as stored (after the HTTP head)
    length: int


def capture_manifest(path: Path) -> Iterator[Capture]:
    """The captures of an ARC or WARC file in file order (the ARC's file header and the WARC's
    ``warcinfo`` left out): what a conversion must keep."""
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type in ("arc_header", "warcinfo"):
                continue
            headers = record.rec_headers
            if record.format == "arc":
                url = headers.get_header("uri") or ""
                date = iso_date_to_timestamp(timestamp_to_iso_date(headers.get_header("archive-date") or ""))
                declared = headers.get_header("content-type") or ""
            else:
                url = headers.get_header("WARC-Target-URI") or ""
                date = iso_date_to_timestamp(headers.get_header("WARC-Date") or "")
                declared = headers.get_header("Content-Type") or ""
            http = record.http_headers
            digest, length = hashlib.sha256(), 0
            while chunk := record.raw_stream.read(_READ):
                digest.update(chunk)
                length += len(chunk)
            yield Capture(
                url=url,
                date=date,
                status=http.get_statuscode() if http else "-",
                mime=(http.get_header("Content-Type") or "") if http else declared,
                sha256=digest.hexdigest(),
                length=length,
            )


def conversion_check(*, original: Path, converted: Path, name: str) -> dict:
    """Compare the captures of an ARC file and of its conversion: every capture kept, none changed,
    none added; the mismatches counted, the first MAX_PROBLEMS described."""
    problems: list[str] = []
    counts = {"records": 0, "converted_records": 0, "mismatches": 0}

    def mismatch(text: str) -> None:
        counts["mismatches"] += 1
        if len(problems) < MAX_PROBLEMS:
            problems.append(f"{name}, conversion: {text}")

    try:
        before = _by_capture(capture_manifest(original), counts, "records")
        after = _by_capture(capture_manifest(converted), counts, "converted_records")
    except (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError) as error:
        mismatch("cannot be read: " + " ".join(str(error).split()))
        return {"file": name, "ok": False, **counts, "problems": problems}
    for (url, date), olds in before.items():
        news = after.pop((url, date), [])
        for old in list(olds):  # the same capture on both sides, as many times
            if old in news:
                news.remove(old)
                olds.remove(old)
        for old in olds:
            if news:
                mismatch(f"{url} ({date}) changed: {_differences(old, news.pop(0))}")
            else:
                mismatch(f"{url} ({date}) is missing from the converted file")
        for _ in news:
            mismatch(f"{url} ({date}) is in the converted file only")
    for (url, date), news in after.items():
        for _ in news:
            mismatch(f"{url} ({date}) is in the converted file only")
    return {"file": name, "ok": not counts["mismatches"], **counts, "problems": problems}


def _by_capture(captures, counts: dict, counter: str) -> dict[tuple[str, str], list[Capture]]:
    found: dict[tuple[str, str], list[Capture]] = {}
    for capture in captures:
        counts[counter] += 1
        found.setdefault((capture.url, capture.date), []).append(capture)
    return found


def _differences(old: Capture, new: Capture) -> str:
    return ", ".join(
        f"{field} {getattr(old, field)!s} in the ARC file, {getattr(new, field)!s} converted"
        for field in ("status", "mime", "length", "sha256")
        if getattr(old, field) != getattr(new, field)
    )
