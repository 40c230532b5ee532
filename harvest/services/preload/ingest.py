"""Stage 1, reading the lists: every source (a file of domains or URLs, a CSV column, the
librarians' validated records) read line by line into entries, each line normalised to its
registered domain (harvest.preload.sources) or kept as an invalid line with the reason.

A source is read in one transaction (an interrupted one is read again); a large list by several
processes (harvest.preload.normaliser), whose rows go straight to ``COPY`` on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection, transaction
from django.utils import translation

from harvest.models import PreloadEntry, PreloadInvalidLine, PreloadRun, PreloadSource
from harvest.preload.normaliser import PartsReader, rows_from_copy_text
from harvest.preload.sources import SourceLine, Tally, file_lines, normalised
from harvest.services.domains import batches
from harvest.services.preload import progress as progress_
from selection.choices import RecordStatus
from selection.models import Record

INVALID_KEPT = 1000  # invalid lines kept per source (all are counted)


def source_lines(source: PreloadSource) -> Iterator[SourceLine]:
    """The meaningful lines of a source: its file's, or the URLs of the librarians' validated records."""
    if source.path:
        yield from file_lines(source.path, column=source.column)
        return
    urls = Record.objects.filter(status=RecordStatus.VALIDATED, is_active=True).values_list("pk", "url")
    for pk, url in urls.order_by("pk").iterator(chunk_size=progress_.BATCH):
        yield SourceLine(pk, url)


def stage_ingest(run: PreloadRun, progress) -> None:
    """Read every source not read yet (a source read before an interruption is not read again)."""
    sources = list(run.sources.all())
    run.total = len(sources)
    for source in sources:
        if not source.ingested:
            ingest_source(run, source)
        progress_.advance(run, 1, progress)


@transaction.atomic
def ingest_source(run: PreloadRun, source: PreloadSource) -> None:
    """Read one source into entries (all or nothing: an interrupted source is read again).

    A large list is read by several processes (harvest.preload.normaliser), whose rows go
    straight to ``COPY``; a small one, a CSV column and the librarians' records in this process."""
    PreloadEntry.objects.filter(source=source).delete()
    PreloadInvalidLine.objects.filter(source=source).delete()
    if _read_in_parts(source):
        reader = PartsReader(
            source.path,
            run_id=run.pk,
            source_id=source.pk,
            processes=settings.PRELOAD_PROCESSES,
            keep=INVALID_KEPT,
            language=translation.get_language(),
        )
        _copy_blocks(reader)
        tally = reader.tally
    else:
        tally = Tally()
        entries = normalised(source_lines(source), tally, keep=INVALID_KEPT)
        _insert_entries((run.pk, source.pk, name, seed) for name, seed in entries)
    PreloadInvalidLine.objects.bulk_create(
        [
            PreloadInvalidLine(source=source, line=line, text=text, reason=reason)
            for line, text, reason in tally.kept
        ],
        batch_size=1000,
    )
    source.lines, source.accepted, source.invalid, source.ingested = (
        tally.lines,
        tally.accepted,
        tally.invalid,
        True,
    )
    source.save(update_fields=["lines", "accepted", "invalid", "ingested"])


def _read_in_parts(source: PreloadSource) -> bool:
    """A list (not a CSV column) large enough to be worth several processes, when there are several."""
    return bool(
        source.path
        and not source.column
        and settings.PRELOAD_PROCESSES > 1
        and Path(source.path).stat().st_size >= settings.PRELOAD_PARALLEL_BYTES
    )


COPY_BATCH = 100_000
ENTRY_COLUMNS = "(run_id, source_id, name, seed)"


def _insert_entries(rows: Iterator[tuple]) -> None:
    """COPY on PostgreSQL (the database's own bulk path), batched INSERTs elsewhere.

    Rows are gathered a batch at a time before each COPY: a source read from the database (the
    librarians' records) queries it between batches, which it cannot do while a COPY is open."""
    if connection.vendor == "postgresql":
        table = PreloadEntry._meta.db_table
        for batch in batches(rows, COPY_BATCH):
            with (
                connection.cursor() as cursor,
                cursor.copy(f"COPY {table} {ENTRY_COLUMNS} FROM STDIN") as copy,
            ):
                for row in batch:
                    copy.write_row(row)
        return
    for batch in batches(rows, progress_.BATCH):
        PreloadEntry.objects.bulk_create(
            [PreloadEntry(run_id=r, source_id=s, name=n, seed=seed) for r, s, n, seed in batch],
            batch_size=progress_.BATCH,
        )


def _copy_blocks(blocks: Iterable[bytes]) -> None:
    """Blocks of entries in ``COPY`` text format: passed as they are to ``COPY`` on PostgreSQL."""
    if connection.vendor == "postgresql":
        table = PreloadEntry._meta.db_table
        with connection.cursor() as cursor, cursor.copy(f"COPY {table} {ENTRY_COLUMNS} FROM STDIN") as copy:
            for block in blocks:
                copy.write(block)
        return
    _insert_entries(row for block in blocks for row in rows_from_copy_text(block))
