"""The capture index: files indexed as pywb's cdxj-indexer indexes them, all or nothing, idempotently."""

from __future__ import annotations

import gzip
import subprocess
import sys
from io import BytesIO, StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from warcio.archiveiterator import ArchiveIterator

from storage.cdx import capture_entry
from storage.models import Capture, WarcFile
from storage.services.indexing import IndexConflict, warc_file_index
from storage.warcindex import WarcReadError, cdxj_line, read_entries

CDXJ_INDEXER = Path(sys.executable).with_name("cdxj-indexer")


def cdxj_indexer(*paths: Path, sort: bool = False) -> list[str]:
    """What pywb's indexer writes for these files, line by line."""
    command = [str(CDXJ_INDEXER), *(["--sort"] if sort else []), *map(str, paths)]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.splitlines()


def index_lines(warc_file: WarcFile) -> list[str]:
    """The rows of one file in the capture index, written as CDXJ lines."""
    return [
        cdxj_line(capture_entry(capture), warc_file.name) for capture in warc_file.captures.order_by("offset")
    ]


def arc_file(path: Path, records: list[tuple[str, str, str, bytes]], *, compress: bool) -> Path:
    """An ARC (version 1) file: a filedesc record, then one record per (url, date, mime, body)."""

    def member(data: bytes) -> bytes:
        return gzip.compress(data) if compress else data

    version = b"1 0 Tests\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://%s 0.0.0.0 20050614070144 text/plain %d\n" % (path.name.encode(), len(version))
    parts = [member(head + version + b"\n")]
    for url, date, mime, body in records:
        http = b"HTTP/1.0 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (
            mime.encode(),
            len(body),
        )
        line = b"%s 127.0.0.1 %s %s %d\n" % (url.encode(), date.encode(), mime.encode(), len(http + body))
        parts.append(member(line + http + body + b"\n"))
    path.write_bytes(b"".join(parts))
    return path


ARC_RECORDS = [
    ("http://example.com/", "20050614070159", "text/html", b"<html><img src=a.png></html>"),
    ("http://example.com/a.png", "20050614070200", "image/png", b"\x89PNG\r\n\x1a\n...."),
    ("http://www.example.com/about?lang=fr", "20050615080000", "text/html", b"<p>about</p>"),
]


@pytest.mark.django_db
def test_the_index_rows_of_a_crawl_are_what_cdxj_indexer_writes(indexed_site, warc_paths):
    for warc_file, path in zip(indexed_site, warc_paths, strict=True):
        expected = cdxj_indexer(path)
        assert expected, "the crawl wrote captures"
        assert index_lines(warc_file) == expected
        # The file is registered with what the path index needs: name, size and checksum.
        assert warc_file.name == path.name and warc_file.size == path.stat().st_size
        assert (
            warc_file.sha256
            == subprocess.run(
                ["sha256sum", str(path)], check=True, capture_output=True, text=True
            ).stdout.split()[0]
        )
        assert warc_file.closed_at and warc_file.indexed_at
    kinds = set(Capture.objects.values_list("record_type", flat=True))
    assert kinds == {"response"}  # request and warcinfo records are not captures


@pytest.mark.django_db
def test_uncompressed_warc_and_arc_files_index_as_cdxj_indexer_indexes_them(tmp_path, warc_paths):
    plain = tmp_path / "plain.warc"
    plain.write_bytes(b"".join(_gunzip(path) for path in warc_paths))
    arc_gz = arc_file(tmp_path / "old.arc.gz", ARC_RECORDS, compress=True)
    arc = arc_file(tmp_path / "old-plain.arc", ARC_RECORDS, compress=False)
    for path in (plain, arc_gz, arc):
        result = warc_file_index(path=path)
        assert result.warc_file.origin == WarcFile.Origin.IMPORTED
        assert index_lines(result.warc_file) == cdxj_indexer(path), path.name
    arc_keys = list(
        Capture.objects.filter(warc_file__name="old.arc.gz")
        .order_by("offset")
        .values_list("urlkey", flat=True)
    )
    assert arc_keys == ["com,example)/", "com,example)/a.png", "com,example)/about?lang=fr"]


