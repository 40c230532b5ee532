"""What every stage of a run shares: the batch size, the run's runner (webarchive.runs), and
recording progress after each batch, where a stop an engineer asked for takes effect (a run stops
between two batches, resumable)."""

from __future__ import annotations

from django.db.models import Q

from harvest.models import PreloadRun
from harvest.models.preload import PRELOAD_RUN_TRANSITIONS
from webarchive.runs import Runner

BATCH = 5000  # rows a stage takes at a time (the redirect discovery a tenth of it)

State = PreloadRun.State
RUNNER = Runner(
    PRELOAD_RUN_TRANSITIONS,
    running=State.RUNNING,
    ended=(State.STOPPED, State.FAILED, State.DONE),
    stop_asked=Q(stop_requested=True),
)


class Stopped(Exception):
    """An engineer asked the run to stop: it stops between two batches, resumable."""


def begin(run: PreloadRun, stage: str) -> None:
    """Start a stage: nothing done in it yet."""
    RUNNER.stage_begin(run, stage)


def advance(run: PreloadRun, done: int, progress, *, total: int | None = None) -> None:
    """Record progress after a batch, and stop here if an engineer asked."""
    # The stages count their size into ``run.total`` as they start; it is written with the first batch.
    RUNNER.progress(run, done=run.done + done, total=run.total if total is None else total)
    progress(run)
    if RUNNER.stop_requested(run):
        raise Stopped
