"""Benchmark: our site crawler against wget on the synthetic test website (127.0.0.1 only).

    .venv/bin/python benchmarks/crawl.py [--only throughput,politeness,memory] [--pages N] ...

Each contender runs in a process of its own against test sites served by
other processes (``crawl.py serve``, so that no server shares a GIL with a
crawler), each against freshly started servers (same seed, same ports, cold
caches). Our crawler is ``harvest.crawler`` as the worker uses it: one
``SiteCrawl`` per site on a ``CrawlEngine`` of 8 threads, gzip WARC/1.1 files
(sha256 digests) and a crawl log (``crawl.py ours``). The peer is Debian's
``wget --recursive --level=20 --page-requisites --warc-file`` (gzip WARC,
robots.txt obeyed, the same 20 hops as our crawler's max_hops). URLs are the
response records of each one's WARC files. Measured:

1. throughput: one site of ~5,000 URLs, no delay: URLs/s, ours over wget's;
2. completeness: the same two crawls against the site's ground truth;
3. politeness: 200 sites of ~100 URLs with a 0.5 s delay in one crawler
   process, wall time over the politeness-bound ideal; the peer is 200 wget
   processes at once with ``--wait=0.5``;
4. memory: peak RSS of the crawler process on a site of ~100,000 URLs, and
   of wget on the same site.

It prints the results as Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()
WGET = "/usr/bin/wget"
USER_AGENT = "webarchive-bench/1 (+http://127.0.0.1/)"
MAX_HOPS = 20  # SiteSettings.max_hops, our crawler's default: wget gets the same --level
SITES_PER_SERVER = 50  # test sites per server process in the politeness measurement
MEASUREMENTS = ("throughput", "politeness", "memory")  # completeness comes with throughput


def _status_kib(key: str, pid: int | str = "self") -> int:
    """A memory figure of a process from /proc/<pid>/status (Linux), in KiB; 0 if unknown."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    return 0


# The child processes -----------------------------------------------------------------------------


def serve(argv: list[str]) -> int:
    """``crawl.py serve``: serve test sites until stdin closes; print their ports as one JSON line."""
    from webarchive.testsite import TestSite

    parser = argparse.ArgumentParser(prog="crawl.py serve")
    parser.add_argument("--seed", type=int, required=True, help="seed of the first site (+1 for each next)")
    parser.add_argument("--pages", type=int, required=True)
    parser.add_argument("--ports", required=True, help="comma-separated, 0 for any free port")
    parser.add_argument("--large-file-bytes", type=int, default=2 * 1024 * 1024)
    args = parser.parse_args(argv)
    sites = [
        TestSite(
            port=int(port),
            seed=args.seed + index,
            pages=args.pages,
            hosts=1,
            large_file_bytes=args.large_file_bytes,
        ).start()
        for index, port in enumerate(args.ports.split(","))
    ]
    print(json.dumps({"ports": [site.port for site in sites]}), flush=True)
    sys.stdin.read()  # the benchmark closes our stdin (or dies): time to go
    for site in sites:
        site.stop()
    return 0


def _profile_steps(crawls: list, profiles: list) -> None:
    """Run each step of the crawls under a cProfile of its fetch thread (cProfile sees one thread)."""
    import cProfile

    local = threading.local()

    def wrap(step):
        def profiled_step():
            if not hasattr(local, "profile"):
                local.profile = cProfile.Profile()
                profiles.append(local.profile)
            return local.profile.runcall(step)

        return profiled_step

    for crawl in crawls:
        crawl.step = wrap(crawl.step)


