"""Planning and operations at production volume: the transfer, the launches, the engineers' pages.

    .venv/bin/python benchmarks/operations.py [--database-url URL] [--repeat N] [--no-snapshot]
        [--workers 4] [--threads 4]

Against the volume database (benchmarks/volume.py; default
``postgres://postgres@127.0.0.1:5432/webarchive_volume``: 3,000,000 domains, 50,000 records in 20
collections, a snapshot run and selective runs), issue 29's table, each line against its goal:

1. **Operations**, in one transaction rolled back at the end (the database is left as it was):
   every collection's records mapped by frequency to the three selective definitions (daily and
   weekly to "News weekly", monthly to "Science monthly", twice a year and yearly to "Blogs twice a
   year"; records to harvest once are skipped, with the reason), then timed: the transfer of the 20
   collections (``transfer_collection``, as a curator), the same again (nothing changed), a launch
   of "News weekly" (``definition_launch``: its transfer, then its jobs), and, unless
   ``--no-snapshot``, a launch of the snapshot definition over every domain (seconds per million).
   The foreign keys each commit would check are checked within the time (``SET CONSTRAINTS ALL
   IMMEDIATE``), as the commits that never happen here would.
2. **Pages**, through gunicorn started as benchmarks/load.py starts it (the README's production
   command, DEBUG off, kept database connections, a Redis cache), logged in through the login page
   as an engineer, a curator and a manager of the load test: each page requested ``--repeat``
   times (default 30) one after the other, after one request to warm it; median and p95 of the
   time to the last byte. A page over its goal gets its statements listed (one request through
   Django's test client, in process) with the slowest one's ``EXPLAIN (ANALYZE, BUFFERS)``.

It prints a Markdown table (what, measured, goal, met) for docs/benchmarks.md. Traffic goes to
127.0.0.1 only; what it starts (gunicorn, Redis) is stopped at the end, also on an error or Ctrl-C.
Exit status 0 when it ran, whatever the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:  # the project (and benchmarks.*), when run as a script
    sys.path.insert(0, str(ROOT))

PAGE_GOAL_MS = 300.0
TRANSFER_GOAL_S = 60.0
SELECTIVE_LAUNCH_GOAL_S = 10.0
SNAPSHOT_GOAL_S_PER_MILLION = 60.0
MAPPED = {  # frequency → the volume database's selective definition its records go to
    "daily": "News weekly",
    "weekly": "News weekly",
    "monthly": "Science monthly",
    "twice-yearly": "Blogs twice a year",
    "annual": "Blogs twice a year",
}
SELECTIVE = "News weekly"
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _RollBack(Exception):
    pass


def _checked() -> None:
    """The foreign keys the commit would check (Django's are deferred), checked now: the timed
    operations run in a transaction that is rolled back, so without this their commit's work would
    not be counted."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def operations(*, snapshot: bool) -> list[tuple[str, str, str, bool]]:
    """The transfer and the launches, timed in one transaction that is rolled back."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from harvest.choices import HarvestKind
    from harvest.models import Domain, HarvestDefinition, JobConfiguration
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import collection_mapping_save, definition_run_now
    from harvest.services.transfer import transfer_collection
    from selection.models import Collection

    curator = get_user_model().objects.get(username="load-curator-01")
    definitions = {definition.name: definition for definition in HarvestDefinition.objects.all()}
    missing = sorted(set(MAPPED.values()) - set(definitions))
    if missing:
        raise SystemExit(f"The database has no definition {', '.join(missing)}: build it with volume.py.")
    rows = []
    try:
        with transaction.atomic():
            collections = list(Collection.objects.order_by("pk"))
            for collection in collections:
                for frequency, name in MAPPED.items():
                    collection_mapping_save(
                        collection=collection, frequency=frequency, harvest_definition=definitions[name]
                    )
            for turn in ("first: every configuration new", "again: nothing changed"):
                totals = dict.fromkeys(("created", "updated", "unchanged", "skipped"), 0)
                started = time.perf_counter()
                for collection in collections:
                    report = transfer_collection(collection=collection, user=curator)
                    _checked()  # each collection is transferred in a transaction of its own
                    for key in totals:
                        totals[key] += getattr(report, key)
                seconds = time.perf_counter() - started
                counts = ", ".join(f"{value:,} {key}" for key, value in totals.items())
                log(f"  transfer, {turn}: {seconds:.1f} s ({counts})")
                rows.append(
                    (
                        f"transfer of all {len(collections)} collections, {turn} ({counts})",
                        f"{seconds:.1f} s",
                        f"under {TRANSFER_GOAL_S:.0f} s",
                        seconds < TRANSFER_GOAL_S,
                    )
                )
            selective = definitions[SELECTIVE]
            definition_run_now(definition=selective, user=curator)
            started = time.perf_counter()
            run = definition_launch(definition_id=selective.pk)
            _checked()
            seconds = time.perf_counter() - started
            sites = JobConfiguration.objects.filter(job__run=run).count()
            log(f"  launch of {SELECTIVE!r}: {seconds:.1f} s, {run.jobs.count()} jobs, {sites:,} sites")
            rows.append(
                (
                    f"launch of the selective definition “{SELECTIVE}” with its transfer"
                    f" ({run.jobs.count()} jobs, {sites:,} sites)",
                    f"{seconds:.1f} s",
                    f"under {SELECTIVE_LAUNCH_GOAL_S:.0f} s",
                    seconds < SELECTIVE_LAUNCH_GOAL_S,
                )
            )
            if snapshot:
                broad = (
                    HarvestDefinition.objects.filter(kind=HarvestKind.SNAPSHOT, is_active=True)
                    .order_by("-runs_done", "pk")  # the broad crawl that was launched (volume.py)
                    .first()
                )
                if broad is None:
                    raise SystemExit(
                        "The database has no active snapshot definition: build it with volume.py."
                    )
                definition_run_now(definition=broad, user=curator)
                domains = Domain.objects.count()
                started = time.perf_counter()
                run = definition_launch(definition_id=broad.pk)
                _checked()
                seconds = time.perf_counter() - started
                sites = JobConfiguration.objects.filter(job__run=run).count()
                per_million = seconds / (domains / 1_000_000)
                log(f"  launch of {broad.name!r}: {seconds:.1f} s, {run.jobs.count()} jobs, {sites:,} sites")
                rows.append(
                    (
                        f"launch of the snapshot “{broad.name}” over {domains:,} domains"
                        f" ({run.jobs.count():,} jobs, {sites:,} sites; {seconds:.1f} s)",
                        f"{per_million:.1f} s per million domains",
                        f"under {SNAPSHOT_GOAL_S_PER_MILLION:.0f} s per million",
                        per_million < SNAPSHOT_GOAL_S_PER_MILLION,
                    )
                )
            raise _RollBack
    except _RollBack:
        log("  rolled back: the database is as it was")
    return rows


def page_list(data: dict) -> list[tuple[str, str, str, dict]]:
    """(what, role, URL, headers) of the pages issue 29 measures, with ids from the database."""
    from harvest.models import Domain, JobConfiguration

    running = data["running_jobs"][0]
    large = max(data["large_jobs"], key=lambda job: JobConfiguration.objects.filter(job_id=job).count())
    running_sites = JobConfiguration.objects.filter(job_id=running).count()
    large_sites = JobConfiguration.objects.filter(job_id=large).count()
    exact = Domain.objects.order_by("pk").values_list("name", flat=True)[Domain.objects.count() // 2]
    htmx = {"HX-Request": "true"}
    return [
        ("Operations → Running jobs", "engineer", "/harvest/jobs/running/", {}),
        ("Running jobs, its poll", "engineer", "/harvest/jobs/running/", htmx),
        ("monitoring", "engineer", "/harvest/monitoring/", {}),
        ("monitoring, its poll", "engineer", "/harvest/monitoring/", htmx),
        (f"a running job's page ({running_sites:,} sites)", "engineer", f"/harvest/jobs/{running}/", {}),
        (f"an ended job's page ({large_sites:,} sites)", "engineer", f"/harvest/jobs/{large}/", {}),
        (f"an ended job's sites, page 40 ({large_sites:,} sites)", "engineer",
         f"/harvest/jobs/{large}/?sites_page=40", htmx),
        ("domain search `exam*`", "curator", "/harvest/domains/?q=exam*", {}),
        ("domain search `musee-00123*`", "curator", "/harvest/domains/?q=musee-00123*", {}),
        (f"domain search by exact name ({exact})", "curator", f"/harvest/domains/?q={exact}", {}),
        ("reports dashboard", "manager", "/reports/dashboard/", {}),
    ]  # fmt: skip


def session_for(host: str, username: str, password: str):
    """A requests session logged in through the login page."""
    import requests

    session = requests.Session()
    page = session.get(f"{host}/login/", timeout=30)
    token = CSRF.search(page.text)
    answer = session.post(
        f"{host}/login/",
        data={"username": username, "password": password, "next": "/",
              "csrfmiddlewaretoken": token.group(1) if token else ""},
        headers={"Referer": f"{host}/login/"},
        timeout=30,
    )  # fmt: skip
    if "/login/" in answer.url:
        raise SystemExit(f"{username} could not log in")
    return session


def time_page(session, url: str, headers: dict, repeat: int) -> list[float]:
    timings = []
    for turn in range(repeat + 1):
        started = time.perf_counter()
        answer = session.get(url, headers=headers, timeout=120)
        body = answer.content
        elapsed = (time.perf_counter() - started) * 1000
        if answer.status_code != 200 or not body:
            raise SystemExit(f"{url}: status {answer.status_code}")
        if turn:  # the first request warms the page
            timings.append(elapsed)
    return timings


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]


def explain(role: str, url: str, headers: dict) -> str:
    """The statements of one request (in process), and the slowest one's plan."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, override_settings

    client = Client(**{f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()})
    client.force_login(get_user_model().objects.get(username=f"load-{role}-01"))
    storages = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    with (
        override_settings(ALLOWED_HOSTS=["testserver"], STORAGES=storages),
        CaptureQueriesContext(connection) as queries,
    ):
        client.get(url)
    if not queries.captured_queries:
        return "    (no statement)"
    slowest = max(queries.captured_queries, key=lambda query: float(query["time"]))
    total = sum(float(query["time"]) for query in queries.captured_queries) * 1000
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + slowest["sql"])
        plan = "\n".join(f"    {row[0]}" for row in cursor.fetchall())
    return (
        f"    {len(queries.captured_queries)} statements, {total:.0f} ms of SQL; the slowest"
        f" ({float(slowest['time']) * 1000:.0f} ms): {slowest['sql'][:300]}\n{plan}"
    )  # fmt: skip


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    from benchmarks.volume import DEFAULT_DATABASE_URL, LOAD_PASSWORD

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url", default=DEFAULT_DATABASE_URL, help="the volume database (volume.py)"
    )
    parser.add_argument("--repeat", type=int, default=30, help="requests timed per page")
    parser.add_argument("--no-snapshot", action="store_true", help="leave out the snapshot's launch")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (README: 4)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads (README: 4)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be 1 or more")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)

    from benchmarks import load
    from benchmarks.environment import cpus, maintenance_connection, memory

    maintenance_connection(args.database_url)  # refuses anything but PostgreSQL
    load.django_setup(args.database_url)
    from django.db import connection

    load_before = os.getloadavg()[0]
    log("Operations (rolled back at the end)")
    rows = operations(snapshot=not args.no_snapshot)
    with contextlib.ExitStack() as stack:
        work = stack.enter_context(load.work_directory())
        data = load.fixture(work / "fixture.json")
        pages = page_list(data)
        connection.close()
        host = stack.enter_context(
            load.serving(args.database_url, work, workers=args.workers, threads=args.threads)
        )
        sessions = {}
        slow = []
        for what, role, url, headers in pages:
            if role not in sessions:
                sessions[role] = session_for(host, f"load-{role}-01", LOAD_PASSWORD)
            timings = time_page(sessions[role], host + url, headers, args.repeat)
            median, high = statistics.median(timings), p95(timings)
            log(f"  {what}: median {median:.0f} ms, p95 {high:.0f} ms")
            met = high < PAGE_GOAL_MS
            rows.append(
                (what, f"median {median:.0f} ms, p95 {high:.0f} ms", f"p95 under {PAGE_GOAL_MS:.0f} ms", met)
            )
            if not met:
                slow.append((what, role, url, headers))
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgresql = cursor.fetchone()[0]
    lines = [
        "## Planning and operations at production volume",
        "",
        f"- machine: {cpus()} CPUs, {memory()}; PostgreSQL {postgresql}; database"
        f" {maintenance_connection(args.database_url)[1]}",
        f"- pages: gunicorn --workers {args.workers} --threads {args.threads}, DEBUG=0, conn_max_age=60,"
        f" CACHE_URL redis; each page {args.repeat} times after one warming request, one at a time",
        f"- load average (1 min) before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f}",
        "",
        "| what | measured | goal | |",
        "|---|---|---|---|",
        *(f"| {what} | {got} | {goal} | {'met' if ok else '**NOT met**'} |" for what, got, goal, ok in rows),
        "",
        f"- every line met: {'yes' if all(row[3] for row in rows) else 'no'}",
    ]  # fmt: skip
    for what, role, url, headers in slow:
        lines += ["", f"Over its goal: {what} ({url})", explain(role, url, headers)]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
