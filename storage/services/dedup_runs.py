"""Runs of the post-crawl deduplication pipeline (storage.dedup) as database rows, and their outcome.

The pipeline keeps its own progress in files under the run's output directory, so that any worker
sharing the filesystem can run any unit of a stage; a :class:`~storage.models.DedupRun` row is what
people, pages and tasks see. A run goes through its stages either in Celery (one task per unit,
:mod:`storage.tasks`; the unit that completes a stage dispatches the next) or in the foreground
(``manage.py dedup_warcs``). A validated output is registered in the archive in place of its inputs,
whose files are kept until an engineer retires them (:func:`warc_file_retire`).

Files of the archive (:class:`ArchiveSelection`) are read through storage, wherever their replicas
are (directory or S3 nodes, other machines): the web request only checks that each has a good
replica (or a spool copy) and records the run; the run's first stage (``inputs``, run by the workers
or by ``dedup_warcs``) streams each one into ``<out_dir>/.inputs/<name>`` from its first good
replica, checking its size and SHA-256 while copying (a bad copy: the next replica, then the spool).
A run's ``inputs`` lists the paths the pipeline reads: a file of the archive is its staged path (its
name is its WarcFile's, :func:`archive_names`). The staged copies go when the run ends (finished,
failed or stopped); a resumed run stages them again. Nothing after the end reads them: registering
reads the outputs and the inputs' names, retiring the replacement and the run's validation report.
"""

from __future__ import annotations

import dataclasses
import datetime
import gzip
import hashlib
import logging
import os
import shutil
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import OperationalError, transaction
from django.db.models import F, Q
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from harvest.crawler.warc import FILE_NAME
from harvest.models import Job
from storage.dedup.pipeline import (
    DRY_RUN_STAGES,
    INPUTS,
    STAGES,
    Options,
    Pipeline,
    PipelineError,
    input_kind,
    kind_from_name,
)
from storage.dedup.workfiles import atomic
from storage.models import DEDUP_RUN_TRANSITIONS as DEDUP_RUN_TRANSITIONS  # the table, where pages read it
from storage.models import Capture, DedupRun, StorageEvent, StorageNode, WarcFile
from storage.services.indexing import IndexConflict, warc_file_index
from storage.services.placement import good_replicas
from storage.services.replication import warc_file_open
from storage.warcindex import WarcReadError, archive_files
from webarchive.permissions import ADD, CHANGE, require
from webarchive.runs import Runner
from webarchive.tasks import enqueue

State = DedupRun.State
ARCHIVE_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")
NOT_FROM_A_HARVEST = "(not from a harvest)"
HASH_CHUNK = 1 << 20
STAGING_DIR = ".inputs"  # under a run's out_dir: the files of the archive it reads, while it runs

logger = logging.getLogger(__name__)

# A run's state moves through its runner (webarchive.runs); a stop asked is a state, stopping.
RUNNER = Runner(
    DEDUP_RUN_TRANSITIONS,
    running=State.RUNNING,
    ended=(State.STOPPED, State.FAILED, State.VALIDATED, State.DONE),
    stop_asked=Q(state=State.STOPPING),
)


def allowed_roots() -> list[Path]:
    """The directories a user of the pages may read inputs from and write output to."""
    roots = getattr(settings, "DEDUP_ALLOWED_ROOTS", None) or [settings.HARVEST_WARC_DIR]
    return [Path(root).resolve() for root in roots]


def run_stages(run: DedupRun) -> tuple[str, ...]:
    """The stages a run goes through: ``inputs`` first when it reads files of the archive."""
    stages = DRY_RUN_STAGES if run.dry_run else STAGES
    return (INPUTS, *stages) if archive_names(run) else stages


def staging_dir(out_dir: str | Path) -> Path:
    """Where a run's files of the archive are staged while it runs."""
    return Path(out_dir) / STAGING_DIR


def archive_names(run: DedupRun) -> list[str]:
    """The names of the files of the archive a run reads (its inputs staged under its out_dir)."""
    staging = staging_dir(run.out_dir)
    return [Path(path).name for path in run.inputs if Path(path).parent == staging]


