"""Benchmark: job generation for a snapshot harvest of N domains (default 1,000,000) on PostgreSQL.

    .venv/bin/python benchmarks/job_generation.py [--domains N] [--database-url URL]

It creates a throwaway database (default ``webarchive_bench_<pid>`` on
127.0.0.1:5432; an existing database is never touched), runs the migrations,
loads N domains with their default seed list and configuration, gives a share
of them an earlier harvest (so expected sizes vary), then measures:

- the launcher: ``definition_launch`` of a snapshot definition made due with
  ``definition_run_now`` (the candidates query, the split, the job rows and
  one COPY of job configurations per job), with the peak memory of the
  process during the launch, to show that it streams;
- the peer, in the same run and on the same database: one
  ``INSERT INTO harvest_jobconfiguration ... SELECT`` that writes the same
  rows (same expected-size lookups, same seeds) without any splitting,
  rolled back afterwards: the physical limit of the work.

It prints the results and the launcher/peer ratio, and drops the database at
the end, also on failure or Ctrl-C. Numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import os
import platform
import pstats
import random
import resource
import signal
import sys
import time
import tracemalloc
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/webarchive_bench_{pid}"
SNAPSHOT_MAX_OBJECTS = 100_000  # the benchmark snapshot's max objects per domain
HISTORY_SEED = 20240601  # the earlier harvests are random, but the same in every run


# Measuring ---------------------------------------------------------------------------------------


def _status_kib(key: str) -> int | None:
    """A memory figure of this process from /proc/self/status (Linux), in KiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(f"{key}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak_rss() -> bool:
    """Reset the process's peak RSS (Linux: write 5 to clear_refs), so a peak covers one step only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss_kib() -> int:
    """The peak RSS since the last reset (VmHWM), else since the start (ru_maxrss)."""
    peak = _status_kib("VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


@dataclass
class Step:
    """One timed step."""

    name: str
    seconds: float
    rows: int = 0
    # Sums over the rows written, where the launcher and the peer must agree.
    expected_objects: int = 0
    seed_characters: int = 0


@dataclass
class Result:
    """What one run of the benchmark measured."""

    domains: int
    setup: list[Step] = field(default_factory=list)
    launch: Step | None = None
    peer: Step | None = None
    jobs: int = 0
    job_configurations: int = 0
    jobs_domain_count: int = 0
    smallest_job: int = 0
    largest_job: int = 0
    rss_before_kib: int = 0
    rss_peak_kib: int = 0
    rss_peak_of_launch: bool = True  # False where the peak could not be reset: it covers the whole run
    traced_peak_bytes: int | None = None
    load: tuple[float, float] = (0.0, 0.0)  # the machine's 1-minute load average as the launch starts, ends
    profile: str = ""

    @property
    def ratio(self) -> float:
        return self.launch.seconds / self.peer.seconds if self.peer and self.peer.seconds else float("nan")


# Setup -------------------------------------------------------------------------------------------


def domain_names(count: int):
    """Distinct registered domain names, generated (never held in a list)."""
    return (f"bench-{number:07d}.fr" for number in range(count))


def load_domains(count: int) -> Step:
    """N domains with their default seed list and configuration, through the bulk service."""
    from harvest.services.domains import domains_create_bulk

    started = time.perf_counter()
    created = domains_create_bulk(names=domain_names(count))
    return Step("domains_create_bulk", time.perf_counter() - started, created)


def load_domains_copy(count: int) -> Step:
    """The same rows as ``domains_create_bulk`` (without history rows), written by COPY (PostgreSQL)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from harvest.models import Domain, DomainConfiguration, SeedList
    from harvest.models.domains import DEFAULT_CONFIGURATION, DEFAULT_SEED_LIST, UNLIMITED
    from harvest.services.domains import default_seeds, default_template

    through = DomainConfiguration.seed_lists.through
    started = time.perf_counter()
    now = timezone.now()
    template_id = default_template().pk
    with transaction.atomic(), connection.cursor() as cursor:
        base = {}
        for model in (Domain, SeedList, DomainConfiguration, through):
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {model._meta.db_table}")  # noqa: S608
            base[model] = cursor.fetchone()[0]
        d, s, c, t = (base[model] for model in (Domain, SeedList, DomainConfiguration, through))
        tables = {
            # A domain points to its configuration before it is written: Django's foreign keys are
            # deferred to the commit on PostgreSQL.
            Domain: (
                "id, name, comments, crawler_traps, is_active, default_configuration_id, "
                "created_at, updated_at",
                lambda i, name: (d + i, name, "", "", True, c + i, now, now),
            ),
            SeedList: (
                "id, domain_id, name, seeds, comments, updated_at",
                lambda i, name: (s + i, d + i, DEFAULT_SEED_LIST, default_seeds(name), "", now),
            ),
            DomainConfiguration: (
                "id, domain_id, name, template_id, max_objects, max_bytes, max_request_rate, comments, "
                "updated_at",
                lambda i, name: (
                    c + i,
                    d + i,
                    DEFAULT_CONFIGURATION,
                    template_id,
                    UNLIMITED,
                    UNLIMITED,
                    0,
                    "",
                    now,
                ),
            ),
            through: ("id, domainconfiguration_id, seedlist_id", lambda i, name: (t + i, c + i, s + i)),
        }
        for model, (columns, row) in tables.items():
            table = model._meta.db_table
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for number, name in enumerate(domain_names(count), start=1):
                    copy.write_row(row(number, name))
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), %s)", [base[model] + count]
            )
    return Step("domains by COPY (domains_create_bulk's rows)", time.perf_counter() - started, count)


