"""``manage.py index_warcs PATH… [--cdxj OUT]``: existing WARC/ARC files into the capture index and
the full-text index."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from harvest.models import Job
from storage.models import Capture, WarcFile
from storage.models_search import SearchAnchor, SearchEntry, SearchText
from storage.services.fulltext import TextIndexing, file_entries_refresh, texts_store, wanted_documents
from storage.services.indexing import CdxjSorter, IndexConflict, warc_file_index
from storage.textextract import read_documents
from storage.warcindex import (
    WarcReadError,
    archive_files,
    cdxj_line,
    file_parts,
    join_parts,
    read_file_or_error,
    read_unit,
)
from webarchive.dbstats import analyze_after


class Command(BaseCommand):
    requires_system_checks = []  # a batch tool: the checks cost a third of a second per run
    help = (
        "Index WARC and ARC files (gzip or not; directories are walked) into the capture index and the "
        "full-text index, and register them as files of the archive. Indexing a file again replaces "
        "its rows. Each file is indexed all or nothing: a torn or non-WARC file is reported with the "
        "byte where reading failed, and the others are still indexed. Documents are read for the "
        "full-text index once per payload digest; one that cannot be read is reported and skipped."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="WARC/ARC files or directories.")
        parser.add_argument(
            "--cdxj", metavar="OUT", help="Also write the captures of these files to OUT as sorted CDXJ."
        )
        parser.add_argument("--job", type=int, help="The harvest job the files came from, if known.")
        parser.add_argument(
            "--workers",
            type=int,
            default=os.cpu_count() or 1,
            help="Processes reading files side by side while this one loads the index (default: one a CPU).",
        )
        parser.add_argument(
            "--no-text",
            action="store_true",
            help="The capture index only: read no documents for the full-text index (running the command "
            "again without it fills the full-text index later).",
        )

    def handle(self, *args, paths, cdxj=None, job=None, workers=1, no_text=False, verbosity=1, **options):
        if workers < 1:
            raise CommandError(f"--workers {workers}: give 1 or more.")
        if job is not None and not Job.objects.filter(pk=job).exists():
            raise CommandError(f"--job {job}: no such job.")
        missing = [path for path in paths if not Path(path).exists()]
        if missing:
            raise CommandError(f"No such file or directory: {', '.join(missing)}")
        if cdxj and Path(cdxj).is_dir():
            raise CommandError(f"--cdxj {cdxj}: a directory; give a file name.")
        sorter = CdxjSorter() if cdxj else None
        started = time.monotonic()
        files = captures = 0
        failed: list[str] = []
        texts = TextIndexing()
        paths = list(archive_files(paths))
        units = _units(paths, workers)
        entries_lock = threading.Lock()
        parts = sum(len(file_units) for _path, file_units in units)
        with _pool(workers, parts) as pool, _storer(pool, workers) as storer:
            pending: deque = deque()  # files whose documents are being read: (path, entries, result)
            storing: deque = deque()  # files whose texts and entries are being stored

            def finish(*, wait: bool) -> None:
                while pending and (wait or len(pending) > 2 * workers or pending[0][2].done()):
                    _path, entries, reading = pending.popleft()
                    storing.append(_submit(storer, _store_file, reading.result(), entries, entries_lock))
                while storing and (wait or len(storing) > 2 * workers or storing[0].done()):
                    texts.add(storing.popleft().result())

            for path, reading in _readings(units, pool, workers):
                try:
                    if isinstance(reading, WarcReadError):
                        raise reading
                    result = warc_file_index(reading=reading, job_id=job, keep_entries=True, texts=False)
                except (WarcReadError, IndexConflict) as error:
                    failed.append(str(error))
                    self.stderr.write(f"{error} (nothing of it was indexed)")
                    continue
                files += 1
                captures += result.captures
                if sorter is not None:
                    name = result.warc_file.name
                    sorter.add(cdxj_line(entry, name) for entry in result.entries)
                if verbosity > 1 or (verbosity == 1 and result.replaced):
                    again = f", replacing {result.replaced}" if result.replaced else ""
                    self.stdout.write(f"{path}: {result.captures} captures{again}")
                if no_text:
                    continue
                wanted, already = wanted_documents(result.entries)
                texts.known += already
                pending.append((path, result.entries, _submit(pool, read_documents, path, wanted)))
                finish(wait=False)
            finish(wait=True)
        # A bulk import: the planner learns the tables' new sizes now, not when autovacuum comes (the
        # full-text tables only if they were written: each ANALYZE samples its whole table).
        searched = () if no_text else (SearchText, SearchEntry, SearchAnchor)
        analyze_after(captures + texts.entries, Capture, WarcFile, *searched)
        if sorter is not None:
            lines = sorter.write(cdxj)
            self.stdout.write(f"{lines} CDXJ lines written to {cdxj}")
        elapsed = time.monotonic() - started
        rate = captures / elapsed if elapsed else 0
        summary = f"{files} files, {captures} captures indexed in {elapsed:.1f} s ({rate:,.0f}/s)"
        self.stdout.write(self.style.SUCCESS(summary))
        if no_text:
            self.stdout.write("Full-text index: not asked (--no-text)")
        else:
            self.stdout.write(
                f"Full-text index: {texts.read} documents read, {texts.known} already indexed, "
                f"{len(texts.skipped)} skipped, {texts.entries} entries"
            )
        for line in texts.skipped:
            self.stderr.write(f"skipped (full-text index): {line}")
        if failed:
            raise CommandError(f"{len(failed)} file(s) could not be indexed:\n" + "\n".join(failed))


class _Done:
    """A result computed at once (no worker processes): what a future gives."""

    def __init__(self, value):
        self._value = value

    def done(self) -> bool:
        return True

    def result(self):
        return self._value


class _NoPool:
    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return False


PART_BYTES_MIN = 4 * 1024 * 1024  # a file is read in parts of at least this much


def _units(paths: list[Path], workers: int) -> list[tuple[Path, list]]:
    """Each file and the parts its reading is cut into: about 8 parts a worker over all the files, so
    that the workers finish together rather than one reading the last large file alone."""
    if workers == 1:
        return [(path, file_parts(path, 0)) for path in paths]
    total = sum(path.stat().st_size for path in paths if path.is_file())
    part_bytes = max(PART_BYTES_MIN, total // (8 * workers))
    return [(path, file_parts(path, part_bytes)) for path in paths]


def _pool(workers: int, units: int):
    """Processes reading files side by side while this one loads the index. On Linux, forks of this
    one (already set up: they start at once); they never touch the database, and exit without
    running this process's clean-ups. The connection is closed before the fork when no transaction
    holds it (it is opened again when needed), so that no child even holds its socket."""
    if workers == 1 or units < 2:
        return _NoPool()
    if sys.platform == "linux":
        if not connection.in_atomic_block:
            connection.close()
        context = multiprocessing.get_context("fork")
    else:
        context = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(max_workers=min(workers, units), mp_context=context)


def _store_file(records, entries, entries_lock) -> TextIndexing:
    """Store the documents read from a file (texts and anchors: side by side with other files'), then
    recompute the search entries of its captures (one file at a time: two files may hold the same
    pages)."""
    result = texts_store(records)
    with entries_lock:
        result.entries = file_entries_refresh(entries)
    return result


class _Storer(ThreadPoolExecutor):
    """Threads storing the texts read and the files' search entries, each on its own connection (so
    that PostgreSQL computes the texts' vectors in as many processes), while this one indexes the
    captures of the next files."""

    def __init__(self, threads: int):
        super().__init__(max_workers=threads, thread_name_prefix="index-texts")
        self.threads = threads

    def __exit__(self, *exc_info):
        barrier = threading.Barrier(self.threads)  # each thread closes its own connection, once
        for _thread in range(self.threads):
            self.submit(_close_connection, barrier)
        return super().__exit__(*exc_info)


def _close_connection(barrier) -> None:
    connection.close()  # the calling thread's own
    barrier.wait(timeout=60)


def _storer(pool, workers: int):
    """With worker processes reading, on PostgreSQL: the texts are stored by other connections (the
    captures of a file are committed before its documents are read)."""
    if pool is None or connection.vendor != "postgresql":
        return _NoPool()
    return _Storer(workers)


def _submit(pool, function, *args):
    if pool is None:
        return _Done(function(*args))
    return pool.submit(function, *args)


def _readings(units: list[tuple[Path, list]], pool, workers: int):
    """(path, its reading or the error reading it), in order; read by the pool's processes (reading is
    CPU-bound: inflating and parsing), a large file in parts, while the caller loads the previous
    ones."""
    if pool is None:
        for path, _parts in units:
            yield path, read_file_or_error(path)
        return
    queued: deque = deque()  # (path, parts, futures)
    in_flight = 0

    def joined():
        nonlocal in_flight
        path, parts, futures = queued.popleft()
        in_flight -= len(futures)
        reading = join_parts(parts, [future.result() for future in futures])
        if reading is None:  # the parts did not join (or need the general reader): the file whole
            reading = pool.submit(read_file_or_error, path).result()
        return path, reading

    for path, parts in units:
        queued.append((path, parts, [pool.submit(read_unit, part) for part in parts]))
        in_flight += len(parts)
        while in_flight > 12 * workers:
            yield joined()
    while queued:
        yield joined()