def ours(argv: list[str]) -> int:
    """``crawl.py ours``: crawl each seed as one site into --out; print what it measured as JSON."""
    parser = argparse.ArgumentParser(prog="crawl.py ours")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("seeds", nargs="+")
    args = parser.parse_args(argv)

    from harvest.crawler import warc
    from harvest.crawler.crawllog import CrawlLog
    from harvest.crawler.engine import run_sites
    from harvest.crawler.fetch import Fetcher
    from harvest.crawler.site import SiteCrawl, SiteSettings
    from webarchive.netguard import AddressPolicy

    baseline_kib = _status_kib("VmRSS")
    writer = warc.WarcWriter(
        directory=args.out,
        prefix="bench",
        job_id=1,
        host="bench",
        warcinfo={"software": "webarchive harvest crawler (benchmarks/crawl.py)"},
    )
    fetcher = Fetcher(user_agent=USER_AGENT, address_check=AddressPolicy(allow_private=True).refusal)
    samples: list[tuple[float, int, int]] = []  # (seconds, URLs done, RSS KiB)
    profiles: list = []
    with CrawlLog(args.out / "crawl.log") as log:
        crawls = [
            SiteCrawl(
                SiteSettings(seeds=[seed], min_delay=args.delay, max_delay=args.delay, delay_factor=0.0),
                session=fetcher.session(),
                writer=writer,
                crawl_log=log,
            )
            for seed in args.seeds
        ]
        if args.profile:
            _profile_steps(crawls, profiles)
        done = threading.Event()
        started = time.perf_counter()

        def sample():
            while not done.wait(1.0):
                done_urls = sum(crawl.urls_done for crawl in crawls)
                samples.append((time.perf_counter() - started, done_urls, _status_kib("VmRSS")))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        run_sites(crawls, threads=args.threads)
        writer.close()
        seconds = time.perf_counter() - started
        done.set()
        sampler.join()
    if profiles:
        import io
        import pstats

        text = io.StringIO()
        stats = pstats.Stats(*profiles, stream=text)
        stats.sort_stats("cumulative").print_stats(35)
        stats.sort_stats("tottime").print_stats(25)
        (args.out / "profile.txt").write_text(text.getvalue())
    print(
        json.dumps(
            {
                "seconds": seconds,
                "baseline_rss_kib": baseline_kib,
                "peak_rss_kib": _status_kib("VmHWM"),
                "samples": samples,
                "stop_reasons": Counter(crawl.stop_reason for crawl in crawls),
                "broken": [crawl.error for crawl in crawls if crawl.broken],
            }
        )
    )
    return 0


# Running the contenders --------------------------------------------------------------------------


class Servers:
    """Test sites served by ``crawl.py serve`` processes, as a context manager; restart with ``ports``."""

    def __init__(self, *, seed: int, pages: int, count: int = 1, ports=None, large_file_bytes=2 * 2**20):
        self.seed, self.pages, self.count = seed, pages, count
        self.ports = list(ports) if ports else [0] * count
        self.large_file_bytes = large_file_bytes
        self.processes: list[subprocess.Popen] = []
        self.cpu_seconds = 0.0  # of the server processes, once stopped

    def __enter__(self) -> Servers:
        for first in range(0, self.count, SITES_PER_SERVER):
            ports = self.ports[first : first + SITES_PER_SERVER]
            command = [sys.executable, str(SCRIPT), "serve", "--seed", str(self.seed + first)]
            command += ["--pages", str(self.pages), "--ports", ",".join(map(str, ports))]
            command += ["--large-file-bytes", str(self.large_file_bytes)]
            self.processes.append(
                subprocess.Popen(  # noqa: S603 (this script, with numbers)
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
                )
            )
        ports = []
        for process in self.processes:
            line = process.stdout.readline()
            if not line:
                self.__exit__(None, None, None)
                raise RuntimeError("a test site server did not start (see its error above)")
            ports += json.loads(line)["ports"]
        self.ports = ports
        return self

    def __exit__(self, *exc_info) -> None:
        for process in self.processes:
            with contextlib.suppress(OSError):
                process.stdin.close()
        for process in self.processes:
            usage = _wait(process)
            self.cpu_seconds += usage.ru_utime + usage.ru_stime
        self.processes = []

    def url(self, index: int = 0) -> str:
        return f"http://127.0.0.1:{self.ports[index]}/site/"

    def again(self) -> Servers:
        """The same sites on the same ports, freshly started (cold caches) when entered."""
        return Servers(
            seed=self.seed,
            pages=self.pages,
            count=self.count,
            ports=self.ports,
            large_file_bytes=self.large_file_bytes,
        )


