"""A large file read in parts side by side (``index_warcs``'s workers): the parts joined give exactly
the entries, checksum and errors of one reading of the whole file, or the file is read whole again."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage.models import WarcFile
from storage.warcindex import (
    Part,
    WarcReadError,
    file_parts,
    join_parts,
    read_entries,
    read_file,
    read_unit,
)
from tests.storage.test_indexing import ARC_RECORDS, arc_file, cdxj_indexer, index_lines


def record_starts(path: Path) -> list[int]:
    with path.open("rb") as stream:
        records = ArchiveIterator(stream)
        return [records.get_record_offset() for _record in records]


def joined(parts: list[Part]):
    """The parts read one by one (as the workers read them) and joined; None: read the file whole."""
    return join_parts(parts, [read_unit(part) for part in parts])


def without_ids(entries: list) -> list:
    """The entries without their record ids (an ARC record's is made up anew at each reading)."""
    return [dataclasses.replace(entry, record_id="") for entry in entries]


def whole_reading(path: Path):
    reading = read_file(path)
    return reading.entries, reading.sha256, reading.size


@pytest.mark.parametrize("part_bytes", [700, 3000, 20_000])
def test_a_gzip_warc_file_in_parts_gives_the_entries_of_the_whole(warc_paths, part_bytes):
    for path in warc_paths:
        parts = file_parts(path, part_bytes)
        assert len(parts) >= 2 and not parts[0].whole, path.name
        starts = set(record_starts(path))
        # Cuts fall inside records: the record crossing a cut is read by the part it starts in.
        assert any(part.start not in starts for part in parts[1:])
        reading = joined(parts)
        assert reading is not None, "the parts agree on where records start"
        assert (reading.entries, reading.sha256, reading.size) == whole_reading(path)
        assert reading.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_part_where_no_record_starts_is_covered_by_the_record_before(warc_paths):
    path = max(warc_paths, key=lambda path: path.stat().st_size)
    starts = record_starts(path)
    size = path.stat().st_size
    longest = max(zip(starts, [*starts[1:], size], strict=True), key=lambda pair: pair[1] - pair[0])
    first, after = longest[0] + 10, longest[1] - 10  # a part inside the longest record (the large file)
    assert after > first
    parts = [Part(path, 0, first), Part(path, first, after), Part(path, after, size)]
    assert read_unit(parts[1]).start is None
    reading = joined(parts)
    assert reading is not None
    assert reading.entries == list(read_entries(path))


def test_uncompressed_warc_and_arc_files_are_read_whole(tmp_path, warc_paths):
    plain = tmp_path / "plain.warc"
    plain.write_bytes(b"".join(gzip.decompress(path.read_bytes()) for path in warc_paths))
    arc_gz = arc_file(tmp_path / "old.arc.gz", ARC_RECORDS * 50, compress=True)
    arc = arc_file(tmp_path / "old-plain.arc", ARC_RECORDS * 50, compress=False)
    for path in (plain, arc_gz, arc):
        parts = file_parts(path, 500)
        assert [part.whole for part in parts] == [True], path.name
        reading = joined(parts)
        entries, sha256, size = whole_reading(path)
        assert (reading.sha256, reading.size) == (sha256, size)
        assert reading.entries and without_ids(reading.entries) == without_ids(entries)


def test_a_torn_file_in_parts_reports_the_byte_one_reading_reports(tmp_path, warc_paths):
    whole = warc_paths[0].read_bytes()
    starts = record_starts(warc_paths[0])
    cut_record = starts[len(starts) * 2 // 3]
    torn = tmp_path / "torn.warc.gz"
    torn.write_bytes(whole[: cut_record + 20])
    with pytest.raises(WarcReadError) as caught:
        read_file(torn)
    parts = file_parts(torn, 1000)
    assert len(parts) >= 2
    error = joined(parts)
    assert isinstance(error, WarcReadError)
    assert (error.name, error.offset, error.reason) == (torn.name, cut_record, caught.value.reason)


def _warc_gz(path: Path, records: list[tuple[str, bytes]], *, level: int = 6) -> Path:
    """A gzip WARC file, one member per record (compressed at ``level``): a response per (url, body)."""
    members = []
    for url, body in records:
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=False)
        http = StatusAndHeaders("200 OK", [("Content-Type", "application/octet-stream")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
        )
        members.append(gzip.compress(buffer.getvalue(), compresslevel=level))
    path.write_bytes(b"".join(members))
    return path


def test_a_record_holding_a_gzip_warc_file_does_not_fool_the_cuts(tmp_path, warc_paths):
    """An archived .warc.gz file, stored (not compressed) in its record's member, holds gzip members of
    WARC records: a part may take one for a record start; the parts then disagree, and the file is
    read whole."""
    inner = warc_paths[0].read_bytes()
    path = _warc_gz(
        tmp_path / "nested.warc.gz",
        [("http://example.com/before", b"x" * 100), ("http://example.com/crawl.warc.gz", inner)]
        + [(f"http://example.com/after/{index}", b"y" * 100) for index in range(5)],
        level=0,
    )
    starts = record_starts(path)
    cut = starts[1] + 50  # inside the record holding the file, before its first inner member
    parts = [Part(path, 0, cut), Part(path, cut, path.stat().st_size)]
    assert read_unit(parts[1]).start < starts[2], "the inner member looks like a record start"
    assert joined(parts) is None
    assert [entry.url for entry in read_file(path).entries][-1] == "http://example.com/after/4"


def test_a_member_of_several_records_sends_the_file_to_the_general_reader(tmp_path, warc_paths):
    path = tmp_path / "two-in-one.warc.gz"
    members = [gzip.decompress(p.read_bytes()) for p in warc_paths]
    path.write_bytes(gzip.compress(members[0]) + b"".join(gzip.compress(m) for m in members[1:]))
    parts = [Part(path, 0, 10), Part(path, 10, path.stat().st_size)]
    assert joined(parts) is None


# Worker processes: committed rows.
@pytest.mark.django_db(transaction=True)
def test_index_warcs_reads_files_in_parts_into_the_rows_cdxj_indexer_writes(
    tmp_path, copy_warcs, monkeypatch
):
    monkeypatch.setattr("storage.management.commands.index_warcs.PART_BYTES_MIN", 2000)
    copies = copy_warcs("archive")
    nested = _warc_gz(
        tmp_path / "archive" / "nested.warc.gz",
        [(f"http://example.com/{index}", b"z" * 3000) for index in range(3)]
        + [("http://example.com/crawl.warc.gz", copies[0].read_bytes())],
        level=0,
    )
    torn = tmp_path / "torn.warc.gz"
    starts = record_starts(copies[0])
    torn.write_bytes(copies[0].read_bytes()[: starts[-3] + 20])
    out, err = StringIO(), StringIO()
    with pytest.raises(Exception, match="1 file"):
        call_command(
            "index_warcs",
            str(tmp_path / "archive"),
            str(torn),
            workers=2,
            no_text=True,
            stdout=out,
            stderr=err,
        )
    assert f"torn.warc.gz: cannot read at byte {starts[-3]}: " in err.getvalue()
    for path in [*copies, nested]:
        assert index_lines(WarcFile.objects.get(name=path.name)) == cdxj_indexer(path), path.name
        assert WarcFile.objects.get(name=path.name).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not WarcFile.objects.filter(name="torn.warc.gz").exists()