# Starting -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ArchiveSelection:
    """WARC files of the archive to deduplicate, read from the storage nodes: those of a job, of a
    harvest definition's jobs, or closed in a period (the criteria given are all applied)."""

    job: int | None = None
    harvest_definition: int | None = None
    since: datetime.date | None = None
    until: datetime.date | None = None  # inclusive

    def __bool__(self) -> bool:
        return any(value is not None for value in dataclasses.astuple(self))

    def files(self):
        """The WarcFiles chosen: closed, not replaced by a deduplicated copy already, oldest first."""
        files = WarcFile.objects.filter(closed_at__isnull=False, replaced_by__isnull=True)
        if self.job is not None:
            files = files.filter(job_id=self.job)
        if self.harvest_definition is not None:
            files = files.filter(job__harvest_definition_id=self.harvest_definition)
        if self.since is not None:
            files = files.filter(closed_at__date__gte=self.since)
        if self.until is not None:
            files = files.filter(closed_at__date__lte=self.until)
        return files.order_by("closed_at", "pk")


def archive_inputs(selection: ArchiveSelection, errors: list[str]) -> list[WarcFile]:
    """The files a selection chooses that the run's workers can read: each has a good replica on a
    storage node, or a whole copy where it was written. Their bytes are not read here (the run stages
    them, :func:`dedup_input_stage`). A file with neither, or a selection with no file, goes to ``errors``."""
    readable, unreadable = [], []
    files = list(selection.files())
    for warc in files:
        if warc.sha256 and (good_replicas(warc).exists() or _spool_whole(warc)):
            readable.append(warc)
        else:
            unreadable.append(warc.name)
    if not files:
        errors.append(_("The archive has no closed WARC file for this job, harvest definition or period."))
    if unreadable:
        errors.append(
            _("%(count)d file(s) have no good copy on the storage nodes nor in the spool: %(names)s.")
            % {"count": len(unreadable), "names": ", ".join(unreadable[:10])}
        )
    return readable


def _spool_whole(warc: WarcFile) -> bool:
    """Whether the file is where it was written, at its size (a look at the directory, no read)."""
    try:
        return Path(warc.path).stat().st_size == warc.size
    except OSError:
        return False


def dedup_run_start(
    *,
    inputs: list[str | Path],
    out_dir: str | Path,
    archive: ArchiveSelection | None = None,
    options: dict | None = None,
    dry_run: bool = False,
    register_output: bool = True,
    user=None,
    enqueue: bool = True,
) -> DedupRun:
    """Check the inputs and the output directory, record a queued run, and send it to the workers.

    A user (the pages) may only name paths under :func:`allowed_roots`; ``user=None`` is the system
    (``dedup_warcs``), trusted with any path. ``archive`` adds the archive's own files (a job's, a
    harvest definition's, a period's), read from their replicas on the storage nodes wherever those
    are. ``enqueue=False`` leaves the running to the caller.
    Bad input raises ValidationError at the field it concerns and changes nothing.
    """
    require(user, ADD, DedupRun)
    roots = allowed_roots() if user is not None else None
    errors: dict[str, list[str]] = defaultdict(list)
    files = _input_files(inputs, roots, errors["inputs"], required=not archive)
    out = _output_dir(out_dir, roots, errors["out_dir"])
    archived = archive_inputs(archive, errors["archive"]) if archive else []
    staged = [staging_dir(out) / warc.name for warc in archived] if out is not None else []
    if out is not None and (files or archived):
        _check_space(out, files, archived, errors["out_dir"])
    try:
        pipeline_options = Options(**(options or {}))
    except TypeError as error:
        errors[NON_FIELD_ERRORS].append(_("Unknown option: %(error)s") % {"error": error})
    if out is not None and any(path.parent == out for path in files):
        errors["out_dir"].append(_("Choose an output directory apart from the input files."))
    errors = {field: messages for field, messages in errors.items() if messages}
    if errors:
        raise ValidationError(errors)
    existed = out.exists()
    with transaction.atomic():
        run = DedupRun(
            out_dir=str(out),
            inputs=[str(path) for path in [*files, *staged]],
            options=dataclasses.asdict(pipeline_options),
            dry_run=dry_run,
            register_output=register_output,
            created_by=user,
        )
        run.full_clean()
        try:
            Pipeline.create(out_dir=out, inputs=[*files, *staged], options=pipeline_options, staged=staged)
        except PipelineError as error:
            if not existed:
                shutil.rmtree(out, ignore_errors=True)  # made just now by the pipeline: nothing to keep
            raise ValidationError({NON_FIELD_ERRORS: [str(error)]}) from error
        run.save()
        if enqueue:
            _send_advance(run.pk)
    return run