def _gunzip(path: Path) -> bytes:
    with gzip.open(path) as stream:
        return stream.read()


@pytest.mark.django_db
def test_indexing_a_file_again_replaces_its_rows(warc_paths):
    first = warc_file_index(path=warc_paths[0])
    again = warc_file_index(path=warc_paths[0])
    assert again.warc_file.pk == first.warc_file.pk
    assert again.replaced == first.captures == again.captures
    assert Capture.objects.count() == first.captures
    assert WarcFile.objects.count() == 1


@pytest.mark.django_db
def test_a_different_file_with_the_name_of_an_archived_one_is_refused(tmp_path, warc_paths):
    warc_file_index(path=warc_paths[0])
    impostor = tmp_path / warc_paths[0].name
    arc_file(tmp_path / "x.arc.gz", ARC_RECORDS, compress=True).rename(impostor)
    with pytest.raises(IndexConflict, match="another file of this name is already in the archive"):
        warc_file_index(path=impostor)
    warc = WarcFile.objects.get()
    assert warc.path == str(warc_paths[0].resolve())
    assert index_lines(warc) == cdxj_indexer(warc_paths[0])


@pytest.mark.django_db
@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "plain"])
def test_a_torn_file_is_reported_with_the_byte_where_reading_failed_and_nothing_of_it_is_indexed(
    tmp_path, warc_paths, compressed
):
    whole = warc_paths[0].read_bytes() if compressed else _gunzip(warc_paths[0])
    whole_path = tmp_path / ("whole.warc.gz" if compressed else "whole.warc")
    whole_path.write_bytes(whole)
    with whole_path.open("rb") as stream:
        records = ArchiveIterator(stream)
        starts = [records.get_record_offset() for _record in records]
    cut_record = starts[len(starts) * 2 // 3]
    torn = tmp_path / ("torn.warc.gz" if compressed else "torn.warc")
    torn.write_bytes(whole[: cut_record + 20])  # a killed writer: 20 bytes of its last record
    with pytest.raises(WarcReadError) as caught:
        warc_file_index(path=torn)
    error = caught.value
    assert (error.name, error.offset) == (torn.name, cut_record)
    assert str(error).startswith(f"{torn.name}: cannot read at byte {cut_record}: ")
    assert not WarcFile.objects.exists() and not Capture.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("notes.warc", b"These are not the records you are looking for.\n", "not a WARC or ARC record"),
        ("passwd.warc", b"root:x:0:0:root:/root:/bin/bash\n", "Unknown archive format"),
        ("broken.warc.gz", b"\x1f\x8b\x08\x00garbage that is not deflate data" * 4, "not gzip data"),
        ("empty.warc.gz", b"", "empty file"),
    ],
)
def test_a_file_that_is_not_warc_is_reported_at_byte_zero(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(WarcReadError, match=reason) as caught:
        warc_file_index(path=path)
    assert caught.value.offset == 0
    assert not WarcFile.objects.exists()


@pytest.mark.django_db
def test_a_file_compressed_as_one_gzip_stream_is_refused_with_what_to_do(tmp_path, warc_paths):
    whole = tmp_path / "one-stream.warc.gz"
    whole.write_bytes(gzip.compress(_gunzip(warc_paths[0])))
    with pytest.raises(WarcReadError, match=r"one gzip stream for the whole file.*warcio recompress"):
        warc_file_index(path=whole)
    assert not WarcFile.objects.exists()


# Worker processes and, on PostgreSQL, a thread storing texts on its own connection: committed rows.
@pytest.mark.django_db(transaction=True)
def test_index_warcs_walks_directories_writes_sorted_cdxj_and_reports_bad_files(tmp_path, copy_warcs):
    copies = copy_warcs("archive")
    arc_file(tmp_path / "archive" / "sub-old.arc.gz", ARC_RECORDS, compress=True)
    (tmp_path / "archive" / "readme.txt").write_text("not an archive file: skipped")
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(copies[0].read_bytes()[:5000])
    out, err = StringIO(), StringIO()
    cdxj = tmp_path / "index.cdxj"
    with pytest.raises(CommandError, match="1 file\\(s\\) could not be indexed"):
        call_command(
            "index_warcs", str(tmp_path / "archive"), str(bad), cdxj=str(cdxj), stdout=out, stderr=err
        )
    assert "bad.warc.gz: cannot read at byte" in err.getvalue()
    indexed = [*copies, tmp_path / "archive" / "sub-old.arc.gz"]
    assert set(WarcFile.objects.values_list("name", flat=True)) == {path.name for path in indexed}
    # pywb and cdxj-indexer users recognise the CDXJ file: the same lines as its sorted output.
    assert cdxj.read_text().splitlines() == sorted(cdxj_indexer(*indexed), key=lambda line: line.encode())
    assert f"{len(indexed)} files" in out.getvalue()


@pytest.mark.django_db
def test_index_warcs_rejects_bad_arguments_and_changes_nothing(tmp_path, warc_paths):
    with pytest.raises(CommandError, match=r"No such file or directory: .*missing\.warc\.gz"):
        call_command("index_warcs", str(warc_paths[0]), str(tmp_path / "missing.warc.gz"))
    with pytest.raises(CommandError, match="--job 999999: no such job"):
        call_command("index_warcs", str(warc_paths[0]), job=999999)
    with pytest.raises(CommandError, match="a directory"):
        call_command("index_warcs", str(warc_paths[0]), cdxj=str(tmp_path))
    assert not WarcFile.objects.exists()


@pytest.mark.django_db
def test_index_rows_keep_backslashes_tabs_and_missing_statuses_as_read(tmp_path):
    """Characters the PostgreSQL load must escape (COPY's text format) are stored as the file has them."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    path = tmp_path / "odd.warc.gz"
    with path.open("wb") as output:
        writer = WARCWriter(output, gzip=True)
        for url, kind, mime in [
            ("http://example.com/a\\b?q=\\N", "response", "text/x\\y"),
            ("http://example.com/tab\there", "response", "text/html"),
            ("http://example.com/plain", "response", "text/html"),
            ("urn:x:c\\d", "resource", "text/plain"),
            ("urn:x:plain", "resource", "text/plain"),
        ]:
            if kind == "response":
                http = StatusAndHeaders("200 OK", [("Content-Type", mime)], protocol="HTTP/1.1")
                record = writer.create_warc_record(url, kind, payload=BytesIO(b"body"), http_headers=http)
            else:
                body = BytesIO(b"body")
                record = writer.create_warc_record(url, kind, payload=body, warc_content_type=mime)
            writer.write_record(record)
    entries = list(read_entries(path))
    assert {entry.status for entry in entries} == {200, None}
    assert any("\\" in entry.url for entry in entries) and any("\t" in entry.url for entry in entries)
    warc_file = warc_file_index(path=path).warc_file
    assert [capture_entry(capture) for capture in warc_file.captures.order_by("offset")] == entries


@pytest.mark.django_db
def test_index_warcs_no_text_analyses_the_capture_index_not_the_full_text_tables(tmp_path, monkeypatch):
    """--no-text writes no full-text row: the statistics of those tables (each ANALYZE samples a whole
    table, millions of rows in an archive) are left as they were."""
    from storage.models_search import SearchEntry
    from tests.storage.test_fulltext import html, write_pages
    from tests.webarchive.test_bulk_analyze import known_now, planned_rows
    from webarchive import dbstats

    def pages(name: str):
        found = [(f"http://{name}.fr/{n}", "text/html", html(f"Page {n}", "Un texte.")) for n in range(6)]
        return write_pages(tmp_path / f"{name}.warc.gz", found)

    known_now(Capture, SearchEntry)
    with_text = pages("a")
    monkeypatch.setattr(dbstats, "ANALYZE_AFTER_ROWS", 1_000_000)
    call_command("index_warcs", str(with_text), "--workers", "1", verbosity=0)  # too small to analyse
    stale = planned_rows(SearchEntry)
    assert SearchEntry.objects.count() == 6 and stale != 6

    monkeypatch.setattr(dbstats, "ANALYZE_AFTER_ROWS", 5)  # a small file stands for a large import
    call_command("index_warcs", str(pages("b")), "--workers", "1", "--no-text", verbosity=0)

    assert planned_rows(Capture) == Capture.objects.count() >= 12
    assert planned_rows(SearchEntry) == stale
