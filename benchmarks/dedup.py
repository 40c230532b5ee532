"""Benchmark: the post-crawl deduplication pipeline (storage.dedup) on repeated crawls of one site.

    .venv/bin/python benchmarks/dedup.py [--data DIR] [--size MB] [--site-pages N] [--workers N]
        [--repeat N] [--smoke]

The WARC files are crawls of one synthetic test website (``webarchive.testsite``),
again and again on the same port, each crawl with the site's date a week
later (so that the pages that show it change and everything else does not),
until ``--size`` MB of gzip WARC are written. They are built once and kept
under ``--data`` (default ``var/bench/dedup``) for the next runs. Then, on
those files:

1. ``zcat FILES | sha256sum``: inflating and hashing every byte, the limit
   of any reader that computes digests (best of ``--repeat``);
2. the manifest stage (``convert`` and ``manifest``), digests read from the
   records, then recomputed, in this process, then in ``--workers``
   processes (best of ``--repeat`` each): MB/s of compressed input, and the
   ratio to (1);
3. the whole pipeline (every stage, ``--workers`` processes) into a fresh
   directory, each stage timed; the duplicate rate, the bytes saved
   (input - output) and the validation's verdict.

No database, no network beyond 127.0.0.1. The results are printed as
Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.*), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT / "var" / "bench" / "dedup"
MANIFEST = "manifest.json"
GOAL_ZCAT = 1.5  # the manifest within 1.5x of zcat | sha256sum's time
SMOKE = {"size": 2, "site_pages": 60, "large_file_kb": 100, "file_mb": 1, "repeat": 1}


# The WARC files ----------------------------------------------------------------------------------


@dataclass
class Recrawls:
    """The benchmark's WARC files: repeated crawls of one site."""

    directory: Path
    files: list[Path]
    size: int
    inflated: int
    crawls: int
    urls: int
    build_seconds: float = 0.0
    reused: bool = False


def recrawls(data: Path, *, size_mb: int, pages: int, large_file_kb: int, file_mb: int, log) -> Recrawls:
    """The WARC files for these parameters: those built by an earlier run, else crawled now."""
    from benchmarks.indexing import _inflated_size

    directory = data / f"recrawls-{size_mb}MB-{pages}p-{large_file_kb}k-{file_mb}MB"
    manifest = directory / MANIFEST
    if manifest.exists():
        built = json.loads(manifest.read_text())
        files = [directory / name for name in built["files"]]
        if all(path.exists() and path.stat().st_size == built["sizes"][path.name] for path in files):
            log(f"Reusing {len(files)} WARC files in {directory}")
            return Recrawls(
                directory, files, built["size"], built["inflated"], built["crawls"], built["urls"], 0, True
            )
        log(f"{directory}: files changed since they were built; building them again")
        manifest.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in [*directory.glob("*.warc.gz"), *directory.glob("*.warc.gz.open")]:
        leftover.unlink()  # an interrupted build: only this script writes here
    started = time.perf_counter()
    closed, crawls, urls = _crawl_again_and_again(
        directory, size_mb * 10**6, pages, large_file_kb * 1024, file_mb * 10**6, log
    )
    files = [Path(info.path) for info in closed]
    result = Recrawls(
        directory,
        files,
        sum(info.size for info in closed),
        sum(_inflated_size(path) for path in files),
        crawls,
        urls,
        time.perf_counter() - started,
    )
    manifest.write_text(
        json.dumps(
            {
                "files": [path.name for path in files],
                "sizes": {path.name: path.stat().st_size for path in files},
                "size": result.size,
                "inflated": result.inflated,
                "crawls": crawls,
                "urls": urls,
            },
            indent=1,
        )
    )
    log(f"Built {len(files)} WARC files ({result.size / 1e6:.0f} MB) in {result.build_seconds:.0f} s")
    return result