def _earlier_jobs():
    """Two jobs of an earlier snapshot run, for the earlier harvests to belong to."""
    from django.utils import timezone

    from harvest.choices import HarvestKind, JobStatus
    from harvest.models import HarvestRun, HarvestTemplate, Job
    from harvest.services.planning import definition_save

    definition = definition_save(kind=HarvestKind.SNAPSHOT, name="benchmark: earlier snapshot")
    now = timezone.now()
    run = HarvestRun.objects.create(harvest_definition=definition, number=1, scheduled_for=now)
    template = HarvestTemplate.objects.get(name="default")
    return [
        Job.objects.create(
            harvest_definition=definition,
            run=run,
            run_number=1,
            channel=definition.channel,
            queue=definition.channel.queue,
            status=JobStatus.DONE,
            template=template,
            template_version=template.version,
            template_settings=template.crawler_settings(),
        )
        for _ in range(2)
    ]


def _history_rows(pairs, jobs, share: float, rng: random.Random):
    """(job, configuration, domain, objects, bytes, stop reason, recorded at) of the earlier harvests.

    ``share`` of the domains were harvested before, with object counts spread
    log-uniformly from 1 to 1,000,000 and mixed stop reasons; a third of those
    were harvested twice (an older completed harvest, then the latest one), so
    both rules of the expected size (latest completed, else largest) are used.
    """
    from django.utils import timezone

    from harvest.choices import StopReason

    reasons = [
        StopReason.COMPLETED,
        StopReason.COMPLETED,
        StopReason.COMPLETED,
        StopReason.OBJECT_LIMIT,
        StopReason.BYTE_LIMIT,
        StopReason.TIME_LIMIT,
        StopReason.FAILED,
    ]
    latest = timezone.now() - timedelta(days=30)
    older = latest - timedelta(days=365)
    for configuration_id, domain_id in pairs:
        if rng.random() >= share:
            continue
        objects = int(10 ** rng.uniform(0, 6))
        yield (
            jobs[0].pk,
            configuration_id,
            domain_id,
            objects,
            objects * 40_000,
            rng.choice(reasons),
            latest,
        )
        if rng.random() < 1 / 3:
            objects = int(10 ** rng.uniform(0, 6))
            yield (jobs[1].pk, configuration_id, domain_id, objects, objects * 40_000, "completed", older)


def load_history(share: float, chunk: int = 20_000) -> Step:
    """Earlier harvests (HarvestInfo rows) for ``share`` of the domains: COPY on PostgreSQL."""
    from django.db import connection, transaction

    from harvest.models import Domain, HarvestInfo

    started = time.perf_counter()
    columns = ("job_id", "configuration_id", "domain_id", "object_count", "byte_count", "stop_reason")
    rng = random.Random(HISTORY_SEED)  # noqa: S311 (test data, not secrets)
    count, last = 0, 0
    with transaction.atomic():
        jobs = _earlier_jobs()
        # A chunk of domains at a time: the connection cannot read while a COPY is open.
        while pairs := list(
            Domain.objects.filter(pk__gt=last)
            .order_by("pk")
            .values_list("default_configuration_id", "pk")[:chunk]
        ):
            last = pairs[-1][1]
            rows = list(_history_rows(pairs, jobs, share, rng))
            count += len(rows)
            if connection.vendor == "postgresql":
                table = HarvestInfo._meta.db_table
                with (
                    connection.cursor() as cursor,
                    cursor.copy(f"COPY {table} ({', '.join(columns)}, created_at) FROM STDIN") as copy,
                ):
                    for row in rows:
                        copy.write_row(row)
            else:
                HarvestInfo.objects.bulk_create(
                    [HarvestInfo(**dict(zip(columns, row[:-1], strict=True))) for row in rows]
                )
    return Step("earlier harvests (HarvestInfo)", time.perf_counter() - started, count)