def _check_space(out: Path, files: list[Path], archived: list[WarcFile], errors: list[str]) -> None:
    """Refuse an output directory whose disk cannot hold the staged files of the archive and the
    output (at most the size of the inputs)."""
    needed = 2 * sum(warc.size for warc in archived) + sum(path.stat().st_size for path in files)
    existing = out
    while not existing.exists():
        existing = existing.parent
    try:
        free = shutil.disk_usage(existing).free
    except OSError:
        return
    if free < needed:
        errors.append(
            _(
                "%(path)s has %(free)s free: staging the files of the archive and writing the output "
                "need about %(needed)s."
            )
            % {"path": existing, "free": filesizeformat(free), "needed": filesizeformat(needed)}
        )


def _input_files(
    inputs: list[str | Path], roots: list[Path] | None, errors: list[str], *, required: bool = True
) -> list[Path]:
    """The WARC/ARC files named (directories walked), in order, each once; problems go to ``errors``."""
    files: list[Path] = []
    if not inputs and required:
        errors.append(
            _(
                "Give at least one WARC or ARC file or directory, or choose files of the archive (a job, a "
                "harvest definition or a period)."
            )
        )
    for given in inputs:
        path = Path(given).expanduser()
        if not path.is_absolute() and roots is not None:
            errors.append(_("%(path)s: give an absolute path.") % {"path": given})
            continue
        path = path.resolve()
        if roots is not None and not _under(path, roots):
            errors.append(
                _("%(path)s: not under an allowed directory (%(roots)s).") % _roots_text(given, roots)
            )
            continue
        if not path.exists():
            errors.append(_("%(path)s: no such file or directory.") % {"path": given})
        elif path.is_dir():
            found = [item.resolve() for item in archive_files([path])]
            if not found:
                errors.append(_("%(path)s: no WARC or ARC file in this directory.") % {"path": given})
            files.extend(found)
        elif not (path.name.endswith(ARCHIVE_SUFFIXES) and _looks_like_archive(path)):
            errors.append(_("%(path)s: not a WARC or ARC file.") % {"path": given})
        else:
            files.append(path)
    return list(dict.fromkeys(files))


def _looks_like_archive(path: Path) -> bool:
    """Whether a file starts as a WARC or ARC file does (after gunzipping a .gz)."""
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as stream:
            head = stream.read(8)
    except (OSError, EOFError):
        return False
    return head.startswith((b"WARC/", b"filedesc"))


def _output_dir(out_dir: str | Path, roots: list[Path] | None, errors: list[str]) -> Path | None:
    if not str(out_dir).strip():
        errors.append(_("Give the directory the deduplicated files are written to."))
        return None
    path = Path(out_dir).expanduser()
    if not path.is_absolute() and roots is not None:
        errors.append(_("%(path)s: give an absolute path.") % {"path": out_dir})
        return None
    path = path.resolve()
    if roots is not None and not _under(path, roots):
        errors.append(
            _("%(path)s: not under an allowed directory (%(roots)s).") % _roots_text(out_dir, roots)
        )
        return None
    existing = path
    while not existing.exists():
        existing = existing.parent
    if existing == path and not path.is_dir():
        errors.append(_("%(path)s: not a directory.") % {"path": out_dir})
    elif not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        errors.append(_("%(path)s: this directory cannot be written.") % {"path": existing})
    other = DedupRun.objects.filter(out_dir=str(path)).first()
    if other is not None:
        errors.append(
            _("%(run)s already uses this directory (%(state)s): resume it, or choose another directory.")
            % {"run": other, "state": other.get_state_display()}
        )
    return path


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _roots_text(path, roots: list[Path]) -> dict:
    return {"path": path, "roots": ", ".join(str(root) for root in roots)}


