"""The post-crawl deduplication pipeline (WARCsum / WARCrefs): its state, its stages, and running them.

A run lives in ``out_dir``: the new WARC files, and under ``out_dir/.dedup``
the run's definition (``run.json``: inputs and options) and each stage's
outputs, one file per unit. A unit's output appears only once complete
(written under a temporary name, then renamed), so a unit's being done is its
file's existence: a run stopped or killed anywhere resumes where it was, in
any process or on any machine sharing the filesystem, and the same inputs
and options always give the same output bytes.

Stages and their units:

- ``inputs``: only for inputs the caller puts in place itself (``staged``: files of the archive,
  copied from the storage nodes by storage.services.dedup_runs): each such file; the pipeline only
  waits for them (a unit is done once its file exists under its final name), it never copies;
- ``convert``: each ARC input, to a gzip WARC file in the work directory;
- ``manifest``: each input file, its response records sorted by payload digest;
- ``resolve``: each digest partition, collision resolution and copy numbers;
- ``copies``: each input file, the copies it holds (sorted by offset);
- ``rewrite``: each input file, its deduplicated WARC file in ``out_dir``;
- ``validate``: each output file, read again against its input; and each converted ARC file
  compared with its ARC file, capture by capture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from storage.dedup import convert, manifest, resolve, rewrite, validate
from storage.dedup.records import GZIP_MAGIC, sniff
from storage.dedup.workfiles import PipelineError, read_json, write_json
from storage.warcindex import WarcReadError

INPUTS = "inputs"  # the stage of the staged inputs, before STAGES when a run has any
STAGES = ("convert", "manifest", "resolve", "copies", "rewrite", "validate")
DRY_RUN_STAGES = ("convert", "manifest", "resolve", "copies")
WORK_DIR = ".dedup"
FORMAT = 1
_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc")

__all__ = [
    "DRY_RUN_STAGES",
    "INPUTS",
    "STAGES",
    "Options",
    "OutputFile",
    "Pipeline",
    "PipelineError",
    "Savings",
    "Summary",
    "ValidationReport",
    "run",
]


@dataclass(frozen=True)
class Options:
    """How a run deduplicates."""

    recompute_digests: bool = False  # payload digests computed (sha256), not read from WARC-Payload-Digest
    include_empty: bool = False  # empty payloads are skipped (never converted) unless this is set
    partitions: int = 8  # digest partitions of the resolve stage (its parallelism)


@dataclass(frozen=True)
class OutputFile:
    """A deduplicated WARC file, and the input it replaces."""

    name: str
    path: Path
    size: int
    sha256: str
    records: int
    source: Path


@dataclass(frozen=True)
class Savings:
    """What deduplication saves in one input file, for one MIME type."""

    file: str
    mime: str
    records: int
    duplicates: int
    payload_bytes: int
    duplicate_payload_bytes: int
    record_bytes: int
    duplicate_record_bytes: int


@dataclass(frozen=True)
class Summary:
    """The duplicates found (after the copies stage): totals, and rows by file and MIME type."""

    records: int
    duplicates: int
    collisions: int
    payload_bytes: int
    duplicate_payload_bytes: int
    record_bytes: int
    duplicate_record_bytes: int
    rows: list[Savings]

    @property
    def duplicate_rate(self) -> float:
        return self.duplicates / self.records if self.records else 0.0


@dataclass(frozen=True)
class ValidationReport:
    """The output compared with the input: ``ok`` only if there is no problem."""

    ok: bool
    problems: list[str]
    records_in: int
    records_out: int
    revisits: int
    bytes_in: int
    bytes_out: int
    # ARC file name -> its conversion checked (convert.conversion_check): ok, counts, problems.
    conversions: dict[str, dict] = dataclasses.field(default_factory=dict)


class Pipeline:
    """One run's state, kept in files under out_dir/.dedup (run.json + each stage's outputs)."""

    def __init__(self, out_dir: Path, definition: dict):
        self.out_dir = out_dir
        self.work_dir = out_dir / WORK_DIR
        self.inputs = [Path(path) for path in definition["inputs"]]
        self.options = Options(**definition["options"])
        self._kinds: list[str] = definition["kinds"]
        self._names = [path.name for path in self.inputs]
        self.staged: list[str] = definition.get("staged", [])
        self._numbers = {name: number for number, name in enumerate(self._names)}
        self._outputs = [_output_name(name, kind) for name, kind in self._named_kinds()]

    # -- creating and opening ---------------------------------------------------------------------

    @classmethod
    def create(
        cls, *, out_dir: Path, inputs: list[Path], options: Options, staged: list[Path] = ()
    ) -> Pipeline:
        """A new run in ``out_dir``, or the run already there if it has the same inputs and options.

        ``staged`` inputs (some of ``inputs``) need not exist yet: the caller puts them in place in
        the stage ``inputs``, before the others run; their kind is told by their name.
        """
        if options.partitions < 1:
            raise PipelineError(f"partitions must be at least 1, not {options.partitions}")
        out_dir = Path(out_dir).resolve()
        paths = [Path(path).resolve() for path in inputs]
        if not paths:
            raise PipelineError("no input files")
        definition = {"format": FORMAT, "inputs": [str(path) for path in paths]}
        definition["options"] = dataclasses.asdict(options)
        staged_paths = {Path(path).resolve() for path in staged}
        if staged_paths - set(paths):
            raise PipelineError("a staged file is not one of the inputs")
        if staged_paths:
            definition["staged"] = [path.name for path in paths if path in staged_paths]
        run_file = out_dir / WORK_DIR / "run.json"
        if run_file.exists():
            existing = read_json(run_file)
            if {key: existing.get(key) for key in definition} != definition:
                raise PipelineError(
                    f"{out_dir} holds another deduplication run (other inputs or options): resume it with"
                    " the same inputs and options, or give another output directory"
                )
            return cls(out_dir, existing)
        definition["kinds"] = [
            kind_from_name(path.name) if path in staged_paths else _kind(path) for path in paths
        ]
        pipeline = cls(out_dir, definition)
        pipeline._check_names()
        if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
            raise PipelineError(f"{out_dir} is not an empty directory: the output goes in a new or empty one")
        write_json(run_file, definition)
        return pipeline

    @classmethod
    def open(cls, out_dir: Path) -> Pipeline:
        """The run in ``out_dir``."""
        out_dir = Path(out_dir).resolve()
        run_file = out_dir / WORK_DIR / "run.json"
        if not run_file.exists():
            raise PipelineError(f"{out_dir} holds no deduplication run")
        return cls(out_dir, read_json(run_file))

    def _named_kinds(self) -> list[tuple[str, str]]:
        return list(zip(self._names, self._kinds, strict=True))

    def _check_names(self) -> None:
        for names, what in ((self._names, "inputs are named"), (self._outputs, "outputs would be named")):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    raise PipelineError(f"two {what} {name}: give files of different names")
                seen.add(name)

    # -- units ---------------------------------------------------------------------------------------

    def units(self, stage: str) -> list[str]:
        """The units of ``stage``: file names, or digest partitions for ``resolve``."""
        if stage == INPUTS:
            return list(self.staged)
        if stage == "convert":
            return [name for name, kind in self._named_kinds() if kind == "arc"]
        if stage == "resolve":
            return [f"partition-{number}" for number in range(self.options.partitions)]
        if stage in STAGES:
            return list(self._names)
        raise PipelineError(f"no stage {stage!r} (stages: {', '.join(STAGES)})")

    def pending_units(self, stage: str) -> list[str]:
        return [unit for unit in self.units(stage) if not self._done_file(stage, unit).exists()]

    def stage_done(self, stage: str) -> bool:
        return not self.pending_units(stage)

    def next_stage(self, stages=STAGES) -> str | None:
        """The first of ``stages`` not done, None when all are."""
        return next((stage for stage in stages if not self.stage_done(stage)), None)

    def run_unit(self, stage: str, unit: str) -> None:
        """Run one unit of ``stage`` (again, if it was done: the same output)."""
        if unit not in self.units(stage):
            raise PipelineError(f"no unit {unit!r} in stage {stage}")
        if stage == INPUTS:
            raise PipelineError(f"{unit} is put in place by the run's worker, not by the pipeline")
        for earlier in (INPUTS, *STAGES[: STAGES.index(stage)]):
            if not self.stage_done(earlier):
                raise PipelineError(f"stage {stage} cannot start: stage {earlier} is not done")
        try:
            {
                "convert": self._convert,
                "manifest": self._manifest,
                "resolve": self._resolve,
                "copies": self._gather_copies,
                "rewrite": self._rewrite,
                "validate": self._validate,
            }[stage](unit)
        except WarcReadError as error:
            raise PipelineError(str(error)) from None

    def staged_path(self, name: str) -> Path:
        """Where a staged input goes (it is done once there, whole, under this name)."""
        if name not in self.staged:
            raise PipelineError(f"{name} is not an input staged by the run's worker")
        return self.inputs[self._numbers[name]]

    def _done_file(self, stage: str, unit: str) -> Path:
        if stage == INPUTS:
            return self.staged_path(unit)
        if stage == "resolve":
            return self.work_dir / "resolve" / f"{int(unit.rpartition('-')[2]):04d}.json"
        suffix = {"convert": ".warc.gz", "copies": ".tsv"}.get(stage, ".json")
        return self.work_dir / stage / f"{self._numbers[unit]:06d}{suffix}"

    def _path_of(self, number: int) -> tuple[Path, str]:
        """The file the stages read for input ``number`` (its conversion for an ARC file), and its name."""
        if self._kinds[number] == "arc":
            return self.work_dir / "convert" / f"{number:06d}.warc.gz", self._names[number]
        return self.inputs[number], self._names[number]

    def _manifests(self) -> list[Path]:
        return [self.work_dir / "manifest" / f"{number:06d}.tsv" for number in range(len(self.inputs))]

    def _copies(self) -> list[Path]:
        return [self.work_dir / "copies" / f"{number:06d}.tsv" for number in range(len(self.inputs))]

    # -- the stages ------------------------------------------------------------------------------------

    def _convert(self, unit: str) -> None:
        number = self._numbers[unit]
        convert.convert_arc(path=self.inputs[number], name=unit, out=self._done_file("convert", unit))

    def _manifest(self, unit: str) -> None:
        number = self._numbers[unit]
        path, name = self._path_of(number)
        counted = manifest.manifest_file(
            path=path,
            name=name,
            number=number,
            recompute=self.options.recompute_digests,
            out=self.work_dir / "manifest" / f"{number:06d}.tsv",
        )
        write_json(self._done_file("manifest", unit), counted)

    def _resolve(self, unit: str) -> None:
        partition = int(unit.rpartition("-")[2])
        done = self._done_file("resolve", unit)
        stats = resolve.resolve_partition(
            manifests=self._manifests(),
            path_of=self._path_of,
            partition=partition,
            partitions=self.options.partitions,
            include_empty=self.options.include_empty,
            out=done.with_suffix(".tsv"),
        )
        write_json(done, stats)

    def _gather_copies(self, unit: str) -> None:
        resolved = [
            self.work_dir / "resolve" / f"{partition:04d}.tsv" for partition in range(self.options.partitions)
        ]
        out = self._done_file("copies", unit)
        resolve.copies_of_file(resolved=resolved, number=self._numbers[unit], out=out)

    def _rewrite(self, unit: str) -> None:
        number = self._numbers[unit]
        path, name = self._path_of(number)
        written = rewrite.rewrite_file(
            source_path=path,
            name=name,
            copies=resolve.read_copies(self._done_file("copies", unit)),
            path_of=self._path_of,
            expected=read_json(self._done_file("manifest", unit)),
            out=self.out_dir / self._outputs[number],
            temp_dir=self.work_dir / "rewrite",
        )
        write_json(self._done_file("rewrite", unit), written)

    def _validate(self, unit: str) -> None:
        number = self._numbers[unit]
        path, name = self._path_of(number)
        referenced: set[int] = set()
        for copies in self._copies():
            referenced.update(
                copy.original_offset for copy in resolve.read_copies(copies) if copy.original_file == number
            )
        checked = validate.validate_file(
            source_path=path,
            output_path=self.out_dir / self._outputs[number],
            name=name,
            referenced=referenced,
            expected=read_json(self._done_file("rewrite", unit)),
        )
        if self._kinds[number] == "arc":  # the conversion as read now, the ARC file's captures all kept
            checked["conversion"] = convert.conversion_check(
                original=self.inputs[number], converted=path, name=name
            )
        write_json(self._done_file("validate", unit), checked)

    # -- results ---------------------------------------------------------------------------------------

    def summary(self) -> Summary:
        """The duplicates found, by file and MIME type (once the copies stage is done)."""
        self._require("copies")
        rows: dict[tuple[str, str], list[int]] = {}
        collisions = 0
        for partition in range(self.options.partitions):
            stats = read_json(self.work_dir / "resolve" / f"{partition:04d}.json")
            collisions += stats["collisions"]
            for number, mime, *counts in stats["rows"]:
                row = rows.setdefault((self._names[number], mime), [0] * 6)
                for index, count in enumerate(counts):
                    row[index] += count
        savings = [Savings(file, mime, *counts) for (file, mime), counts in sorted(rows.items())]
        totals = [sum(row[index] for row in rows.values()) for index in range(6)]
        return Summary(
            records=totals[0],
            duplicates=totals[1],
            collisions=collisions,
            payload_bytes=totals[2],
            duplicate_payload_bytes=totals[3],
            record_bytes=totals[4],
            duplicate_record_bytes=totals[5],
            rows=savings,
        )

    def outputs(self) -> list[OutputFile]:
        """The deduplicated files, in the order of the inputs (once the rewrite stage is done)."""
        self._require("rewrite")
        found = []
        for number, name in enumerate(self._names):
            written = read_json(self._done_file("rewrite", name))
            found.append(
                OutputFile(
                    name=written["name"],
                    path=self.out_dir / written["name"],
                    size=written["size"],
                    sha256=written["sha256"],
                    records=written["records"],
                    source=self.inputs[number],
                )
            )
        return found

    def not_converted(self) -> list[tuple[str, str, str]]:
        """Copies left as full responses (file name, record id, why): their original could not be checked."""
        self._require("rewrite")
        return [
            (name, record_id, reason)
            for name in self._names
            for record_id, reason in read_json(self._done_file("rewrite", name))["not_converted"]
        ]

    def validation(self) -> ValidationReport:
        """The validation of the whole output (once the validate stage is done)."""
        self._require("validate")
        units = [read_json(self._done_file("validate", name)) for name in self._names]
        report = validate.validation_report(units)
        bytes_out = sum(output.size for output in self.outputs())
        return ValidationReport(
            ok=not report["problems"],
            problems=report["problems"],
            records_in=report["records_in"],
            records_out=report["records_out"],
            revisits=report["revisits"],
            bytes_in=sum(path.stat().st_size for path in self.inputs if path.exists()),
            bytes_out=bytes_out,
            conversions=report["conversions"],
        )

    def _require(self, stage: str) -> None:
        if not self.stage_done(stage):
            raise PipelineError(f"stage {stage} is not done")


def kind_from_name(name: str) -> str:
    """The kind of a staged input, by its name (checked against its bytes once staged: input_kind)."""
    if name.endswith((".arc", ".arc.gz")):
        return "arc"
    return "warc.gz" if name.endswith(".gz") else "warc"


def input_kind(path: Path) -> str:
    """The kind of an input file, by its bytes: ``arc``, ``warc.gz`` or ``warc`` (PipelineError if none)."""
    return _kind(path)


def _kind(path: Path) -> str:
    if not path.is_file():
        raise PipelineError(f"{path}: no such file")
    try:
        kind = sniff(path)
    except WarcReadError as error:
        raise PipelineError(f"{path}: {error.reason} (at byte {error.offset})") from None
    if kind == "arc":
        return "arc"
    with path.open("rb") as stream:
        return "warc.gz" if stream.read(2) == GZIP_MAGIC else "warc"


def _output_name(name: str, kind: str) -> str:
    """``name.warc.gz`` -> ``name-dedup.warc.gz``; an ARC file's is a gzip WARC file's name."""
    stem = next((name[: -len(suffix)] for suffix in _SUFFIXES if name.endswith(suffix)), name)
    return f"{stem}-dedup{'.warc' if kind == 'warc' else '.warc.gz'}"


def _run_unit(out_dir: str, stage: str, unit: str) -> None:
    """One unit in a worker process (the pipeline opened again from its files)."""
    Pipeline.open(Path(out_dir)).run_unit(stage, unit)


def run(
    pipeline: Pipeline,
    *,
    stages=STAGES,
    workers: int = 1,
    should_stop: Callable[[], bool] = lambda: False,
    on_unit: Callable[[str, str], None] | None = None,
) -> bool:
    """Run the pending units of ``stages`` in order, side by side in ``workers`` processes if more than
    one, stopping between units once ``should_stop()``; True when all ``stages`` are done."""
    for stage in stages:
        pending = pipeline.pending_units(stage)
        if not pending:
            continue
        if workers <= 1:
            for unit in pending:
                if should_stop():
                    return False
                pipeline.run_unit(stage, unit)
                if on_unit:
                    on_unit(stage, unit)
        elif not _run_pool(pipeline, stage, pending, workers, should_stop, on_unit):
            return False
        if not pipeline.stage_done(stage):
            return False
    return all(pipeline.stage_done(stage) for stage in stages)


def _run_pool(pipeline, stage, pending, workers, should_stop, on_unit) -> bool:
    """The units of one stage in a pool of spawned processes; False if stopped before the end."""
    waiting = list(reversed(pending))
    stopped = False
    with ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=get_context("spawn")) as pool:
        running = {}
        while waiting or running:
            while waiting and len(running) < workers and not stopped:
                if should_stop():
                    stopped = True
                    break
                unit = waiting.pop()
                running[pool.submit(_run_unit, str(pipeline.out_dir), stage, unit)] = unit
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                unit = running.pop(future)
                future.result()  # a unit's error stops the run (the units still running end first)
                if on_unit:
                    on_unit(stage, unit)
    return not stopped