def analyse() -> Step:
    """VACUUM ANALYZE after the load, as autovacuum would before any launch (PostgreSQL only)."""
    from django.db import connection

    started = time.perf_counter()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Inside a transaction (the tests), ANALYZE alone.
            cursor.execute("ANALYZE" if connection.in_atomic_block else "VACUUM ANALYZE")
    return Step("VACUUM ANALYZE", time.perf_counter() - started)


# The peer ----------------------------------------------------------------------------------------


class _RollBack(Exception):
    pass


def peer_insert_select(definition) -> Step:
    """The same job configuration rows, written by one INSERT ... SELECT with no split, rolled back.

    Same candidates (active default configurations, no live alias), same
    expected size (latest completed earlier harvest, else the largest, else
    the default; capped by the snapshot's max objects), each domain's best
    harvest ranked by one window over the history; same seeds and traps, same
    foreign key checks; every row goes to one existing job, so nothing is
    sorted, grouped or parsed in Python.
    """
    from django.conf import settings
    from django.db import connection, transaction
    from django.db.models import Sum
    from django.db.models.functions import Length
    from django.utils import timezone

    from harvest.choices import StopReason
    from harvest.models import Domain, DomainConfiguration, HarvestInfo, Job, JobConfiguration, SeedList

    through = DomainConfiguration.seed_lists.through._meta.db_table
    cap = definition.max_objects_per_domain
    capped = "e.expected" if cap < 0 else "CASE WHEN e.expected > %(cap)s THEN %(cap)s ELSE e.expected END"
    sql = f"""
        INSERT INTO {JobConfiguration._meta.db_table} (
            job_id, configuration_id, domain_id, seeds, max_objects, max_bytes,
            max_request_rate, expected_objects, crawler_traps
        )
        SELECT %(job)s, e.id, e.domain_id, e.seeds, e.max_objects, e.max_bytes,
               e.max_request_rate, {capped}, e.crawler_traps
        FROM (
            SELECT c.id, c.domain_id, s.seeds, c.max_objects, c.max_bytes, c.max_request_rate,
                   d.crawler_traps, COALESCE(b.object_count, %(default)s) AS expected
            FROM {Domain._meta.db_table} d
            JOIN {DomainConfiguration._meta.db_table} c ON c.id = d.default_configuration_id
            JOIN {through} t ON t.domainconfiguration_id = c.id
            JOIN {SeedList._meta.db_table} s ON s.id = t.seedlist_id
            LEFT JOIN (
                SELECT h.domain_id, h.object_count, ROW_NUMBER() OVER (
                    PARTITION BY h.domain_id
                    ORDER BY h.stop_reason = %(completed)s DESC,
                             CASE WHEN h.stop_reason = %(completed)s THEN h.created_at END DESC,
                             CASE WHEN h.stop_reason = %(completed)s THEN 0 ELSE h.object_count END DESC,
                             h.id DESC
                ) AS n
                FROM {HarvestInfo._meta.db_table} h
            ) b ON b.domain_id = d.id AND b.n = 1
            WHERE d.is_active
              AND NOT (d.alias_of_id IS NOT NULL AND d.alias_updated_at > %(cutoff)s)
        ) e
    """  # noqa: S608 (table names from the models, values as parameters)
    params = {
        "job": Job.objects.order_by("pk").values_list("pk", flat=True).first(),
        "completed": StopReason.COMPLETED,
        "default": settings.HARVEST_DEFAULT_EXPECTED_OBJECTS,
        "cap": cap,
        "cutoff": timezone.now() - timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS),
    }
    postgresql = connection.vendor == "postgresql"
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            if postgresql:
                # The launcher's transaction checks the foreign keys of its rows at the commit (Django's
                # are deferred); this one is rolled back, so it checks them at the end of the statement.
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            started = time.perf_counter()
            cursor.execute(sql, params)
            step = Step("peer: one INSERT ... SELECT", time.perf_counter() - started, cursor.rowcount)
            if postgresql:
                cursor.execute("SET CONSTRAINTS ALL DEFERRED")
            written = JobConfiguration.objects.filter(job=params["job"]).aggregate(
                expected=Sum("expected_objects"), seeds=Sum(Length("seeds"))
            )
            step.expected_objects, step.seed_characters = written["expected"], written["seeds"]
            raise _RollBack
    except _RollBack:
        pass
    if postgresql and not connection.in_atomic_block:
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM {JobConfiguration._meta.db_table}")
    return step