def _send_advance(run_id: int) -> None:
    enqueue("storage.dedup_advance", run_id)


def _send_units(run_id: int, stage: str, units: list[str]) -> None:
    for unit in units:
        enqueue("storage.dedup_unit", run_id, stage, unit)


# Running (Celery) ---------------------------------------------------------------------------------


@transaction.atomic
def dedup_run_advance(*, run_id: int) -> DedupRun:
    """Start the run, or move it on: send the pending units of its next stage, or finish it.

    Called once a stage is complete (by the unit that completed it): two callers at once are
    serialised by the row lock, and a stage already sent is not sent twice.
    """
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    if run.state == State.QUEUED:
        RUNNER.start(run, save=False)
    elif run.state == State.STOPPING:
        _end(run, State.STOPPED, save=False)
    if run.state != State.RUNNING:
        run.save()
        return run
    try:
        pipeline = Pipeline.open(Path(run.out_dir))
        stage = pipeline.next_stage(run_stages(run))
        if stage is None:
            return _finish(run, pipeline)
        pending = pipeline.pending_units(stage)
        total = len(pipeline.units(stage))
    except PipelineError as error:
        return _fail(run, str(error))
    if stage != run.stage:
        RUNNER.stage_begin(run, stage, save=False)
        _send_units(run.pk, stage, pending)
    run.total, run.done = total, total - len(pending)
    run.save()
    return run


def dedup_run_unit(*, run_id: int, stage: str, unit: str) -> None:
    """Run one unit of a stage (unless the run stopped or failed); move the run on once the stage is done."""
    run = DedupRun.objects.filter(pk=run_id).first()
    if run is None:
        return
    if run.state != State.RUNNING:
        if run.state == State.STOPPING:
            dedup_run_advance(run_id=run_id)  # the stop takes effect: stopping -> stopped
        return
    try:
        pipeline = Pipeline.open(Path(run.out_dir))
        if stage == INPUTS:
            dedup_input_stage(pipeline, unit)
        else:
            pipeline.run_unit(stage, unit)
        pending = len(pipeline.pending_units(stage))
        done = pipeline.stage_done(stage)
    except OperationalError:
        raise  # the database, not the unit: the task is retried
    except Exception as error:
        # Any other failure of a unit fails the run, with its message; resuming runs the unit again.
        message = _("%(stage)s, %(unit)s: %(error)s") % {"stage": stage, "unit": unit, "error": error}
        dedup_run_fail(run_id=run_id, error=message)
        raise
    if run.stage == stage:  # else the run has moved on (or was resumed): its counts are not this stage's
        RUNNER.progress(run, done=max(0, run.total - pending))
    if done or RUNNER.stop_requested(run):
        dedup_run_advance(run_id=run_id)


@transaction.atomic
def dedup_run_fail(*, run_id: int, error: str) -> DedupRun:
    """Mark a run failed with the reason (a run already ended stays as it is)."""
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    if DEDUP_RUN_TRANSITIONS.may(run.state, State.FAILED):
        return _fail(run, error)
    return run


def _fail(run: DedupRun, error: str) -> DedupRun:
    _end(run, State.FAILED, error=error, save=False)
    run.save()  # with what the caller changed before it failed (the savings, the validation)
    return run


@transaction.atomic
def dedup_run_stop(*, run_id: int, user=None) -> DedupRun:
    """Ask a run to stop: units not started are skipped, running ones finish; twice: it stops at once."""
    require(user, CHANGE, DedupRun)
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    if run.state == State.RUNNING:
        RUNNER.move(run, State.STOPPING)
    else:
        _end(run, State.STOPPED, save=False)  # queued or stopping (again): refused if it has ended
    run.save()
    return run


