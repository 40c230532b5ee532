"""Benchmark: broad-crawl preparation of millions of domains from overlapping lists, against ``COPY``.

    .venv/bin/python benchmarks/preload.py [--domains N] [--data DIR] [--database-url URL] [--smoke]

Three lists are generated once under ``--data`` (default ``var/bench/preload``) and kept: ``--domains``
unique registered domains (default 3,000,000) under several TLDs, each domain in two of the three
lists (so 2N lines; the BnF's 2012 run merged 3.3 million unique domains). One line in ten is a URL
(``http://www.name/path``), one in ten has ``www.``, one in ten is in upper case, and one in a
thousand is not a domain at all (reported as invalid). Then, on a new database (PostgreSQL when
``--database-url`` or ``DATABASE_URL`` names one: created, migrated, dropped at the end):

1. **the peer**: ``COPY`` of every line of the three files into a table of one text column: what the
   database itself takes to receive the rows, the limit of any loader;
2. **ours**: ``preload_create`` and ``preload_run`` without DNS check nor redirect discovery (those
   are measured by benchmarks/preload_dns.py): read and normalise every line (a list of 4 MB or
   more by ``PRELOAD_PROCESSES`` processes), merge the sources, create every new domain with its
   seed list and default configuration (and history rows), all timed per stage; the peak memory
   of the process and of a reading process is reported (it must not grow with the lists).

It prints the results as Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT / "var" / "bench" / "preload"
TLDS = ["fr", "fr", "fr", "com", "org", "net", "bzh", "paris", "re", "eu"]
WORDS = ["librairie", "mairie", "journal", "club", "atelier", "musee", "ecole", "radio", "cafe", "blog"]
LISTS = ("registry", "publishers", "catalogue")


def domain(number: int) -> str:
    return f"{WORDS[number % len(WORDS)]}-{number:07d}.{TLDS[(number // 7) % len(TLDS)]}"


def generate(folder: Path, domains: int, log) -> list[Path]:
    """The three lists (kept for the next runs): each domain in two of them, lines in varied forms."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / f"{name}-{domains}.txt" for name in LISTS]
    if all(path.exists() for path in paths):
        return paths
    log(f"Generating 3 lists of {domains:,} domains (each domain in two lists)")
    rng = random.Random(2012)  # noqa: S311 (test data, not secrets)
    streams = [path.with_suffix(".tmp").open("w") for path in paths]
    try:
        for number in range(domains):
            name = domain(number)
            for index in (0, 1, 2):
                if index == number % 3:
                    continue
                roll = rng.random()
                if roll < 0.1:
                    line = f"http://www.{name}/page-{number % 97}.html"
                elif roll < 0.2:
                    line = f"www.{name}"
                elif roll < 0.3:
                    line = name.upper()
                elif roll < 0.301:
                    line = "not a domain"
                else:
                    line = name
                streams[index].write(line + "\n")
    finally:
        for stream in streams:
            stream.close()
    for path in paths:
        path.with_suffix(".tmp").rename(path)
    return paths


def peer_copy(paths: list[Path]) -> tuple[float, int]:
    """COPY every line into a one-column table (PostgreSQL); batched INSERTs on SQLite."""
    from django.db import connection

    rows = 0
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE bench_preload_copy (line text)")
        for path in paths:
            with path.open() as stream:
                if connection.vendor == "postgresql":
                    with cursor.copy("COPY bench_preload_copy (line) FROM STDIN") as copy:
                        for line in stream:
                            copy.write_row((line.rstrip("\n"),))
                            rows += 1
                else:
                    batch = []
                    for line in stream:
                        batch.append((line.rstrip("\n"),))
                        if len(batch) == 10_000:
                            cursor.executemany("INSERT INTO bench_preload_copy (line) VALUES (%s)", batch)
                            rows += len(batch)
                            batch = []
                    cursor.executemany("INSERT INTO bench_preload_copy (line) VALUES (%s)", batch)
                    rows += len(batch)
    return time.perf_counter() - started, rows


def ours(paths: list[Path], log) -> tuple[float, dict[str, float], object]:
    from harvest.choices import HarvestKind
    from harvest.services import preload
    from harvest.services.planning import definition_save

    definition = definition_save(kind=HarvestKind.SNAPSHOT, name="bench-broad")
    stages: dict[str, float] = {}
    for stage, function in list(preload.STAGE_FUNCTIONS.items()):

        def timed(run, progress, stage=stage, function=function):
            log(f"  {stage}")
            started = time.perf_counter()
            function(run, progress)
            stages[stage] = time.perf_counter() - started

        preload.STAGE_FUNCTIONS[stage] = timed

    started = time.perf_counter()
    run = preload.preload_create(
        harvest_definition=definition,
        sources=[preload.SourceSpec(name, str(path)) for name, path in zip(LISTS, paths, strict=True)],
        check_dns=False,
        find_redirects=False,
        include_selection=False,
    )
    run = preload.preload_run(run.pk)
    total = time.perf_counter() - started
    if run.state != "done":
        raise SystemExit(f"the preload run ended {run.state}: {run.error}")
    return total, stages, run


