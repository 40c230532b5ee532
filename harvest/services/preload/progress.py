"""What every stage of a run shares: the batch size, and recording progress after each batch,
where a stop an engineer asked for takes effect (a run stops between two batches, resumable)."""

from __future__ import annotations

from django.utils import timezone

from harvest.models import PreloadRun

BATCH = 5000  # rows a stage takes at a time (the redirect discovery a tenth of it)


class Stopped(Exception):
    """An engineer asked the run to stop: it stops between two batches, resumable."""


def begin(run: PreloadRun, stage: str) -> None:
    """Start a stage: nothing done in it yet."""
    run.stage = stage
    run.stage_done, run.stage_total, run.stage_started_at = 0, 0, timezone.now()
    run.save(update_fields=["stage", "stage_done", "stage_total", "stage_started_at"])


def advance(run: PreloadRun, done: int, progress, *, total: int | None = None) -> None:
    """Record progress after a batch, and stop here if an engineer asked."""
    run.stage_done += done
    if total is not None:
        run.stage_total = total
    PreloadRun.objects.filter(pk=run.pk).update(stage_done=run.stage_done, stage_total=run.stage_total)
    progress(run)
    if PreloadRun.objects.filter(pk=run.pk, stop_requested=True).exists():
        raise Stopped
