"""Benchmark: our site crawler against wget on the synthetic test website (127.0.0.1 only).

    .venv/bin/python benchmarks/crawl.py [--only throughput,politeness,memory] [--pages N] ...

Each contender runs in a process of its own, against test sites served by
other processes (``crawl.py serve``: no server shares a GIL with a crawler),
freshly started for each contender (same seeds and ports, cold caches). Ours
is ``harvest.crawler`` as the worker runs it (``crawl.py ours``): one
``SiteCrawl`` per site on a ``CrawlEngine`` of 8 fetch threads, gzip WARC/1.1
files with sha256 digests, a crawl log. The peer is Debian's ``wget
--recursive --level=20 --page-requisites --warc-file`` (gzip WARC, robots.txt
obeyed, the 20 hops of our crawler's max_hops). The URLs of a crawl are the
response records of its WARC files. Measured:

1. throughput: one site of ~5,000 URLs, no delay: URLs/s, ours over wget's;
2. completeness: the same two crawls against the site's ground truth;
3. politeness: 200 sites of ~100 URLs with a 0.5 s delay in one crawler
   process: wall time over the politeness-bound ideal; the peer is 200 wget
   processes at once with ``--wait=0.5``;
4. memory: peak RSS of our crawler's process on a site of ~100,000 URLs
   (and of wget's on the same site).

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
SITES_PER_SERVER = 50  # test sites per server process
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
    parser.add_argument("--large-file-bytes", type=int, required=True)
    args = parser.parse_args(argv)
    sites = [
        TestSite(port=int(port), seed=args.seed + n, pages=args.pages, large_file_bytes=args.large_file_bytes)
        for n, port in enumerate(args.ports.split(","))
    ]
    for site in sites:
        site.start()
    print(json.dumps([site.port for site in sites]), flush=True)
    sys.stdin.read()  # the benchmark closes our stdin (or dies): time to go
    for site in sites:
        site.stop()
    return 0


def _profile_steps(crawls: list, writer, profiles: list) -> None:
    """Profile each step of the crawls, and the WARC writer's thread (a cProfile sees one thread)."""
    import cProfile

    local = threading.local()

    def wrap(call, key):
        def profiled(*args):
            if not hasattr(local, "profile"):
                local.profile = cProfile.Profile()
                profiles.append((key, local.profile))
            return local.profile.runcall(call, *args)

        return profiled

    for crawl in crawls:
        crawl.step = wrap(crawl.step, "steps")
    writer._work = wrap(writer._work, "writer")  # the thread's target, looked up when it starts


def _time_parts(crawls: list, writer, counters: list) -> None:
    """Add up the CPU time of each thread in the crawler's parts (``time.thread_time``: µs per URL)."""
    local = threading.local()

    def wrap(call, key):
        def timed(*args, **kwargs):
            if not hasattr(local, "parts"):
                local.parts = Counter()
                counters.append(local.parts)
            start = time.thread_time()
            try:
                return call(*args, **kwargs)
            finally:
                local.parts[key] += time.thread_time() - start

        return timed

    for crawl in crawls:
        crawl.step = wrap(crawl.step, "steps")
        crawl._fetch = wrap(crawl._fetch, "fetch")
        crawl._queue_links = wrap(crawl._queue_links, "links")
    writer._work = wrap(writer._work, "writer")


