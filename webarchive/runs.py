"""Long-running work as a database row: what every run has, and the runner that moves it.

A run (a preload, a deduplication…) is a concrete model inheriting :class:`Run`: it adds its own
``State`` choices and ``state`` field, its transition table (webarchive.transitions), its stages
and its options. Its service moves it only through a :class:`Runner` declared for it: starting it
(running, ``started_at`` set once), recording the progress of its stage, ending it (the state,
``ended_at``, the error) and asking whether someone asked it to stop. The queue (Celery) is only
transport: a worker that dies leaves the row where it was, and the run is resumed from there.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from webarchive.transitions import Transitions


class Run(models.Model):
    """The fields and read-outs every long-running operation shares (abstract)."""

    # The states in which the run is queued, running or winding down (its page keeps polling).
    ACTIVE: tuple[str, ...] = ()

    # A concrete run may narrow ``stage`` (its own choices and default).
    stage = models.CharField(_("stage"), max_length=20, blank=True)
    done = models.BigIntegerField(_("done in this stage"), default=0)
    total = models.BigIntegerField(_("to do in this stage"), default=0)
    stage_started_at = models.DateTimeField(_("stage started at"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("started by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE

    @property
    def percent_done(self) -> int:
        """The share of the stage done, in whole percent (0 while its size is unknown)."""
        return min(100, self.done * 100 // self.total) if self.total > 0 else 0

    @property
    def rate(self) -> float:
        """Done per second since the stage started (0.0 before anything is done)."""
        if self.stage_started_at is None:
            return 0.0
        elapsed = (timezone.now() - self.stage_started_at).total_seconds()
        return self.done / elapsed if elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> int | None:
        """The time the stage still needs at its rate so far; None when that is unknown or nothing is left."""
        rate = self.rate
        if rate <= 0 or self.total <= self.done:
            return None
        return int((self.total - self.done) / rate)


def storable(text: str) -> str:
    """``text`` as any database stores it: no NUL (PostgreSQL), no lone surrogate (UTF-8)."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


class Runner:
    """Moves the runs of one model through their life, the same way for every kind of run.

    ``running`` is the state a worker sets when it takes the run up, ``ended`` the states in which
    the run has stopped working (its ``ended_at`` set; cleared when it is queued or run again), and
    ``stop_asked`` the condition under which an engineer asked it to stop (a flag, or a state).

    The writes that change the state (:meth:`move`, :meth:`start`, :meth:`end`) expect the row
    locked by the caller (``select_for_update``) and go through the run's transition table; with
    ``save=False`` they leave the saving to a caller that changes more of the row. The progress of
    a stage is written by :meth:`progress` without a lock, as units working side by side do.
    """

    def __init__(
        self,
        transitions: Transitions,
        *,
        running: str,
        ended: Iterable[str],
        stop_asked: models.Q,
    ):
        self.transitions = transitions
        self.running = running
        self.ended = frozenset(ended)
        self.stop_asked = stop_asked

    def move(self, run: Run, state: str) -> list[str]:
        """Move ``run`` through its table to ``state`` with its start and end times (not saved);
        the fields changed."""
        self.transitions.apply(run, state)
        now = timezone.now()
        fields = [self.transitions.field, "ended_at"]
        if state == self.running and run.started_at is None:
            run.started_at = now
            fields.append("started_at")
        run.ended_at = now if state in self.ended else None
        return fields

    def start(self, run: Run, *, save: bool = True, **values) -> None:
        """A worker takes the run up: running, no error any more, and ``values`` set."""
        fields = self.move(run, self.running)
        run.error = ""
        self._save(run, [*fields, "error"], values, save)

    def end(self, run: Run, state: str, *, error: str = "", save: bool = True, **values) -> None:
        """The run has stopped working: ``state`` (one of ``ended``), its end time and its error."""
        if state not in self.ended:
            raise ValueError(f"{state} is not a state a run ends in")
        fields = self.move(run, state)
        run.error = storable(error)
        self._save(run, [*fields, "error"], values, save)

    def stage_begin(self, run: Run, stage: str, *, done: int = 0, total: int = 0, save: bool = True) -> None:
        """The run enters ``stage``: its counts start again, and so does the clock of its rate."""
        values = {"stage": stage, "done": done, "total": total, "stage_started_at": timezone.now()}
        self._save(run, [], values, save)

    def progress(self, run: Run, *, done: int, total: int | None = None) -> bool:
        """Record how far the run's current stage is (``run.stage``); False, and nothing written,
        if the run has meanwhile moved to another stage."""
        values = {"done": done} if total is None else {"done": done, "total": total}
        for name, value in values.items():
            setattr(run, name, value)
        return bool(type(run).objects.filter(pk=run.pk, stage=run.stage).update(**values))

    def stop_requested(self, run: Run) -> bool:
        """Whether an engineer asked the run to stop (read from the database, not from ``run``)."""
        return type(run).objects.filter(self.stop_asked, pk=run.pk).exists()

    @staticmethod
    def _save(run: Run, fields: list[str], values: dict, save: bool) -> None:
        for name, value in values.items():
            setattr(run, name, value)
        if save:
            run.save(update_fields=list(dict.fromkeys([*fields, *values])))
