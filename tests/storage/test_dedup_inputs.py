"""Files of the archive as the inputs of a deduplication run: read through storage (directory and S3
nodes), staged by the run's first stage under its output directory with their size and SHA-256
checked, a bad replica passed over for the next, and the staged copies removed when the run ends."""

from __future__ import annotations

import io
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from storage.dedup.pipeline import INPUTS, Pipeline, PipelineError
from storage.models import DedupRun, Replica, WarcFile
from storage.services import dedup_runs
from storage.services.dedup_runs import (
    ArchiveSelection,
    archive_names,
    dedup_run_advance,
    dedup_run_resume,
    dedup_run_start,
    dedup_run_stop,
    dedup_run_unit,
    run_stages,
)
from storage.services.indexing import warc_file_index
from storage.services.ingest import ingest_advance
from tests.factories import UserFactory
from tests.harvest.crawljobs import job_for_sites
from tests.storage.dedup_files import drive, duplicate_warcs
from tests.storage.storage_files import flip_byte, flip_replica_byte, make_nodes, replica_bytes
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def engineer(user_with_role):
    return user_with_role(Role.ENGINEER)


@pytest.fixture
def archived(settings, tmp_path, node_backend):
    """A job's two files (holding duplicates), ingested onto two nodes and gone from the spool:
    (the job, its WarcFiles, the allowed directory)."""
    root = tmp_path / "warcs"
    settings.HARVEST_WARC_DIR = root
    return archive_job(root, tmp_path, node_backend)


def archive_job(root: Path, tmp_path: Path, node_backend):
    make_nodes(tmp_path / "nodes", "room-1", "room-2", backend=node_backend)
    job = job_for_sites([("example.com", "http://example.com/")])
    files = [warc_file_index(path=path, job_id=job.pk).warc_file for path in duplicate_warcs(root / "in")]
    for warc in files:
        ingest_advance(warc.pk)
        warc.refresh_from_db()
        assert warc.replicas.filter(state=Replica.State.OK).count() == 2
        assert not Path(warc.path).exists()  # only the nodes have it
    return job, files, root


def start(job, root: Path, engineer, *, enqueue: bool = False) -> DedupRun:
    return dedup_run_start(
        inputs=[],
        archive=ArchiveSelection(job=job.pk),
        out_dir=str(root / "out"),
        user=engineer,
        enqueue=enqueue,
    )


def replica_tried_first(warc: WarcFile) -> Replica:
    """Make one of a file's replicas the first one read (the most recently verified), and return it."""
    first, *others = warc.replicas.select_related("node").order_by("node__name")
    Replica.objects.filter(pk=first.pk).update(verified_at=timezone.now() + timedelta(hours=1))
    Replica.objects.filter(pk__in=[other.pk for other in others]).update(verified_at=timezone.now())
    return first