@transaction.atomic
def dedup_run_resume(*, run_id: int, user=None) -> DedupRun:
    """Queue a stopped or failed run again: the pending units of its stage are sent again."""
    require(user, CHANGE, DedupRun)
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    RUNNER.move(run, State.QUEUED)
    run.stage = ""  # so that the next advance sends the stage's pending units again
    run.error = ""
    run.save()
    _send_advance(run.pk)
    return run


# Running (in the foreground: dedup_warcs) ---------------------------------------------------------


def dedup_run_begin(*, run_id: int) -> DedupRun:
    """Mark a run running in this process (``dedup_warcs``): a new, stopped or failed run; then stage
    its files of the archive here (its stage ``inputs``). A file with no good copy fails the run:
    ValidationError, naming every such file."""
    with transaction.atomic():
        run = DedupRun.objects.select_for_update().get(pk=run_id)
        RUNNER.start(run)
    try:
        pipeline = Pipeline.open(Path(run.out_dir))
    except PipelineError:
        return run  # said by the stages, which cannot run either
    pending = pipeline.pending_units(INPUTS)
    total = len(pipeline.units(INPUTS))
    if not pending:
        return run
    dedup_run_progress(run_id=run.pk, stage=INPUTS, done=total - len(pending), total=total)
    failures = []
    try:
        for done, name in enumerate(pending, start=total - len(pending) + 1):
            try:
                dedup_input_stage(pipeline, name)
            except StagingError as error:
                failures.append(str(error))
            dedup_run_progress(run_id=run.pk, stage=INPUTS, done=done, total=total)
    except KeyboardInterrupt:
        dedup_run_end(run_id=run.pk, completed=False)
        raise ValidationError(
            _("Interrupted while staging the files of the archive: run the same command again to resume.")
        ) from None
    if failures:
        run = dedup_run_fail(run_id=run.pk, error="\n".join(failures))
        raise ValidationError(run.error, code="staging")
    return DedupRun.objects.get(pk=run.pk)


def dedup_run_progress(*, run_id: int, stage: str, done: int, total: int) -> None:
    """Record how far the stage of a foreground run is (units ``done`` of ``total``)."""
    run = DedupRun.objects.get(pk=run_id)
    if run.stage != stage:
        RUNNER.stage_begin(run, stage, done=done, total=total)
    else:
        RUNNER.progress(run, done=done, total=total)


@transaction.atomic
def dedup_run_end(*, run_id: int, completed: bool, error: str = "") -> DedupRun:
    """A foreground run has returned: finish it if its stages are all done, else mark it stopped or failed."""
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    if error:
        return _fail(run, error) if DEDUP_RUN_TRANSITIONS.may(run.state, State.FAILED) else run
    if not completed:
        _end(run, State.STOPPED)
        return run
    try:
        return _finish(run, Pipeline.open(Path(run.out_dir)))
    except PipelineError as failure:
        return _fail(run, str(failure))


# Staging the files of the archive (the stage "inputs") ----------------------------------------------


class StagingError(Exception):
    """No good copy of a file of the archive could be staged (str() names it and says why)."""