def _wait(process: subprocess.Popen):
    """Reap ``process`` and return its resource usage (CPU time, peak RSS in KiB)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage


@dataclass
class Run:
    """One crawl by one contender: wall time, the response records written, CPU and memory."""

    name: str
    seconds: float
    uris: list[str]
    cpu_seconds: float
    peak_rss_kib: int
    directory: Path
    process_seconds: float = 0.0
    server_cpu_seconds: float = 0.0
    inside: dict = field(default_factory=dict)  # what our crawler reported about itself
    uris_by_site: dict[str, list[str]] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return len(self.uris) / self.seconds if self.seconds else 0.0


def warc_responses(paths) -> list[str]:
    """The target URIs of the response records of WARC files, in order."""
    from warcio.archiveiterator import ArchiveIterator

    uris = []
    for path in paths:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    uris.append(record.rec_headers.get_header("WARC-Target-URI").strip("<>"))
    return uris


def wget_command(url: str, directory: Path, *, wait: float = 0.0) -> list[str]:
    """wget's recursive crawl of ``url``: the same site, hops and robots.txt rules as ours."""
    command = [WGET, "--recursive", f"--level={MAX_HOPS}", "--page-requisites", "-e", "robots=on"]
    command += ["--tries=1", "--timeout=30", "--no-verbose", f"--output-file={directory / 'wget.log'}"]
    command += [f"--directory-prefix={directory / 'files'}", "--delete-after"]
    command += [f"--warc-file={directory / 'wget'}"]  # gzip-compressed: wget's default
    if wait:
        command.append(f"--wait={wait}")
    return [*command, url]


def run_wget(servers: Servers, work: Path, *, wait: float = 0.0) -> Run:
    """One wget process per site of ``servers``, all at once; wall time until the last one ends."""
    directories = [work / f"wget-{index}" for index in range(servers.count)]
    for directory in directories:
        directory.mkdir(parents=True)
    started = time.perf_counter()
    processes = [
        subprocess.Popen(  # noqa: S603 (wget on a URL of our own test site)
            wget_command(servers.url(index), directory, wait=wait), stdin=subprocess.DEVNULL
        )
        for index, directory in enumerate(directories)
    ]
    usages = [_wait(process) for process in processes]
    seconds = time.perf_counter() - started
    for process, directory in zip(processes, directories, strict=True):
        # 8: some answers were HTTP errors (the site has a 404 and a 500 on purpose).
        if process.returncode not in (0, 8):
            print(f"wget exited with {process.returncode}, see {directory / 'wget.log'}", file=sys.stderr)
    by_site = {
        f"127.0.0.1:{servers.ports[index]}": warc_responses([directory / "wget.warc.gz"])
        for index, directory in enumerate(directories)
    }
    return Run(
        name="wget",
        seconds=seconds,
        uris=[uri for uris in by_site.values() for uri in uris],
        cpu_seconds=sum(usage.ru_utime + usage.ru_stime for usage in usages),
        peak_rss_kib=max(usage.ru_maxrss for usage in usages),
        directory=work,
        process_seconds=seconds,
        uris_by_site=by_site,
    )


