"""Benchmark: ``index_warcs`` against ``cdxj-indexer`` and ``zcat`` on the same gzip WARC files.

    .venv/bin/python benchmarks/indexing.py [--data DIR] [--size MB] [--repeat N] [--database-url URL]
        [--profile] [--smoke]

The files are crawls of the synthetic test website (``webarchive.testsite``,
one site per seed until ``--size`` MB of gzip WARC are written, files rolled
at ``--file-mb``), built once and kept under ``--data`` (default
``var/bench/warcs``) for the next runs. Then, on those files, each measured
``--repeat`` times (best kept), in turns:

1. ``zcat FILES > /dev/null``: inflating the bytes, the physical limit of any
   indexer of gzip files;
2. ``cdxj-indexer FILES -o OUT``: pywb's indexer, the peer;
3. ``manage.py index_warcs --no-text FILES``: ours, the capture index (what
   the peer makes), the whole command into PostgreSQL (the process, reading,
   the checksum of each file, COPY, commit), into a database the script
   creates and migrates (``bench_indexing`` on 127.0.0.1:5432, refused if it
   exists) and drops at the end; its tables are emptied before each run;
4. ``manage.py index_warcs FILES``: the same with the full-text index (the
   documents read and their text stored), the command's default;
5. ``storage.warcindex.read_entries`` alone, and the SHA-256 of the files, in
   this process: where ``index_warcs``'s time goes.

The commands run as an installed program does, their modules compiled once:
their bytecode is cached in ``var/bench/pycache`` even where the environment
turns writing it off (``PYTHONDONTWRITEBYTECODE``, which would make each run
compile the project's modules again); ``--no-bytecode-cache`` runs them as the
environment says.

The rows ``index_warcs`` wrote are checked against ``cdxj-indexer``'s lines
(same count, same keys, dates, files, offsets, lengths, digests, MIME types,
statuses). It prints the results as Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import platform
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT / "var" / "bench" / "warcs"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_indexing"
CDXJ_INDEXER = Path(sys.executable).with_name("cdxj-indexer")
MANIFEST = "manifest.json"
BYTECODE_CACHE = ROOT / "var" / "bench" / "pycache"  # the commands' compiled modules (not in the tree)
GOAL_ZCAT = 1.5  # index_warcs within 1.5x of zcat's time
SMOKE = {"size": 2, "site_pages": 100, "large_file_kb": 100, "file_mb": 1, "repeat": 1}


# The WARC files ----------------------------------------------------------------------------------


@dataclass
class WarcSet:
    """The benchmark's WARC files and what is in them."""

    directory: Path
    files: list[Path]
    size: int  # bytes, compressed
    inflated: int  # bytes once inflated (what zcat writes)
    records: int  # WARC records of every type
    sites: int
    build_seconds: float = 0.0
    reused: bool = False

    @property
    def paths(self) -> list[str]:
        return [str(path) for path in self.files]


def warc_set(data: Path, *, size_mb: int, pages: int, large_file_kb: int, file_mb: int, log) -> WarcSet:
    """The WARC files for these parameters: those built by an earlier run, else crawled now."""
    directory = data / f"testsite-{size_mb}MB-{pages}p-{large_file_kb}k-{file_mb}MB"
    manifest = directory / MANIFEST
    if manifest.exists():
        built = json.loads(manifest.read_text())
        files = [directory / name for name in built["files"]]
        if all(path.exists() and path.stat().st_size == built["sizes"][path.name] for path in files):
            log(f"Reusing {len(files)} WARC files in {directory}")
            return WarcSet(
                directory, files, built["size"], built["inflated"], built["records"], built["sites"], 0, True
            )
        log(f"{directory}: files changed since they were built; building them again")
        manifest.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in [*directory.glob("*.warc.gz"), *directory.glob("*.warc.gz.open")]:
        leftover.unlink()  # an interrupted build: only this script writes here
    started = time.perf_counter()
    closed, sites = crawl_until(directory, size_mb * 10**6, pages, large_file_kb * 1024, file_mb * 10**6, log)
    seconds = time.perf_counter() - started
    files = [Path(info.path) for info in closed]
    inflated = sum(_inflated_size(path) for path in files)
    result = WarcSet(
        directory,
        files,
        sum(info.size for info in closed),
        inflated,
        sum(info.records for info in closed),
        sites,
        seconds,
    )
    manifest.write_text(
        json.dumps(
            {
                "files": [path.name for path in files],
                "sizes": {info.name: info.size for info in closed},
                "size": result.size,
                "inflated": inflated,
                "records": result.records,
                "sites": sites,
            },
            indent=1,
        )
    )
    log(f"Built {len(files)} WARC files ({result.size / 1e6:.0f} MB) in {seconds:.0f} s")
    return result