def dedup_input_stage(pipeline: Pipeline, name: str) -> bool:
    """Put the file of the archive ``name`` in its staging place (:func:`staging_dir`), streamed from
    its first good replica (online nodes first, the most recently verified first), else from where
    it was written, its size and SHA-256 checked against its WarcFile while copying: a bad copy is
    discarded and the next source tried. True if copied, False if a matching copy was there already
    (a resumed run, a unit delivered twice). StagingError when no source gives the file whole.

    Its modification time is the file's closing time, so that a copy staged again after a stop is
    the same input to the pipeline (which notices an input changed since its manifest).
    """
    target = pipeline.staged_path(name)
    warc = WarcFile.objects.filter(name=name, retired_at__isnull=True).first()
    if warc is None:
        raise StagingError(_("%(name)s is no longer in the archive (retired or removed).") % {"name": name})
    if target.exists():
        if target.stat().st_size == warc.size and _path_sha256(target) == warc.sha256:
            return False
        target.unlink()
    mtime = int((warc.closed_at or warc.registered_at).timestamp()) * 1_000_000_000
    problems = []
    for source, opener in _input_sources(warc):
        try:
            with opener() as stream, atomic(target, "wb") as out:
                _copy_checked(stream, out, warc)
                out.flush()
                os.utime(out.fileno(), ns=(mtime, mtime))
        except _BadCopy as error:
            logger.warning("%s of %s is not whole: %s", source, name, error)
            problems.append(f"{source}: {error}")
            continue
        except OSError as error:
            problems.append(f"{source}: {error.strerror or error}")
            continue
        try:
            kind = input_kind(target)
        except PipelineError as error:
            target.unlink()
            raise StagingError(str(error)) from None
        if kind != kind_from_name(name):
            target.unlink()
            raise StagingError(
                _("%(name)s holds a %(kind)s file, not what its name says.") % {"name": name, "kind": kind}
            )
        return True
    raise StagingError(
        _("No good copy of %(name)s could be read (%(problems)s).")
        % {"name": name, "problems": "; ".join(problems) or _("no replica, no spool copy")}
    )


class _BadCopy(Exception):
    pass


def _input_sources(warc: WarcFile):
    """(a label, how to open it) for each copy of a file, in the order they are tried."""
    replicas = good_replicas(warc).select_related("node").order_by(F("verified_at").desc(nulls_last=True))
    for replica in sorted(replicas, key=lambda replica: replica.node.state != StorageNode.State.ONLINE):
        yield (
            replica.node.name,
            lambda replica=replica: replica.node.backend_instance().open(replica.relative_path),
        )
    yield _("the spool"), warc.spool_bytes


def _copy_checked(stream, out, warc: WarcFile) -> None:
    digest, size = hashlib.sha256(), 0
    while chunk := stream.read(HASH_CHUNK):
        size += len(chunk)
        if size > warc.size:
            raise _BadCopy(_("longer than its %(size)d bytes") % {"size": warc.size})
        digest.update(chunk)
        out.write(chunk)
    if size != warc.size:
        raise _BadCopy(_("%(size)d bytes, not %(expected)d") % {"size": size, "expected": warc.size})
    if digest.hexdigest() != warc.sha256:
        raise _BadCopy(
            _("SHA-256 %(sha)s, not %(expected)s") % {"sha": digest.hexdigest(), "expected": warc.sha256}
        )


def _path_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _end(run: DedupRun, state: str, **kwargs) -> None:
    """End a run; its staged files of the archive go once that is committed (resuming stages them again)."""
    RUNNER.end(run, state, **kwargs)
    staging = staging_dir(run.out_dir)
    transaction.on_commit(lambda: shutil.rmtree(staging, ignore_errors=True))


# Finishing ----------------------------------------------------------------------------------------


def _finish(run: DedupRun, pipeline: Pipeline) -> DedupRun:
    """All stages done: record the savings and the validation; register a validated output."""
    run.summary = summary_json(pipeline.summary())
    run.stage = ""
    if run.dry_run:
        _end(run, State.DONE, save=False)
        run.save()
        return run
    report = pipeline.validation()
    run.validation = dataclasses.asdict(report)
    if not report.ok:
        problems = "\n".join(report.problems[:20])
        return _fail(run, _("The output did not pass validation; nothing was registered.") + "\n" + problems)
    run.save()
    if not run.register_output:
        _end(run, State.DONE)
        return run
    try:
        return dedup_run_register(run_id=run.pk, pipeline=pipeline)
    except ValidationError as error:
        run.refresh_from_db()
        return _fail(run, " ".join(error.messages))