def ours(argv: list[str]) -> int:
    """``crawl.py ours``: crawl each seed as one site into --out; print what it measured as JSON."""
    parser = argparse.ArgumentParser(prog="crawl.py ours")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--delay", type=float, required=True)
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
        warcinfo={"software": "benchmarks/crawl.py"},
    )
    fetcher = Fetcher(user_agent=USER_AGENT, address_check=AddressPolicy(allow_private=True).refusal)
    samples: list[tuple[float, int, int]] = []  # (seconds, URLs done, RSS KiB), every second
    profiles: list = []
    with CrawlLog(args.out / "crawl.log") as log:
        delays = {"min_delay": args.delay, "max_delay": args.delay, "delay_factor": 0.0}
        crawls = [
            SiteCrawl(
                SiteSettings(seeds=[seed], **delays), session=fetcher.session(), writer=writer, crawl_log=log
            )
            for seed in args.seeds
        ]
        counters: list[Counter] = []
        if args.profile:
            _profile_steps(crawls, writer, profiles)
        else:
            _time_parts(crawls, writer, counters)
        done = threading.Event()
        started = time.perf_counter()

        def sample():
            while not done.wait(1.0):
                urls = sum(crawl.urls_done for crawl in crawls)
                samples.append((time.perf_counter() - started, urls, _status_kib("VmRSS")))

        threading.Thread(target=sample, daemon=True).start()
        run_sites(crawls, threads=args.threads)
        writer.close()
        seconds = time.perf_counter() - started
        done.set()
    if profiles:
        import pstats

        with (args.out / "profile.txt").open("w") as stream:
            for key, title in (("steps", "the fetch threads' steps"), ("writer", "the WARC writer's thread")):
                chosen = [profile for name, profile in profiles if name == key]
                if not chosen:
                    continue
                print(f"#### {title}", file=stream)
                stats = pstats.Stats(*chosen, stream=stream)
                stats.sort_stats("cumulative").print_stats(30 if key == "steps" else 15)
                stats.sort_stats("tottime").print_stats(25 if key == "steps" else 12)
    result = {"seconds": seconds, "baseline_rss_kib": baseline_kib, "peak_rss_kib": _status_kib("VmHWM")}
    result["samples"] = samples
    result["parts"] = sum(counters, Counter())
    result["stop_reasons"] = Counter(crawl.stop_reason for crawl in crawls)
    result["broken"] = [crawl.error for crawl in crawls if crawl.broken]
    print(json.dumps(result))
    return 0


# Running the contenders --------------------------------------------------------------------------


class Servers:
    """Test sites served by ``crawl.py serve`` processes while entered; ``again()`` restarts them."""

    def __init__(self, *, seed: int, pages: int, count: int = 1, large_file_bytes=2 * 2**20, ports=None):
        self.seed, self.pages, self.count, self.large_file_bytes = seed, pages, count, large_file_bytes
        self.ports = list(ports) if ports else [0] * count
        self.processes: list[subprocess.Popen] = []
        self.cpu_seconds = 0.0  # of the server processes, once stopped

    def __enter__(self) -> Servers:
        for first in range(0, self.count, SITES_PER_SERVER):
            command = [sys.executable, str(SCRIPT), "serve", "--seed", str(self.seed + first)]
            command += ["--pages", str(self.pages), "--large-file-bytes", str(self.large_file_bytes)]
            command += ["--ports", ",".join(map(str, self.ports[first : first + SITES_PER_SERVER]))]
            self.processes.append(
                subprocess.Popen(  # noqa: S603 (this script, with numbers)
                    command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
                )
            )
        lines = [process.stdout.readline() for process in self.processes]
        if not all(lines):
            self.__exit__()
            raise RuntimeError("a test site server did not start (its error is above)")
        self.ports = [port for line in lines for port in json.loads(line)]
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
        """The same sites on the same ports, started afresh (cold caches) when entered."""
        return Servers(
            seed=self.seed,
            pages=self.pages,
            count=self.count,
            large_file_bytes=self.large_file_bytes,
            ports=self.ports,
        )


