"""Stage 4, the rewrite: a new WARC file in which each copy is a revisit record, every other record
the input's bytes unchanged.

The bytes between two copies are copied as they are (whole gzip members, or
plain records), so that every record that is not a copy is byte-identical.
A copy becomes a revisit only once its original has been read again and found
to hold the same payload (SHA-256 of both, computed here): a copy whose
original is missing, torn or changed stays a full response, and is listed.

The revisit keeps the copy's WARC headers (record id, date, target URI…) in
their order; its block is the copy's HTTP head; it gets the identical-payload
profile, the original's URI, date and record id, a new block digest and
Content-Length. Gzip members are written with zlib at a fixed level (header
mtime 0), so the same inputs always give the same bytes.
"""

from __future__ import annotations

import base64
import hashlib
import os
import zlib
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from storage.dedup.records import Record, Source, payload_sha256
from storage.dedup.resolve import Copy
from storage.dedup.workfiles import PipelineError, discard_stale, temp_name
from storage.warcindex import WarcReadError

COMPRESS_LEVEL = 6  # the crawler's
PROFILES = {
    "WARC/1.0": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
    "WARC/1.1": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
}
_REPLACED = {
    b"content-length",
    b"warc-block-digest",
    b"warc-profile",
    b"warc-refers-to",
    b"warc-refers-to-target-uri",
    b"warc-refers-to-date",
    b"warc-truncated",
    b"warc-segment-number",
    b"warc-segment-total-length",
}
_ALGORITHMS = ("sha256", "sha1", "sha512", "md5")


class _Originals:
    """The SHA-256 of originals' payloads by (file, offset), each read once; None when unreadable."""

    def __init__(self, stack: ExitStack, path_of: Callable[[int], tuple[Path, str]]):
        self.stack, self.path_of = stack, path_of
        self.sources: dict[int, Source | None] = {}
        self.known: dict[tuple[int, int], tuple[bytes | None, str]] = {}

    def payload_sha256(self, copy: Copy) -> tuple[bytes | None, str]:
        key = (copy.original_file, copy.original_offset)
        if key not in self.known:
            self.known[key] = self._read(copy)
        return self.known[key]

    def _read(self, copy: Copy) -> tuple[bytes | None, str]:
        number = copy.original_file
        if number not in self.sources:
            try:
                self.sources[number] = self.stack.enter_context(Source(*self.path_of(number)))
            except WarcReadError as error:
                self.sources[number] = None
                return None, f"original's file unreadable: {error}"
        source = self.sources[number]
        if source is None:
            return None, "original's file unreadable"
        try:
            record = source.record_at(copy.original_offset, copy.original_length)
        except WarcReadError as error:
            return None, f"original unreadable: {error}"
        if record.record_id != copy.original_id or record.record_type != "response":
            return None, "original not found at its offset (its file changed)"
        return payload_sha256(record), ""


def rewrite_file(
    *,
    source_path: Path,
    name: str,
    copies: list[Copy],
    path_of: Callable[[int], tuple[Path, str]],
    expected: dict,
    out: Path,
    temp_dir: Path,
) -> dict:
    """Write the deduplicated file to ``out`` (via a temporary name in ``temp_dir``); what was written."""
    stat = source_path.stat() if source_path.exists() else None
    if stat is None or stat.st_size != expected["size"] or stat.st_mtime_ns != expected["mtime_ns"]:
        raise PipelineError(f"{name}: the file changed or went since its manifest was made; start a new run")
    temp_dir.mkdir(parents=True, exist_ok=True)
    discard_stale(temp_dir / out.name)
    temp = temp_name(temp_dir / out.name)
    digest = hashlib.sha256()
    size = 0
    revisits = 0
    not_converted: list[list[str]] = []
    try:
        with ExitStack() as stack, temp.open("wb") as stream:
            source = stack.enter_context(Source(source_path, name))
            originals = _Originals(stack, path_of)

            def write(piece: bytes) -> None:
                nonlocal size
                stream.write(piece)
                digest.update(piece)
                size += len(piece)

            position = 0
            for copy in copies:
                for piece in source.raw(position, copy.offset):
                    write(piece)
                record = _copy_record(source, copy, name)
                original, reason = originals.payload_sha256(copy)
                if original is not None and original != payload_sha256(record):
                    reason = "original's payload differs from the copy's"
                if original is None or reason:
                    for piece in source.raw(copy.offset, copy.offset + copy.length):
                        write(piece)
                    not_converted.append([copy.record_id, reason])
                else:
                    write(revisit_bytes(record, copy, compressed=source.compressed))
                    revisits += 1
                position = copy.offset + copy.length
            for piece in source.raw(position, source.size):
                write(piece)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, out)
    finally:
        temp.unlink(missing_ok=True)
    return {
        "name": out.name,
        "size": size,
        "sha256": digest.hexdigest(),
        "records": expected["records"],
        "revisits": revisits,
        "not_converted": not_converted,
    }


def _copy_record(source: Source, copy: Copy, name: str) -> Record:
    try:
        record = source.record_at(copy.offset, copy.length)
    except WarcReadError as error:
        raise PipelineError(f"{error} (the file changed since its manifest was made)") from None
    if record.record_id != copy.record_id:
        raise PipelineError(f"{name}: no record {copy.record_id} at byte {copy.offset} any more")
    return record


def revisit_bytes(record: Record, copy: Copy, *, compressed: bool) -> bytes:
    """The revisit record replacing ``record`` (a gzip member if ``compressed``)."""
    content = record.content
    head = content[: record.block_start]
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    version, lines = lines[0].strip(), [line.rstrip(b"\r") for line in lines[1:] if line.strip()]
    block = record.http_head()
    algorithm = _algorithm(record.fields.get("warc-block-digest", ""))
    block_digest = f"{algorithm}:{base64.b32encode(hashlib.new(algorithm, block).digest()).decode()}"
    out = [version]
    skipping = False
    for line in lines:
        if line[:1] in (b" ", b"\t"):  # a folded line goes with the field it continues
            if not skipping:
                out.append(line)
            continue
        key = line.partition(b":")[0].strip().lower()
        skipping = key in _REPLACED
        if key == b"warc-type":
            out.append(b"WARC-Type: revisit")
        elif not skipping:
            out.append(line)
    added = [
        ("WARC-Profile", PROFILES.get(version.decode("ascii", "replace"), PROFILES["WARC/1.1"])),
        ("WARC-Refers-To-Target-URI", copy.original_url),
        ("WARC-Refers-To-Date", copy.original_date),
        ("WARC-Refers-To", copy.original_id),
    ]
    if "warc-payload-digest" not in record.fields:
        added.append(("WARC-Payload-Digest", copy.digest))
    added += [("WARC-Block-Digest", block_digest), ("Content-Length", str(len(block)))]
    out += [f"{key}: {value}".encode() for key, value in added]
    data = b"\r\n".join(out) + b"\r\n\r\n" + block + b"\r\n\r\n"
    if not compressed:
        return data
    compressor = zlib.compressobj(COMPRESS_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def _algorithm(digest: str) -> str:
    algorithm = digest.partition(":")[0].strip().lower()
    return algorithm if algorithm in _ALGORITHMS else "sha256"
