"""Benchmark: the DNS check of a broad-crawl preparation (harvest.preload.dns) against dnsperf.

    .venv/bin/python benchmarks/preload_dns.py [--domains N] [--missing SHARE] [--duration S]
        [--concurrency N[,N…]] [--dnsperf-outstanding N] [--smoke]

Generates ``--domains`` names (default 200,000: ``d{i}.bench-preload.test``), of which a
share (``--missing``, default 0.2) do not exist, and starts Debian's dnsmasq on 127.0.0.1
answering for the others from a hosts file held in memory (tests.dns_server: no upstream,
every other name NXDOMAIN). Then, against that resolver:

1. ``dnsperf`` (Debian's package) for ``--duration`` seconds, A queries for the same
   names in turn, ``--dnsperf-outstanding`` queries in flight: the queries per second the
   resolver sustains under a dedicated load tool, its capacity;
2. ``check_domains`` over all the names, for each ``--concurrency`` (default 50, 100 and
   500), timeout 2 s, 1 retry: domains per second, and queries per second, counting
   every query sent (``DnsStats``; dnsmasq's own count of those it answered, from its
   statistics on SIGUSR1, is printed too): a live name takes one query (A), a missing
   one two (A, then A for ``www.``; NXDOMAIN spares the AAAA queries), a query lost
   one more per retry, after a 2 s timeout.

The ratio is our queries/s over dnsperf's. Every result is checked (live exactly for
the names served; exit status 1 otherwise). The CPU time of this process and of dnsmasq
during each measurement tells which side was the limit. No database, no network beyond
127.0.0.1. The results are printed as Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import collections
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.*, tests.*), when run as a script
    sys.path.insert(0, str(ROOT))
DNSPERF = shutil.which("dnsperf") or "/usr/bin/dnsperf"
SMOKE = {"domains": 3000, "duration": 1.0, "concurrency": "200"}


def name(i: int) -> str:
    return f"d{i}.bench-preload.test"


def served(i: int, missing: float) -> bool:
    """Whether the i-th name exists: spread evenly, a share ``missing`` of them does not."""
    return int(i * missing) == int((i + 1) * missing)


def served_pairs(domains: int, missing: float):
    for i in range(domains):
        if served(i, missing):
            yield name(i), f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_dnsperf(port: int, query_file: Path, *, duration: float, outstanding: int) -> dict:
    command = [DNSPERF, "-s", "127.0.0.1", "-p", str(port), "-d", str(query_file)]
    command += ["-l", str(duration), "-q", str(outstanding), "-t", "2"]
    done = subprocess.run(  # noqa: S603 (dnsperf on our own dnsmasq)
        command, capture_output=True, text=True, timeout=duration + 60, check=True
    )

    def number(label: str) -> float:
        found = re.search(rf"{label}:\s+([\d.]+)", done.stdout)
        if not found:
            raise RuntimeError(f"dnsperf printed no {label!r}:\n{done.stdout}\n{done.stderr}")
        return float(found.group(1))

    return {
        "seconds": number("Run time \\(s\\)"),
        "queries": int(number("Queries completed")),
        "lost": int(number("Queries lost")),
        "qps": number("Queries per second"),
    }


def run_ours(server, *, domains: int, missing: float, concurrency: int) -> dict:
    from harvest.preload.dns import DnsSettings, DnsStats, check_domains

    settings = DnsSettings(nameservers=(server.address,), timeout=2.0, retries=1, concurrency=concurrency)
    details: collections.Counter[str] = collections.Counter()
    wrong = 0
    before_queries = server.queries_answered()
    before_cpu, before_server_cpu = time.process_time(), cpu_seconds(server.process.pid)
    started = time.perf_counter()
    stats = DnsStats()
    for result in check_domains((name(i) for i in range(domains)), settings, stats=stats):
        details[result.detail or "live"] += 1
        i = int(result.name[1 : result.name.index(".")])
        wrong += result.live != served(i, missing)
    seconds = time.perf_counter() - started
    cpu, server_cpu = time.process_time() - before_cpu, cpu_seconds(server.process.pid) - before_server_cpu
    return {
        "concurrency": concurrency,
        "seconds": seconds,
        "domains": sum(details.values()),
        "queries": stats.queries,
        "answered": server.queries_answered() - before_queries,
        "retries": stats.retries,
        "timeouts": stats.timeouts,
        "details": dict(details),
        "wrong": wrong,
        "cpu": cpu,
        "server_cpu": server_cpu,
    }


def benchmark(args, work: Path, log) -> dict:
    from tests.dns_server import start_dnsmasq

    query_file = work / "queries.txt"
    with open(query_file, "w") as out:
        for i in range(args.domains):
            out.write(f"{name(i)} A\n")
    log(f"Starting dnsmasq with {args.domains:,} names ({args.missing:.0%} missing)")
    started = time.perf_counter()
    server = start_dnsmasq(
        served_pairs(args.domains, args.missing), work / "dnsmasq", cache_size=max(10_000, 2 * args.domains)
    )
    try:
        startup = time.perf_counter() - started
        log(f"  dnsmasq answering on {server.nameserver} after {startup:.1f} s")
        before = cpu_seconds(server.process.pid)
        peer = run_dnsperf(
            server.port, query_file, duration=args.duration, outstanding=args.dnsperf_outstanding
        )
        peer["server_cpu"] = cpu_seconds(server.process.pid) - before
        log(f"  dnsperf: {peer['qps']:,.0f} queries/s")
        ours = []
        for concurrency in args.concurrency:
            ours.append(run_ours(server, domains=args.domains, missing=args.missing, concurrency=concurrency))
            rate = ours[-1]["domains"] / ours[-1]["seconds"]
            log(f"  check_domains, concurrency {concurrency}: {rate:,.0f} domains/s")
    finally:
        server.stop()
    return {"startup": startup, "peer": peer, "ours": ours}


def report(args, result: dict) -> str:
    from benchmarks.environment import cpus, memory

    peer = result["peer"]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    expected_live = sum(served(i, args.missing) for i in range(args.domains))
    lines = [
        "## Broad-crawl preparation: DNS checks against dnsmasq and dnsperf",
        "",
        f"- cpus: {cpus()}",
        f"- memory: {memory()}",
        f"- python: {platform.python_version()}",
        f"- resolver: {_version(['/usr/sbin/dnsmasq', '--version'])}, on 127.0.0.1,"
        f" answering from a hosts file (started in {result['startup']:.1f} s);"
        f" load tool: dnsperf {_version([DNSPERF, '-h'], 'Version')}",
        f"- names: {args.domains:,} (`d{{i}}.bench-preload.test`), {expected_live:,} served (A),"
        f" {args.domains - expected_live:,} missing (NXDOMAIN)",
        "",
        "| contender | seconds | domains | queries | domains/s | queries/s"
        " | queries/s ÷ dnsperf's | CPU of the client | CPU of dnsmasq |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| `dnsperf -q {args.dnsperf_outstanding}` (A queries, the names in turn; the resolver's capacity)"
        f" | {peer['seconds']:.1f} | {peer['queries']:,} | {peer['queries']:,} | {peer['qps']:,.0f}"
        f" | {peer['qps']:,.0f} | 1.00 | | {peer['server_cpu'] / peer['seconds']:.0%} |",
    ]
    for run in result["ours"]:
        seconds = run["seconds"]
        lines.append(
            f"| `check_domains`, concurrency {run['concurrency']}, timeout 2 s, 1 retry | {seconds:.1f}"
            f" | {run['domains']:,} | {run['queries']:,} | {run['domains'] / seconds:,.0f}"
            f" | {run['queries'] / seconds:,.0f} | {run['queries'] / seconds / peer['qps']:.2f}"
            f" | {run['cpu'] / seconds:.0%} | {run['server_cpu'] / seconds:.0%} |"
        )
    lines += [
        "",
        f"- dnsperf: {peer['lost']:,} queries lost (timed out after 2 s)",
        *(
            f"- `check_domains` at concurrency {run['concurrency']}: "
            + ", ".join(f"{detail} {count:,}" for detail, count in sorted(run["details"].items()))
            + f"; queries sent {run['queries']:,}, answered by dnsmasq {run['answered']:,},"
            f" timeouts {run['timeouts']:,}, retries {run['retries']:,}; wrong results: {run['wrong']}"
            for run in result["ours"]
        ),
        f"- peak memory of this process (VmHWM): {peak_mib:,.0f} MiB",
        f"- load average (1 min) at the end: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)",
    ]
    return "\n".join(lines)


def _version(command: list[str], marker: str = "") -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10)  # noqa: S603 (--version)
    except OSError:
        return "?"
    lines = (done.stdout + done.stderr).splitlines()
    chosen = [line for line in lines if marker in line] if marker else lines
    return " ".join(chosen[0].split()[:3]) if chosen else "?"


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", type=int, default=200_000, help="names to check")
    parser.add_argument("--missing", type=float, default=0.2, help="share of names that do not exist")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of dnsperf")
    parser.add_argument("--concurrency", default="50,100,500", help="lookups in flight, comma-separated")
    parser.add_argument("--dnsperf-outstanding", type=int, default=100, help="dnsperf's queries in flight")
    parser.add_argument("--smoke", action="store_true", help="a tiny run, to check that the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    try:
        args.concurrency = [int(value) for value in args.concurrency.split(",")]
    except ValueError:
        parser.error("--concurrency takes numbers separated by commas")
    if args.domains < 1 or args.duration <= 0 or min(args.concurrency) < 1 or not 0 <= args.missing < 1:
        parser.error("--domains, --duration and --concurrency must be positive, --missing from 0 to 1")
    if not (os.access("/usr/sbin/dnsmasq", os.X_OK) and os.access(DNSPERF, os.X_OK)):
        parser.error("needs /usr/sbin/dnsmasq and dnsperf (Debian packages dnsmasq-base and dnsperf)")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    with tempfile.TemporaryDirectory(prefix="preload-dns-bench-") as work:
        result = benchmark(args, Path(work), log)
    print(report(args, result))
    return 1 if any(run["wrong"] or run["domains"] != args.domains for run in result["ours"]) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