class Copies:
    """Counts the copies staged (a file streamed from a replica or the spool into the staging place)."""

    def __init__(self, monkeypatch):
        self.count = 0
        real = dedup_runs._copy_checked

        def counted(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        monkeypatch.setattr(dedup_runs, "_copy_checked", counted)


def test_a_jobs_files_are_staged_from_the_nodes_and_removed_at_the_end(
    archived, engineer, monkeypatch, django_capture_on_commit_callbacks
):
    job, files, root = archived
    out = root / "out"

    # The request checks the selection and records the run: it reads no bytes of a replica.
    def no_read(*args, **kwargs):
        raise AssertionError("the request read a replica")

    monkeypatch.setattr(dedup_runs, "_input_sources", no_read)
    run = start(job, root, engineer)
    monkeypatch.undo()
    assert archive_names(run) == ["first.warc.gz", "second.warc.gz"]
    assert run_stages(run)[0] == INPUTS
    assert not (out / ".inputs").exists()

    copies = Copies(monkeypatch)
    with django_capture_on_commit_callbacks(execute=True):
        run = drive(run)
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert copies.count == 2
    assert run.summary["totals"]["duplicates"] == 2
    assert run.validation["bytes_in"] == sum(warc.size for warc in files)  # read from the staged copies
    for warc in files:
        warc.refresh_from_db()
        assert warc.replaced_by is not None and warc.replaced_by.name.endswith("-dedup.warc.gz")
    assert not (out / ".inputs").exists()  # the staged copies are gone, the outputs stay
    assert sorted(path.name for path in out.glob("*.warc.gz")) == [
        "first-dedup.warc.gz",
        "second-dedup.warc.gz",
    ]


def test_a_replica_that_does_not_match_its_checksum_is_passed_over_for_the_next(
    archived, engineer, monkeypatch
):
    job, files, root = archived
    bad = replica_tried_first(files[0])
    flip_replica_byte(bad)
    good = files[0].replicas.exclude(pk=bad.pk).get()
    run = dedup_run_advance(run_id=start(job, root, engineer).pk)
    assert run.stage == INPUTS and run.total == 2
    dedup_run_unit(run_id=run.pk, stage=INPUTS, unit="first.warc.gz")
    staged = root / "out" / ".inputs" / "first.warc.gz"
    assert staged.read_bytes() == replica_bytes(good) != replica_bytes(bad)
    run = drive(run)
    assert run.state == DedupRun.State.VALIDATED, run.error


def test_a_file_with_no_good_copy_fails_the_run_by_name_and_nothing_is_registered(
    archived, engineer, django_capture_on_commit_callbacks
):
    job, files, root = archived
    for replica in files[1].replicas.select_related("node"):
        flip_replica_byte(replica)
    run = start(job, root, engineer)  # the replicas are not read: the run is recorded
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(dedup_runs.StagingError):
            drive(run)
        run.refresh_from_db()
    assert run.state == DedupRun.State.FAILED
    assert "No good copy of second.warc.gz could be read" in run.error
    for replica in files[1].replicas.select_related("node"):
        assert f"{replica.node.name}: SHA-256" in run.error
    assert "the spool:" in run.error
    assert not WarcFile.objects.filter(origin=WarcFile.Origin.DEDUPLICATED).exists()
    assert not WarcFile.objects.filter(replaced_by__isnull=False).exists()
    assert not (root / "out" / ".inputs").exists()
    assert not list((root / "out").glob("*.warc.gz"))


def test_a_resumed_run_does_not_copy_a_staged_file_again(archived, engineer, monkeypatch):
    """A worker killed after staging one file: the units delivered again copy only what is missing."""
    job, _files, root = archived
    copies = Copies(monkeypatch)
    run = dedup_run_advance(run_id=start(job, root, engineer).pk)
    dedup_run_unit(run_id=run.pk, stage=INPUTS, unit="first.warc.gz")
    staged = root / "out" / ".inputs" / "first.warc.gz"
    before = staged.stat()
    assert copies.count == 1
    # Killed there; the broker delivers the unit again, then the other one.
    dedup_run_unit(run_id=run.pk, stage=INPUTS, unit="first.warc.gz")
    assert copies.count == 1 and staged.stat().st_ino == before.st_ino
    run = drive(run)
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert copies.count == 2  # each file copied once


def test_a_staged_file_that_changed_is_copied_again(archived, engineer, monkeypatch):
    job, files, root = archived
    copies = Copies(monkeypatch)
    run = dedup_run_advance(run_id=start(job, root, engineer).pk)
    dedup_run_unit(run_id=run.pk, stage=INPUTS, unit="first.warc.gz")
    staged = root / "out" / ".inputs" / "first.warc.gz"
    flip_byte(staged)  # changed on disk meanwhile
    dedup_run_unit(run_id=run.pk, stage=INPUTS, unit="first.warc.gz")
    assert copies.count == 2
    assert staged.read_bytes() == replica_bytes(files[0].replicas.first())


def test_a_stopped_run_removes_its_staged_files_and_stages_them_again_when_resumed(
    archived, engineer, django_capture_on_commit_callbacks
):
    """Stopped after its manifests were made from the staged copies, the run stages them again on
    resume, and the pipeline takes them for the same inputs (a changed input would fail it)."""
    job, _files, root = archived
    run = start(job, root, engineer)
    with django_capture_on_commit_callbacks(execute=True):
        while run.stage != "resolve":
            run = dedup_run_advance(run_id=run.pk)
            pipeline = Pipeline.open(Path(run.out_dir))
            for unit in pipeline.pending_units(run.stage):
                dedup_run_unit(run_id=run.pk, stage=run.stage, unit=unit)
            run.refresh_from_db()
        dedup_run_stop(run_id=run.pk, user=engineer)
        run = dedup_run_stop(run_id=run.pk, user=engineer)
    assert run.state == DedupRun.State.STOPPED
    assert not (root / "out" / ".inputs").exists()
    with django_capture_on_commit_callbacks(execute=True):
        dedup_run_resume(run_id=run.pk, user=engineer)
        run = drive(run)
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert not (root / "out" / ".inputs").exists()


def test_the_command_stages_a_jobs_files_from_the_nodes(archived, monkeypatch):
    job, files, root = archived
    output = io.StringIO()
    call_command("dedup_warcs", "--job", str(job.pk), "--out", str(root / "out"), stdout=output)
    run = DedupRun.objects.get()
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert "validated and registered" in output.getvalue()
    for warc in files:
        warc.refresh_from_db()
        assert warc.replaced_by is not None


def test_the_command_names_the_files_with_no_good_copy(archived):
    job, files, root = archived
    for warc in files:
        for replica in warc.replicas.select_related("node"):
            flip_replica_byte(replica)
    with pytest.raises(CommandError) as excinfo:
        call_command("dedup_warcs", "--job", str(job.pk), "--out", str(root / "out"), stdout=io.StringIO())
    assert "No good copy of first.warc.gz" in str(excinfo.value)
    assert "No good copy of second.warc.gz" in str(excinfo.value)
    run = DedupRun.objects.get()
    assert run.state == DedupRun.State.FAILED
    assert not WarcFile.objects.filter(origin=WarcFile.Origin.DEDUPLICATED).exists()


@pytest.mark.django_db(transaction=True)
def test_the_worker_stages_the_files_the_request_only_checked(crawl_worker, settings, tmp_path, monkeypatch):
    """On a real worker and broker (PostgreSQL, RabbitMQ): the request records the run without
    reading a replica; the worker stages the files from the nodes, runs the stages, registers the
    output and removes the staged copies."""
    from tests.crawl_worker import wait_for

    def no_read(*args, **kwargs):
        raise AssertionError("the test process read a replica")

    job, files, root = archive_job(settings.HARVEST_WARC_DIR, tmp_path, "directory")
    monkeypatch.setattr(dedup_runs, "_input_sources", no_read)  # here, not in the worker
    crawl_worker.start()
    run = start(job, root, UserFactory(roles=[Role.ENGINEER]), enqueue=True)
    ended = (DedupRun.State.VALIDATED, DedupRun.State.FAILED, DedupRun.State.DONE)
    wait_for(
        lambda: DedupRun.objects.filter(pk=run.pk, state__in=ended).exists(),
        timeout=120,
        message=crawl_worker.logs(),
    )
    run.refresh_from_db()
    assert run.state == DedupRun.State.VALIDATED, run.error + crawl_worker.logs()
    assert not (root / "out" / ".inputs").exists()
    for warc in files:
        warc.refresh_from_db()
        assert warc.replaced_by is not None


def test_a_selection_whose_replicas_are_all_bad_is_refused_by_name(archived, engineer):
    job, files, root = archived
    Replica.objects.filter(warc_file=files[1]).update(state=Replica.State.CORRUPT)
    with pytest.raises(ValidationError) as excinfo:
        start(job, root, engineer)
    assert excinfo.value.message_dict == {
        "archive": ["1 file(s) have no good copy on the storage nodes nor in the spool: second.warc.gz."]
    }
    assert not DedupRun.objects.exists() and not (root / "out").exists()


def test_an_output_disk_too_small_for_the_staged_files_is_refused(archived, engineer, monkeypatch):
    job, files, root = archived
    needed = 2 * sum(warc.size for warc in files)
    real = shutil.disk_usage
    monkeypatch.setattr(dedup_runs.shutil, "disk_usage", lambda path: real(path)._replace(free=needed - 1))
    with pytest.raises(ValidationError) as excinfo:
        start(job, root, engineer)
    [message] = excinfo.value.message_dict["out_dir"]
    assert "staging the files of the archive and writing the output need about" in message
    assert not DedupRun.objects.exists()
    monkeypatch.setattr(dedup_runs.shutil, "disk_usage", lambda path: real(path)._replace(free=needed))
    assert start(job, root, engineer).state == DedupRun.State.QUEUED


def test_the_pipeline_waits_for_staged_inputs_and_never_stages_a_path(archived, engineer):
    job, _files, root = archived
    explicit = duplicate_warcs(root / "explicit")[0].rename(root / "explicit" / "other.warc.gz")
    run = dedup_run_start(
        inputs=[str(explicit)],
        archive=ArchiveSelection(job=job.pk),
        out_dir=str(root / "out"),
        user=engineer,
        enqueue=False,
    )
    assert run.inputs[0] == str(explicit) and archive_names(run) == ["first.warc.gz", "second.warc.gz"]
    pipeline = Pipeline.open(Path(run.out_dir))
    assert pipeline.units(INPUTS) == ["first.warc.gz", "second.warc.gz"]
    with pytest.raises(PipelineError, match="stage inputs is not done"):
        pipeline.run_unit("manifest", "other.warc.gz")
    with pytest.raises(PipelineError, match="put in place by the run's worker"):
        pipeline.run_unit(INPUTS, "first.warc.gz")
    with pytest.raises(PipelineError, match="not an input staged"):
        dedup_runs.dedup_input_stage(pipeline, "other.warc.gz")
    content = explicit.read_bytes()
    run = drive(run)
    assert run.state == DedupRun.State.VALIDATED, run.error
    assert explicit.read_bytes() == content  # read where it is, as before