def _crawl_again_and_again(directory: Path, size: int, pages: int, large: int, file_size: int, log):
    from benchmarks.environment import crawl_test_sites

    first_day = datetime.date(2024, 1, 1)

    def weekly(crawl: int):
        today = first_day + datetime.timedelta(weeks=crawl - 1)
        return {
            "seed": 1,
            "pages": pages,
            "large_file_bytes": large,
            "today": today,
        }, f"crawl {crawl} ({today})"

    # The same site on the same port (its pages hold absolute URLs), a week later each time.
    return crawl_test_sites(
        directory,
        size=size,
        file_size=file_size,
        prefix="recrawl",
        software="benchmarks/dedup.py",
        sites=weekly,
        log=log,
        same_port=True,
    )


# Measuring ---------------------------------------------------------------------------------------


def manifest_pass(files: list[Path], *, recompute: bool, workers: int) -> float:
    """Seconds of the convert and manifest stages over ``files``, into a throwaway directory."""
    from storage.dedup.pipeline import Options, Pipeline, run

    with tempfile.TemporaryDirectory(prefix="dedup-bench-") as work:
        pipeline = Pipeline.create(
            out_dir=Path(work) / "out", inputs=files, options=Options(recompute_digests=recompute)
        )
        started = time.perf_counter()
        assert run(pipeline, stages=("convert", "manifest"), workers=workers)
        return time.perf_counter() - started


def whole_pipeline(files: list[Path], *, workers: int, out: Path, log) -> dict:
    """Every stage into ``out`` (emptied first), each timed; the summary and the validation."""
    from storage.dedup.pipeline import STAGES, Options, Pipeline, run

    shutil.rmtree(out, ignore_errors=True)
    pipeline = Pipeline.create(out_dir=out, inputs=files, options=Options())
    seconds = {}
    for stage in STAGES:
        started = time.perf_counter()
        assert run(pipeline, stages=(stage,), workers=workers)
        seconds[stage] = time.perf_counter() - started
        log(f"  {stage}: {seconds[stage]:.2f} s")
    return {
        "seconds": seconds,
        "summary": pipeline.summary(),
        "validation": pipeline.validation(),
        "not_converted": len(pipeline.not_converted()),
    }


def benchmark(warcs: Recrawls, *, workers: int, repeat: int, out: Path, log) -> dict:
    from benchmarks.indexing import checksum_only, run_timed

    paths = [str(path) for path in warcs.files]
    checksum_only(paths)  # the files in the page cache for everyone
    peer, ours = [], {(False, 1): [], (True, 1): [], (False, workers): [], (True, workers): []}
    for turn in range(1, repeat + 1):
        log(f"Turn {turn} of {repeat}")
        seconds, _cpu, _ = run_timed(["sh", "-c", 'zcat "$@" | sha256sum', "sh", *paths])
        peer.append(seconds)
        for recompute, count in ours:
            ours[(recompute, count)].append(manifest_pass(warcs.files, recompute=recompute, workers=count))
        log(
            f"  zcat | sha256sum {peer[-1]:.2f} s, manifest "
            + ", ".join(f"{v[-1]:.2f}" for v in ours.values())
        )
    log("The whole pipeline")
    whole = whole_pipeline(warcs.files, workers=workers, out=out, log=log)
    return {"peer": min(peer), "manifest": {key: min(values) for key, values in ours.items()}, **whole}


# Report ------------------------------------------------------------------------------------------