def _wait(process: subprocess.Popen):
    """Reap ``process`` and return its resource usage (its CPU time)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage


def _watch_peaks(processes: list[subprocess.Popen], peaks: dict[int, int], done: threading.Event) -> None:
    """Keep the peak RSS (VmHWM, which only grows) of running processes, read every 0.1 s.

    Not wait4's ru_maxrss: a child started by vfork counts the RSS of this process in it.
    """
    while not done.wait(0.1):
        for process in processes:
            peaks[process.pid] = max(peaks.get(process.pid, 0), _status_kib("VmHWM", process.pid))


@dataclass
class Run:
    """One crawl by one contender: wall time, the response records written, CPU and memory."""

    name: str
    seconds: float
    uris_by_site: dict[str, list[str]]  # target URIs of the response records, by site ("" for ours)
    cpu_seconds: float
    peak_rss_kib: int
    directory: Path
    server_cpu_seconds: float = 0.0
    inside: dict = field(default_factory=dict)  # what our crawler reported about itself

    @property
    def uris(self) -> list[str]:
        return [uri for uris in self.uris_by_site.values() for uri in uris]

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
    return [*command, *([f"--wait={wait}"] if wait else []), url]


def run_wget(servers: Servers, work: Path, *, wait: float = 0.0) -> Run:
    """One wget process per site of ``servers``, all at once; wall time until the last one ends."""
    directories = [work / f"wget-{index}" for index in range(servers.count)]
    for directory in directories:
        directory.mkdir(parents=True)
    peaks: dict[int, int] = {}
    done = threading.Event()
    started = time.perf_counter()
    processes = [
        subprocess.Popen(  # noqa: S603 (wget on a URL of our own test site)
            wget_command(servers.url(index), directory, wait=wait), stdin=subprocess.DEVNULL
        )
        for index, directory in enumerate(directories)
    ]
    if len(processes) == 1:  # the throughput and memory measurements: watch its memory
        threading.Thread(target=_watch_peaks, args=(processes, peaks, done), daemon=True).start()
    usages = [_wait(process) for process in processes]
    seconds = time.perf_counter() - started
    done.set()
    for process, directory in zip(processes, directories, strict=True):
        # 8: some answers were HTTP errors (the site has a 404 and a 500 on purpose).
        if process.returncode not in (0, 8):
            print(f"wget exited with {process.returncode}, see {directory / 'wget.log'}", file=sys.stderr)
    return Run(
        name="wget",
        seconds=seconds,
        uris_by_site={
            f"127.0.0.1:{port}": warc_responses([directory / "wget.warc.gz"])
            for port, directory in zip(servers.ports, directories, strict=True)
        },
        cpu_seconds=sum(usage.ru_utime + usage.ru_stime for usage in usages),
        peak_rss_kib=max(peaks.values(), default=0),
        directory=work,
    )


def run_ours(servers: Servers, work: Path, *, delay: float, threads: int, profile: bool) -> Run:
    """Our crawler in a process of its own, one site crawl per site of ``servers``."""
    directory = work / "ours"
    directory.mkdir(parents=True)
    command = [sys.executable, str(SCRIPT), "ours", "--out", str(directory), "--threads", str(threads)]
    command += ["--delay", str(delay), *(["--profile"] if profile else [])]
    command += [servers.url(index) for index in range(servers.count)]
    with (directory / "result.json").open("w") as output:
        process = subprocess.Popen(  # noqa: S603 (this script, with our own test site's URLs)
            command, stdin=subprocess.DEVNULL, stdout=output, cwd=ROOT
        )
        usage = _wait(process)
    if process.returncode != 0:
        raise RuntimeError(f"our crawler exited with {process.returncode} (its error is above)")
    inside = json.loads((directory / "result.json").read_text())
    if inside["broken"]:
        raise RuntimeError(f"our crawler broke: {inside['broken'][:3]}")
    return Run(
        name="ours",
        seconds=inside["seconds"],  # from the first request to the last WARC file closed
        uris_by_site={"": warc_responses(sorted(directory.glob("*.warc.gz")))},
        cpu_seconds=usage.ru_utime + usage.ru_stime,
        peak_rss_kib=inside["peak_rss_kib"],
        directory=directory,
        inside=inside,
    )


def contest(
    servers: Servers, work: Path, log, *, delay=0.0, threads=8, profile=False
) -> tuple[Run, Run, str]:
    """wget, then ours, each against freshly started servers; and notes (how ours ended, the load)."""
    load = os.getloadavg()[0]
    with servers as started:
        log(f"  wget on {started.count} site(s) from {started.url()}")
        peer = run_wget(started, work / "wget", wait=delay)
    peer.server_cpu_seconds = started.cpu_seconds
    with servers.again() as again:
        log("  our crawler")
        mine = run_ours(again, work, delay=delay, threads=threads, profile=profile)
    mine.server_cpu_seconds = again.cpu_seconds
    ends = ", ".join(f"{reason} {count:,}" for reason, count in mine.inside["stop_reasons"].items())
    notes = f"- our site crawls ended: {ends}\n"
    notes += f"- load average (1 min) before / after: {load:.1f} / {os.getloadavg()[0]:.1f}"
    return mine, peer, notes


# The figures -------------------------------------------------------------------------------------


def completeness(site, mine: Run, peer: Run) -> dict:
    """Ground truth captured by each, whether ours holds what wget got, and what wget missed."""
    from harvest.crawler.urls import canonicalize

    hops = site.ground_truth_hops(policy="host", obey_robots=True)
    truth = set(hops)
    got = {run.name: {canonicalize(uri) for uri in run.uris} - {None} for run in (mine, peer)}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for url in sorted(truth - got["wget"]):
        # Grouped by the hop the ground truth reaches it by, and by its path with the numbers masked.
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
            if fields[1] != "-9998":
                start = datetime.strptime(fields[0], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
                requests[fields[9]].append((start, int(fields[7].removesuffix("ms")) / 1000))
    return requests


def politeness(requests: dict[str, list[tuple[float, float]]], delay: float) -> dict:
    """The politeness-bound ideal of a crawl, and how much later than the delay each next request came."""
    counts = [len(times) for times in requests.values()]
    late = []
    for times in requests.values():
        times.sort()
        # The engine counts the delay from the end of a step: the lateness includes our processing.
        late += [b[0] - a[0] - a[1] - delay for a, b in itertools.pairwise(times)]
    late = sorted(late) or [0.0]
    return {
        "sites": len(counts),
        "requests": (min(counts), statistics.median(counts), max(counts), sum(counts)),
        "ideal": max((count - 1) * delay for count in counts),
        "ideal_with_fetches": max((len(t) - 1) * delay + sum(d for _, d in t) for t in requests.values()),
        "late": (statistics.mean(late), late[len(late) // 2], late[int(len(late) * 0.95)], late[-1]),
    }


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    cpu, system = "", platform.system()
    with contextlib.suppress(OSError):
        models = re.findall(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
        cpu = models[0] if models else ""
    with contextlib.suppress(OSError, KeyError):
        system = platform.freedesktop_os_release()["PRETTY_NAME"]
    wget = subprocess.run([WGET, "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    return {
        "cpus": f"{os.cpu_count()} ({cpu})",
        "memory": f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB",
        "system": f"{system}, Linux {platform.release()}",
        "python": platform.python_version(),
        "wget": (wget.stdout.splitlines() or ["?"])[0],
    }


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


def _verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def report_throughput(pages: int, mine: Run, peer: Run, found: dict, notes: str) -> list[str]:
    """The throughput and completeness sections."""
    ratio, truth = mine.rate / peer.rate, found["truth"]
    lines = [f"### 1. Throughput: one site of {pages:,} pages, no delay", "", *_runs_table(mine, peer), ""]
    lines += [f"- ours / wget, URLs/s: **{ratio:.2f}** (goal ≥ 1.0: {_verdict(ratio >= 1.0)})", notes]
    lines += [_parts_line(mine), ""]
    lines += [f"### 2. Completeness: the same crawls against the ground truth ({truth:,} URLs)", ""]
    lines += ["| contender | ground truth captured | share | other URLs | distinct canonical URLs |"]
    lines += ["|---|---:|---:|---:|---:|"]
    for name in ("ours", "wget"):
        captured = found["captured"][name]
        lines.append(
            f"| {name} | {captured:,} | {captured / truth:.1%} | {found['outside'][name]:,}"
            f" | {found['distinct'][name]:,} |"
        )
    missing, missed = found["wget_not_ours"], found["ours_missed"]
    lines += [
        "",
        f"- ours ⊇ (wget's ∩ ground truth): {'NO, missing ' + str(missing[:5]) if missing else 'yes'}",
        f"- ground truth ours missed: {len(missed)}" + (f" {missed[:10]}" if missed else ""),
        "",
        "Ground truth wget missed, by the hop that reaches it and the path (numbers as N):",
        "",
        "| hop | path | URLs | example |",
        "|---|---|---:|---|",
    ]
    for (hop, path), urls in found["wget_missed"][:15]:
        lines.append(f"| {hop} | `{path}` | {len(urls):,} | `{urls[0]}` |")
    if rest := found["wget_missed"][15:]:
        lines.append(f"| | {len(rest)} more groups | {sum(len(urls) for _, urls in rest):,} | |")
    return lines


def _parts_line(run: Run) -> str:
    """Where our CPU went, per URL, by part (thread CPU time; not measured under --profile)."""
    parts, urls = run.inside.get("parts") or {}, len(run.uris)
    if not parts or not urls:
        return ""
    per_url = Counter({key: seconds * 1000 / urls for key, seconds in parts.items()})
    steps, fetch, links, writer = (per_url[key] for key in ("steps", "fetch", "links", "writer"))
    rest = run.cpu_seconds * 1000 / urls - steps - writer
    return (
        f"- our CPU per URL, by thread: fetch thread's steps {steps:.2f} ms (fetch {fetch:.2f},"
        f" links {links:.2f}, the rest {steps - fetch - links:.2f}), WARC writer's thread {writer:.2f} ms,"
        f" rest of the process {rest:.2f} ms"
    )


def report_politeness(args, mine: Run, peer: Run, notes: str) -> list[str]:
    """The politeness section: both against their ideal, and each other."""
    delay = args.delay
    figures = politeness(crawl_log_requests(mine.directory / "crawl.log"), delay)
    low, median, high, total = figures["requests"]
    counts = [len(uris) for uris in peer.uris_by_site.values()]
    peer_ideal = max((count - 1) * delay for count in counts)
    ratio, bound, late = mine.seconds / figures["ideal"], figures["ideal_with_fetches"], figures["late"]
    return [
        f"### 3. Politeness: {args.sites:,} sites of {args.site_pages} pages, {delay} s delay, one process",
        "",
        "| contender | requests per site (min / median / max) | all URLs | seconds | ideal s | ratio to ideal"
        " | ratio to wget | CPU s | server CPU s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        f"| ours (1 process, {args.threads} threads) | {low} / {median:.0f} / {high} | {len(mine.uris):,}"
        f" | {mine.seconds:.1f} | {figures['ideal']:.1f} | **{ratio:.2f}**"
        f" | {mine.seconds / peer.seconds:.2f} | {mine.cpu_seconds:.1f} | {mine.server_cpu_seconds:.1f} |",
        f"| wget ({args.sites} processes at once) | {min(counts)} / {statistics.median(counts):.0f} /"
        f" {max(counts)} | {len(peer.uris):,} | {peer.seconds:.1f} | {peer_ideal:.1f}"
        f" | {peer.seconds / peer_ideal:.2f} | 1.00 | {peer.cpu_seconds:.1f}"
        f" | {peer.server_cpu_seconds:.1f} |",
        "",
        f"- ideal = max over sites of (requests - 1) x {delay} s; ours counts every request in its crawl log"
        f" (robots.txt, /sitemap.xml, redirects and errors included; {total:,} in all), wget its response"
        " records",
        f"- ours / ideal: **{ratio:.2f}** (goal ≤ 1.2: {_verdict(ratio <= 1.2)}); over the ideal that also"
        f" counts each site's own fetch times ({bound:.1f} s): {mine.seconds / bound:.2f}",
        "- our next request to a site came later than the delay after the end of the previous one by:"
        f" mean {late[0] * 1000:.0f} ms, median {late[1] * 1000:.0f} ms, 95th percentile"
        f" {late[2] * 1000:.0f} ms, max {late[3] * 1000:.0f} ms",
        notes,
    ]


def report_memory(pages: int, mine: Run, peer: Run, notes: str) -> list[str]:
    """The memory section, with how our RSS grew during the crawl."""
    samples = mine.inside["samples"]
    picked = [*samples[:: max(1, len(samples) // 8)][:8], *samples[-1:]]
    peak_mb = mine.peak_rss_kib * 1024 / 1e6
    return [
        f"### 4. Memory: one site of {pages:,} pages, no delay",
        "",
        *_runs_table(mine, peer),
        "",
        f"- our crawler's peak RSS: **{mine.peak_rss_kib / 1024:.0f} MiB = {peak_mb:.0f} MB** (goal < 200 MB:"
        f" {_verdict(peak_mb < 200)}); after its imports, before crawling:"
        f" {mine.inside['baseline_rss_kib'] / 1024:.0f} MiB",
        "- our RSS during the crawl (seconds: URLs done, MiB): "
        + ", ".join(f"{s:.0f} s: {done:,}, {rss / 1024:.0f}" for s, done, rss in picked),
        notes,
    ]


def _profile_section(run: Run) -> list[str]:
    path = run.directory / "profile.txt"
    if not path.exists():
        return []
    title = "Profile of our crawler (cProfile of the fetch threads' steps and the writer's thread; slows it):"
    return [title, "```", path.read_text().strip(), "```"]


# Main --------------------------------------------------------------------------------------------


def benchmark(args, work: Path, log) -> list[list[str]]:
    """Run the measurements asked for, one after the other; the report's sections."""
    from webarchive.testsite import TestSite

    sections = []
    options = {"threads": args.threads, "profile": args.profile}
    if "throughput" in args.only:
        log(f"Throughput and completeness: one site of {args.pages:,} pages")
        servers = Servers(seed=args.seed, pages=args.pages)
        mine, peer, notes = contest(servers, work / "throughput", log, **options)
        # The ground truth of the site on the port both crawled (computed here: nothing is served).
        site = TestSite(port=servers.ports[0], seed=args.seed, pages=args.pages)
        try:
            found = completeness(site, mine, peer)
        finally:
            site.stop()
        sections += [report_throughput(args.pages, mine, peer, found, notes), _profile_section(mine)]
    if "politeness" in args.only:
        log(f"Politeness: {args.sites} sites of {args.site_pages} pages, {args.delay} s delay")
        # A small large file: 200 copies of the 2 MiB one would measure gzip more than politeness.
        servers = Servers(seed=args.seed, pages=args.site_pages, count=args.sites, large_file_bytes=100_000)
        mine, peer, notes = contest(servers, work / "politeness", log, delay=args.delay, **options)
        sections += [report_politeness(args, mine, peer, notes), _profile_section(mine)]
    if "memory" in args.only:
        log(f"Memory: one site of {args.memory_pages:,} pages (minutes at full size)")
        servers = Servers(seed=args.seed, pages=args.memory_pages)
        mine, peer, notes = contest(servers, work / "memory", log, threads=args.threads)
        sections.append(report_memory(args.memory_pages, mine, peer, notes))
    return [section for section in sections if section]


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
        "--memory-pages", type=int, default=18_500, help="memory site (18,500: ~100,000 URLs)"
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the (first) test site")
    parser.add_argument("--threads", type=int, default=8, help="our crawler's fetch threads")
    parser.add_argument("--workdir", help="where the WARC files go while measured (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the WARC files and logs (in --workdir)")
    parser.add_argument(
        "--profile", action="store_true", help="profile our crawler (slows it), print the top"
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
        lines = ["## Crawling: our crawler against wget", "", *(f"- {k}: {v}" for k, v in machine().items())]
        print("\n".join(lines + [line for section in sections for line in ("", *section)]))
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
