"""``manage.py dedup_warcs PATH… --out DIR``: the post-crawl deduplication pipeline, in the foreground."""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import filesizeformat

from harvest.models import HarvestDefinition
from storage.dedup.pipeline import Pipeline, PipelineError, run
from storage.models import DedupRun
from storage.services.dedup_runs import (
    RUNNER,
    ArchiveSelection,
    dedup_run_begin,
    dedup_run_end,
    dedup_run_progress,
    dedup_run_start,
    run_stages,
)

STOP_CHECK_SECONDS = 2.0


def _date(text: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"“{text}” is not a date (YYYY-MM-DD)") from None


# how often the run's row is read for a stop asked from the pages


class Command(BaseCommand):
    requires_system_checks = []  # a batch tool: the checks cost a third of a second per run
    help = (
        "Deduplicate WARC and ARC files (directories are walked) into new WARC files in DIR, in which "
        "every copy of an earlier payload is a revisit record and everything else is byte-identical: "
        "manifest, collision resolution, copy numbers, rewrite, validation. The inputs are never "
        "modified. A validated output is registered in the archive in place of the inputs (which are "
        "kept until an engineer retires them). Running it again with the same --out resumes the run."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", metavar="PATH", help="WARC/ARC files or directories.")
        parser.add_argument("--out", required=True, metavar="DIR", help="Where the new files are written.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Report the duplicate rate and the savings only."
        )
        parser.add_argument("--workers", type=int, default=1, help="Units run side by side (processes).")
        parser.add_argument(
            "--recompute-digests",
            action="store_true",
            help="Compute payload digests again instead of trusting WARC-Payload-Digest.",
        )
        parser.add_argument(
            "--include-empty", action="store_true", help="Also turn copies of empty payloads into revisits."
        )
        parser.add_argument(
            "--no-register", action="store_true", help="Validate the output but leave the archive as it is."
        )
        archive = parser.add_argument_group(
            "files of the archive, read from the storage nodes (the criteria given are all applied)"
        )
        archive.add_argument("--job", type=int, metavar="ID", help="the files of this job")
        archive.add_argument(
            "--definition", metavar="NAME", help="the files of the jobs of this harvest definition"
        )
        archive.add_argument("--since", type=_date, metavar="YYYY-MM-DD", help="files closed on or after")
        archive.add_argument("--until", type=_date, metavar="YYYY-MM-DD", help="files closed on or before")

    def handle(
        self, *args, paths, out, dry_run, workers, recompute_digests, include_empty, no_register, **opts
    ):
        if workers < 1:
            raise CommandError(f"--workers {workers}: give 1 or more.")
        archive = self.archive_selection(opts)
        record = self.resumable(out)
        if record is None:
            if not paths and not archive:
                raise CommandError(
                    "Give the WARC/ARC files or directories to deduplicate, or files of the archive "
                    "(--job, --definition, --since, --until)."
                )
            options = {"recompute_digests": recompute_digests, "include_empty": include_empty}
            try:
                record = dedup_run_start(
                    inputs=paths,
                    archive=archive,
                    out_dir=out,
                    options=options,
                    dry_run=dry_run,
                    register_output=not no_register,
                    enqueue=False,
                )
            except ValidationError as error:
                raise CommandError("\n".join(error.messages)) from error
        else:
            stage = record.stage or "the first stage"
            self.stdout.write(
                f"Resuming {record} in {record.out_dir} at {stage}, with its own inputs and options."
            )
        try:
            record = dedup_run_begin(run_id=record.pk)
        except ValidationError as error:
            raise CommandError("\n".join(error.messages)) from error
        completed, error = self.run_stages(record, workers)
        record = dedup_run_end(run_id=record.pk, completed=completed, error=error)
        self.report(record)

    def archive_selection(self, opts) -> ArchiveSelection:
        definition = None
        if opts.get("definition"):
            definition = HarvestDefinition.objects.filter(name=opts["definition"]).values_list(
                "pk", flat=True
            )
            definition = definition.first()
            if definition is None:
                raise CommandError(f"No harvest definition named “{opts['definition']}”.")
        return ArchiveSelection(
            job=opts.get("job"),
            harvest_definition=definition,
            since=opts.get("since"),
            until=opts.get("until"),
        )

    def resumable(self, out: str) -> DedupRun | None:
        """The run that already uses ``out``, if it may be resumed here; None if there is none."""
        record = DedupRun.objects.filter(out_dir=str(Path(out).expanduser().resolve())).first()
        if record is None:
            return None
        if record.state in (DedupRun.State.STOPPED, DedupRun.State.FAILED):
            return record
        if record.state in DedupRun.ACTIVE:
            raise CommandError(
                f"{record} in {record.out_dir} is {record.get_state_display()} elsewhere. "
                "Stop it from its page first (twice if its process has died), then run this again."
            )
        self.report(record)
        raise CommandError(f"{record} in {record.out_dir} has ended ({record.get_state_display()}).")

    def run_stages(self, record: DedupRun, workers: int) -> tuple[bool, str]:
        """Run the pipeline here; (all stages done, the error if it failed)."""
        try:
            pipeline = Pipeline.open(Path(record.out_dir))
        except PipelineError as error:
            return False, str(error)
        done: dict[str, int] = {}
        last_check = [0.0, False]

        def on_unit(stage: str, unit: str) -> None:
            total = len(pipeline.units(stage))
            done[stage] = done.get(stage, total - len(pipeline.pending_units(stage)) - 1) + 1
            dedup_run_progress(run_id=record.pk, stage=stage, done=done[stage], total=total)
            self.stdout.write(f"{stage}: {done[stage]}/{total} ({unit})")

        def should_stop() -> bool:
            now = time.monotonic()
            if now - last_check[0] >= STOP_CHECK_SECONDS:
                last_check[:] = [now, RUNNER.stop_requested(record)]
            return last_check[1]

        started = time.monotonic()
        try:
            completed = run(
                pipeline, stages=run_stages(record), workers=workers, should_stop=should_stop, on_unit=on_unit
            )
        except PipelineError as error:
            return False, str(error)
        except KeyboardInterrupt:
            self.stderr.write("Interrupted: run the same command again to resume.")
            return False, ""
        self.stdout.write(f"Stages run in {time.monotonic() - started:.1f} s.")
        return completed, ""

    def report(self, record: DedupRun) -> None:
        """The run's savings, validation and outcome; a failed run is a CommandError."""
        if record.summary:
            self.stdout.write(format_summary(record.summary))
        if record.validation:
            self.stdout.write(format_validation(record.validation))
        state = DedupRun.State
        if record.state == state.FAILED:
            raise CommandError(f"{record} failed: {record.error}")
        if record.state == state.STOPPED:
            self.stdout.write(self.style.WARNING(f"{record} stopped: run the same command again to resume."))
        elif record.state == state.VALIDATED:
            self.stdout.write(
                self.style.SUCCESS(f"{record}: output validated and registered in the archive.")
            )
        elif record.dry_run:
            self.stdout.write(self.style.SUCCESS(f"{record}: dry run done, nothing written."))
        else:
            self.stdout.write(
                self.style.SUCCESS(f"{record}: output validated in {record.out_dir}, not registered.")
            )


def format_summary(summary: dict) -> str:
    """The savings as readable tables: totals, per MIME type, per harvest."""
    totals = summary["totals"]
    lines = [
        f"Records: {totals['records']:,}, duplicates: {totals['duplicates']:,} "
        f"({totals['duplicate_rate']:.1%}), digest collisions: {totals['collisions']:,}",
        f"Payload bytes: {filesizeformat(totals['payload_bytes'])}, of duplicates: "
        f"{filesizeformat(totals['duplicate_payload_bytes'])} (would be saved); record bytes of "
        f"duplicates: {filesizeformat(totals['duplicate_record_bytes'])}",
    ]
    for title, key, rows in (
        ("Per MIME type", "mime", summary["by_mime"]),
        ("Per harvest", "harvest", summary["by_harvest"]),
    ):
        lines += ["", title, *_table(key, rows)]
    return "\n".join(lines)


def _table(key: str, rows: list[dict]) -> list[str]:
    header = (key.upper(), "RECORDS", "DUPLICATES", "RATE", "PAYLOAD", "SAVED")
    body = [
        (
            str(row[key]),
            f"{row['records']:,}",
            f"{row['duplicates']:,}",
            f"{row['duplicate_rate']:.1%}",
            str(filesizeformat(row["payload_bytes"])),
            str(filesizeformat(row["duplicate_payload_bytes"])),
        )
        for row in rows
    ]
    widths = [max(len(cells[i]) for cells in [header, *body]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(cells))
        for cells in [header, *body]
    ]


def format_validation(validation: dict) -> str:
    verdict = "passed" if validation["ok"] else "FAILED"
    lines = [
        f"Validation {verdict}: {validation['records_in']:,} records in, {validation['records_out']:,} out, "
        f"{validation['revisits']:,} revisits; {filesizeformat(validation['bytes_in'])} in, "
        f"{filesizeformat(validation['bytes_out'])} out."
    ]
    for name, conversion in sorted(validation.get("conversions", {}).items()):
        mismatches = conversion["mismatches"]
        outcome = "validated" if conversion["ok"] else f"NOT validated, {mismatches:,} mismatches"
        lines.append(
            f"Conversion of {name}: {conversion['records']:,} captures in the ARC file, "
            f"{conversion['converted_records']:,} in the converted file: {outcome}."
        )
    lines += [f"  {problem}" for problem in validation["problems"]]
    return "\n".join(lines)