def crawl_until(directory: Path, size: int, pages: int, large_file_bytes: int, file_size: int, log):
    """Crawl test sites (seeds 1, 2, ...) into gzip WARC files until they hold ``size`` bytes."""
    from benchmarks.environment import crawl_test_sites

    def seeds(seed: int):
        return {"seed": seed, "pages": pages, "large_file_bytes": large_file_bytes}, f"test site {seed}"

    closed, sites, _ = crawl_test_sites(
        directory,
        size=size,
        file_size=file_size,
        prefix="bench",
        software="benchmarks/indexing.py",
        sites=seeds,
        log=log,
    )
    return closed, sites


def _inflated_size(path: Path) -> int:
    """Bytes of a multi-member gzip file once inflated."""
    total = 0
    with path.open("rb") as stream:
        inflater = zlib.decompressobj(31)
        while chunk := stream.read(1 << 20):
            while chunk:
                total += len(inflater.decompress(chunk))
                if not inflater.eof:
                    break
                chunk = inflater.unused_data
                inflater = zlib.decompressobj(31)
    return total


# Measuring ---------------------------------------------------------------------------------------


@dataclass
class Contender:
    """One contender's runs: wall seconds and CPU seconds (of its process, or of this one) of each."""

    name: str
    label: str
    runs: list[tuple[float, float]] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> float:
        return min(seconds for seconds, _ in self.runs)

    @property
    def cpu(self) -> float:
        return min(self.runs)[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_timed(
    command: list[str], *, env: dict | None = None, output: bool = False
) -> tuple[float, float, str]:
    """Run ``command``: wall and CPU seconds, and its standard output if asked (else it goes to /dev/null)."""
    cpu = _children_cpu()
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 (our own commands on our own files)
        command, stdout=subprocess.PIPE if output else subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command[:3])} … exited with {done.returncode}:\n{done.stderr.decode()}"
        )
    return seconds, _children_cpu() - cpu, (done.stdout or b"").decode()


def in_process(function) -> tuple[float, float, object]:
    """Wall and CPU seconds of ``function()`` in this process, and what it returned."""
    cpu = _own_cpu()
    started = time.perf_counter()
    value = function()
    return time.perf_counter() - started, _own_cpu() - cpu, value


def parse_only(paths: list[str]) -> int:
    """``read_entries`` over every file: the number of entries."""
    from storage.warcindex import read_entries

    return sum(1 for path in paths for _ in read_entries(path))


def checksum_only(paths: list[str]) -> int:
    """The SHA-256 of every file, as ``warc_file_index`` computes it."""
    for path in paths:
        with open(path, "rb") as stream:
            hashlib.file_digest(stream, "sha256")
    return len(paths)