def run_ours(servers: Servers, work: Path, *, delay: float = 0.0, threads: int = 8, profile=False) -> Run:
    """Our crawler in a process of its own, one site crawl per site of ``servers``."""
    directory = work / "ours"
    directory.mkdir(parents=True)
    command = [sys.executable, str(SCRIPT), "ours", "--out", str(directory), "--threads", str(threads)]
    command += ["--delay", str(delay), *(["--profile"] if profile else [])]
    command += [servers.url(index) for index in range(servers.count)]
    started = time.perf_counter()
    with (directory / "result.json").open("w") as output:
        process = subprocess.Popen(  # noqa: S603 (this script, with our own test site's URLs)
            command, stdin=subprocess.DEVNULL, stdout=output, cwd=ROOT
        )
        usage = _wait(process)
    process_seconds = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"our crawler exited with {process.returncode} (its error is above)")
    inside = json.loads((directory / "result.json").read_text())
    if inside["broken"]:
        raise RuntimeError(f"our crawler broke: {inside['broken'][:3]}")
    return Run(
        name="ours",
        seconds=inside["seconds"],
        uris=warc_responses(sorted(directory.glob("*.warc.gz"))),
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_kib=usage.ru_maxrss,
        directory=directory,
        process_seconds=process_seconds,
        inside=inside,
    )


def contest(
    servers: Servers, work: Path, log, *, delay: float = 0.0, threads: int = 8, profile: bool = False
) -> tuple[Run, Run, tuple[float, float]]:
    """wget, then ours, each against freshly started servers; and the load average before and after."""
    load = os.getloadavg()[0]
    with servers as started:
        log(f"  wget on {started.count} site(s) from {started.url()}")
        peer = run_wget(started, work / "wget", wait=delay)
    peer.server_cpu_seconds = started.cpu_seconds
    with servers.again() as again:
        log("  our crawler")
        mine = run_ours(again, work, delay=delay, threads=threads, profile=profile)
    mine.server_cpu_seconds = again.cpu_seconds
    return mine, peer, (load, os.getloadavg()[0])


# The figures -------------------------------------------------------------------------------------


def completeness(site, mine: Run, peer: Run) -> dict:
    """Ground truth captured by each, whether ours holds what wget got, and what wget missed."""
    from harvest.crawler.urls import canonicalize

    hops = site.ground_truth_hops(policy="host", obey_robots=True)
    truth = set(hops)
    got = {run.name: {canonicalize(uri) for uri in run.uris} - {None} for run in (mine, peer)}
    missed_by_wget = truth - got["wget"]
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for url in sorted(missed_by_wget):
        # Grouped by how the ground truth reaches it and by the path with its numbers masked.
        path = "/" + url.split("/", 3)[3]
        groups[(hops[url][-1:] or "seed", re.sub(r"[0-9]+", "N", path))].append(path)
    return {
        "truth": len(truth),
        "captured": {name: len(urls & truth) for name, urls in got.items()},
        "outside": {name: len(urls - truth) for name, urls in got.items()},
        "distinct": {name: len(urls) for name, urls in got.items()},
        "wget_not_ours": sorted((got["wget"] & truth) - got["ours"]),
        "ours_missed": sorted(truth - got["ours"]),
        "wget_missed": sorted(groups.items(), key=lambda item: -len(item[1])),
    }


