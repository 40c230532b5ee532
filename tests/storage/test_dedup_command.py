"""``manage.py dedup_warcs`` on two crawls of the same (unchanged) test website."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from storage.models import Capture, DedupRun, WarcFile
from storage.services.dedup_runs import dedup_run_advance, dedup_run_start, dedup_run_stop, dedup_run_unit
from storage.services.indexing import warc_file_index
from tests.crawler.sitecrawl import crawl
from tests.storage.test_dedup_convert import heritrix_arc, rewrite_members
from webarchive.testsite import TestSite

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def second_crawl(tmp_path_factory, crawled_site) -> list[Path]:
    """The same website crawled again (the session's crawl is the first): its files."""
    root = tmp_path_factory.mktemp("second-crawl")
    with TestSite(port=0, seed=4, pages=30, hosts=2, large_file_bytes=50_000) as site:
        # Another job number: files named like the first crawl's, should it start in the same second,
        # would be taken for the same files.
        result = crawl(root, [site.url("/site/")], job_id=2)
    return [Path(info.path) for info in result.files]


@pytest.fixture
def crawls(copy_warcs, second_crawl, tmp_path) -> tuple[Path, Path]:
    """Copies of both crawls: (first directory, second directory)."""
    first = copy_warcs("first")[0].parent
    second = tmp_path / "second"
    second.mkdir()
    for path in second_crawl:
        shutil.copy2(path, second / path.name)
    return first, second


def dedup(*args) -> str:
    out = io.StringIO()
    call_command("dedup_warcs", *map(str, args), stdout=out, stderr=out)
    return out.getvalue()


def test_a_dry_run_prints_the_savings_per_mime_type_and_harvest(crawls, tmp_path):
    out = tmp_path / "out"
    text = dedup(*crawls, "--out", out, "--dry-run")
    assert "dry run done, nothing written" in text
    assert "Per MIME type" in text and "Per harvest" in text and "text/html" in text
    assert "job 1" in text  # sitecrawl names its files as job 1's
    run = DedupRun.objects.get()
    assert run.state == DedupRun.State.DONE and run.created_by is None
    totals = run.summary["totals"]
    assert totals["duplicates"] > 0 and totals["duplicate_payload_bytes"] > 0
    assert f"duplicates: {totals['duplicates']:,}" in text
    assert not list(out.glob("*.warc.gz"))
    assert not WarcFile.objects.exists()


def test_a_run_registers_its_validated_output_in_place_of_the_inputs(crawls, tmp_path):
    sources = [warc_file_index(path=path).warc_file for path in sorted(crawls[0].glob("*.warc.gz"))]
    captures = Capture.objects.count()
    text = dedup(*crawls, "--out", tmp_path / "out", "--workers", "2")
    assert "Validation passed" in text and "validated and registered" in text
    inputs = len(list(crawls[0].glob("*.warc.gz"))) + len(list(crawls[1].glob("*.warc.gz")))
    outputs = WarcFile.objects.filter(origin=WarcFile.Origin.DEDUPLICATED)
    assert outputs.count() == inputs
    assert all(name.endswith("-dedup.warc.gz") for name in outputs.values_list("name", flat=True))
    for source in sources:
        source.refresh_from_db()
        assert source.replaced_by is not None and not source.captures.exists()
    assert Capture.objects.filter(warc_file__in=sources).count() == 0
    assert Capture.objects.filter(warc_file__origin=WarcFile.Origin.DEDUPLICATED).count() >= captures
    assert Capture.objects.filter(record_type="revisit").exists()


def test_no_register_leaves_the_archive_as_it_is(crawls, tmp_path):
    text = dedup(*crawls, "--out", tmp_path / "out", "--no-register")
    assert "not registered" in text
    assert DedupRun.objects.get().state == DedupRun.State.DONE
    assert not WarcFile.objects.exists()
    assert list((tmp_path / "out").glob("*-dedup.warc.gz"))


def test_running_it_again_resumes_a_stopped_run(crawls, tmp_path):
    out = tmp_path / "out"
    run = dedup_run_start(inputs=list(crawls), out_dir=out, dry_run=True, enqueue=False)
    dedup_run_advance(run_id=run.pk)
    dedup_run_stop(run_id=run.pk)
    dedup_run_stop(run_id=run.pk)
    text = dedup(*crawls, "--out", out, "--dry-run")
    assert f"Resuming {run}" in text and "dry run done" in text
    assert DedupRun.objects.get().state == DedupRun.State.DONE


def test_a_running_run_is_not_taken_over(crawls, tmp_path):
    run = dedup_run_start(inputs=list(crawls), out_dir=tmp_path / "out", enqueue=False)
    dedup_run_advance(run_id=run.pk)
    with pytest.raises(CommandError, match="Stop it from its page first"):
        dedup(*crawls, "--out", tmp_path / "out")


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: [tmp / "missing.warc.gz"], "no such file or directory"),
        (lambda tmp: [_text_file(tmp)], "not a WARC or ARC file"),
        (lambda tmp: [], "Give the WARC/ARC files"),
    ],
)
def test_bad_input_is_a_clear_error_and_records_nothing(tmp_path, make, words):
    with pytest.raises(CommandError, match=words) as excinfo:
        dedup(*make(tmp_path), "--out", tmp_path / "out")
    assert excinfo.value.returncode == 1  # the exit status of manage.py
    assert not DedupRun.objects.exists()
    assert not (tmp_path / "out").exists()


