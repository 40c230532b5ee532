"""A run's life: created from its sources (checked), queued for a worker, run stage by stage to its
end (resumable at the stage it was at), stopped and resumed by an engineer. Each of these is a step
of the run's audit trail (harvest.services.preload.audit)."""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from harvest.choices import HarvestKind
from harvest.models import HarvestDefinition, PreloadRun, PreloadSource, PreloadStep
from harvest.preload.limits import (
    nameserver_policy,
    nameserver_problem,
    remove_uploads,
    store_uploads,
    upload_folder,
)
from harvest.preload.sources import csv_columns, printable
from harvest.services.preload import audit
from harvest.services.preload import progress as progress_
from harvest.services.preload.checks import stage_dns, stage_redirects
from harvest.services.preload.ingest import stage_ingest
from harvest.services.preload.load import stage_load
from harvest.services.preload.merge import stage_merge
from harvest.services.preload.statistics import preload_statistics
from webarchive.permissions import ADD, CHANGE, require
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)

SELECTION_SOURCE = "selection"
SOURCE_NAME = re.compile(r"^[\w .()'-]{1,100}$")
MAX_NAMESERVERS = 10
STAGES = [
    PreloadRun.Stage.INGEST,
    PreloadRun.Stage.MERGE,
    PreloadRun.Stage.DNS,
    PreloadRun.Stage.REDIRECTS,
    PreloadRun.Stage.LOAD,
]
STAGE_FUNCTIONS = {
    PreloadRun.Stage.INGEST: stage_ingest,
    PreloadRun.Stage.MERGE: stage_merge,
    PreloadRun.Stage.DNS: stage_dns,
    PreloadRun.Stage.REDIRECTS: stage_redirects,
    PreloadRun.Stage.LOAD: stage_load,
}


# Creating a run


@dataclass(frozen=True)
class SourceSpec:
    """A source given as a file on the server's disk (and the CSV column to read, if any)."""

    name: str
    path: str = ""
    column: str = ""