def empty_index() -> None:
    """Empty the capture index, the full-text index and the file list, so that each run of
    index_warcs does the same work (the full-text index keeps a payload's text by its digest: left
    full, the second run would find every document already read)."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "TRUNCATE storage_capture, storage_warcfile, storage_searchanchor, storage_searchentry,"
                " storage_searchtext RESTART IDENTITY CASCADE"
            )
            with contextlib.suppress(Exception):  # write the dirty pages now, not during the next run
                cursor.execute("CHECKPOINT")
        else:
            cursor.execute("DELETE FROM storage_searchanchor")
            cursor.execute("DELETE FROM storage_searchentry")
            cursor.execute("DELETE FROM storage_searchtext")
            cursor.execute("DELETE FROM storage_capture")
            cursor.execute("DELETE FROM storage_storageevent")
            cursor.execute("DELETE FROM storage_replica")
            cursor.execute("DELETE FROM storage_warcfile")


def cdxj_fields(path: Path) -> list[tuple]:
    """What the check compares, from each line of cdxj-indexer's output."""
    rows = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            key, stamp, rest = line.rstrip("\n").split(" ", 2)
            fields = json.loads(rest)
            rows.append(
                (
                    key,
                    stamp,
                    fields["filename"],
                    int(fields["offset"]),
                    int(fields["length"]),
                    fields.get("digest", ""),
                    fields.get("mime", ""),
                    int(fields["status"]) if "status" in fields else None,
                )
            )
    return rows


def index_fields() -> list[tuple]:
    """The same fields, from the capture index."""
    from storage.models import Capture

    rows = Capture.objects.values_list(
        "urlkey", "timestamp", "warc_file__name", "offset", "length", "digest", "mime", "status"
    )
    return [(key, f"{when:%Y%m%d%H%M%S}", *rest) for key, when, *rest in rows.iterator(chunk_size=10_000)]


@dataclass
class Result:
    """What a run measured."""

    warcs: WarcSet
    captures: int = 0
    contenders: dict[str, Contender] = field(default_factory=dict)
    rows: int = 0
    cdxj_lines: int = 0
    mismatches: list = field(default_factory=list)
    command_said: str = ""
    load: tuple[float, float] = (0.0, 0.0)
    profile: str = ""


def benchmark(warcs: WarcSet, *, repeat: int, env: dict, profile: bool, log) -> Result:
    """Every contender ``repeat`` times in turns, on the same files; the check; the profile if asked."""
    result = Result(warcs)
    paths = warcs.paths
    contenders = result.contenders
    for name, label in (
        ("zcat", "`zcat FILES > /dev/null` (inflating only)"),
        ("cdxj", "`cdxj-indexer FILES -o OUT` (the peer)"),
        ("captures", "`manage.py index_warcs --no-text FILES` (ours: the capture index, as the peer)"),
        ("ours", "`manage.py index_warcs FILES` (ours, the capture and full-text indexes)"),
        ("parse", "`read_entries` alone (in process)"),
        ("sha256", "SHA-256 of the files (in process)"),
    ):
        contenders[name] = Contender(name, label)
    checksum_only(paths)  # the files in the page cache for everyone (they fit in memory)
    result.load = (os.getloadavg()[0], 0.0)
    with tempfile.TemporaryDirectory(prefix="indexing-bench-") as work:
        out = Path(work) / "peer.cdxj"
        for turn in range(1, repeat + 1):
            log(f"Turn {turn} of {repeat}")
            seconds, cpu, _ = run_timed(["zcat", *paths])
            contenders["zcat"].runs.append((seconds, cpu))
            seconds, cpu, _ = run_timed([str(CDXJ_INDEXER), *paths, "-o", str(out)])
            contenders["cdxj"].runs.append((seconds, cpu))
            empty_index()
            command = [sys.executable, str(ROOT / "manage.py"), "index_warcs", "--no-text", *paths]
            seconds, cpu, _ = run_timed(command, env=env, output=True)
            contenders["captures"].runs.append((seconds, cpu))
            empty_index()
            command = [sys.executable, str(ROOT / "manage.py"), "index_warcs", *paths]
            seconds, cpu, said = run_timed(command, env=env, output=True)
            contenders["ours"].runs.append((seconds, cpu))
            result.command_said = said.strip().splitlines()[-1] if said.strip() else ""
            seconds, cpu, result.captures = in_process(lambda: parse_only(paths))
            contenders["parse"].runs.append((seconds, cpu))
            seconds, cpu, _ = in_process(lambda: checksum_only(paths))
            contenders["sha256"].runs.append((seconds, cpu))
            log("  " + ", ".join(f"{c.name} {c.runs[-1][0]:.2f} s" for c in contenders.values()))
        result.load = (result.load[0], os.getloadavg()[0])
        peer = cdxj_fields(out)
    ours = index_fields()
    result.rows, result.cdxj_lines = len(ours), len(peer)
    missing, extra = set(peer) - set(ours), set(ours) - set(peer)
    result.mismatches = [("cdxj-indexer only", row) for row in sorted(missing)[:5]]
    result.mismatches += [("index only", row) for row in sorted(extra, key=str)[:5]]
    if profile:
        log("Profiling index_warcs (cProfile)")
        result.profile = profile_command(paths, env)
    return result


