"""The post-crawl deduplication pipeline (storage.dedup) on crafted WARC and ARC files and on real crawls."""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from storage.dedup.pipeline import DRY_RUN_STAGES, Options, Pipeline, PipelineError, run
from storage.dedup.records import Source
from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


# Crafting WARC files ---------------------------------------------------------------------------------


def sha1_digest(body: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()


def record_bytes(
    record_type: str,
    url: str,
    date: str,
    block: bytes,
    *,
    content_type: str = "application/http; msgtype=response",
    digest: str | None = None,
    record_id: str | None = None,
) -> bytes:
    headers = [
        ("WARC-Type", record_type),
        ("WARC-Record-ID", record_id or f"<urn:uuid:{uuid.uuid4()}>"),
        ("WARC-Date", date),
        ("WARC-Target-URI", url),
    ]
    if digest:
        headers.append(("WARC-Payload-Digest", digest))
    headers += [("Content-Type", content_type), ("Content-Length", str(len(block)))]
    head = "WARC/1.1\r\n" + "".join(f"{key}: {value}\r\n" for key, value in headers)
    return head.encode() + b"\r\n" + block + b"\r\n\r\n"


def http_response(body: bytes, mime: str = "text/html") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Type: {mime}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


class Capture:
    """A response record to write (and what the tests check about it)."""

    def __init__(self, url, date, body, *, mime="text/html", digest="auto", record_id=None):
        self.url, self.date, self.body, self.mime = url, date, body, mime
        self.digest = sha1_digest(body) if digest == "auto" else digest
        self.record_id = record_id or f"<urn:uuid:{uuid.uuid4()}>"

    def bytes(self) -> bytes:
        block = http_response(self.body, self.mime)
        return record_bytes(
            "response", self.url, self.date, block, digest=self.digest, record_id=self.record_id
        )


def write_warc(path: Path, captures: list[Capture], *, compressed: bool = True) -> Path:
    """A WARC file: warcinfo, then each capture followed by a request record."""
    records = [
        record_bytes(
            "warcinfo",
            "",
            "2020-01-01T00:00:00Z",
            b"software: tests\r\n",
            content_type="application/warc-fields",
        )
    ]
    for capture in captures:
        records.append(capture.bytes())
        request = f"GET / HTTP/1.1\r\nHost: {capture.url.split('/')[2]}\r\n\r\n".encode()
        records.append(
            record_bytes(
                "request",
                capture.url,
                capture.date,
                request,
                content_type="application/http; msgtype=request",
            )
        )
    if compressed:
        path.write_bytes(b"".join(gzip.compress(record, mtime=0) for record in records))
    else:
        path.write_bytes(b"".join(records))
    return path


def write_arc(path: Path, entries: list[tuple[str, str, bytes]]) -> Path:
    """An ARC v1 file (uncompressed) of (url, 14-digit date, body) HTTP responses."""
    version = b"1 0 InternetArchive\nURL IP-address Archive-date Content-type Archive-length\n"
    out = [
        f"filedesc://{path.name} 0.0.0.0 20190101000000 text/plain {len(version)}\n".encode()
        + version
        + b"\n"
    ]
    for url, date, body in entries:
        block = http_response(body)
        out.append(f"{url} 127.0.0.1 {date} text/html {len(block)}\n".encode() + block + b"\n")
    path.write_bytes(b"".join(out))
    return path


def records_of(path: Path) -> list:
    with Source(path) as source:
        return [
            (record, source.data[record.offset : record.offset + record.length])
            for record in source.records(complete=True)
        ]


def by_id(path: Path) -> dict:
    return {record.record_id: (record, raw) for record, raw in records_of(path)}


def deduplicate(out: Path, inputs: list[Path], **options) -> Pipeline:
    pipeline = Pipeline.create(out_dir=out, inputs=inputs, options=Options(**options))
    assert run(pipeline)
    return pipeline


def payload_of(record) -> bytes:
    return bytes(record.payload())


# The pipeline on crafted files -----------------------------------------------------------------------

BODY_X = random.Random(1).randbytes(3000)  # incompressible: what deduplication saves shows
BODY_Y = random.Random(2).randbytes(2000)
BODY_Z = random.Random(3).randbytes(5000)


def test_copies_across_time_urls_and_files_become_revisits_of_the_earliest_capture(tmp_path):
    first = [
        Capture("http://a.test/", "2020-05-01T10:00:00Z", BODY_X),
        Capture("http://a.test/y", "2020-05-01T10:00:01Z", BODY_Y),
        Capture("http://a.test/z", "2020-05-01T10:00:02Z", BODY_Z, mime="image/png"),
        Capture("http://a.test/empty", "2020-05-01T10:00:03Z", b""),
        Capture("http://a.test/", "2020-06-01T10:00:00Z", BODY_X),  # across time, same file
    ]
    second = [
        Capture("http://a.test/", "2021-01-01T00:00:00Z", BODY_X),  # across files
        Capture("http://b.test/copy-of-x", "2021-01-01T00:00:01Z", BODY_X),  # across URLs
        Capture("http://a.test/y", "2019-01-01T00:00:00Z", BODY_Y),  # earlier: the original of Y
        Capture("http://a.test/empty", "2021-01-01T00:00:02Z", b""),
        Capture("http://a.test/new", "2021-01-01T00:00:03Z", b"only once"),
    ]
    a = write_warc(tmp_path / "a.warc.gz", first)
    b = write_warc(tmp_path / "b.warc.gz", second)
    out = tmp_path / "out"

    pipeline = deduplicate(out, [a, b])

    copies = {
        first[4].record_id: first[0],
        second[0].record_id: first[0],
        second[1].record_id: first[0],
        first[1].record_id: second[2],
    }
    outputs = pipeline.outputs()
    assert [output.name for output in outputs] == ["a-dedup.warc.gz", "b-dedup.warc.gz"]
    assert [output.source for output in outputs] == [a, b]
    originals = {**by_id(out / "a-dedup.warc.gz"), **by_id(out / "b-dedup.warc.gz")}
    for path, output in ((a, outputs[0]), (b, outputs[1])):
        before, after = records_of(path), records_of(output.path)
        assert [record.record_id for record, _ in after] == [record.record_id for record, _ in before]
        assert output.records == len(before) == 11
        assert output.sha256 == hashlib.sha256(output.path.read_bytes()).hexdigest()
        for (old, old_raw), (new, new_raw) in zip(before, after, strict=True):
            if old.record_id not in copies:
                assert new_raw == old_raw  # byte-identical
                continue
            original = copies[old.record_id]
            fields = new.fields
            assert new.record_type == "revisit"
            assert fields["warc-profile"] == PROFILE
            assert fields["warc-refers-to-target-uri"] == original.url
            assert fields["warc-refers-to-date"] == original.date
            assert fields["warc-refers-to"] == original.record_id
            assert fields["warc-payload-digest"] == old.fields["warc-payload-digest"]
            for kept in ("warc-date", "warc-target-uri", "content-type"):
                assert fields[kept] == old.fields[kept]
            block = new.content[new.block_start : new.block_end]
            assert block == old.http_head()
            assert block.startswith(b"HTTP/1.1 200 OK\r\n") and block.endswith(b"\r\n\r\n")
            assert int(fields["content-length"]) == len(block)
            algorithm, value = fields["warc-block-digest"].split(":")
            assert value == base64.b32encode(hashlib.new(algorithm, block).digest()).decode()
            # The revisit points at a record of the output holding the same payload.
            target, _ = originals[fields["warc-refers-to"]]
            assert target.record_type == "response"
            assert payload_of(target) == payload_of(old)

    report = pipeline.validation()
    assert report.ok, report.problems
    assert (report.records_in, report.records_out, report.revisits) == (22, 22, 4)
    assert report.bytes_in == a.stat().st_size + b.stat().st_size
    assert report.bytes_out == sum(output.size for output in outputs) < report.bytes_in

    summary = pipeline.summary()
    assert (summary.records, summary.duplicates, summary.collisions) == (10, 4, 0)
    assert summary.duplicate_rate == pytest.approx(0.4)
    assert summary.duplicate_payload_bytes == 3 * len(BODY_X) + len(BODY_Y)
    html = {(row.file, row.mime): row for row in summary.rows}
    assert html[("a.warc.gz", "text/html")].records == 4  # X twice, Y, the empty page
    assert html[("a.warc.gz", "text/html")].duplicates == 2
    assert html[("b.warc.gz", "text/html")].duplicates == 2
    assert html[("a.warc.gz", "image/png")].duplicates == 0
    assert pipeline.not_converted() == []


def test_copies_of_empty_payloads_are_kept_unless_asked(tmp_path):
    captures = [Capture("http://a.test/e", f"2020-0{month}-01T00:00:00Z", b"") for month in (1, 2, 3)]
    path = write_warc(tmp_path / "e.warc.gz", captures)

    skipped = deduplicate(tmp_path / "skip", [path])
    included = deduplicate(tmp_path / "include", [path], include_empty=True)

    assert skipped.summary().duplicates == 0
    assert (tmp_path / "skip" / "e-dedup.warc.gz").read_bytes() == path.read_bytes()
    assert included.summary().duplicates == 2
    assert included.validation().ok
    revisits = [
        r for r, _ in records_of(tmp_path / "include" / "e-dedup.warc.gz") if r.record_type == "revisit"
    ]
    assert {r.fields["warc-refers-to"] for r in revisits} == {captures[0].record_id}


def test_different_payloads_forced_to_share_a_digest_are_both_kept_in_full(tmp_path):
    fake = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    same_length = b"y" * len(BODY_X)
    captures = [
        Capture("http://a.test/1", "2020-01-01T00:00:00Z", BODY_X, digest=fake),
        Capture("http://a.test/2", "2020-01-02T00:00:00Z", same_length, digest=fake),  # compared: differs
        Capture("http://a.test/3", "2020-01-03T00:00:00Z", b"short", digest=fake),  # another length
        Capture("http://a.test/4", "2020-01-04T00:00:00Z", same_length, digest=fake),  # a copy of /2
    ]
    path = write_warc(tmp_path / "c.warc.gz", captures)

    pipeline = deduplicate(tmp_path / "out", [path])

    summary = pipeline.summary()
    assert summary.collisions == 2  # three distinct payloads under one digest
    assert summary.duplicates == 1
    records = by_id(tmp_path / "out" / "c-dedup.warc.gz")
    for capture in captures[:3]:
        record, _ = records[capture.record_id]
        assert record.record_type == "response"
        assert payload_of(record) == capture.body
    revisit, _ = records[captures[3].record_id]
    assert revisit.record_type == "revisit"
    assert revisit.fields["warc-refers-to"] == captures[1].record_id
    assert pipeline.validation().ok


def test_recomputed_digests_find_copies_that_the_stored_digests_hide(tmp_path):
    captures = [
        Capture(
            "http://a.test/1", "2020-01-01T00:00:00Z", BODY_X, digest="sha1:WRONGWRONGWRONGWRONGWRONGWRONG22"
        ),
        Capture("http://a.test/2", "2020-01-02T00:00:00Z", BODY_X),
        Capture("http://a.test/3", "2020-01-03T00:00:00Z", BODY_X, digest=None),  # no digest at all
    ]
    path = write_warc(tmp_path / "d.warc.gz", captures)

    stored = deduplicate(tmp_path / "stored", [path])
    recomputed = deduplicate(tmp_path / "recomputed", [path], recompute_digests=True)

    assert stored.summary().duplicates == 0  # three different digests: nothing to compare
    assert recomputed.summary().duplicates == 2
    records = by_id(tmp_path / "recomputed" / "d-dedup.warc.gz")
    added, _ = records[captures[2].record_id]
    expected = "sha256:" + base64.b32encode(hashlib.sha256(BODY_X).digest()).decode()
    assert added.fields["warc-payload-digest"] == expected  # added where the record had none
    assert recomputed.validation().ok


def test_an_arc_file_is_converted_first_and_its_records_are_originals(tmp_path):
    arc = write_arc(
        tmp_path / "old.arc",
        [("http://a.test/", "20190101000000", BODY_X), ("http://a.test/y", "20190101000001", BODY_Y)],
    )
    later = [Capture("http://a.test/", "2021-01-01T00:00:00Z", BODY_X)]
    warc = write_warc(tmp_path / "new.warc.gz", later)

    pipeline = deduplicate(tmp_path / "out", [arc, warc])

    assert pipeline.units("convert") == ["old.arc"]
    assert [output.name for output in pipeline.outputs()] == ["old-dedup.warc.gz", "new-dedup.warc.gz"]
    converted = records_of(tmp_path / "out" / "old-dedup.warc.gz")
    responses = [record for record, _ in converted if record.record_type == "response"]
    assert [record.target_uri() for record in responses] == ["http://a.test/", "http://a.test/y"]
    revisit = by_id(tmp_path / "out" / "new-dedup.warc.gz")[later[0].record_id][0]
    assert revisit.record_type == "revisit"
    assert revisit.fields["warc-refers-to"] == responses[0].record_id
    assert revisit.fields["warc-refers-to-date"] == "2019-01-01T00:00:00Z"
    assert pipeline.validation().ok


def test_uncompressed_warc_files_give_uncompressed_output(tmp_path):
    captures = [Capture("http://a.test/", f"2020-0{month}-01T00:00:00Z", BODY_Z) for month in (1, 2)]
    path = write_warc(tmp_path / "plain.warc", captures, compressed=False)

    pipeline = deduplicate(tmp_path / "out", [path])

    output = tmp_path / "out" / "plain-dedup.warc"
    assert output.read_bytes().startswith(b"WARC/1.1\r\n")
    revisit = by_id(output)[captures[1].record_id][0]
    assert revisit.record_type == "revisit"
    assert pipeline.validation().ok
    assert output.stat().st_size < path.stat().st_size - len(BODY_Z) + 1000


def test_a_copy_whose_original_is_missing_or_changed_is_never_converted(tmp_path):
    for damage in ("removed", "truncated"):
        work = tmp_path / damage
        work.mkdir()
        a = write_warc(work / "a.warc.gz", [Capture("http://a.test/", "2020-01-01T00:00:00Z", BODY_X)])
        later = Capture("http://a.test/", "2021-01-01T00:00:00Z", BODY_X)
        b = write_warc(work / "b.warc.gz", [later])
        pipeline = Pipeline.create(out_dir=work / "out", inputs=[a, b], options=Options())
        assert run(pipeline, stages=DRY_RUN_STAGES)
        assert pipeline.summary().duplicates == 1
        if damage == "removed":
            a.unlink()
        else:
            a.write_bytes(a.read_bytes()[:300])

        pipeline.run_unit("rewrite", "b.warc.gz")

        output = work / "out" / "b-dedup.warc.gz"
        assert output.read_bytes() == b.read_bytes()
        assert by_id(output)[later.record_id][0].record_type == "response"
        with pytest.raises(PipelineError, match=r"a\.warc\.gz: the file changed or went"):
            pipeline.run_unit("rewrite", "a.warc.gz")


# Stopping and resuming -------------------------------------------------------------------------------


def _inputs(directory: Path) -> list[Path]:
    directory.mkdir()
    paths = []
    for number in range(3):
        captures = [
            Capture(
                f"http://a.test/{page}",
                f"202{number}-01-01T00:00:{page:02d}Z",
                os.urandom(2000) if page % 3 else BODY_X + bytes([page]),
            )
            for page in range(40)
        ]
        captures += [
            Capture(f"http://b.test/{page}", f"202{number}-02-01T00:00:00Z", BODY_Y * (page + 1))
            for page in range(20)
        ]
        paths.append(write_warc(directory / f"in-{number}.warc.gz", captures))
    return paths


def _outputs(out: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(out.glob("*.warc.gz"))}


KILLED_REWRITE = """
import sys, time
from pathlib import Path
from storage.dedup import rewrite
from storage.dedup.pipeline import Pipeline

def slow(*args, _real=rewrite.revisit_bytes, **kwargs):
    print("writing", flush=True)
    time.sleep(60)  # killed here, its temporary file half written
    return _real(*args, **kwargs)

rewrite.revisit_bytes = slow
Pipeline.open(Path(sys.argv[1])).run_unit("rewrite", sys.argv[2])
"""


def test_a_unit_killed_halfway_resumes_and_gives_the_same_bytes(tmp_path):
    inputs = _inputs(tmp_path / "inputs")
    reference = deduplicate(tmp_path / "reference", inputs)
    assert reference.validation().ok
    out = tmp_path / "resumed"
    pipeline = Pipeline.create(out_dir=out, inputs=inputs, options=Options(partitions=3))
    assert run(pipeline, stages=("convert", "manifest", "resolve", "copies"))
    unit = "in-1.warc.gz"

    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_REWRITE, str(out), unit], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline() == "writing\n"
        assert list((out / ".dedup" / "rewrite").glob("in-1-dedup.warc.gz.tmp-*"))  # halfway through
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert not (out / "in-1-dedup.warc.gz").exists()
    assert unit in pipeline.pending_units("rewrite")

    asked = []
    stopped = run(pipeline, should_stop=lambda: len(asked) >= 1, on_unit=lambda *unit: asked.append(unit))
    assert not stopped
    assert len(asked) == 1
    assert run(pipeline, workers=2)

    assert _outputs(out) == _outputs(tmp_path / "reference")
    assert not list(out.rglob("*.tmp-*"))
    assert pipeline.validation().ok
    assert pipeline.summary() == reference.summary()  # partitions change nothing but the parallelism