@transaction.atomic
def dedup_run_register(*, run_id: int, pipeline: Pipeline | None = None) -> DedupRun:
    """Register a validated output in the archive, in place of its inputs, all or nothing.

    Each output file becomes a WarcFile (origin deduplicated, the job of the file it replaces) and
    is indexed; each input registered in the archive is marked replaced by it and its captures
    leave the index (the CDX would list them twice otherwise). No input file is deleted.
    """
    run = DedupRun.objects.select_for_update().get(pk=run_id)
    if run.dry_run:
        raise ValidationError(_("A dry run has no output to register."), code="dry_run")
    if not (run.validation or {}).get("ok"):
        raise ValidationError(_("Only a validated output is registered."), code="not_validated")
    _end(run, State.VALIDATED, save=False)
    pipeline = pipeline or Pipeline.open(Path(run.out_dir))
    for output in pipeline.outputs():
        source = WarcFile.objects.select_for_update().filter(name=Path(output.source).name).first()
        try:
            indexed = warc_file_index(path=output.path, job_id=source.job_id if source else None)
        except (WarcReadError, IndexConflict) as error:
            raise ValidationError(str(error), code="index") from error
        new = indexed.warc_file
        if new.sha256 != output.sha256:
            raise ValidationError(
                _("%(name)s changed after validation (SHA-256 %(sha)s, validated %(expected)s).")
                % {"name": new.name, "sha": new.sha256, "expected": output.sha256},
                code="changed",
            )
        new.origin = WarcFile.Origin.DEDUPLICATED
        new.save(update_fields=["origin"])
        if source is not None and source.pk != new.pk:
            source.replaced_by = new
            source.save(update_fields=["replaced_by"])
            Capture.objects.filter(warc_file=source).delete()
    run.stage = ""
    run.save()
    return run


# Savings, per MIME type and per harvest -----------------------------------------------------------

_COUNTS = (
    "records",
    "duplicates",
    "payload_bytes",
    "duplicate_payload_bytes",
    "record_bytes",
    "duplicate_record_bytes",
)


def summary_json(summary) -> dict:
    """The pipeline's Summary as stored on the run: totals, rows per MIME type and per harvest."""
    harvests = file_harvests({Path(row.file).name for row in summary.rows})
    by_mime: dict[str, dict] = {}
    by_harvest: dict[str, dict] = {}
    for row in summary.rows:
        for table, key in ((by_mime, row.mime or "-"), (by_harvest, harvests[Path(row.file).name])):
            counts = table.setdefault(key, dict.fromkeys(_COUNTS, 0))
            for name in _COUNTS:
                counts[name] += getattr(row, name)
    totals = {name: getattr(summary, name) for name in (*_COUNTS, "collisions")}
    totals["duplicate_rate"] = summary.duplicate_rate

    def rows(table: dict, label: str) -> list[dict]:
        ordered = sorted(table.items(), key=lambda item: (-item[1]["duplicate_payload_bytes"], item[0]))
        return [{label: key, **counts, "duplicate_rate": _rate(counts)} for key, counts in ordered]

    return {"totals": totals, "by_mime": rows(by_mime, "mime"), "by_harvest": rows(by_harvest, "harvest")}


def _rate(counts: dict) -> float:
    return counts["duplicates"] / counts["records"] if counts["records"] else 0.0


def file_harvests(names: set[str]) -> dict[str, str]:
    """File name -> the name of the harvest definition it came from (through its WarcFile's job, else
    the job number in a crawler's file name), or "(not from a harvest)"."""
    found = dict(
        WarcFile.objects.filter(name__in=names, job__isnull=False).values_list(
            "name", "job__harvest_definition__name"
        )
    )
    numbers = {}
    for name in names - found.keys():
        match = FILE_NAME.search(name)
        if match:
            numbers[name] = int(match["job"])
    definitions = dict(
        Job.objects.filter(pk__in=set(numbers.values())).values_list("pk", "harvest_definition__name")
    )
    for name, number in numbers.items():
        found[name] = definitions.get(number) or _("job %(number)s") % {"number": number}
    return {name: found.get(name) or NOT_FROM_A_HARVEST for name in names}


# Retiring an original -----------------------------------------------------------------------------

ARC_SUFFIXES = (".arc", ".arc.gz")