def report(warcs: Recrawls, result: dict, *, workers: int, repeat: int) -> str:
    from benchmarks.environment import cpus, memory

    mb = warcs.size / 1e6
    peer = result["peer"]
    summary, validation = result["summary"], result["validation"]
    built = "built by an earlier run" if warcs.reused else f"built in {warcs.build_seconds:.0f} s"
    lines = [
        "## Deduplication: the post-crawl pipeline on repeated crawls",
        "",
        f"- cpus: {cpus()}",
        f"- memory: {memory()}",
        f"- python: {platform.python_version()}",
        f"- data: {len(warcs.files)} gzip WARC files, {warcs.crawls} crawls of one test site"
        f" ({warcs.urls:,} URLs), {mb:,.1f} MB ({warcs.inflated / 1e6:,.1f} MB inflated); {built},"
        f" in {warcs.directory}",
        "",
        f"| measured (best of {repeat}) | seconds | MB/s of gzip input | time / zcat-sha256sum |",
        "|---|---:|---:|---:|",
        f"| `zcat FILES \\| sha256sum` (inflating and hashing: the limit) | {peer:.2f} | {mb / peer:,.1f}"
        " | 1.00 |",
    ]
    for (recompute, count), seconds in result["manifest"].items():
        digests = "digests recomputed (SHA-256)" if recompute else "digests read from the records"
        lines.append(
            f"| manifest stage, {digests}, {count} process{'es' if count > 1 else ''}"
            f" | {seconds:.2f} | {mb / seconds:,.1f} | {seconds / peer:.2f} |"
        )
    fair = result["manifest"][(True, workers)]
    stages = result["seconds"]
    total = sum(stages.values())
    lines += [
        "",
        f"- manifest with recomputed digests ({workers} processes) / `zcat | sha256sum`, time:"
        f" **{fair / peer:.2f}** (goal ≤ {GOAL_ZCAT}: {'met' if fair / peer <= GOAL_ZCAT else 'NOT met'})",
        f"- whole pipeline, {workers} processes: **{total:.1f} s** ({mb / total:,.1f} MB/s of input);"
        " by stage: " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in stages.items()),
        f"- response records: {summary.records:,}; duplicates: {summary.duplicates:,}"
        f" (duplicate rate **{summary.duplicate_rate:.1%}**); hash collisions: {summary.collisions}",
        f"- payload bytes: {summary.payload_bytes / 1e6:,.1f} MB, of duplicates"
        f" {summary.duplicate_payload_bytes / 1e6:,.1f} MB",
        f"- bytes saved: input {validation.bytes_in / 1e6:,.1f} MB - output"
        f" {validation.bytes_out / 1e6:,.1f} MB"
        f" = **{(validation.bytes_in - validation.bytes_out) / 1e6:,.1f} MB**"
        f" ({1 - validation.bytes_out / validation.bytes_in:.1%})",
        f"- validation: {'ok' if validation.ok else 'FAILED'}; {validation.records_out:,} records,"
        f" {validation.revisits:,} revisits; copies left in full: {result['not_converted']}",
        *(f"  - {problem}" for problem in validation.problems[:10]),
        f"- load average (1 min) at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)",
    ]
    return "\n".join(lines)


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the WARC files are kept")
    parser.add_argument("--size", type=int, default=500, help="MB of gzip WARC (at least)")
    parser.add_argument("--site-pages", type=int, default=3000, help="pages of the test site")
    parser.add_argument("--large-file-kb", type=int, default=2048, help="the site's large file")
    parser.add_argument("--file-mb", type=int, default=50, help="WARC files are rolled at this size")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of the pipeline")
    parser.add_argument("--repeat", type=int, default=2, help="runs of the throughput measurements")
    parser.add_argument("--smoke", action="store_true", help="a tiny run, to check that the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.size, args.site_pages, args.file_mb, args.repeat, args.workers) < 1 or args.large_file_kb < 0:
        parser.error("sizes, --workers and --repeat must be positive")
    if not (shutil.which("zcat") and shutil.which("sha256sum")):
        parser.error("zcat and sha256sum are needed")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    warcs = recrawls(
        args.data,
        size_mb=args.size,
        pages=args.site_pages,
        large_file_kb=args.large_file_kb,
        file_mb=args.file_mb,
        log=log,
    )
    out = args.data / "output"
    try:
        result = benchmark(warcs, workers=args.workers, repeat=args.repeat, out=out, log=log)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    print(report(warcs, result, workers=args.workers, repeat=args.repeat))
    return 0 if result["validation"].ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