def test_a_stage_cannot_start_before_the_previous_one_is_done(tmp_path):
    inputs = _inputs(tmp_path / "inputs")
    pipeline = Pipeline.create(out_dir=tmp_path / "out", inputs=inputs, options=Options())

    with pytest.raises(PipelineError, match="stage resolve cannot start: stage manifest is not done"):
        pipeline.run_unit("resolve", "partition-0")
    with pytest.raises(PipelineError, match="stage copies is not done"):
        pipeline.summary()
    assert pipeline.next_stage() == "manifest"  # no ARC file: nothing to convert
    assert Pipeline.open(tmp_path / "out").units("manifest") == [path.name for path in inputs]


# Bad input -------------------------------------------------------------------------------------------


def test_bad_inputs_and_output_directories_are_refused_with_a_clear_message(tmp_path):
    good = write_warc(tmp_path / "good.warc.gz", [Capture("http://a.test/", "2020-01-01T00:00:00Z", BODY_X)])
    text = tmp_path / "notes.warc.gz"
    text.write_bytes(gzip.compress(b"these are not WARC records\n"))
    out = tmp_path / "out"

    with pytest.raises(PipelineError, match=r"notes.warc.gz: neither a WARC nor an ARC file \(at byte 0\)"):
        Pipeline.create(out_dir=out, inputs=[good, text], options=Options())
    with pytest.raises(PipelineError, match=r"missing\.warc\.gz: no such file"):
        Pipeline.create(out_dir=out, inputs=[tmp_path / "missing.warc.gz"], options=Options())
    assert not out.exists()

    torn = tmp_path / "torn.warc.gz"
    whole = good.read_bytes()
    torn.write_bytes(whole + whole[:-40])  # the second copy of the file cut inside its last record
    pipeline = Pipeline.create(out_dir=out, inputs=[torn], options=Options())
    with pytest.raises(PipelineError, match=r"torn.warc.gz: cannot read at byte \d+: .*truncated"):
        run(pipeline)
    assert [path.name for path in out.iterdir()] == [".dedup"]

    with pytest.raises(PipelineError, match="holds another deduplication run"):
        Pipeline.create(out_dir=out, inputs=[good], options=Options())
    with pytest.raises(PipelineError, match="holds another deduplication run"):
        Pipeline.create(out_dir=out, inputs=[torn], options=Options(recompute_digests=True))
    assert Pipeline.create(out_dir=out, inputs=[torn], options=Options()).inputs == [torn]

    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "something").write_text("mine")
    with pytest.raises(PipelineError, match="is not an empty directory"):
        Pipeline.create(out_dir=busy, inputs=[good], options=Options())
    with pytest.raises(PipelineError, match="holds no deduplication run"):
        Pipeline.open(busy)

    twin = tmp_path / "twin"
    twin.mkdir()
    (twin / "good.warc.gz").write_bytes(whole)
    with pytest.raises(PipelineError, match=r"two inputs are named good\.warc\.gz"):
        Pipeline.create(out_dir=tmp_path / "out2", inputs=[good, twin / "good.warc.gz"], options=Options())