@transaction.atomic
def preload_create(
    *,
    harvest_definition: HarvestDefinition | None = None,
    sources: list[SourceSpec],
    check_dns: bool = True,
    find_redirects: bool = True,
    include_selection: bool = True,
    nameservers: Iterable[str] = (),
    dns_timeout: float = 2.0,
    dns_retries: int = 1,
    user=None,
) -> PreloadRun:
    """A new run with its sources, checked: a snapshot definition, readable files, known columns."""
    require(user, ADD, PreloadRun)
    errors: dict[str, list[str]] = {}
    if harvest_definition is not None and harvest_definition.kind != HarvestKind.SNAPSHOT:
        errors.setdefault("harvest_definition", []).append(
            _("%(name)s is a selective harvest: choose a snapshot harvest definition.")
            % {"name": harvest_definition.name}
        )
    names = [spec.name.strip() for spec in sources]
    for spec, name in zip(sources, names, strict=True):
        if not SOURCE_NAME.match(name):
            errors.setdefault("sources", []).append(
                _("“%(name)s” is not a source name: up to 100 letters, digits, spaces and - _ . ( ) '.")
                % {"name": name}
            )
        elif name == SELECTION_SOURCE and include_selection:
            errors.setdefault("sources", []).append(
                _("“selection” is the name of the librarians' records; give the list another name.")
            )
        path = Path(spec.path)
        if not path.is_file():
            errors.setdefault("sources", []).append(
                _("%(path)s is not a readable file.") % {"path": spec.path}
            )
        elif spec.column:
            try:
                columns = csv_columns(str(path))
            except csv.Error:
                columns = []
            if spec.column not in columns:
                errors.setdefault("sources", []).append(
                    _("%(path)s has no column “%(column)s” (its columns: %(columns)s).")
                    % {
                        "path": spec.path,
                        "column": printable(spec.column),
                        "columns": printable(", ".join(columns)) or _("none"),
                    }
                )
    paths = [str(Path(spec.path).resolve()) for spec in sources]
    if len(set(paths)) != len(paths):
        errors.setdefault("sources", []).append(_("A file is given twice."))
    if not sources and not include_selection:
        errors.setdefault("sources", []).append(_("Give at least one list, or take the librarians' records."))
    nameservers = [line.strip() for line in nameservers if line.strip()]
    if len(nameservers) > MAX_NAMESERVERS:
        errors.setdefault("nameservers", []).append(
            _("Give at most %(max)d nameservers.") % {"max": MAX_NAMESERVERS}
        )
    elif nameservers:
        policy = nameserver_policy()
        for text in nameservers:
            problem = nameserver_problem(text, policy)
            if problem:
                errors.setdefault("nameservers", []).append(problem)
    if dns_timeout <= 0:
        errors.setdefault("dns_timeout", []).append(_("Give a timeout of more than 0 seconds."))
    if errors:
        raise ValidationError(errors)
    run = PreloadRun.objects.create(
        harvest_definition=harvest_definition,
        check_dns=check_dns,
        find_redirects=find_redirects,
        include_selection=include_selection,
        nameservers="\n".join(nameservers),
        dns_timeout=dns_timeout,
        dns_retries=dns_retries,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    for spec, name in zip(sources, names, strict=True):
        PreloadSource.objects.create(
            run=run, name=name, path=str(Path(spec.path).resolve()), column=spec.column
        )
    if include_selection:
        PreloadSource.objects.create(run=run, name=SELECTION_SOURCE)
    audit.step_record(run=run, kind=PreloadStep.Kind.CREATED, user=user)
    return run


@dataclass(frozen=True)
class UploadedSource:
    """A source given as uploaded files (Django ``UploadedFile``), as on the page."""

    name: str
    files: list
    column: str = ""


def preload_create_from_uploads(
    *, harvest_definition: HarvestDefinition | None, uploads: list[UploadedSource], user=None, **options
) -> PreloadRun:
    """A new run from uploaded lists, kept in a folder of their own under ``PRELOAD_UPLOAD_DIR``.

    Refused (ValidationError, nothing kept) when the lists hold more than
    ``PRELOAD_MAX_UPLOAD_BYTES`` together, or when ``preload_create`` refuses the run."""
    require(user, ADD, PreloadRun)
    folder = upload_folder()
    stored = store_uploads([upload for source in uploads for upload in source.files], folder)
    paths = iter(stored)
    sources = [
        SourceSpec(name=source.name, path=str(next(paths)), column=source.column)
        for source in uploads
        for _upload in source.files
    ]
    try:
        return preload_create(harvest_definition=harvest_definition, sources=sources, user=user, **options)
    except BaseException:
        remove_uploads(stored, folder)
        raise


# Running


def preload_run(run_id: int, *, progress: Callable[[PreloadRun], None] | None = None) -> PreloadRun:
    """Run (or resume) a preparation to its end from the stage it is at. Idempotent.

    Each stage finished is a step of the run's audit trail, naming whom the run works for."""
    with transaction.atomic():
        run = PreloadRun.objects.select_for_update().get(pk=run_id)
        if run.state == PreloadRun.State.DONE:
            return run
        progress_.RUNNER.start(run, stop_requested=False)
    user_id = audit.acting_user_id(run)
    try:
        for stage in STAGES[STAGES.index(run.stage) :] if run.stage in STAGES else []:
            progress_.begin(run, stage)
            STAGE_FUNCTIONS[stage](run, progress or (lambda run: None))
            if stage == PreloadRun.Stage.LOAD:
                run.statistics = preload_statistics(run)
            with transaction.atomic():
                run.stage = STAGES[STAGES.index(stage) + 1] if stage != STAGES[-1] else PreloadRun.Stage.DONE
                run.save(update_fields=["stage", "statistics"])
                audit.step_record(
                    run=run,
                    kind=PreloadStep.Kind.STAGE_DONE,
                    stage=stage,
                    user_id=user_id,
                    counts=audit.stage_counts(run, stage),
                )
    # How the run ended: the state, its time and error only (the stages saved the rest as they went).
    except progress_.Stopped:
        progress_.RUNNER.end(run, PreloadRun.State.STOPPED)
    except Exception as error:
        logger.exception("preload run %s failed in stage %s", run.pk, run.stage)
        progress_.RUNNER.end(run, PreloadRun.State.FAILED, error=str(error)[:2000])
    else:
        progress_.RUNNER.end(run, PreloadRun.State.DONE)
    run.refresh_from_db()
    return run


@transaction.atomic
def preload_stop(*, run: PreloadRun, user=None) -> PreloadRun:
    """Ask a running preparation to stop after its current batch (it can be resumed)."""
    require(user, CHANGE, PreloadRun)
    asked = PreloadRun.objects.filter(
        pk=run.pk, state__in=[PreloadRun.State.QUEUED, PreloadRun.State.RUNNING], stop_requested=False
    ).update(stop_requested=True)
    run.refresh_from_db()
    if asked:
        audit.step_record(run=run, kind=PreloadStep.Kind.STOP_ASKED, user=user, stage=run.stage)
    return run


@transaction.atomic
def preload_resume(*, run: PreloadRun, user=None) -> PreloadRun:
    """Queue a stopped or failed preparation again: a worker takes it up at the stage it was at,
    once this is committed; from then on the run's steps name ``user``."""
    require(user, CHANGE, PreloadRun)
    run = PreloadRun.objects.select_for_update().get(pk=run.pk)
    fields = progress_.RUNNER.move(run, PreloadRun.State.QUEUED)  # only a stopped or failed run
    run.stop_requested = False
    run.save(update_fields=[*fields, "stop_requested"])
    audit.step_record(run=run, kind=PreloadStep.Kind.RESUMED, user=user, stage=run.stage)
    preload_send(run_id=run.pk)
    return run


def preload_send(*, run_id: int) -> None:
    """Have a worker run the preparation (``harvest.preload``) once the current transaction commits."""
    enqueue("harvest.preload", run_id)
