"""The shared run (webarchive.runs): the fields every run has, and the runner that moves each kind
the same way, however it asks for a stop (a flag on a preload, a state on a deduplication)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import HarvestChannel, PreloadRun
from harvest.services.planning import channel_save, definition_save
from harvest.services.preload.progress import RUNNER as PRELOAD_RUNNER
from storage.models import DedupRun
from storage.services.dedup_runs import RUNNER as DEDUP_RUNNER
from webarchive.runs import Run

SHARED = (
    "stage",
    "done",
    "total",
    "stage_started_at",
    "error",
    "created_by",
    "created_at",
    "started_at",
    "ended_at",
)


@pytest.fixture
def preload(db) -> PreloadRun:
    if not HarvestChannel.objects.filter(is_snapshot=True, is_default=True).exists():
        # The migrations' channel is gone after a test that flushes the database.
        channel_save(
            name="snapshot", queue=settings.HARVEST_CRAWL_QUEUES[0], is_snapshot=True, is_default=True
        )
    return PreloadRun.objects.create(
        harvest_definition=definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026")
    )


@pytest.fixture
def dedup(db, tmp_path) -> DedupRun:
    return DedupRun.objects.create(out_dir=str(tmp_path / "out"), inputs=[])


@pytest.mark.parametrize("model", [PreloadRun, DedupRun])
def test_every_run_has_the_shared_fields_under_one_name(model):
    assert issubclass(model, Run)
    names = {field.name for field in model._meta.get_fields()}
    assert set(SHARED) <= names
    assert not names & {"stage_done", "stage_total", "units_done", "units_total"}


@pytest.mark.parametrize("kind", ["preload", "dedup"])
def test_a_run_is_started_once_and_ended_with_its_time_and_error(request, kind):
    run = request.getfixturevalue(kind)
    runner = PRELOAD_RUNNER if kind == "preload" else DEDUP_RUNNER
    runner.start(run)
    run.refresh_from_db()
    first = run.started_at
    assert run.state == "running" and first is not None and run.ended_at is None

    runner.end(run, "failed", error="disk \x00 full")
    run.refresh_from_db()
    assert run.state == "failed" and run.ended_at is not None
    assert run.error == "disk \\x00 full"  # storable: no NUL for PostgreSQL

    runner.start(run)  # run again (a resumed run): still started when it first started
    run.refresh_from_db()
    assert (run.state, run.started_at, run.ended_at, run.error) == ("running", first, None, "")


@pytest.mark.parametrize("kind", ["preload", "dedup"])
def test_the_runner_follows_each_runs_own_table(request, kind):
    run = request.getfixturevalue(kind)
    runner = PRELOAD_RUNNER if kind == "preload" else DEDUP_RUNNER
    with pytest.raises(ValidationError) as excinfo:
        runner.end(run, "done")  # a queued run has not run
    assert excinfo.value.code == "illegal_transition"
    with pytest.raises(ValueError):
        runner.end(run, "running")  # not a state a run ends in
    run.refresh_from_db()
    assert run.state == "queued" and run.ended_at is None


def test_a_stage_begins_from_nothing_and_its_progress_is_written_while_the_run_is_in_it(preload):
    PRELOAD_RUNNER.stage_begin(preload, PreloadRun.Stage.DNS, total=40)
    preload.refresh_from_db()
    assert (preload.stage, preload.done, preload.total) == ("dns", 0, 40)
    assert preload.stage_started_at is not None

    assert PRELOAD_RUNNER.progress(preload, done=10)
    preload.refresh_from_db()
    assert (preload.done, preload.total, preload.percent_done) == (10, 40, 25)

    stale = PreloadRun.objects.get(pk=preload.pk)
    PRELOAD_RUNNER.stage_begin(preload, PreloadRun.Stage.REDIRECTS)
    assert not PRELOAD_RUNNER.progress(stale, done=30, total=40)  # the run has moved on
    preload.refresh_from_db()
    assert (preload.stage, preload.done, preload.total) == ("redirects", 0, 0)


def test_a_stop_is_a_flag_on_a_preload_and_a_state_on_a_deduplication(preload, dedup):
    assert not PRELOAD_RUNNER.stop_requested(preload)
    PreloadRun.objects.filter(pk=preload.pk).update(stop_requested=True)
    assert PRELOAD_RUNNER.stop_requested(preload)  # read from the row, not the instance

    DEDUP_RUNNER.start(dedup)
    assert not DEDUP_RUNNER.stop_requested(dedup)
    DEDUP_RUNNER.move(dedup, DedupRun.State.STOPPING)
    dedup.save()
    assert DEDUP_RUNNER.stop_requested(dedup) and dedup.is_active and dedup.ended_at is None


def test_the_read_outs(dedup):
    assert dedup.is_active and dedup.percent_done == 0 and dedup.rate == 0.0 and dedup.seconds_left is None
    dedup.stage_started_at = timezone.now() - timedelta(seconds=10)
    dedup.done, dedup.total = 5, 20
    assert dedup.percent_done == 25
    assert dedup.rate == pytest.approx(0.5, rel=0.1)
    assert dedup.seconds_left == pytest.approx(30, abs=3)
    dedup.done = 25  # more than counted (a count refreshed late): never past 100 %
    assert dedup.percent_done == 100 and dedup.seconds_left is None
    dedup.state = DedupRun.State.DONE
    assert not dedup.is_active
