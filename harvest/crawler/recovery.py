"""Files a WARC writer left ``.open`` when it died (SIGKILL, power loss), and a soundness check of a file.

A file is written as ``<name>.open`` under an exclusive ``flock``
(:mod:`harvest.crawler.warc`): when its lock can be taken, its writer is dead.
Such a file is cut after its last complete gzip member (one member per record,
so the torn one is the last) and given its final name.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvest.crawler.warc import FILE_NAME, OPEN_SUFFIX, READ_BYTES, WarcFileInfo


def recover_open_files(
    directory: str | Path,
    *,
    on_file_closed: Callable[[WarcFileInfo], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> list[WarcFileInfo]:
    """Finish the ``.open`` files of ``directory`` whose writer is dead; those still locked are left alone.

    A file is cut after its last complete gzip member (the record being
    written when the writer died is lost, and logged), then renamed to its
    final name. Safe to run again, and from several processes at once.
    """
    directory = Path(directory)
    say = log or (lambda message: None)
    recovered = []
    for open_path in sorted(directory.glob(f"*.warc.gz{OPEN_SUFFIX}")):
        info = _recover(open_path, say)
        if info is not None:
            recovered.append(info)
            if on_file_closed is not None:
                on_file_closed(info)
    return recovered


def _recover(open_path: Path, say: Callable[[str], None]) -> WarcFileInfo | None:
    try:
        fd = os.open(open_path, os.O_RDWR)
    except FileNotFoundError:  # finished by its writer or by another recovery meanwhile
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # its writer is alive
            return None
        try:
            current = os.stat(open_path)
        except FileNotFoundError:
            return None
        opened = os.fstat(fd)
        if (current.st_dev, current.st_ino) != (opened.st_dev, opened.st_ino):
            return None  # renamed and replaced since we opened it
        keep, records = _complete_members(fd)
        cut = opened.st_size - keep
        name = open_path.name[: -len(OPEN_SUFFIX)]
        if cut:
            os.ftruncate(fd, keep)
            os.fsync(fd)
            say(f"{name}: cut {cut} bytes after offset {keep}, a record its writer did not finish")
        if records == 0:
            os.unlink(open_path)
            say(f"{name}: removed, it held no complete record")
            return None
        sha256 = hashlib.sha256()
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, READ_BYTES):
            sha256.update(chunk)
        path = open_path.with_name(name)
        os.rename(open_path, path)
        say(f"{name}: recovered, {records} records, {keep} bytes")
        return WarcFileInfo(
            name=name,
            path=path,
            size=keep,
            sha256=sha256.hexdigest(),
            records=records,
            created_at=_created_at(name, opened.st_mtime),
            closed_at=datetime.now(UTC),
            recovered=True,
            cut_bytes=cut,
        )
    finally:
        os.close(fd)


def _complete_members(fd: int) -> tuple[int, int]:
    """Where the last complete gzip member of the file ends, and how many complete members precede it."""
    os.lseek(fd, 0, os.SEEK_SET)
    good_end = members = 0
    start = 0  # file offset of data[0]
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while block := os.read(fd, READ_BYTES):
        data = block
        while data:
            try:
                decompressor.decompress(data, READ_BYTES)  # the output is not needed, only the end
            except zlib.error:
                return good_end, members
            if decompressor.eof:
                rest = decompressor.unused_data
                good_end = start + len(data) - len(rest)
                members += 1
                decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            else:
                rest = decompressor.unconsumed_tail
            start += len(data) - len(rest)
            data = rest
    return good_end, members


def _created_at(name: str, fallback: float) -> datetime:
    found = FILE_NAME.search(name)
    if found:
        return datetime.strptime(found["stamp"], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    return datetime.fromtimestamp(fallback, UTC)


def check_warc(path: str | Path) -> list[str]:
    """The problems found in a WARC file (unreadable records, wrong digests); empty when it is sound."""
    problems: list[str] = []
    try:
        with open(path, "rb") as stream:
            records = ArchiveIterator(stream, check_digests=True)
            for index, record in enumerate(records):
                record_type = record.rec_headers.get_header("WARC-Type")
                if index == 0 and record_type != "warcinfo":
                    problems.append(f"the first record is a {record_type} record, not warcinfo")
                content = record.content_stream()
                while content.read(READ_BYTES):
                    pass
                if record.digest_checker.passed is False:
                    offset = records.get_record_offset()
                    problems.extend(
                        f"offset {offset}: {problem}" for problem in record.digest_checker.problems
                    )
    except Exception as error:  # any failure to read is a problem to report, not to raise
        problems.append(f"unreadable: {error}")
    return problems