def crawl_log_requests(path: Path) -> dict[str, list[tuple[float, float]]]:
    """(start, duration) of each request of each site, from our crawl log (robots.txt refusals are none)."""
    requests = defaultdict(list)
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            fields = line.split(" ")
            if fields[1] == "-9998":
                continue
            start = datetime.strptime(fields[0], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
            requests[fields[9]].append((start, int(fields[7].removesuffix("ms")) / 1000))
    return requests


def politeness(requests: dict[str, list[tuple[float, float]]], delay: float) -> dict:
    """The politeness-bound ideal of a crawl and how late each site's next request was, on average."""
    counts = [len(times) for times in requests.values()]
    late = []
    for times in requests.values():
        times.sort()
        # The engine measures the delay from the end of a step: the lateness is our processing too.
        late += [b[0] - a[0] - a[1] - delay for a, b in itertools.pairwise(times)]
    late.sort()
    return {
        "sites": len(counts),
        "requests": (min(counts), statistics.median(counts), max(counts), sum(counts)),
        "ideal": max((count - 1) * delay for count in counts),
        "ideal_with_fetches": max(
            (len(times) - 1) * delay + sum(duration for _, duration in times) for times in requests.values()
        ),
        "late": (statistics.mean(late), late[len(late) // 2], late[int(len(late) * 0.95)], late[-1])
        if late
        else (0.0, 0.0, 0.0, 0.0),
    }


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu, memory, system = "", "?", platform.system()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with contextlib.suppress(OSError, ValueError, IndexError):
        memory = f"{_read_meminfo_kib() / 2**20:.1f} GiB"
    with contextlib.suppress(OSError):
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                system = line.split("=", 1)[1].strip('"')
    wget = subprocess.run([WGET, "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    return {
        "cpus": f"{os.cpu_count()} ({cpu})" if cpu else str(os.cpu_count()),
        "memory": memory,
        "system": f"{system}, Linux {platform.release()}",
        "python": platform.python_version(),
        "wget": wget.stdout.splitlines()[0] if wget.stdout else "?",
    }


def _read_meminfo_kib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1])
    raise ValueError("no MemTotal")


def _runs_table(mine: Run, peer: Run) -> list[str]:
    lines = [
        "| contender | URLs (response records) | seconds | URLs/s | ratio to wget | CPU s | CPU ms/URL"
        " | server CPU s | peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in (mine, peer):
        urls = len(run.uris)
        lines.append(
            f"| {run.name} | {urls:,} | {run.seconds:.1f} | {run.rate:,.0f} | {run.rate / peer.rate:.2f} |"
            f" {run.cpu_seconds:.1f} | {1000 * run.cpu_seconds / max(urls, 1):.2f} |"
            f" {run.server_cpu_seconds:.1f} | {run.peak_rss_kib / 1024:.0f} |"
        )
    return lines


def _load(load: tuple[float, float]) -> str:
    return f"- load average (1 min) before / after: {load[0]:.1f} / {load[1]:.1f} ({os.cpu_count()} CPUs)"


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def report_throughput(pages: int, mine: Run, peer: Run, found: dict, load) -> list[str]:
    """The throughput and completeness sections."""
    ratio = mine.rate / peer.rate
    lines = [f"### 1. Throughput: one site of {pages:,} pages, no delay", "", *_runs_table(mine, peer), ""]
    lines += [
        f"- ours / wget, URLs/s: **{ratio:.2f}** (goal ≥ 1.0: {_verdict(ratio >= 1.0)})",
        f"- our process, start to exit: {mine.process_seconds:.1f} s (the crawl: {mine.seconds:.1f} s)",
        _load(load),
        "",
        f"### 2. Completeness: the same crawls against the ground truth ({found['truth']:,} URLs)",
        "",
        "| contender | ground truth captured | share | other URLs | distinct canonical URLs |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("ours", "wget"):
        lines.append(
            f"| {name} | {found['captured'][name]:,} | {found['captured'][name] / found['truth']:.1%} |"
            f" {found['outside'][name]:,} | {found['distinct'][name]:,} |"
        )
    superset = not found["wget_not_ours"]
    lines += [
        "",
        f"- ours ⊇ (wget's ∩ ground truth): {'yes' if superset else 'NO'}"
        + ("" if superset else f" ({len(found['wget_not_ours'])} missing: {found['wget_not_ours'][:5]})"),
        f"- ground truth ours missed: {len(found['ours_missed'])}"
        + (f", e.g. {found['ours_missed'][:10]}" if found["ours_missed"] else ""),
        "",
        "Ground truth wget missed, by the hop that reaches it and the path (numbers as N):",
        "",
        "| hop | path | URLs | example |",
        "|---|---|---:|---|",
    ]
    for (hop, path), urls in found["wget_missed"][:15]:
        lines.append(f"| {hop} | `{path}` | {len(urls):,} | `{urls[0]}` |")
    if len(found["wget_missed"]) > 15:
        rest = sum(len(urls) for _, urls in found["wget_missed"][15:])
        lines.append(f"| | {len(found['wget_missed']) - 15} more groups | {rest:,} | |")
    return lines


def report_politeness(args, mine: Run, peer: Run, load) -> list[str]:
    """The politeness section: both against their ideal, and each other."""
    sites, pages, delay = args.sites, args.site_pages, args.delay
    figures = politeness(crawl_log_requests(mine.directory / "crawl.log"), delay)
    low, median, high, total = figures["requests"]
    peer_counts = [len(uris) for uris in peer.uris_by_site.values()]
    peer_ideal = max((count - 1) * delay for count in peer_counts)
    ratio = mine.seconds / figures["ideal"]
    late = figures["late"]
    return [
        f"### 3. Politeness: {sites:,} sites of {pages} pages, {delay} s delay, one crawler process",
        "",
        "| contender | requests per site (min / median / max) | all URLs | seconds | ideal s | ratio to ideal"
        " | ratio to wget | CPU s |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        f"| ours (1 process, {args.threads} threads) | {low} / {median:.0f} / {high} |"
        f" {len(mine.uris):,} | {mine.seconds:.1f} | {figures['ideal']:.1f} | **{ratio:.2f}** |"
        f" {mine.seconds / peer.seconds:.2f} | {mine.cpu_seconds:.1f} |",
        f"| wget ({sites} processes at once) | {min(peer_counts)} / {statistics.median(peer_counts):.0f} /"
        f" {max(peer_counts)} | {len(peer.uris):,} | {peer.seconds:.1f} | {peer_ideal:.1f} |"
        f" {peer.seconds / peer_ideal:.2f} | 1.00 | {peer.cpu_seconds:.1f} |",
        "",
        f"- ideal = max over sites of (requests - 1) x {delay} s; ours counts every request in its crawl log"
        f" (robots.txt, /sitemap.xml, redirects and errors included; {total:,} in all), wget its response"
        " records",
        f"- ours / ideal: **{ratio:.2f}** (goal ≤ 1.2: {_verdict(ratio <= 1.2)}); against the ideal that also"
        f" counts each site's own fetch times ({figures['ideal_with_fetches']:.1f} s):"
        f" {mine.seconds / figures['ideal_with_fetches']:.2f}",
        f"- our next request to a site came after the end of the previous one later than the delay by:"
        f" mean {late[0] * 1000:.0f} ms, median {late[1] * 1000:.0f} ms, 95th percentile"
        f" {late[2] * 1000:.0f} ms, max {late[3] * 1000:.0f} ms",
        _load(load),
    ]


def report_memory(pages: int, mine: Run, peer: Run, load) -> list[str]:
    """The memory section, with how our RSS grew during the crawl."""
    samples = mine.inside["samples"]
    picked = samples[:: max(1, len(samples) // 8)][:8] + samples[-1:] if samples else []
    peak_mb = mine.peak_rss_kib * 1024 / 1e6
    return [
        f"### 4. Memory: one site of {pages:,} pages, no delay",
        "",
        *_runs_table(mine, peer),
        "",
        f"- our crawler's peak RSS: **{mine.peak_rss_kib / 1024:.0f} MiB = {peak_mb:.0f} MB** (goal < 200 MB:"
        f" {_verdict(peak_mb < 200)}); after its imports, before crawling:"
        f" {mine.inside['baseline_rss_kib'] / 1024:.0f} MiB",
        "- our RSS during the crawl (seconds, URLs done, MiB): "
        + ", ".join(f"{s:.0f} s {done:,} {rss / 1024:.0f}" for s, done, rss in picked),
        _load(load),
    ]


def report(sections: list[list[str]], about: dict[str, str]) -> str:
    """The whole report as Markdown."""
    lines = [
        "## Crawling: our crawler against wget",
        "",
        *(f"- {key}: {value}" for key, value in about.items()),
    ]
    for section in sections:
        lines += ["", *section]
    return "\n".join(lines)


# Main --------------------------------------------------------------------------------------------


def benchmark(args, work: Path, log) -> list[list[str]]:
    """Run the measurements asked for, one after the other; the report's sections."""
    from webarchive.testsite import TestSite

    sections = []
    if "throughput" in args.only:
        log(f"Throughput and completeness: one site of {args.pages:,} pages")
        servers = Servers(seed=args.seed, pages=args.pages)
        mine, peer, load = contest(
            servers, work / "throughput", log, threads=args.threads, profile=args.profile
        )
        # The ground truth of that site, on the port both crawled (computed here, nothing served).
        site = TestSite(port=mine_port(mine), seed=args.seed, pages=args.pages, hosts=1)
        try:
            found = completeness(site, mine, peer)
        finally:
            site.stop()
        sections.append(report_throughput(args.pages, mine, peer, found, load))
        sections.append(_profile_section(mine))
    if "politeness" in args.only:
        log(f"Politeness: {args.sites} sites of {args.site_pages} pages, {args.delay} s delay")
        servers = Servers(seed=args.seed, pages=args.site_pages, count=args.sites, large_file_bytes=100_000)
        mine, peer, load = contest(
            servers, work / "politeness", log, delay=args.delay, threads=args.threads, profile=args.profile
        )
        sections.append(report_politeness(args, mine, peer, load))
        sections.append(_profile_section(mine))
    if "memory" in args.only:
        log(f"Memory: one site of {args.memory_pages:,} pages (this one takes minutes at full size)")
        servers = Servers(seed=args.seed, pages=args.memory_pages)
        mine, peer, load = contest(servers, work / "memory", log, threads=args.threads)
        sections.append(report_memory(args.memory_pages, mine, peer, load))
    return [section for section in sections if section]


def mine_port(run: Run) -> int:
    """The port of the site our crawler crawled (its first response's)."""
    return int(run.uris[0].split("/")[2].rpartition(":")[2])


def _profile_section(run: Run) -> list[str]:
    path = run.directory / "profile.txt"
    if not path.exists():
        return []
    title = "Profile of our crawler's steps (cProfile, all fetch threads; slows the crawl):"
    return [title, "```", path.read_text().strip(), "```"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sys.path.insert(0, str(ROOT))
    if argv[:1] == ["serve"]:
        return serve(argv[1:])
    if argv[:1] == ["ours"]:
        return ours(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        default=",".join(MEASUREMENTS),
        help=f"comma-separated, among {', '.join(MEASUREMENTS)} (completeness comes with throughput)",
    )
    parser.add_argument("--pages", type=int, default=915, help="throughput site (915 pages: ~5,000 URLs)")
    parser.add_argument("--sites", type=int, default=200, help="sites crawled at once for politeness")
    parser.add_argument("--site-pages", type=int, default=4, help="pages of each (4 pages: ~105 URLs)")
    parser.add_argument("--delay", type=float, default=0.5, help="politeness delay (s)")
    parser.add_argument(
        "--memory-pages", type=int, default=18_500, help="memory site (18,500 pages: ~100,000 URLs)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the test sites")
    parser.add_argument("--threads", type=int, default=8, help="our crawler's fetch threads")
    parser.add_argument("--workdir", help="where the WARC files go while measured (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the WARC files and logs (in --workdir)")
    parser.add_argument(
        "--profile", action="store_true", help="profile our crawler's steps (slows it) and print the top"
    )
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    if unknown := set(args.only) - set(MEASUREMENTS):
        parser.error(f"unknown measurement(s): {', '.join(sorted(unknown))}")
    if min(args.pages, args.sites, args.site_pages, args.memory_pages, args.threads) < 1 or args.delay < 0:
        parser.error("sizes and --threads must be positive, --delay not negative")
    if not Path(WGET).exists():
        parser.error(f"{WGET} is needed as the peer (apt-get install wget)")

    work = Path(tempfile.mkdtemp(prefix="crawl-bench-", dir=args.workdir))
    try:
        sections = benchmark(args, work, log=lambda text: print(text, file=sys.stderr))
        print(report(sections, machine()))
    finally:
        if args.keep:
            print(f"Kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
