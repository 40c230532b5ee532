"""Benchmark: a broad crawl of thousands of polite sites in one crawl worker process, the real Celery path.

    .venv/bin/python benchmarks/broad_crawl.py [--sites N] [--pages P] [--delay S]
        [--sites-per-worker N] [--sites-per-address N] [--baseline-pages N] [--keep]

The sites are ``webarchive.testsite.broad`` (``site-N.fr``, ``--pages`` pages each, ``pages + 4`` URLs
with robots.txt, the sitemap, a stylesheet and an image; ``--sites-per-address`` sites on each
loopback address 127.64.x.y), served by one asyncio process of its own, which logs every request.
Debian's dnsmasq answers for their names (``tests.dns_server``); the worker asks it
(``HARVEST_DNS_SERVERS``). A throwaway PostgreSQL database (``webarchive_bench_broad_<pid>``) is
created and migrated; through the project's services, the default template gets min = max delay =
``--delay`` and delay factor 0, N domains are created (``domains_create_bulk``; their seed,
``http://site-N.fr:PORT/``, is then written in one UPDATE), a snapshot harvest definition is made
due and launched (``definition_launch``: the launcher's jobs), and ``jobs_dispatch_submitted``
sends one ``harvest.crawl_site`` task per site to RabbitMQ (127.0.0.1:5672, in a virtual host of
its own: the broker is shared, and the crawl worker tests delete the crawl queues of the default
one). Then ONE crawl worker runs them, started as the Procfile's ``crawler:`` line says.

First, in a worker of its own started the same way (with ``HARVEST_IP_MIN_INTERVAL=0``: one site
alone on its address), the peer: one site of ``--baseline-pages`` pages with no delay
(``site-0.asso.fr``, a selective harvest of its own): its URLs/s and CPU per URL, the rate of the
same path when nothing waits. ``--dedup`` sets both templates' deduplication (default: the default
template's, all earlier captures). Measured for the broad crawl:

- wall time from its first request (the server's log) to the last site ended (the sites' rows);
- the politeness ideal, max over sites of (requests - 1) x delay (requests from the server's log);
  the ideal of a process holding ``--sites-per-worker`` sites at a time (waves of that many); the
  CPU-bound ideal: its URLs at the baseline's CPU per URL on one CPU (one process: one GIL);
- the worker's peak RSS (VmHWM, sampled every second and at the end), CPU (user + system from
  /proc/PID/stat), threads (entries of /proc/PID/task), open descriptors;
- URLs: the server's count and the sites' rows (``urls_done``); URLs per CPU second, over the
  baseline's: the goal's "URLs/s per CPU against the one-site, no-delay rate";
- per address: the shortest time between the starts of two requests to one address
  (``HARVEST_IP_MIN_INTERVAL``, when several sites share one).

Everything stays on 127.0.0.0/8. Work files (WARC, logs) go to ``var/bench/broad-crawl-<pid>/``,
removed with the database at the end unless ``--keep``. Prints the results as Markdown.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import itertools
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.*, tests.*), when run as a script
    sys.path.insert(0, str(ROOT))
BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/{vhost}"
RABBITMQCTL = shutil.which("rabbitmqctl") or "/usr/sbin/rabbitmqctl"
CRAWL_QUEUES = ("crawl-high", "crawl-low")
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/webarchive_bench_broad_{pid}"
BASELINE_SUFFIX = "asso.fr"  # a public suffix of its own: site-0.asso.fr is not one of the broad sites


def _status_kib(pid: int, key: str) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _count(path: str) -> int:
    with contextlib.suppress(OSError):
        return len(os.listdir(path))
    return 0


def _die_with_parent() -> None:
    """In a child, before exec: the kernel kills it if the benchmark dies (no orphan worker)."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


# The test website, in a process of its own ----------------------------------------------------------