class ReaderMemory:
    """The largest peak resident size (``VmHWM``) of the reading processes, sampled from /proc while
    the preload runs. (``RUSAGE_CHILDREN`` would not do: a child started by ``vfork`` keeps its
    parent's high-water mark across ``exec``.) ``VmHWM`` only grows, so the last sample before a
    reader exits is its peak to within a sampling interval."""

    def __init__(self, interval: float = 0.2):
        self.interval, self.peak_kb = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> ReaderMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        parent = str(os.getpid())
        while not self._stop.wait(self.interval):
            for status in Path("/proc").glob("[0-9]*/status"):
                with contextlib.suppress(OSError):
                    fields = dict(
                        line.split(":", 1) for line in status.read_text().splitlines() if ":" in line
                    )
                    if fields.get("PPid", "").strip() != parent or "VmHWM" not in fields:
                        continue
                    if b"harvest.preload.normaliser" not in (status.parent / "cmdline").read_bytes():
                        continue
                    self.peak_kb = max(self.peak_kb, int(fields["VmHWM"].split()[0]))


def _django(database_url: str) -> None:
    os.environ.update(
        {"DATABASE_URL": database_url, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "webarchive.settings"}
    )
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("ALLOWED_HOSTS", "localhost")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def report(args, paths, copy_seconds, rows, total, stages, run, peak_mb, reader_mb) -> str:
    from django.db import connection

    from benchmarks.environment import cpu_model, cpus, memory

    size = sum(path.stat().st_size for path in paths)
    stats = run.statistics
    lines = [
        f"- machine: {cpus()} CPUs ({cpu_model()}), {memory()}; database: {connection.vendor}"
        f" {connection.pg_version if connection.vendor == 'postgresql' else ''}",
        f"- data: 3 lists, {rows:,} lines ({size / 1e6:,.0f} MB), {args.domains:,} unique domains",
        "",
        "| measured | seconds | lines/s | time / COPY |",
        "|---|---:|---:|---:|",
        f"| `COPY` of the lines into a one-column table (**peer**) | {copy_seconds:.1f}"
        f" | {rows / copy_seconds:,.0f} | 1.00 |",
        f"| **preload, whole** (read, normalise, merge, load) | **{total:.1f}** | {rows / total:,.0f}"
        f" | **{total / copy_seconds:.1f}** |",
    ]
    for stage, seconds in stages.items():
        lines.append(f"| stage `{stage}` | {seconds:.1f} | | {seconds / copy_seconds:.1f} |")
    rest = total - sum(stages.values())
    lines.append(f"| the rest (creating the run, statistics) | {rest:.1f} | | {rest / copy_seconds:.1f} |")
    lines += [
        "",
        f"- domains merged: {stats['total']:,}, new: {stats['new']:,};"
        f" invalid lines: {sum(row['invalid'] for row in stats['sources'].values()):,}",
        f"- peak memory of the process: {peak_mb:,.0f} MB;"
        " of a reading process (harvest.preload.normaliser): "
        + (f"{reader_mb:,.0f} MB" if reader_mb else "none ran (lists under PRELOAD_PARALLEL_BYTES)"),
        (
            f"- goal (3,000,000 domains under 3 minutes): {'met' if total < 180 else 'not met'}"
            f" ({total:.0f} s)"
            if args.domains >= 3_000_000
            else f"- goal (3,000,000 domains under 3 minutes): not measured ({args.domains:,} domains)"
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", type=int, default=3_000_000, help="unique domains")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the generated lists are kept")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", ""),
        help="a PostgreSQL database to create, use and drop (default DATABASE_URL; none: SQLite)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny run (3,000 domains), to check the script"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.domains = 3000
    if args.domains < 3:
        parser.error("--domains must be 3 or more")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from benchmarks.environment import throwaway_database

    paths = generate(args.data, args.domains, log)
    work = args.data / f"bench-{os.getpid()}.sqlite3"
    url = args.database_url or f"sqlite:///{work}"
    try:
        with throwaway_database(url, log) as name:
            log(f"Database {name}: migrating")
            _django(url)
            log("COPY (the peer)")
            copy_seconds, rows = peer_copy(paths)
            log("Preload (ours)")
            with ReaderMemory() as readers:
                total, stages, run = ours(paths, log)
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            reader_mb = readers.peak_kb / 1024
            print(report(args, paths, copy_seconds, rows, total, stages, run, peak_mb, reader_mb))
    finally:
        work.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
