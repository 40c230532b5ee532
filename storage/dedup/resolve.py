"""Stages 2 and 3: collision resolution and copy numbers, one digest partition at a time; then the
copies of each input file (the rewrite's input).

A partition merges the sorted manifests of every file (``heapq.merge``),
keeps its own digests (CRC-32 of the digest modulo the number of partitions),
and takes each digest's records in capture order (date, file, offset). Records
of a digest whose payload lengths differ are different payloads without being
read; those of the same length are read and compared byte for byte. Each
distinct payload gets a hash extension (0, 1, 2…); the first capture of each
(digest, extension) is its original, every later one a copy pointing to it. A
payload that differs from all others is never a copy, whatever its digest.
"""

from __future__ import annotations

import heapq
import itertools
import zlib
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from storage.dedup.manifest import ELIGIBLE, EMPTY, Line, digest_of
from storage.dedup.records import Source
from storage.dedup.workfiles import atomic, escape, unescape


@dataclass(frozen=True, slots=True)
class Copy:
    """A record to turn into a revisit of its original (a line of the copies lists)."""

    file: int
    offset: int
    length: int
    record_id: str
    digest: str
    extension: int
    original_file: int
    original_offset: int
    original_length: int
    original_url: str
    original_date: str  # WARC-Date as written in the original
    original_id: str

    def text(self) -> str:
        return (
            f"{self.file:06d}\t{self.offset:015d}\t{self.length}\t{escape(self.record_id)}\t{self.digest}\t"
            f"{self.extension}\t{self.original_file}\t{self.original_offset}\t{self.original_length}\t"
            f"{escape(self.original_url)}\t{escape(self.original_date)}\t{escape(self.original_id)}\n"
        )

    @classmethod
    def parse(cls, text: str) -> Copy:
        fields = text.rstrip("\n").split("\t")
        return cls(
            int(fields[0]),
            int(fields[1]),
            int(fields[2]),
            unescape(fields[3]),
            fields[4],
            int(fields[5]),
            int(fields[6]),
            int(fields[7]),
            int(fields[8]),
            unescape(fields[9]),
            unescape(fields[10]),
            unescape(fields[11]),
        )


def partition_of(digest: str, partitions: int) -> int:
    """The partition a digest belongs to (the same in every process: not Python's salted hash)."""
    return zlib.crc32(digest.encode("utf-8", "replace")) % partitions


@dataclass
class _Class:
    """One distinct payload of a digest: its length, bytes (read only when needed) and first capture."""

    length: int
    payload: memoryview | None
    original: Line
    extension: int


class _Payloads:
    """Payloads read from the inputs by (file, offset), files opened once."""

    def __init__(self, stack: ExitStack, path_of: Callable[[int], tuple[Path, str]]):
        self.stack, self.path_of, self.sources = stack, path_of, {}

    def read(self, line: Line) -> memoryview:
        source = self.sources.get(line.file)
        if source is None:
            source = self.sources[line.file] = self.stack.enter_context(Source(*self.path_of(line.file)))
        return source.record_at(line.offset, line.length).payload()


def resolve_partition(
    *,
    manifests: list[Path],
    path_of: Callable[[int], tuple[Path, str]],
    partition: int,
    partitions: int,
    include_empty: bool,
    out: Path,
) -> dict:
    """Write the copies of one partition to ``out``; its statistics (rows by file and MIME, collisions)."""
    rows: dict[tuple[int, str], list[int]] = {}
    collisions = 0
    eligible_flags = {ELIGIBLE, EMPTY} if include_empty else {ELIGIBLE}
    with ExitStack() as stack, atomic(out) as copies:
        streams = [stack.enter_context(path.open(encoding="utf-8")) for path in manifests]
        payloads = _Payloads(stack, path_of)
        mine = (
            text
            for text in heapq.merge(*streams)
            if zlib.crc32(digest_of(text).encode("utf-8", "replace")) % partitions == partition
        )
        for _digest, group in itertools.groupby(mine, key=digest_of):
            lines = [Line.parse(text) for text in group]
            for line in lines:
                row = rows.setdefault((line.file, line.mime), [0] * 6)
                row[0] += 1
                row[2] += line.payload_length
                row[4] += line.length
            candidates = [line for line in lines if line.flag in eligible_flags]
            if len(candidates) < 2:
                continue
            classes = _classes(candidates, payloads, copies, rows)
            collisions += len(classes) - 1
    return {
        "collisions": collisions,
        "rows": [[file, mime, *counts] for (file, mime), counts in sorted(rows.items())],
    }


def _classes(lines: list[Line], payloads: _Payloads, copies, rows) -> list[_Class]:
    """Sort one digest's records (in capture order) into distinct payloads; write the copies."""
    lengths: dict[int, int] = {}
    for line in lines:
        lengths[line.payload_length] = lengths.get(line.payload_length, 0) + 1
    classes: list[_Class] = []
    for line in lines:
        found = None
        payload = None
        if lengths[line.payload_length] > 1:  # another record could hold the same bytes
            payload = payloads.read(line)
            for known in classes:
                if known.length != line.payload_length:
                    continue
                if known.payload is None:
                    known.payload = payloads.read(known.original)
                if known.payload == payload:
                    found = known
                    break
        if found is None:
            classes.append(_Class(line.payload_length, payload, line, len(classes)))
            continue
        original = found.original
        copies.write(
            Copy(
                file=line.file,
                offset=line.offset,
                length=line.length,
                record_id=line.record_id,
                digest=line.digest,
                extension=found.extension,
                original_file=original.file,
                original_offset=original.offset,
                original_length=original.length,
                original_url=original.url,
                original_date=original.warc_date,
                original_id=original.record_id,
            ).text()
        )
        row = rows[(line.file, line.mime)]
        row[1] += 1
        row[3] += line.payload_length
        row[5] += line.length
    return classes


def copies_of_file(*, resolved: list[Path], number: int, out: Path) -> int:
    """Gather the copies of one input file from every partition, sorted by offset, into ``out``."""
    prefix = f"{number:06d}\t"
    found: list[str] = []
    for path in resolved:
        with path.open(encoding="utf-8") as lines:
            found.extend(line for line in lines if line.startswith(prefix))
    found.sort()
    with atomic(out) as stream:
        stream.writelines(found)
    return len(found)


def read_copies(path: Path) -> list[Copy]:
    with path.open(encoding="utf-8") as lines:
        return [Copy.parse(line) for line in lines]
