"""The services of deduplication runs: starting (bad input changes nothing), the run's states,
registration of a validated output in place of its inputs, and retiring an original."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from storage.models import Capture, DedupRun, WarcFile
from storage.services.dedup_runs import (
    NOT_FROM_A_HARVEST,
    dedup_run_advance,
    dedup_run_register,
    dedup_run_resume,
    dedup_run_start,
    dedup_run_stop,
    dedup_run_unit,
    file_harvests,
    warc_file_retire,
)
from storage.services.indexing import warc_file_index
from tests.harvest.crawljobs import job_for_sites
from tests.storage.dedup_files import drive, duplicate_warcs
from tests.storage.test_dedup_convert import heritrix_arc, rewrite_members
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(settings, tmp_path) -> Path:
    """The allowed directory (HARVEST_WARC_DIR), with two WARC files holding duplicates under ``in/``."""
    root = tmp_path / "warcs"
    settings.HARVEST_WARC_DIR = root
    duplicate_warcs(root / "in")
    return root


@pytest.fixture
def engineer(user_with_role):
    return user_with_role(Role.ENGINEER)


def start(root: Path, **kwargs) -> DedupRun:
    fields = {"inputs": [str(root / "in")], "out_dir": str(root / "out"), "enqueue": False, **kwargs}
    return dedup_run_start(**fields)


def field_errors(excinfo) -> dict[str, list[str]]:
    return excinfo.value.message_dict


# Starting --------------------------------------------------------------------------------------------


def test_a_run_is_recorded_queued_with_its_files(root, engineer):
    run = start(root, user=engineer, options={"recompute_digests": True})
    assert run.state == DedupRun.State.QUEUED
    assert run.created_by == engineer
    assert run.inputs == [str(root / "in" / "first.warc.gz"), str(root / "in" / "second.warc.gz")]
    assert run.out_dir == str(root / "out")
    assert run.options["recompute_digests"] is True


@pytest.mark.parametrize(
    ("inputs", "out", "field", "words"),
    [
        (["{root}/in/missing.warc.gz"], "{root}/out", "inputs", "no such file"),
        (["{root}/in/notes.txt"], "{root}/out", "inputs", "not a WARC or ARC file"),
        (["{root}/in/fake.warc.gz"], "{root}/out", "inputs", "not a WARC or ARC file"),
        (["{tmp}/elsewhere/first.warc.gz"], "{root}/out", "inputs", "not under an allowed directory"),
        (["{root}/in/../../elsewhere/first.warc.gz"], "{root}/out", "inputs", "not under an allowed"),
        (["in/first.warc.gz"], "{root}/out", "inputs", "absolute path"),
        ([], "{root}/out", "inputs", "at least one"),
        (["{root}/in"], "{tmp}/elsewhere/out", "out_dir", "not under an allowed directory"),
        (["{root}/in"], "{root}/in", "out_dir", "apart from the input files"),
        (["{root}/in"], "{root}/in/first.warc.gz", "out_dir", "not a directory"),
    ],
)
def test_bad_input_is_refused_at_its_field_and_changes_nothing(root, engineer, inputs, out, field, words):
    tmp = root.parent
    (root / "in" / "notes.txt").write_text("not an archive")
    (root / "in" / "fake.warc.gz").write_bytes(b"\x1f\x8b not really gzip")
    (tmp / "elsewhere").mkdir()
    (tmp / "elsewhere" / "first.warc.gz").write_bytes((root / "in" / "first.warc.gz").read_bytes())
    before = sorted(path for path in tmp.rglob("*"))
    with pytest.raises(ValidationError) as excinfo:
        dedup_run_start(
            inputs=[item.format(root=root, tmp=tmp) for item in inputs],
            out_dir=out.format(root=root, tmp=tmp),
            user=engineer,
            enqueue=False,
        )
    assert any(words in message for message in field_errors(excinfo)[field]), field_errors(excinfo)
    assert not DedupRun.objects.exists()
    assert sorted(path for path in tmp.rglob("*")) == before


def test_the_system_may_name_any_path(root, tmp_path):
    elsewhere = duplicate_warcs(tmp_path / "elsewhere")
    run = dedup_run_start(inputs=[str(p) for p in elsewhere], out_dir=str(tmp_path / "out2"), enqueue=False)
    assert run.created_by is None and len(run.inputs) == 2


def test_an_output_directory_holds_one_run(root, engineer):
    first = start(root, user=engineer)
    with pytest.raises(ValidationError) as excinfo:
        start(root, user=engineer)
    assert "already uses this directory" in field_errors(excinfo)["out_dir"][0]
    assert list(DedupRun.objects.all()) == [first]


def test_only_engineers_start_runs(root, user_with_role):
    with pytest.raises(PermissionDenied):
        start(root, user=user_with_role(Role.CURATOR))
    assert not DedupRun.objects.exists()


# States ----------------------------------------------------------------------------------------------


def test_a_stopped_run_skips_its_units_and_resumes_where_it_was(root, engineer):
    run = start(root, user=engineer)
    run = dedup_run_advance(run_id=run.pk)
    assert run.state == DedupRun.State.RUNNING and run.stage
    stage = run.stage
    assert dedup_run_stop(run_id=run.pk, user=engineer).state == DedupRun.State.STOPPING
    dedup_run_unit(run_id=run.pk, stage=stage, unit=run.inputs and Path(run.inputs[0]).name)
    run.refresh_from_db()
    assert run.state == DedupRun.State.STOPPED
    assert run.done == 0  # the unit was skipped
    with pytest.raises(ValidationError):
        dedup_run_stop(run_id=run.pk, user=engineer)  # a stopped run cannot stop again
    run = dedup_run_resume(run_id=run.pk, user=engineer)
    assert (run.state, run.stage, run.ended_at) == (DedupRun.State.QUEUED, "", None)
    assert drive(run).state == DedupRun.State.VALIDATED


def test_stopping_twice_stops_at_once(root, engineer):
    run = dedup_run_advance(run_id=start(root, user=engineer).pk)
    dedup_run_stop(run_id=run.pk, user=engineer)
    assert dedup_run_stop(run_id=run.pk, user=engineer).state == DedupRun.State.STOPPED


def test_a_finished_run_cannot_be_resumed(root, engineer):
    run = drive(start(root, user=engineer))
    assert run.state == DedupRun.State.VALIDATED
    with pytest.raises(ValidationError) as excinfo:
        dedup_run_resume(run_id=run.pk, user=engineer)
    assert excinfo.value.messages == [
        "A deduplication run that is validated and registered cannot become queued."
    ]
    assert excinfo.value.code == "illegal_transition"
    run.refresh_from_db()
    assert run.state == DedupRun.State.VALIDATED and run.ended_at is not None


def test_a_dry_run_reports_savings_per_mime_type_and_harvest_and_writes_nothing(root, engineer):
    run = drive(start(root, user=engineer, dry_run=True))
    assert run.state == DedupRun.State.DONE
    assert run.validation is None
    assert not list((root / "out").glob("*.warc.gz"))
    totals = run.summary["totals"]
    assert totals["duplicates"] == 2 and totals["records"] == 5
    png = next(row for row in run.summary["by_mime"] if row["mime"] == "image/png")
    assert (png["records"], png["duplicates"]) == (3, 2)
    assert [row["harvest"] for row in run.summary["by_harvest"]] == [NOT_FROM_A_HARVEST]
    assert not WarcFile.objects.exists()


# Registration ----------------------------------------------------------------------------------------


def test_a_validated_output_replaces_its_inputs_in_the_index(root, engineer):
    sources = [warc_file_index(path=path).warc_file for path in sorted((root / "in").glob("*.warc.gz"))]
    captures_before = Capture.objects.count()
    run = drive(start(root, user=engineer))
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert run.validation["ok"]
    outputs = WarcFile.objects.filter(origin=WarcFile.Origin.DEDUPLICATED).order_by("name")
    assert [f.name for f in outputs] == ["first-dedup.warc.gz", "second-dedup.warc.gz"]
    for source in sources:
        source.refresh_from_db()
        assert source.replaced_by.name == source.name.replace(".warc.gz", "-dedup.warc.gz")
        assert source.retired_at is None and Path(source.path).exists()  # kept until retired
        assert not source.captures.exists()
    # Each capture is listed once, in the deduplicated files.
    assert Capture.objects.count() == captures_before
    assert set(Capture.objects.values_list("warc_file__origin", flat=True)) == {WarcFile.Origin.DEDUPLICATED}
    keys = list(Capture.objects.values_list("urlkey", "timestamp"))
    assert len(keys) == len(set(keys))


def test_an_output_of_unregistered_files_is_registered_alone(root, engineer):
    run = drive(start(root, user=engineer))
    assert run.state == DedupRun.State.VALIDATED
    assert set(WarcFile.objects.values_list("origin", flat=True)) == {WarcFile.Origin.DEDUPLICATED}
    assert not WarcFile.objects.filter(replaced_by__isnull=False).exists()


def test_only_a_validated_output_is_registered(root, engineer):
    run = drive(start(root, user=engineer, register_output=False))
    assert run.state == DedupRun.State.DONE and run.validation["ok"]
    assert not WarcFile.objects.exists()
    DedupRun.objects.filter(pk=run.pk).update(validation={**run.validation, "ok": False})
    with pytest.raises(ValidationError, match="Only a validated output"):
        dedup_run_register(run_id=run.pk)
    assert not WarcFile.objects.exists()
    DedupRun.objects.filter(pk=run.pk).update(validation=run.validation)
    assert dedup_run_register(run_id=run.pk).state == DedupRun.State.VALIDATED
    assert WarcFile.objects.count() == 2


def test_a_dry_run_is_never_registered(root, engineer):
    run = drive(start(root, user=engineer, dry_run=True))
    with pytest.raises(ValidationError, match="dry run"):
        dedup_run_register(run_id=run.pk)


def test_an_output_changed_after_validation_is_not_registered(root, engineer):
    run = drive(start(root, user=engineer, register_output=False))
    output = root / "out" / "first-dedup.warc.gz"
    output.write_bytes(output.read_bytes() + (root / "in" / "first.warc.gz").read_bytes())
    with pytest.raises(ValidationError, match="changed after validation"):
        dedup_run_register(run_id=run.pk)
    assert not WarcFile.objects.exists()
    run.refresh_from_db()
    assert run.state == DedupRun.State.DONE


# Savings per harvest -----------------------------------------------------------------------------------


def test_files_are_attributed_to_their_harvest(root):
    job = job_for_sites([("example.com", "http://example.com/")])
    registered = warc_file_index(path=root / "in" / "first.warc.gz", job_id=job.pk).warc_file
    crawled_name = f"webarchive-{job.pk}-20240101000000-00001-host.warc.gz"
    unknown_job = f"webarchive-{job.pk + 1000}-20240101000000-00001-host.warc.gz"
    names = {registered.name, crawled_name, unknown_job, "other.warc.gz"}
    harvests = file_harvests(names)
    definition = job.harvest_definition.name
    assert harvests == {
        registered.name: definition,
        crawled_name: definition,
        unknown_job: f"job {job.pk + 1000}",
        "other.warc.gz": NOT_FROM_A_HARVEST,
    }


# Retiring an original ----------------------------------------------------------------------------------


@pytest.fixture
def replaced(root, engineer) -> WarcFile:
    """An original registered, deduplicated and replaced."""
    source = warc_file_index(path=root / "in" / "first.warc.gz").warc_file
    assert drive(start(root, user=engineer)).state == DedupRun.State.VALIDATED
    source.refresh_from_db()
    return source


def test_retiring_removes_the_bytes_and_keeps_the_row(replaced, engineer):
    warc = warc_file_retire(warc_file_id=replaced.pk, user=engineer)
    assert warc.retired_at is not None and warc.retired_by == engineer
    assert not Path(replaced.path).exists()
    assert WarcFile.objects.filter(pk=replaced.pk, retired_at__isnull=False).exists()
    assert Path(replaced.replaced_by.path).exists()
    with pytest.raises(ValidationError, match="already retired"):
        warc_file_retire(warc_file_id=replaced.pk, user=engineer)


def test_retiring_an_ingested_original_removes_its_replicas_and_reads_the_replacements(
    replaced, engineer, tmp_path
):
    from storage.models import Replica, StorageEvent
    from storage.services.ingest import ingest_advance
    from tests.storage.storage_files import make_nodes, replica_path

    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    ingest_advance(replaced.pk)
    ingest_advance(replaced.replaced_by_id)
    copies = [replica_path(replica) for replica in replaced.replicas.select_related("node")]
    assert len(copies) == 2 and all(path.exists() for path in copies)
    # Written under the crawler's spool, the replacement is on the nodes only once ingested.
    assert not Path(replaced.replaced_by.path).exists()
    warc_file_retire(warc_file_id=replaced.pk, user=engineer)
    assert (
        not any(path.exists() for path in copies) and not Replica.objects.filter(warc_file=replaced).exists()
    )
    removed = StorageEvent.objects.filter(warc_file=replaced, kind=StorageEvent.Kind.REMOVED)
    assert removed.count() == 2 and removed.filter(user=engineer).count() == 2
    assert Replica.objects.filter(warc_file=replaced.replaced_by, state=Replica.State.OK).count() == 2


def test_a_file_without_a_replacement_is_never_retired(root, engineer):
    warc = warc_file_index(path=root / "in" / "first.warc.gz").warc_file
    with pytest.raises(ValidationError, match="no registered deduplicated replacement"):
        warc_file_retire(warc_file_id=warc.pk, user=engineer)
    assert Path(warc.path).exists()


def test_a_missing_or_changed_replacement_stops_retiring(replaced, engineer):
    replacement = Path(replaced.replaced_by.path)
    content = replacement.read_bytes()
    replacement.write_bytes(content[:-10])
    with pytest.raises(ValidationError, match="recorded checksum"):
        warc_file_retire(warc_file_id=replaced.pk, user=engineer)
    replacement.unlink()
    with pytest.raises(ValidationError, match="not on disk"):
        warc_file_retire(warc_file_id=replaced.pk, user=engineer)
    assert Path(replaced.path).exists()
    replaced.refresh_from_db()
    assert replaced.retired_at is None


def test_only_engineers_retire_files(replaced, user_with_role):
    with pytest.raises(PermissionDenied):
        warc_file_retire(warc_file_id=replaced.pk, user=user_with_role(Role.CURATOR))
    assert Path(replaced.path).exists()


# Files of the archive, from the storage nodes --------------------------------------------------------


def test_a_run_takes_a_jobs_files_from_the_storage_nodes(root, engineer, tmp_path):
    """The files of a job, ingested onto the nodes and gone from the crawler's spool, are read from
    their replicas; the output replaces them in the archive."""
    from storage.services.dedup_runs import ArchiveSelection
    from storage.services.ingest import ingest_advance
    from tests.storage.storage_files import make_nodes

    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    job = job_for_sites([("example.com", "http://example.com/")])
    files = [
        warc_file_index(path=root / "in" / name, job_id=job.pk).warc_file
        for name in ("first.warc.gz", "second.warc.gz")
    ]
    other = job_for_sites([("example.org", "http://example.org/")])
    for warc in files:
        ingest_advance(warc.pk)
        warc.refresh_from_db()
        assert warc.replicas.count() == 2
    # Once ingested, the spool copies are gone: only the nodes have the files.
    assert not (root / "in" / "first.warc.gz").exists() and not (root / "in" / "second.warc.gz").exists()
    out = root / "out"
    run = dedup_run_start(
        inputs=[], archive=ArchiveSelection(job=job.pk), out_dir=str(out), user=engineer, enqueue=False
    )
    # Recorded as their staging places under the output directory: nothing is read by the request.
    assert run.inputs == [str(out / ".inputs" / "first.warc.gz"), str(out / ".inputs" / "second.warc.gz")]
    assert not (out / ".inputs").exists()
    run = drive(run)
    assert run.state == DedupRun.State.VALIDATED
    assert run.summary["totals"]["duplicates"] == 2  # the logo's second and third captures
    for warc in files:
        warc.refresh_from_db()
        assert warc.replaced_by is not None

    # Bad selections change nothing and say why.
    with pytest.raises(ValidationError) as excinfo:
        dedup_run_start(
            inputs=[], archive=ArchiveSelection(job=other.pk), out_dir=str(root / "o2"), user=engineer
        )
    assert field_errors(excinfo) == {
        "archive": ["The archive has no closed WARC file for this job, harvest definition or period."]
    }
    with pytest.raises(ValidationError) as excinfo:
        dedup_run_start(inputs=[], out_dir=str(root / "o3"), user=engineer)
    assert "choose files of the archive" in field_errors(excinfo)["inputs"][0]
    assert DedupRun.objects.count() == 1


def test_a_file_with_no_reachable_copy_is_named(root, engineer, tmp_path):
    from storage.services.dedup_runs import ArchiveSelection

    job = job_for_sites([("example.com", "http://example.com/")])
    warc = warc_file_index(path=root / "in" / "first.warc.gz", job_id=job.pk).warc_file
    (root / "in" / "first.warc.gz").unlink()  # not ingested, and gone from the spool
    with pytest.raises(ValidationError) as excinfo:
        dedup_run_start(
            inputs=[],
            archive=ArchiveSelection(harvest_definition=job.harvest_definition_id),
            out_dir=str(root / "out"),
            user=engineer,
        )
    assert field_errors(excinfo) == {
        "archive": [f"1 file(s) have no good copy on the storage nodes nor in the spool: {warc.name}."]
    }
    assert not DedupRun.objects.exists()


# Retiring an ARC original: only once its conversion to WARC validated ---------------------------------


@pytest.fixture
def arc_root(settings, tmp_path) -> Path:
    """The allowed directory, with a Heritrix ARC file registered in the archive under ``in/``."""
    root = tmp_path / "warcs"
    settings.HARVEST_WARC_DIR = root
    (root / "in").mkdir(parents=True)
    warc_file_index(path=heritrix_arc(root / "in" / "old.arc.gz"))
    return root


def test_an_arc_file_whose_conversion_validated_is_replaced_and_may_be_retired(arc_root, engineer):
    arc = WarcFile.objects.get(name="old.arc.gz")
    with pytest.raises(ValidationError, match="no deduplication run has validated its conversion") as excinfo:
        warc_file_retire(warc_file_id=arc.pk, user=engineer)
    assert excinfo.value.code == "conversion_not_validated"

    run = drive(start(arc_root, user=engineer))
    assert run.state == DedupRun.State.VALIDATED, run.error
    conversion = run.validation["conversions"]["old.arc.gz"]
    assert (conversion["ok"], conversion["records"], conversion["converted_records"]) == (True, 5, 5)
    arc.refresh_from_db()
    assert arc.replaced_by.name == "old-dedup.warc.gz"
    warc_file_retire(warc_file_id=arc.pk, user=engineer)
    assert not Path(arc.path).exists()

    # A run of before the conversions were validated says nothing about them: the ARC file stays.
    WarcFile.objects.filter(pk=arc.pk).update(retired_at=None)
    DedupRun.objects.filter(pk=run.pk).update(validation={**run.validation, "conversions": {}})
    with pytest.raises(ValidationError, match="no deduplication run has validated its conversion"):
        warc_file_retire(warc_file_id=arc.pk, user=engineer)


def test_an_arc_file_whose_conversion_lost_a_record_is_reported_and_never_retired(arc_root, engineer):
    run = dedup_run_advance(run_id=start(arc_root, user=engineer).pk)
    assert run.stage == "convert"
    dedup_run_unit(run_id=run.pk, stage="convert", unit="old.arc.gz")
    converted = arc_root / "out" / ".dedup" / "convert" / "000000.warc.gz"
    rewrite_members(converted, lambda record, raw: None if record.target_uri() == "http://a.test/y" else raw)

    run = drive(run)
    assert run.state == DedupRun.State.FAILED
    assert "did not pass validation" in run.error
    missing = "old.arc.gz, conversion: http://a.test/y (20190101000002) is missing from the converted file"
    assert missing in run.error
    assert run.validation["problems"] == [missing]
    assert run.validation["conversions"]["old.arc.gz"]["mismatches"] == 1
    arc = WarcFile.objects.get(name="old.arc.gz")
    assert arc.replaced_by is None  # nothing registered

    with pytest.raises(ValidationError) as excinfo:
        warc_file_retire(warc_file_id=arc.pk, user=engineer)
    assert excinfo.value.messages == [
        f"The conversion of old.arc.gz to WARC did not validate in deduplication run {run.pk}"
        " (1 mismatch, listed in its validation report): it cannot be retired."
    ]
    assert excinfo.value.code == "conversion_failed"
    arc.refresh_from_db()
    assert arc.retired_at is None and Path(arc.path).exists()