# The launcher ------------------------------------------------------------------------------------


def launch(result: Result, definition, *, trace: bool = False, profile: bool = False) -> None:
    """Make the snapshot due and time ``definition_launch``; record jobs, rows and peak memory."""
    from django.db.models import Count, Max, Min, Sum
    from django.db.models.functions import Length

    from harvest.models import Job, JobConfiguration
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import definition_run_now

    definition_run_now(definition=definition)
    result.rss_before_kib = _status_kib("VmRSS") or 0
    result.rss_peak_of_launch = _reset_peak_rss()
    load_before = os.getloadavg()[0]
    profiler = cProfile.Profile() if profile else None
    if trace:
        tracemalloc.start()
    if profiler:
        profiler.enable()
    started = time.perf_counter()
    run = definition_launch(definition_id=definition.pk)
    elapsed = time.perf_counter() - started
    if profiler:
        profiler.disable()
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(15)
        result.profile = out.getvalue()
    if trace:
        result.traced_peak_bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    result.rss_peak_kib = _peak_rss_kib()
    result.load = (load_before, os.getloadavg()[0])
    if run is None:
        raise RuntimeError("definition_launch launched nothing: the snapshot was not due")
    jobs = Job.objects.filter(run=run).aggregate(
        count=Count("pk"),
        domains=Sum("domain_count"),
        smallest=Min("domain_count"),
        largest=Max("domain_count"),
    )
    entries = JobConfiguration.objects.filter(job__run=run).aggregate(
        count=Count("pk"), expected=Sum("expected_objects"), seeds=Sum(Length("seeds"))
    )
    result.job_configurations = entries["count"]
    result.jobs = jobs["count"]
    result.jobs_domain_count = jobs["domains"] or 0
    result.smallest_job, result.largest_job = jobs["smallest"] or 0, jobs["largest"] or 0
    result.launch = Step(
        "launcher: definition_launch",
        elapsed,
        result.job_configurations,
        entries["expected"] or 0,
        entries["seeds"] or 0,
    )


def benchmark(
    *,
    domains: int,
    history_share: float = 0.2,
    setup: str = "copy",
    trace: bool = False,
    profile: bool = False,
    log=print,
) -> Result:
    """Load the domains, then measure the peer and the launcher on the current database.

    ``setup`` is "copy" (COPY, PostgreSQL only) or "service" (``domains_create_bulk``).
    """
    from django.db import connection

    from harvest.choices import HarvestKind
    from harvest.services.planning import definition_save

    result = Result(domains=domains)
    load = load_domains_copy if setup == "copy" and connection.vendor == "postgresql" else load_domains
    for step in (lambda: load(domains), lambda: load_history(history_share), analyse):
        result.setup.append(step())
        log(f"  setup: {result.setup[-1].name}: {result.setup[-1].seconds:.1f} s")
    definition = definition_save(
        kind=HarvestKind.SNAPSHOT, name="benchmark: snapshot", max_objects_per_domain=SNAPSHOT_MAX_OBJECTS
    )
    result.peer = peer_insert_select(definition)
    log(f"  peer: {result.peer.seconds:.1f} s")
    launch(result, definition, trace=trace, profile=profile)
    log(f"  launcher: {result.launch.seconds:.1f} s")
    return result


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW server_version" if connection.vendor == "postgresql" else "SELECT sqlite_version()"
        )
        version = cursor.fetchone()[0]
    memory = _meminfo_gib()
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "cpus": f"{os.cpu_count()} ({cpu})" if cpu else str(os.cpu_count()),
        "memory": f"{memory:.1f} GiB" if memory else "?",
        "database": f"{connection.vendor} {version}",
        "python": platform.python_version(),
    }