def test_an_output_directory_of_another_run_is_refused(crawls, tmp_path):
    out = tmp_path / "out"
    dedup(crawls[0], "--out", out, "--dry-run")
    with pytest.raises(CommandError, match="has ended"):
        dedup(crawls[1], "--out", out)
    assert DedupRun.objects.count() == 1


def _text_file(tmp: Path) -> Path:
    path = tmp / "notes.warc.gz"
    path.write_text("hello")
    return path


def test_an_arc_file_s_conversion_is_validated_and_a_mismatch_fails_the_run(tmp_path):
    (tmp_path / "in").mkdir()
    heritrix_arc(tmp_path / "in" / "old.arc.gz")
    text = dedup(tmp_path / "in", "--out", tmp_path / "good", "--no-register")
    assert "Validation passed" in text
    assert "Conversion of old.arc.gz: 5 captures in the ARC file, 5 in the converted file: validated." in text

    # A conversion that lost a record: the run is stopped after its convert stage, the converted
    # file damaged, and the command resumes it.
    run = dedup_run_start(inputs=[tmp_path / "in"], out_dir=tmp_path / "bad", enqueue=False)
    dedup_run_advance(run_id=run.pk)
    dedup_run_unit(run_id=run.pk, stage="convert", unit="old.arc.gz")
    dedup_run_stop(run_id=run.pk)
    dedup_run_stop(run_id=run.pk)  # no process of its own to see the request: stopped at once
    converted = tmp_path / "bad" / ".dedup" / "convert" / "000000.warc.gz"
    rewrite_members(converted, lambda record, raw: None if record.target_uri() == "http://a.test/y" else raw)
    out = io.StringIO()
    with pytest.raises(CommandError, match="did not pass validation"):
        call_command(
            "dedup_warcs", str(tmp_path / "in"), "--out", str(tmp_path / "bad"), stdout=out, stderr=out
        )
    text = out.getvalue()
    assert "Validation FAILED" in text
    assert (
        "Conversion of old.arc.gz: 5 captures in the ARC file, 4 in the converted file:"
        " NOT validated, 1 mismatches." in text
    )
    assert (
        "  old.arc.gz, conversion: http://a.test/y (20190101000002) is missing from the converted file"
        in text
    )
    assert DedupRun.objects.get(pk=run.pk).state == DedupRun.State.FAILED