class SiteServer:
    """``python -m webarchive.testsite.broad`` while entered; its request log read afterwards."""

    def __init__(self, work: Path, name: str, *, sites: int, pages: int, per_address=1, suffix="fr", first=0):
        self.log_path = work / f"{name}-requests.log"
        self.options = ["--sites", str(sites), "--pages", str(pages), "--sites-per-address", str(per_address)]
        self.options += ["--suffix", suffix, "--log", str(self.log_path), "--first-address", str(first)]
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.counts: dict[str, int] = {}
        self.cpu = 0.0

    def __enter__(self) -> SiteServer:
        self.process = subprocess.Popen(  # noqa: S603 (the project's own test website)
            [sys.executable, "-m", "webarchive.testsite.broad", *self.options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            preexec_fn=_die_with_parent,
        )
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            raise RuntimeError("the test website did not start (its error is above)")
        self.port = json.loads(line)["port"]
        return self

    def __exit__(self, *exc_info) -> None:
        if self.process is None:
            return
        with contextlib.suppress(OSError):
            self.cpu = cpu_seconds(self.process.pid)
            self.process.stdin.close()
        line = self.process.stdout.readline()
        self.counts = json.loads(line)["requests"] if line else {}
        self.process.wait(timeout=60)
        self.process = None

    def requests(self) -> list[tuple[float, str, str, int]]:
        """(time, local address, host without port, status) of every request, in order."""
        rows = []
        with self.log_path.open() as lines:
            for line in lines:
                when, local, host, status, _size, _target = line.split(" ", 5)
                rows.append((float(when), local, host.rsplit(":", 1)[0].lower(), int(status)))
        return rows


# The worker, as the Procfile starts it -------------------------------------------------------------


def procfile_command(name: str = "crawler") -> str:
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit(f"no {name}: line in the Procfile")


@dataclass
class WorkerWatch:
    """Samples of the worker process, every second: RSS, peak, threads, descriptors, CPU."""

    pid: int
    samples: list[tuple[float, int, int, int, int, float]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def sample(self) -> tuple[float, int, int, int, int, float]:
        row = (
            time.time(),
            _status_kib(self.pid, "VmRSS"),
            _status_kib(self.pid, "VmHWM"),
            _count(f"/proc/{self.pid}/task"),
            _count(f"/proc/{self.pid}/fd"),
            cpu_seconds(self.pid),
        )
        self.samples.append(row)
        return row

    def run(self) -> None:
        while not self.done.wait(1.0):
            with contextlib.suppress(OSError):
                self.sample()

    def between(self, start: float, end: float) -> list[tuple]:
        return [row for row in self.samples if start <= row[0] <= end]


class Worker:
    """ONE crawl worker: the Procfile's ``crawler:`` line, run by the shell as honcho runs it."""

    def __init__(self, environment: dict[str, str], log_path: Path):
        self.environment, self.log_path = environment, log_path
        self.process: subprocess.Popen | None = None
        self.watch: WorkerWatch | None = None
        self.command = procfile_command()

    def __enter__(self) -> Worker:
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(  # noqa: S603 (the Procfile's own line)
            # "exec env": the shell expands the line as honcho's would, then becomes the worker itself.
            ["/bin/sh", "-c", f"exec env {self.command}"],
            env=self.environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 120
        while "ready." not in self.log_path.read_text(errors="replace"):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.2)
        self.watch = WorkerWatch(self.process.pid)
        self.watch.sample()
        threading.Thread(target=self.watch.run, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.watch:
            self.watch.done.set()
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        self._log.close()


# The database's side: setup through the services, and the sites' rows ---------------------------


def setup_broad(args, port: int) -> int:
    """N domains in a snapshot harvest launched by the launcher; returns its run's id."""
    from harvest.choices import HarvestKind
    from harvest.models import HarvestTemplate, SeedList
    from harvest.services.domains import domains_create_bulk
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import definition_run_now, definition_save, template_save
    from webarchive.testsite.broad import BroadSites

    sites = BroadSites(sites=args.sites, pages=args.pages)
    template = HarvestTemplate.objects.get(name="default")
    template_save(
        template=template, min_delay=args.delay, max_delay=args.delay, delay_factor=0.0, **dedup_option(args)
    )
    names = [sites.name(site) for site in range(args.sites)]
    created = domains_create_bulk(names=names)
    # One seed per site, its port included (the default seeds are http and https, with and without www).
    seed_lists = list(SeedList.objects.filter(domain__name__in=names).select_related("domain"))
    for seed_list in seed_lists:
        site = int(seed_list.domain.name.split(".")[0].removeprefix("site-"))
        seed_list.seeds = f"http://{sites.name(site)}:{port}/"
    SeedList.objects.bulk_update(seed_lists, ["seeds"], batch_size=2000)
    definition = definition_save(kind=HarvestKind.SNAPSHOT, name=f"Broad crawl benchmark, {created:,} sites")
    definition_run_now(definition=definition)
    run = definition_launch(definition_id=definition.pk)
    if run is None:
        raise RuntimeError("the snapshot was not launched")
    return run.pk


def dedup_option(args) -> dict:
    """The template's deduplication: the default template's own unless --dedup says."""
    return {"dedup": args.dedup} if args.dedup else {}


def setup_baseline(args, port: int) -> int:
    """One site with no delay, in a selective harvest of its own; returns its run's id."""
    from datetime import timedelta

    from django.utils import timezone

    from harvest.choices import HarvestKind
    from harvest.services.domains import configuration_save, domain_create
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import definition_save, schedule_save, template_save

    name = f"site-0.{BASELINE_SUFFIX}"
    template = template_save(
        name="broad-bench-no-delay",
        depth_policy="host",
        min_delay=0.0,
        max_delay=0.0,
        delay_factor=0.0,
        **dedup_option(args),
    )
    # Inactive: not a domain of the snapshot that follows; a selective harvest takes it all the same.
    domain = domain_create(name=name, seeds=f"http://{name}:{port}/", is_active=False)
    configuration = configuration_save(
        domain=domain, name="no-delay", template=template, seed_lists=list(domain.seed_lists.all())
    )
    schedule = schedule_save(
        name="broad-bench", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3
    )
    definition = definition_save(
        kind=HarvestKind.SELECTIVE,
        name=f"Broad crawl benchmark, one site of {args.baseline_pages:,} pages",
        schedule=schedule,
        configurations=[configuration],
    )
    run = definition_launch(definition_id=definition.pk, now=timezone.now() + timedelta(days=2))
    if run is None:
        raise RuntimeError("the one-site harvest was not launched")
    return run.pk


def dispatch(run_id: int) -> int:
    """Send the site crawls of the run's jobs (the launcher's dispatch, for this run only)."""
    from harvest.models import Job
    from harvest.services.crawls import job_dispatch

    jobs = Job.objects.filter(run_id=run_id).values_list("pk", flat=True)
    return sum(job_dispatch(job_id=job_id) for job_id in list(jobs))


def delete_crawl_queues() -> None:
    """Delete the crawl queues (the worker declares them again): nothing left from an earlier run."""
    from webarchive.celery import app

    with app.connection_for_write() as connection:
        for queue in CRAWL_QUEUES:
            connection.default_channel.queue_delete(queue)


def wait_for_run(run_id: int, *, timeout: float, log, worker: Worker) -> None:
    """Until every site of the run has ended (and its jobs with them), reporting progress."""
    from django.db.models import Count, Sum

    from harvest.choices import JobStatus, SiteState
    from harvest.models import Job, JobConfiguration

    entries = JobConfiguration.objects.filter(job__run_id=run_id)
    deadline, said = time.monotonic() + timeout, 0.0
    while True:
        states = dict(entries.values_list("state").annotate(Count("pk")).order_by())
        running = (JobStatus.NEW, JobStatus.SUBMITTED, JobStatus.STARTED)
        open_jobs = Job.objects.filter(run_id=run_id, status__in=running).count()
        if not open_jobs and not states.get(SiteState.QUEUED) and not states.get(SiteState.RUNNING):
            return
        if time.monotonic() - said >= 15:
            said = time.monotonic()
            urls = entries.aggregate(urls=Sum("urls_done"))["urls"] or 0
            _, rss, peak, threads, fds, cpu = worker.watch.samples[-1]
            log(
                f"    sites: {states.get(SiteState.ENDED, 0):,} ended, {states.get(SiteState.RUNNING, 0):,}"
                f" running, {states.get(SiteState.QUEUED, 0):,} queued; URLs (rows) {urls:,};"
                f" worker RSS {rss / 1024:.0f} MiB (peak {peak / 1024:.0f}), {threads} threads, {fds} fds,"
                f" CPU {cpu:.0f} s; load {os.getloadavg()[0]:.1f}"
            )
        if worker.process.poll() is not None:
            raise RuntimeError(f"the worker died:\n{worker.log_path.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the run did not end within {timeout:.0f} s")
        time.sleep(1.0)


def run_rows(run_id: int) -> dict:
    """What the sites' rows say: URLs, how they ended, when the first started and the last ended."""
    from django.db.models import Count, Max, Min, Sum

    from harvest.models import Job, JobConfiguration

    entries = JobConfiguration.objects.filter(job__run_id=run_id)
    totals = entries.aggregate(
        sites=Count("pk"),
        urls=Sum("urls_done"),
        bytes=Sum("bytes_done"),
        errors=Sum("error_count"),
        first_start=Min("started_at"),
        last_end=Max("ended_at"),
        attempts=Max("attempts"),
    )
    totals["stop_reasons"] = dict(entries.values_list("stop_reason").annotate(Count("pk")).order_by())
    totals["jobs"] = dict(
        Job.objects.filter(run_id=run_id).values_list("status").annotate(Count("pk")).order_by()
    )
    totals["errors_seen"] = list(entries.exclude(error="").values_list("error", flat=True)[:3])
    return totals


# The figures -----------------------------------------------------------------------------------


def request_figures(requests: list[tuple[float, str, str, int]], delay: float) -> dict:
    by_site: dict[str, list[float]] = defaultdict(list)
    by_address: dict[str, list[float]] = defaultdict(list)
    for when, local, host, _status in requests:
        by_site[host].append(when)
        by_address[local].append(when)
    counts = [len(times) for times in by_site.values()]
    firsts = sorted(times[0] for times in by_site.values())
    site_gaps = [b - a for times in by_site.values() for a, b in itertools.pairwise(times)]
    address_gaps = [min(b - a for a, b in itertools.pairwise(t)) for t in by_address.values() if len(t) > 1]
    site_gaps.sort()
    return {
        "requests": len(requests),
        "statuses": Counter(status for *_, status in requests),
        "sites": len(by_site),
        "per_site": (min(counts), statistics.median(counts), max(counts)) if counts else (0, 0, 0),
        "ideal": max((count - 1) * delay for count in counts) if counts else 0.0,
        "first": requests[0][0] if requests else 0.0,
        "starts_spread": firsts[-1] - firsts[0] if firsts else 0.0,
        "last_per_site": max((times[-1] - times[0] for times in by_site.values()), default=0.0),
        "last": requests[-1][0] if requests else 0.0,
        "site_gap": (site_gaps[0], site_gaps[len(site_gaps) // 2], site_gaps[int(len(site_gaps) * 0.99)])
        if site_gaps
        else (0.0, 0.0, 0.0),
        "address_gap_min": min(address_gaps) if address_gaps else None,
        "addresses": len(by_address),
        "per_address_max": max((len(t) for t in by_address.values()), default=0),
    }


def worker_figures(watch: WorkerWatch, start: float, end: float) -> dict:
    rows = watch.between(start - 1.5, end + 1.5)
    before = [row for row in watch.samples if row[0] <= start] or watch.samples[:1]
    after = [row for row in watch.samples if row[0] >= end] or watch.samples[-1:]
    return {
        "cpu": after[0][5] - before[-1][5],
        "peak_rss_kib": max(row[2] for row in rows) if rows else after[0][2],
        "rss_start_kib": before[-1][1],
        "threads": (before[-1][3], max(row[3] for row in rows) if rows else 0),
        "fds": (before[-1][4], max(row[4] for row in rows) if rows else 0),
    }


# Main ------------------------------------------------------------------------------------------


def benchmark(args, work: Path, log) -> dict:
    from tests.dns_server import start_dnsmasq
    from webarchive.testsite.broad import BroadSites, address, urls_per_site

    result: dict = {"load_start": os.getloadavg()}
    names = BroadSites(sites=args.sites, pages=args.pages, sites_per_address=args.sites_per_address)
    broad = SiteServer(work, "broad", sites=args.sites, pages=args.pages, per_address=args.sites_per_address)
    # The peer's site on an address after the broad sites': no other site paces it.
    one = SiteServer(
        work,
        "baseline",
        sites=1,
        pages=args.baseline_pages,
        suffix=BASELINE_SUFFIX,
        first=names.address_count,
    )
    with broad, one:
        log(f"Test website: {args.sites:,} sites of {urls_per_site(args.pages)} URLs on port {broad.port}")
        baseline_name = f"site-0.{BASELINE_SUFFIX}"
        pairs = [*names.names(), (baseline_name, address(names.address_count))]
        # Real names are kept for their TTL by the worker's resolver: so are these (dnsmasq gives 0).
        dns = start_dnsmasq(pairs, work / "dnsmasq", cache_size=max(10_000, 2 * len(pairs)), local_ttl=300)
        try:
            log(f"dnsmasq on {dns.nameserver} answering for {len(pairs):,} names")
            baseline_run = setup_baseline(args, one.port)
            started = time.perf_counter()
            broad_run = setup_broad(args, broad.port)
            result["setup_seconds"] = time.perf_counter() - started
            log(
                f"Database ready: {args.sites:,} domains, snapshot launched ({result['setup_seconds']:.0f} s)"
            )
            delete_crawl_queues()
            # The peer in a worker of its own, the same command: no per-address pacing (its one site is
            # alone on its address; HARVEST_IP_MIN_INTERVAL would make it a delay of 0.25 s).
            environment = worker_environment(args, work, dns.nameserver)
            with Worker(
                {**environment, "HARVEST_IP_MIN_INTERVAL": "0"}, work / "worker-baseline.log"
            ) as worker:
                log(f"One site of {args.baseline_pages:,} pages, no delay (the peer), through a worker")
                sent = time.time()
                dispatch(baseline_run)
                wait_for_run(baseline_run, timeout=args.timeout, log=log, worker=worker)
                ended = time.time()
                time.sleep(1.5)
                result["baseline_worker"] = worker_figures(worker.watch, sent, ended)
                result["baseline_worker"]["peak_rss_kib"] = _status_kib(worker.process.pid, "VmHWM")
                result["baseline_rows"] = run_rows(baseline_run)
            with Worker(environment, work / "worker.log") as worker:
                result["worker_command"] = worker.command
                result["worker_environment"] = {
                    key: environment[key] for key in sorted(environment) if key.startswith("HARVEST_")
                }
                idle = worker.watch.sample()
                time.sleep(5)
                result["idle_cpu"] = (worker.watch.sample()[5] - idle[5]) / 5
                log(f"Broad crawl: {args.sites:,} sites, {args.delay} s delay, one worker")
                sent = time.time()
                result["dispatched"] = dispatch(broad_run)
                wait_for_run(broad_run, timeout=args.timeout, log=log, worker=worker)
                ended = time.time()
                time.sleep(1.5)
                result["worker"] = worker_figures(worker.watch, sent, ended)
                result["worker_final_hwm_kib"] = _status_kib(worker.process.pid, "VmHWM")
                result["rows"] = run_rows(broad_run)
                result["samples"] = worker.watch.between(sent, ended)
        finally:
            dns.stop()
    result["server_cpu"], result["server_counts"] = broad.cpu, broad.counts
    result["baseline_requests"] = request_figures(one.requests(), 0.0)
    result["requests"] = request_figures(broad.requests(), args.delay)
    result["load_end"] = os.getloadavg()
    return result


def worker_environment(args, work: Path, nameserver: str) -> dict[str, str]:
    environment = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "DATABASE_URL": os.environ["DATABASE_URL"],
        "CELERY_BROKER_URL": os.environ["CELERY_BROKER_URL"],
        "DEBUG": "0",
        "WEBARCHIVE_VAR_DIR": str(work / "var"),
        "HARVEST_WARC_DIR": str(work / "warcs"),
        "HARVEST_SPOOL_DIR": str(work / "spool"),
        "HARVEST_DNS_SERVERS": nameserver,
        "WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES": "1",
        "HARVEST_SITES_PER_WORKER": str(args.sites_per_worker),
    }
    for name in ("HARVEST_CRAWL_THREADS", "HARVEST_IP_MIN_INTERVAL", "HARVEST_WORKER_MEMORY_MB"):
        if getattr(args, name.lower().removeprefix("harvest_"), None) is not None:
            environment[name] = str(getattr(args, name.lower().removeprefix("harvest_")))
    return environment


def report(args, result: dict) -> str:
    from benchmarks.environment import cpus, memory
    from webarchive.testsite.broad import urls_per_site

    requests, rows, worker = result["requests"], result["rows"], result["worker"]
    base_requests, base_rows, base_worker = (
        result["baseline_requests"],
        result["baseline_rows"],
        result["baseline_worker"],
    )
    wall = rows["last_end"].timestamp() - requests["first"]
    base_wall = base_requests["last"] - base_requests["first"]
    base_urls = base_requests["requests"]
    base_cpu_per_url = base_worker["cpu"] / max(base_urls, 1)
    urls = requests["requests"]
    ideal = requests["ideal"]
    waves = math.ceil(args.sites / args.sites_per_worker)
    slot_ideal = waves * ideal
    cpu_ideal = urls * base_cpu_per_url
    bound = max(slot_ideal, cpu_ideal)
    per_cpu, base_per_cpu = urls / max(worker["cpu"], 1e-9), base_urls / max(base_worker["cpu"], 1e-9)
    peak_mb = max(worker["peak_rss_kib"], result["worker_final_hwm_kib"]) * 1024 / 1e6
    low, median, high = requests["per_site"]
    gap = requests["site_gap"]
    samples = result["samples"]
    picked = [*samples[:: max(1, len(samples) // 8)][:8], *samples[-1:]]
    start = samples[0][0] if samples else 0.0

    def verdict(met: bool) -> str:
        return "met" if met else "NOT met"

    lines = [
        "## Broad crawl: thousands of polite sites in one worker process",
        "",
        f"- cpus: {cpus()}; memory: {memory()}; python {platform.python_version()}",
        f"- load average (1, 5, 15 min) at the start: {', '.join(f'{v:.1f}' for v in result['load_start'])};"
        f" at the end: {', '.join(f'{v:.1f}' for v in result['load_end'])}",
        f"- sites: {args.sites:,} x {args.pages} pages ({urls_per_site(args.pages)} URLs each),"
        f" {args.sites_per_address} per address; delay {args.delay} s (min = max, factor 0);"
        f" --sites-per-worker {args.sites_per_worker}",
        f"- worker: `{result['worker_command']}` with "
        + ", ".join(f"{key}={value}" for key, value in result["worker_environment"].items()),
        f"- setup (domains, seeds, the launcher's jobs): {result['setup_seconds']:.0f} s;"
        f" {result['dispatched']:,} crawl_site tasks sent",
        "",
        "| run | sites | URLs (server) | URLs (rows) | seconds | URLs/s | worker CPU s | CPU ms/URL"
        " | URLs per CPU s | peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        _row(
            "one site, no delay (peer)",
            1,
            base_urls,
            base_rows,
            base_wall,
            base_worker["cpu"],
            base_worker["peak_rss_kib"],
        ),
        _row(
            f"broad, {args.delay} s delay",
            requests["sites"],
            urls,
            rows,
            wall,
            worker["cpu"],
            max(worker["peak_rss_kib"], result["worker_final_hwm_kib"]),
        ),
        "",
        f"- **wall / politeness ideal: {wall / max(ideal, 1e-9):.2f}**"
        f" (goal ≤ 1.2: {verdict(wall <= 1.2 * ideal)});"
        f" ideal = max over sites of (requests - 1) x {args.delay} s = {ideal:.1f} s"
        f" (requests per site min / median / max: {low} / {median:.0f} / {high})",
        f"- ideal with {args.sites_per_worker:,} sites at a time ({waves} wave(s)): {slot_ideal:.1f} s,"
        f" ratio {wall / max(slot_ideal, 1e-9):.2f}; CPU-bound ideal ({urls:,} URLs x"
        f" {1000 * base_cpu_per_url:.2f} ms on one CPU): {cpu_ideal:.1f} s;"
        f" wall / the larger of the two: **{wall / max(bound, 1e-9):.2f}**",
        f"- **worker peak RSS: {peak_mb:.0f} MB** (goal < 1 GB: {verdict(peak_mb < 1000)}); VmHWM at the end"
        f" {result['worker_final_hwm_kib'] / 1024:.0f} MiB; RSS before the broad crawl"
        f" {worker['rss_start_kib'] / 1024:.0f} MiB",
        f"- **URLs per CPU second, broad / one site: {per_cpu / base_per_cpu:.2f}** (goal ≥ 0.8:"
        f" {verdict(per_cpu >= 0.8 * base_per_cpu)})",
        f"- worker threads before / max during: {worker['threads'][0]} / {worker['threads'][1]};"
        f" open descriptors {worker['fds'][0]} / {worker['fds'][1]}",
        f"- next request to a site after the previous one's start: min {gap[0]:.3f} s, median {gap[1]:.3f} s,"
        f" 99th percentile {gap[2]:.3f} s",
        f"- from the first request: the last site's first request {requests['starts_spread']:.1f} s later;"
        f" the longest site, first to last request, {requests['last_per_site']:.1f} s; last request"
        f" {requests['last'] - requests['first']:.1f} s; last site ended (its row) {wall:.1f} s",
        f"- worker CPU beyond the peer's per URL:"
        f" {1000 * max(worker['cpu'] - cpu_ideal, 0) / max(args.sites, 1):.0f} ms per site;"
        f" the idle worker, before the broad crawl: {result['idle_cpu']:.1%} of a CPU",
        f"- addresses: {requests['addresses']:,}; shortest time between two requests to one address:"
        + (f" {requests['address_gap_min']:.3f} s" if requests["address_gap_min"] is not None else " -"),
        f"- answers: {dict(sorted(requests['statuses'].items()))}; server CPU {result['server_cpu']:.1f} s",
        f"- sites' rows: {rows['sites']:,} sites, stop reasons {rows['stop_reasons']}, jobs {rows['jobs']},"
        f" most attempts {rows['attempts']}, errors {rows['errors']}"
        + (f" (first: {rows['errors_seen']})" if rows["errors_seen"] else ""),
        "- worker during the broad crawl (s: RSS MiB, threads, CPU s): "
        + ", ".join(f"{row[0] - start:.0f}: {row[1] / 1024:.0f}, {row[3]}, {row[5]:.0f}" for row in picked),
    ]
    return "\n".join(lines)


def _row(name: str, sites: int, urls: int, rows: dict, seconds: float, cpu: float, peak_kib: int) -> str:
    return (
        f"| {name} | {sites:,} | {urls:,} | {rows['urls'] or 0:,} | {seconds:.1f}"
        f" | {urls / max(seconds, 1e-9):,.0f} | {cpu:.1f} | {1000 * cpu / max(urls, 1):.2f}"
        f" | {urls / max(cpu, 1e-9):,.0f} | {peak_kib / 1024:.0f} MiB |"
    )


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, default=10_000)
    parser.add_argument("--pages", type=int, default=20, help="pages per site (URLs: pages + 4)")
    parser.add_argument("--delay", type=float, default=1.0, help="min = max delay of every site (s)")
    parser.add_argument("--sites-per-worker", type=int, default=1000, help="HARVEST_SITES_PER_WORKER")
    parser.add_argument("--sites-per-address", type=int, default=1)
    parser.add_argument(
        "--baseline-pages", type=int, default=3000, help="pages of the one-site, no-delay peer"
    )
    parser.add_argument("--crawl-threads", type=int, help="HARVEST_CRAWL_THREADS (default: the worker's)")
    parser.add_argument(
        "--ip-min-interval", type=float, help="HARVEST_IP_MIN_INTERVAL (default: the worker's)"
    )
    parser.add_argument(
        "--worker-memory-mb", type=int, help="HARVEST_WORKER_MEMORY_MB (default: the worker's)"
    )
    parser.add_argument(
        "--dedup",
        choices=["off", "all", "same-definition"],
        help="both templates' deduplication (default: all)",
    )
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="give up after this many seconds")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL.format(pid=os.getpid()))
    parser.add_argument("--keep", action="store_true", help="keep the database and the work files")
    args = parser.parse_args(argv)
    if min(args.sites, args.pages, args.sites_per_worker, args.sites_per_address, args.baseline_pages) < 1:
        parser.error("sizes must be positive")
    if args.delay < 0:
        parser.error("--delay must not be negative")

    def log(text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    work = ROOT / "var" / "bench" / f"broad-crawl-{os.getpid()}"
    work.mkdir(parents=True)
    os.environ.update(
        DATABASE_URL=args.database_url,
        DEBUG="0",
        WEBARCHIVE_VAR_DIR=str(work / "var"),
        HARVEST_WARC_DIR=str(work / "warcs"),
        HARVEST_SPOOL_DIR=str(work / "spool"),
        DJANGO_SETTINGS_MODULE="webarchive.settings",
    )
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("ALLOWED_HOSTS", "localhost")
    from benchmarks.environment import throwaway_database

    try:
        with (
            throwaway_database(args.database_url, log, keep=args.keep, allow_sqlite=False),
            broker(f"broad-bench-{os.getpid()}", log),
        ):
            import django
            from django.core.management import call_command

            django.setup()
            import webarchive.celery  # noqa: F401 (the broker the tasks go to)

            log("Migrating")
            call_command("migrate", verbosity=0)
            result = benchmark(args, work, log)
        print(report(args, result))
    finally:
        if args.keep:
            log(f"Kept {work} and the database {args.database_url}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


@contextlib.contextmanager
def broker(vhost: str, log):
    """A RabbitMQ virtual host of our own while the block runs (CELERY_BROKER_URL names it).

    The broker is shared: the tests of a crawl worker delete the crawl queues of the default
    virtual host when they start, which took this benchmark's queued sites with them. Without
    rabbitmqctl, the default virtual host (its crawl queues are deleted first)."""

    def ctl(*arguments: str) -> None:
        subprocess.run([RABBITMQCTL, *arguments], check=True, capture_output=True, timeout=120)  # noqa: S603

    if not os.access(RABBITMQCTL, os.X_OK):
        log("No rabbitmqctl: the default virtual host of the broker")
        os.environ["CELERY_BROKER_URL"] = BROKER_URL.format(vhost="")
        yield
        return
    ctl("add_vhost", vhost)
    try:
        ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        os.environ["CELERY_BROKER_URL"] = BROKER_URL.format(vhost=vhost)
        yield
    finally:
        ctl("delete_vhost", vhost)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