def _meminfo_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return None


def report(result: Result, about: dict[str, str]) -> str:
    """The results as Markdown (the format of docs/benchmarks.md)."""
    lines = [
        f"Job generation, snapshot of {result.domains:,} domains",
        "",
        *(f"- {key}: {value}" for key, value in about.items()),
        "",
        "| setup (not measured) | seconds | rows |",
        "|---|---:|---:|",
        *(f"| {s.name} | {s.seconds:.1f} | {s.rows:,} |" for s in result.setup),
        "",
        "| measured | seconds | job configurations | rows/s | ratio to peer |",
        "|---|---:|---:|---:|---:|",
    ]
    for step in (result.launch, result.peer):
        rate = step.rows / step.seconds if step.seconds else 0
        lines.append(
            f"| {step.name} | {step.seconds:.1f} | {step.rows:,} | {rate:,.0f} | "
            f"{step.seconds / result.peer.seconds:.2f} |"
        )
    lines += [
        "",
        f"- written, launcher / peer: expected objects {result.launch.expected_objects:,} /"
        f" {result.peer.expected_objects:,}; characters of seeds {result.launch.seed_characters:,} /"
        f" {result.peer.seed_characters:,}",
        f"- jobs: {result.jobs:,} (domains per job: {result.smallest_job:,} to {result.largest_job:,};"
        f" {result.jobs_domain_count:,} in all)",
        f"- process RSS before the launch: {result.rss_before_kib / 1024:.0f} MiB;"
        f" peak {'during the launch' if result.rss_peak_of_launch else 'of the whole run'}:"
        f" {result.rss_peak_kib / 1024:.0f} MiB",
    ]
    lines.append(
        f"- load average (1 min) as the launch started / ended: {result.load[0]:.1f} / {result.load[1]:.1f}"
        f" ({os.cpu_count()} CPUs; above that, other work shared the machine)"
    )
    if result.traced_peak_bytes is not None:
        lines.append(
            f"- Python allocations, peak during the launch: {result.traced_peak_bytes / 2**20:.1f} MiB"
        )
    lines.append(f"- launcher / peer: {result.ratio:.2f}")
    return "\n".join(lines)


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", type=int, default=1_000_000, help="domains in the snapshot")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL.format(pid=os.getpid()),
        help="the throwaway PostgreSQL database to create, use and drop (it must not exist)",
    )
    parser.add_argument(
        "--setup",
        choices=["copy", "service"],
        default="copy",
        help="load the domains by COPY (fast) or through domains_create_bulk (the service, slower)",
    )
    parser.add_argument("--history", type=float, default=0.2, help="share of domains harvested before")
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also trace Python allocations (slows the launch)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="profile the launch (slows it) and print the top"
    )
    args = parser.parse_args(argv)
    if args.domains < 1 or not 0 <= args.history <= 1:
        parser.error("--domains must be positive and --history between 0 and 1")

    # Whatever stops the run (Ctrl-C, kill, a closed terminal), the database is dropped; SIGINT too
    # when the shell started the script in the background with SIGINT ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    from benchmarks.environment import throwaway_database

    with throwaway_database(args.database_url, allow_sqlite=False) as name:
        # The launcher runs with DEBUG off in production (no query log kept in memory).
        os.environ["DATABASE_URL"] = args.database_url
        os.environ["DEBUG"] = "0"
        os.environ.setdefault("SECRET_KEY", "benchmark-only")
        os.environ.setdefault("ALLOWED_HOSTS", "localhost")
        os.environ["DJANGO_SETTINGS_MODULE"] = "webarchive.settings"
        sys.path.insert(0, str(ROOT))
        import django
        from django.core.management import call_command

        django.setup()
        print(f"Database {name}: migrating", file=sys.stderr)
        call_command("migrate", verbosity=0)
        print(f"Loading {args.domains:,} domains, then measuring", file=sys.stderr)
        result = benchmark(
            domains=args.domains,
            history_share=args.history,
            setup=args.setup,
            trace=args.tracemalloc,
            profile=args.profile,
            log=lambda text: print(text, file=sys.stderr),
        )
        print(report(result, machine()))
        if result.profile:
            print("\nProfile of the launch (by cumulative, then by own time):\n" + result.profile)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
