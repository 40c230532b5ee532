"""A run's audit trail (:class:`~harvest.models.PreloadStep`): who asked for each step, and what it wrote.

A run creates and changes domains in bulk, thousands a statement, with no object saved one at a
time for django-simple-history to follow. Its trail is kept per run and step instead: an engineer
creating, stopping or resuming it; each stage it finished, with what it counted; each range of
domains it loaded, with how many domains it created, made inactive and made active again, written
in the range's own transaction. The run's own steps name who started it, or who resumed it last.
"""

from __future__ import annotations

from django.db.models import Count, Q, Sum

from harvest.models import PreloadDomain, PreloadRun, PreloadStep

Kind = PreloadStep.Kind
LOAD_COUNTS = ("created", "made_inactive", "made_active", "seeds_updated")


def step_record(
    *, run: PreloadRun, kind: str, user=None, user_id: int | None = None, stage: str = "", counts=None
) -> PreloadStep:
    """Write one step of the run's trail, naming who asked for it (``user``, or ``user_id`` for the
    run's own steps; neither: the system)."""
    if getattr(user, "is_authenticated", False):
        user_id = user.pk
    return PreloadStep.objects.create(run=run, kind=kind, stage=stage, user_id=user_id, counts=counts or {})


def acting_user_id(run: PreloadRun) -> int | None:
    """Whom the run works for now: who resumed it last, else who created it."""
    last = (
        run.steps.filter(kind__in=[Kind.CREATED, Kind.RESUMED])
        .order_by("-pk")
        .values_list("user_id", flat=True)[:1]
    )
    return next(iter(last), run.created_by_id)


def stage_counts(run: PreloadRun, stage: str) -> dict[str, int]:
    """What a finished stage leaves, for its step: lines read, domains merged, DNS results, domains
    added by redirects, or domains created and changed by the load."""
    domains = PreloadDomain.objects.filter(run=run)
    if stage == PreloadRun.Stage.INGEST:
        sums = run.sources.aggregate(lines=Sum("lines"), accepted=Sum("accepted"), invalid=Sum("invalid"))
        return {name: value or 0 for name, value in sums.items()}
    if stage == PreloadRun.Stage.MERGE:
        return domains.aggregate(domains=Count("pk"), new=Count("pk", filter=Q(is_new=True)))
    if stage == PreloadRun.Stage.DNS:
        return dict(domains.order_by().values_list("dns").annotate(count=Count("pk")))
    if stage == PreloadRun.Stage.REDIRECTS:
        return {"added": domains.exclude(redirect_from="").count()}
    if stage == PreloadRun.Stage.LOAD:
        totals = dict.fromkeys(LOAD_COUNTS, 0)
        for counts in run.steps.filter(kind=Kind.LOADED).values_list("counts", flat=True):
            for name in LOAD_COUNTS:
                totals[name] += counts.get(name, 0)
        return totals
    return {}