@transaction.atomic
def warc_file_retire(*, warc_file_id: int, user=None) -> WarcFile:
    """Remove the bytes of a file whose deduplicated replacement is registered and intact; the row stays.

    Nothing archival is lost: the replacement holds the same captures (its copies as revisits).
    """
    require(user, CHANGE, WarcFile)
    warc = WarcFile.objects.select_for_update(of=("self",)).select_related("replaced_by").get(pk=warc_file_id)
    if warc.retired_at is not None:
        raise ValidationError(
            _("%(name)s was already retired on %(when)s.") % {"name": warc.name, "when": warc.retired_at},
            code="retired",
        )
    if warc.name.endswith(ARC_SUFFIXES):
        _require_validated_conversion(warc)
    replacement = warc.replaced_by
    if replacement is None:
        raise ValidationError(
            _("%(name)s has no registered deduplicated replacement: retiring it would lose its captures.")
            % {"name": warc.name},
            code="not_replaced",
        )
    if replacement.indexed_at is None or replacement.retired_at is not None:
        raise ValidationError(
            _("Its replacement %(name)s is not registered in the archive.") % {"name": replacement.name},
            code="replacement_unregistered",
        )
    sha256 = _file_sha256(replacement)
    if sha256 is None:
        raise ValidationError(
            _("Its replacement %(name)s is not on disk at %(path)s nor on any storage node.")
            % {"name": replacement.name, "path": replacement.path},
            code="replacement_missing",
        )
    if sha256 != replacement.sha256:
        raise ValidationError(
            _(
                "Its replacement %(name)s does not have its recorded checksum "
                "(SHA-256 %(sha)s, recorded %(recorded)s)."
            )
            % {"name": replacement.name, "sha": sha256, "recorded": replacement.sha256},
            code="replacement_changed",
        )
    warc.retired_at = timezone.now()
    warc.retired_by = user
    warc.save(update_fields=["retired_at", "retired_by"])
    try:
        Path(warc.path).unlink(missing_ok=True)
    except OSError as error:  # the row is rolled back with it
        raise ValidationError(
            _("%(path)s could not be removed: %(error)s.") % {"path": warc.path, "error": error.strerror},
            code="unlink",
        ) from error
    for replica in warc.replicas.select_related("node"):  # its copies on the storage nodes go too
        replica.node.backend_instance().delete(replica.relative_path)
        replica.delete()
        StorageEvent.objects.create(
            kind=StorageEvent.Kind.REMOVED,
            node=replica.node,
            warc_file=warc,
            user=user,
            detail=_("Retired: replaced by %(name)s.") % {"name": replacement.name},
        )
    return warc


def _require_validated_conversion(warc: WarcFile) -> None:
    """Refuse to retire an ARC file unless the last run that converted it found its conversion
    whole (the converted file's captures compared with the ARC file's, storage.dedup.convert)."""
    run = (
        DedupRun.objects.filter(validation__conversions__has_key=warc.name)
        .only("pk", "validation")
        .order_by("-pk")
        .first()
    )
    if run is None:
        raise ValidationError(
            _(
                "%(name)s is an ARC file and no deduplication run has validated its conversion to WARC"
                " (the converted file's captures compared with the ARC file's): it cannot be retired."
            )
            % {"name": warc.name},
            code="conversion_not_validated",
        )
    conversion = run.validation["conversions"][warc.name]
    if not conversion.get("ok"):
        count = conversion.get("mismatches", 0)
        raise ValidationError(
            ngettext(
                "The conversion of %(name)s to WARC did not validate in deduplication run %(run)s"
                " (%(count)d mismatch, listed in its validation report): it cannot be retired.",
                "The conversion of %(name)s to WARC did not validate in deduplication run %(run)s"
                " (%(count)d mismatches, listed in its validation report): it cannot be retired.",
                count,
            )
            % {"name": warc.name, "run": run.pk, "count": count},
            code="conversion_failed",
        )


def _file_sha256(warc: WarcFile) -> str | None:
    """The SHA-256 of a file's bytes as they are read (from its replicas, else where it was written)."""
    try:
        with warc_file_open(warc) as stream:
            digest = hashlib.sha256()
            while chunk := stream.read(HASH_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()
