"""Stage 0 of the post-crawl pipeline: an ARC file converted to WARC, and the conversion validated
(the converted file's captures compared with the ARC file's, WARCrefs' step 4)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

from storage.dedup.convert import Capture as ManifestEntry
from storage.dedup.convert import capture_manifest, conversion_check
from storage.dedup.pipeline import Options, Pipeline, run
from tests.storage.test_dedup_pipeline import BODY_X, BODY_Y, BODY_Z, Capture, by_id, records_of, write_warc

DNS_BODY = b"20190101000000\na.test.\t300\tIN\tA\t127.0.0.1\n"
HTML = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: %d\r\n\r\n"
PNG = b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: %d\r\n\r\n"
NOT_FOUND = b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"

# (url, date, ARC MIME, HTTP head or None for a record that is not HTTP, body), as Heritrix wrote them.
ARC_CAPTURES = [
    ("dns:a.test", "20190101000000", "text/dns", None, DNS_BODY),
    ("http://a.test/", "20190101000001", "text/html", HTML, BODY_X),
    ("http://a.test/y", "20190101000002", "text/html", HTML, BODY_Y),
    ("http://a.test/z.png", "20190101000003", "image/png", PNG, BODY_Z),
    ("http://a.test/gone", "20190101000004", "text/html", NOT_FOUND, b"<p>gone</p>"),
]


def heritrix_arc(path: Path) -> Path:
    """An ARC v1 file as Heritrix 1 wrote them: one gzip member per record, a filedesc record
    first, a DNS lookup, then HTTP responses."""
    version = b"1 1 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
    head = b"filedesc://%s 0.0.0.0 20190101000000 text/plain %d\n" % (path.name.encode(), len(version))
    members = [gzip.compress(head + version + b"\n", mtime=0)]
    for url, date, mime, http, body in ARC_CAPTURES:
        block = (http % len(body) if http else b"") + body
        line = b"%s 127.0.0.1 %s %s %d\n" % (url.encode(), date.encode(), mime.encode(), len(block))
        members.append(gzip.compress(line + block + b"\n", mtime=0))
    path.write_bytes(b"".join(members))
    return path


def expected_manifest() -> list[ManifestEntry]:
    entries = []
    for url, date, mime, http, body in ARC_CAPTURES:
        status, http_mime = ("-", mime) if http is None else (http.split(b" ")[1].decode(), None)
        if http_mime is None:
            http_mime = http.split(b"Content-Type: ")[1].split(b"\r\n")[0].decode()
        entries.append(
            ManifestEntry(url, date, status, http_mime, hashlib.sha256(body).hexdigest(), len(body))
        )
    return entries


def converted_path(out: Path) -> Path:
    return out / ".dedup" / "convert" / "000000.warc.gz"


def rewrite_members(path: Path, change) -> None:
    """Write the converted file again, each record's gzip member replaced by ``change(record, raw)``
    (None drops the record): a converter that lost or altered records."""
    members = []
    for record, raw in records_of(path):
        changed = change(record, raw)
        if changed is not None:
            members.append(changed)
    path.write_bytes(b"".join(members))


def flip_last_payload_byte(raw: bytes) -> bytes:
    """The same record, one byte of its payload changed (its length kept)."""
    data = gzip.decompress(raw)
    end = data.rindex(b"\r\n\r\n")  # the record's closing CRLFs
    return gzip.compress(data[: end - 1] + bytes([data[end - 1] ^ 0xFF]) + data[end:], mtime=0)


def test_a_heritrix_arc_file_is_converted_whole_and_its_conversion_validates(tmp_path):
    arc = heritrix_arc(tmp_path / "old.arc.gz")
    copy = Capture("http://a.test/", "2021-01-01T00:00:00Z", BODY_X)
    later = write_warc(tmp_path / "new.warc.gz", [copy])

    assert list(capture_manifest(arc)) == expected_manifest()
    pipeline = Pipeline.create(out_dir=tmp_path / "out", inputs=[arc, later], options=Options())
    assert run(pipeline)

    converted = converted_path(tmp_path / "out")
    assert list(capture_manifest(converted)) == expected_manifest()
    # The DNS record keeps its MIME (warcio alone would have called it application/http).
    dns = next(record for record, _ in records_of(converted) if record.target_uri() == "dns:a.test")
    assert dns.record_type == "response" and dns.fields["content-type"] == "text/dns"
    report = pipeline.validation()
    assert report.ok, report.problems
    assert report.conversions == {
        "old.arc.gz": {
            "file": "old.arc.gz",
            "ok": True,
            "records": 5,
            "converted_records": 5,
            "mismatches": 0,
            "problems": [],
        }
    }
    # The conversion is what was deduplicated: the later copy is a revisit of the ARC file's capture.
    revisit = by_id(tmp_path / "out" / "new-dedup.warc.gz")[copy.record_id][0]
    assert revisit.record_type == "revisit"
    assert revisit.fields["warc-refers-to-date"] == "2019-01-01T00:00:01Z"


def test_a_conversion_that_lost_or_altered_records_is_reported_and_fails_validation(tmp_path):
    arc = heritrix_arc(tmp_path / "old.arc.gz")
    out = tmp_path / "out"
    pipeline = Pipeline.create(out_dir=out, inputs=[arc], options=Options())
    assert run(pipeline, stages=("convert",))

    def corrupt(record, raw):
        if record.target_uri() == "http://a.test/y":
            return flip_last_payload_byte(raw)
        if record.target_uri() == "http://a.test/gone":
            return None
        return raw

    rewrite_members(converted_path(out), corrupt)
    assert run(pipeline)  # the later stages take the converted file as it is

    report = pipeline.validation()
    assert not report.ok
    altered = bytearray(BODY_Y)
    altered[-1] ^= 0xFF
    assert report.problems == [
        "old.arc.gz, conversion: http://a.test/y (20190101000002) changed: sha256"
        f" {hashlib.sha256(BODY_Y).hexdigest()} in the ARC file, {hashlib.sha256(altered).hexdigest()}"
        " converted",
        "old.arc.gz, conversion: http://a.test/gone (20190101000004) is missing from the converted file",
    ]
    conversion = report.conversions["old.arc.gz"]
    assert (conversion["ok"], conversion["records"], conversion["converted_records"]) == (False, 5, 4)
    assert conversion["mismatches"] == 2


def test_every_kind_of_mismatch_is_named_and_counted(tmp_path):
    arc = heritrix_arc(tmp_path / "old.arc.gz")
    out = tmp_path / "out"
    assert run(Pipeline.create(out_dir=out, inputs=[arc], options=Options()), stages=("convert",))
    converted = converted_path(out)
    members = {record.target_uri(): raw for record, raw in records_of(converted)}

    def redated(raw: bytes) -> bytes:
        data = gzip.decompress(raw).replace(
            b"WARC-Date: 2019-01-01T00:00:03Z", b"WARC-Date: 2019-01-02T00:00:03Z"
        )
        return gzip.compress(data, mtime=0)

    bad = tmp_path / "bad.warc.gz"
    warcio_dns = gzip.decompress(members["dns:a.test"]).replace(
        b"Content-Type: text/dns", b"Content-Type: application/http"
    )  # its MIME as warcio alone writes it
    bad.write_bytes(
        b"".join(
            [
                gzip.compress(warcio_dns, mtime=0),
                members["http://a.test/"],
                members["http://a.test/"],  # twice
                members["http://a.test/y"],
                redated(members["http://a.test/z.png"]),  # another date: one missing, one extra
                members["http://a.test/gone"],
            ]
        )
    )
    checked = conversion_check(original=arc, converted=bad, name="old.arc.gz")
    assert checked["problems"] == [
        "old.arc.gz, conversion: dns:a.test (20190101000000) changed:"
        " mime text/dns in the ARC file, application/http converted",
        "old.arc.gz, conversion: http://a.test/ (20190101000001) is in the converted file only",
        "old.arc.gz, conversion: http://a.test/z.png (20190101000003) is missing from the converted file",
        "old.arc.gz, conversion: http://a.test/z.png (20190102000003) is in the converted file only",
    ]
    assert (checked["ok"], checked["mismatches"], checked["records"], checked["converted_records"]) == (
        False,
        4,
        5,
        6,
    )
    assert conversion_check(original=arc, converted=converted, name="old.arc.gz")["ok"]


def test_a_converted_file_cut_short_garbled_or_gone_is_reported(tmp_path):
    arc = heritrix_arc(tmp_path / "old.arc.gz")
    out = tmp_path / "out"
    assert run(Pipeline.create(out_dir=out, inputs=[arc], options=Options()), stages=("convert",))
    whole = converted_path(out).read_bytes()

    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(whole[:-100])  # the last record torn
    checked = conversion_check(original=arc, converted=cut, name="old.arc.gz")
    assert (checked["ok"], checked["converted_records"], checked["mismatches"]) == (False, 4, 1)
    assert checked["problems"] == [
        "old.arc.gz, conversion: http://a.test/gone (20190101000004) is missing from the converted file"
    ]

    garbled = tmp_path / "garbled.warc.gz"
    garbled.write_bytes(b"\x1f\x8b\x08\x00 not a gzip member")
    checked = conversion_check(original=arc, converted=garbled, name="old.arc.gz")
    assert not checked["ok"] and checked["mismatches"] >= 5
    assert sum("is missing from the converted file" in problem for problem in checked["problems"]) == 5

    gone = conversion_check(original=arc, converted=tmp_path / "gone.warc.gz", name="old.arc.gz")
    assert (gone["ok"], gone["mismatches"]) == (False, 1)
    assert gone["problems"][0].startswith("old.arc.gz, conversion: cannot be read: ")
    assert "No such file" in gone["problems"][0]