# A real crawl, twice ---------------------------------------------------------------------------------


def test_a_second_crawl_of_an_unchanged_site_becomes_revisits_of_the_first(tmp_path):
    with TestSite(port=0, seed=7, pages=20, hosts=1, large_file_bytes=30_000) as site:
        first = crawl(_mkdir(tmp_path / "first"), [site.url("/site/")])
        time.sleep(1.1)  # the second crawl's dates are later
        second = crawl(_mkdir(tmp_path / "second"), [site.url("/site/")])
    first_digests = [value["digest"] for value in first.responses().values() if value["body"]]
    second_digests = [value["digest"] for value in second.responses().values() if value["body"]]
    unchanged = {url for url, value in second.responses().items() if value["digest"] in first_digests}
    assert len(unchanged) > 20
    inputs = [Path(info.path) for info in [*first.files, *second.files]]

    pipeline = Pipeline.create(out_dir=tmp_path / "out", inputs=inputs, options=Options(partitions=2))
    assert run(pipeline, workers=2)

    report = pipeline.validation()
    assert report.ok, report.problems
    revisits = {}
    for output in pipeline.outputs()[len(first.files) :]:
        for record, _ in records_of(output.path):
            if record.record_type == "revisit":
                revisits[record.target_uri()] = record
    assert unchanged <= set(revisits)
    for record in revisits.values():  # the others: payloads found twice within the second crawl
        digest = record.fields["warc-payload-digest"]
        assert digest in first_digests or second_digests.count(digest) > 1
    # Within the first crawl, only payloads it holds twice (if any) are revisits.
    within_first = sum(count - 1 for count in map(first_digests.count, set(first_digests)))
    assert report.revisits == len(revisits) + within_first
    assert all(
        output.size < output.source.stat().st_size for output in pipeline.outputs()[len(first.files) :]
    )


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path
