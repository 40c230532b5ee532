"""Stage 1, the hash manifest: one line per ``response`` record of a file, sorted by payload digest.

A line holds, tab-separated: the payload digest, the 14-digit date, the input
file's number and the record's offset (zero-padded, so that sorting the lines
as strings sorts them by digest, then date, file and offset: the order in
which the resolve stage merges them), the record's length in the file, the
payload's length, a flag (``-``; ``empty`` for an empty payload; ``other`` for a
response that is not HTTP, never deduplicated), the MIME type, the URL, the
WARC-Date as written and the WARC-Record-ID.

Only the heads of records are inflated into memory, unless digests are
recomputed or a record has none: then the payload is hashed from the
inflated member.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from storage.dedup.records import Record, Source, digest_string, payload_sha256
from storage.dedup.workfiles import atomic, escape, unescape

ELIGIBLE, EMPTY, OTHER = "-", "empty", "other"


@dataclass(frozen=True, slots=True)
class Line:
    """One manifest line, parsed."""

    digest: str
    date: str  # 14 digits
    file: int
    offset: int
    length: int
    payload_length: int
    flag: str
    mime: str
    url: str
    warc_date: str
    record_id: str

    @classmethod
    def parse(cls, text: str) -> Line:
        digest, date, file, offset, length, payload, flag, mime, url, warc_date, record_id = text.rstrip(
            "\n"
        ).split("\t")
        return cls(
            digest,
            date,
            int(file),
            int(offset),
            int(length),
            int(payload),
            flag,
            unescape(mime),
            unescape(url),
            unescape(warc_date),
            unescape(record_id),
        )


def line_text(line: Line) -> str:
    return (
        f"{line.digest}\t{line.date}\t{line.file:06d}\t{line.offset:015d}\t{line.length}\t"
        f"{line.payload_length}\t{line.flag}\t{escape(line.mime)}\t{escape(line.url)}\t"
        f"{escape(line.warc_date)}\t{escape(line.record_id)}\n"
    )


def digest_of(text: str) -> str:
    """The digest field of a manifest line's text."""
    return text[: text.index("\t")]


def manifest_file(*, path: Path, name: str, number: int, recompute: bool, out: Path) -> dict:
    """Write the sorted manifest of one file to ``out``; what it counted (records, responses, size)."""
    lines: list[str] = []
    records = 0
    with Source(path, name) as source:
        for record in source.records(complete=recompute):
            records += 1
            if record.record_type == "response":
                lines.append(line_text(_line(source, record, number, recompute)))
        size = source.size
    lines.sort()
    with atomic(out) as stream:
        stream.writelines(lines)
    stat = path.stat()
    return {"records": records, "responses": len(lines), "size": size, "mtime_ns": stat.st_mtime_ns}


def _line(source: Source, record: Record, number: int, recompute: bool) -> Line:
    start = record.payload_start()
    digest = "" if recompute else record.fields.get("warc-payload-digest", "").strip()
    if start is None or (not digest and not record.complete):
        record = source.record_at(record.offset, record.length)  # a head beyond what was read
        start = record.payload_start()
    if not digest:
        digest = digest_string(payload_sha256(record)) if record.block_end > start else _EMPTY_DIGEST
    payload_length = record.block_end - start
    if not record.is_http():
        flag = OTHER
    elif payload_length == 0:
        flag = EMPTY
    else:
        flag = ELIGIBLE
    return Line(
        digest=digest,
        date=record.timestamp(),
        file=number,
        offset=record.offset,
        length=record.length,
        payload_length=payload_length,
        flag=flag,
        mime=record.mime(),
        url=record.target_uri(),
        warc_date=record.fields.get("warc-date", ""),
        record_id=record.record_id,
    )


_EMPTY_DIGEST = digest_string(hashlib.sha256(b"").digest())