def profile_command(paths: list[str], env: dict) -> str:
    """One more run of index_warcs under cProfile: the top functions by cumulative and by own time."""
    import pstats

    empty_index()
    with tempfile.TemporaryDirectory(prefix="indexing-profile-") as work:
        output = Path(work) / "index_warcs.prof"
        command = [sys.executable, "-m", "cProfile", "-o", str(output), str(ROOT / "manage.py")]
        run_timed([*command, "index_warcs", *paths], env=env)
        text = io.StringIO()
        stats = pstats.Stats(str(output), stream=text)
        stats.sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(25)
    return text.getvalue()


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    from django.db import connection

    from benchmarks.environment import cpus, memory

    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW server_version" if connection.vendor == "postgresql" else "SELECT sqlite_version()"
        )
        database = f"{connection.vendor} {cursor.fetchone()[0]}"
    peer = subprocess.run(
        [sys.executable, "-m", "pip", "show", "cdxj-indexer"], capture_output=True, text=True, check=False
    )
    version = re.search(r"^Version: (.*)$", peer.stdout, re.MULTILINE)
    return {
        "cpus": cpus(),
        "memory": memory(),
        "database": database,
        "python": platform.python_version(),
        "cdxj-indexer": version.group(1) if version else "?",
    }


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def report(result: Result, about: dict[str, str], repeat: int) -> str:
    """The results as Markdown (the format of docs/benchmarks.md)."""
    warcs, contenders = result.warcs, result.contenders
    zcat, peer, ours = contenders["zcat"].best, contenders["cdxj"].best, contenders["captures"].best
    full = contenders["ours"].best
    built = "built by an earlier run" if warcs.reused else f"built in {warcs.build_seconds:.0f} s"
    lines = [
        "## Indexing: index_warcs against cdxj-indexer and zcat",
        "",
        *(f"- {key}: {value}" for key, value in about.items()),
        f"- data: {len(warcs.files)} gzip WARC files of {warcs.sites} test sites, {warcs.size / 1e6:,.1f} MB"
        f" ({warcs.inflated / 1e6:,.1f} MB inflated), {warcs.records:,} WARC records"
        f" ({warcs.size / max(warcs.records, 1) / 1e3:.1f} kB each on average), {result.captures:,} captures;"
        f" {built}, in {warcs.directory}",
        "",
        f"| measured (best of {repeat}) | seconds | all runs | CPU s | records/s | captures/s"
        " | time / cdxj-indexer | time / zcat |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for contender in contenders.values():
        best = contender.best
        runs = ", ".join(f"{seconds:.2f}" for seconds, _ in contender.runs)
        lines.append(
            f"| {contender.label} | {best:.2f} | {runs} | {contender.cpu:.2f}"
            f" | {warcs.records / best:,.0f} | {result.captures / best:,.0f}"
            f" | {best / peer:.2f} | {best / zcat:.2f} |"
        )
    identical = result.rows == result.cdxj_lines and not result.mismatches
    lines += [
        "",
        f"- index_warcs --no-text (the capture index, what cdxj-indexer makes) / cdxj-indexer, time:"
        f" **{ours / peer:.2f}** (goal < 1, faster: {_verdict(ours < peer)}); records/s"
        f" {warcs.records / ours:,.0f} against {warcs.records / peer:,.0f}",
        f"- index_warcs --no-text / zcat, time: **{ours / zcat:.2f}** (goal ≤ {GOAL_ZCAT}:"
        f" {_verdict(ours / zcat <= GOAL_ZCAT)})",
        f"- index_warcs with the full-text index (the default): {full / peer:.2f} of cdxj-indexer's time,"
        f" {full / zcat:.2f} of zcat's; the full-text index adds {full - ours:.2f} s",
        f"- index rows: {result.rows:,}; cdxj-indexer lines: {result.cdxj_lines:,};"
        f" same keys, dates, files, offsets, lengths, digests, MIME types and statuses:"
        f" {'yes' if identical else 'NO'}",
        *(f"  - {where}: {row}" for where, row in result.mismatches),
        f"- index_warcs said (last run): {result.command_said}",
        f"- load average (1 min) before / after: {result.load[0]:.1f} / {result.load[1]:.1f}"
        f" ({os.cpu_count()} CPUs)",
    ]
    if result.profile:
        lines += ["", "Profile of index_warcs (cProfile; slows it):", "```", result.profile.strip(), "```"]
    return "\n".join(lines)


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the WARC files are kept")
    parser.add_argument("--size", type=int, default=200, help="MB of gzip WARC to index (at least)")
    parser.add_argument("--site-pages", type=int, default=3000, help="pages of each test site crawled")
    parser.add_argument("--large-file-kb", type=int, default=2048, help="each site's large file")
    parser.add_argument("--file-mb", type=int, default=50, help="WARC files are rolled at this size")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each contender (the best is kept)")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL,
        help="the PostgreSQL database to create, use and drop (it must not exist)",
    )
    parser.add_argument("--profile", action="store_true", help="also profile index_warcs once, print the top")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="run the commands as PYTHONDONTWRITEBYTECODE says (else their bytecode is cached, as installed)",
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny run (a few MB, one turn) to check that the script works"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.size, args.site_pages, args.file_mb, args.repeat) < 1 or args.large_file_kb < 0:
        parser.error("sizes and --repeat must be positive")
    if not CDXJ_INDEXER.exists():
        parser.error(f"{CDXJ_INDEXER} is needed as the peer (pip install cdxj-indexer)")
    if not shutil.which("zcat"):
        parser.error("zcat is needed (gzip)")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from benchmarks.environment import throwaway_database

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    with throwaway_database(args.database_url, log) as name:
        warcs = warc_set(
            args.data,
            size_mb=args.size,
            pages=args.site_pages,
            large_file_kb=args.large_file_kb,
            file_mb=args.file_mb,
            log=log,
        )
        # index_warcs runs as in production: DEBUG off (no query log kept in memory).
        env = {**os.environ, "DATABASE_URL": args.database_url, "DEBUG": "0", "PYTHONPATH": str(ROOT)}
        if not args.no_bytecode_cache:
            # An installed program's modules are compiled once: where writing bytecode is turned off
            # (PYTHONDONTWRITEBYTECODE), each run would compile the project's modules again (0.1-0.2 s).
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(BYTECODE_CACHE)
        env.setdefault("SECRET_KEY", "benchmark-only")
        env.setdefault("ALLOWED_HOSTS", "localhost")
        env["DJANGO_SETTINGS_MODULE"] = "webarchive.settings"
        os.environ.update(
            {
                key: env[key]
                for key in ("DATABASE_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE")
            }
        )
        import django

        django.setup()
        log(f"Database {name}: migrating")
        run_timed([sys.executable, str(ROOT / "manage.py"), "migrate", "--no-input"], env=env)
        result = benchmark(warcs, repeat=args.repeat, env=env, profile=args.profile, log=log)
        about = machine()
        if "PYTHONPYCACHEPREFIX" in env:
            about["bytecode of the commands"] = f"cached, in {BYTECODE_CACHE.relative_to(ROOT)}"
        elif env.get("PYTHONDONTWRITEBYTECODE"):
            about["bytecode of the commands"] = "not cached (PYTHONDONTWRITEBYTECODE): compiled at each run"
        print(report(result, about, args.repeat))
    identical = result.rows == result.cdxj_lines and not result.mismatches
    return 0 if identical else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
