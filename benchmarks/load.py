"""Load test: 50 people at once (24 librarians, 12 curators, 8 engineers, 6 managers) against gunicorn.

    .venv/bin/python benchmarks/load.py [--database-url URL] [--duration S] [--ramp-up S]
        [--mix 24,12,8,6] [--workers 4] [--threads 4] [--csv-dir DIR]

Against the volume database (benchmarks/volume.py; default
``postgres://postgres@127.0.0.1:5432/webarchive_volume``), it:

1. collects the static files and starts gunicorn as the README's production section deploys it
   (``gunicorn webarchive.wsgi --workers 4 --threads 4``, DEBUG off, ``SECRET_KEY`` and
   ``ALLOWED_HOSTS`` set, ``DATABASE_URL`` with ``?conn_max_age=60``, static files by WhiteNoise,
   ``CACHE_URL`` on a Redis server of its own) on 127.0.0.1 and a free port; plain HTTP, so the
   HTTPS-only settings a TLS proxy needs are off;
2. makes sure every simulated person has an account of their role (``load-<role>-NN``, the password
   ``volume.LOAD_PASSWORD``; volume.py made them, so a run on its database writes nothing there but
   what the pages write themselves: sessions, the login's records);
3. draws ids of records, collections, domains, jobs and definitions from the database (the fixture of
   the locustfile) and runs locust headless (benchmarks/locustfile.py) with the mix of people, ramped
   up over ``--ramp-up`` seconds, then measured for ``--duration`` seconds (statistics reset once
   every person has started);
4. prints a table per page (requests, median, p95, max, failures) and the whole mix's requests/s,
   median and p95 against the goal (p95 under 300 ms), each line over the goal marked; a truncated
   CSV download is a failure (the locustfile checks every download to its end).

It sends traffic to 127.0.0.1 only, and stops what it started (gunicorn, Redis, locust) at the end,
also on an error or Ctrl-C. Exit status 0 when the test ran, whatever the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:  # the project (and benchmarks.*), when run as a script
    sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
GOAL_MS = 300
ROLES = ("librarian", "curator", "engineer", "manager")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_environment(database_url: str, cache_url: str, static_root: Path) -> dict[str, str]:
    """The web process's environment: production settings, on plain HTTP on the loopback."""
    separator = "&" if "?" in database_url else "?"
    return {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "load-test-only-" + "x" * 40,
        "ALLOWED_HOSTS": "127.0.0.1",
        "DATABASE_URL": f"{database_url}{separator}conn_max_age=60",
        "CACHE_URL": cache_url,
        "CELERY_BROKER_URL": "memory://",  # what the pages enqueue goes nowhere: no worker runs here
        "STATIC_ROOT": str(static_root),
        # No TLS proxy in front of this loopback server: HTTPS-only settings off.
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "SECURE_HSTS_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "webarchive.settings",
    }


def wait_for(url: str, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args[0]} exited with status {process.returncode}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310
            if response.status == 200:  # (our own 127.0.0.1 URL)
                return
        time.sleep(0.3)
    raise SystemExit(f"{url} did not answer within {seconds:.0f} s")


def _die_with_parent() -> None:
    """In the child: be sent SIGTERM if load.py dies, even killed (Linux), so no server outlives it."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@contextlib.contextmanager
def started(arguments: list[str], *, env=None, cwd=None, output=None):
    """A child process in its own process group, stopped (the group: gunicorn's workers too) at the end."""
    process = subprocess.Popen(  # noqa: S603 (our own command lines)
        arguments,
        env=env,
        cwd=cwd,
        stdout=output,
        stderr=subprocess.STDOUT if output else None,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def django_setup(database_url: str) -> None:
    os.environ.update(server_environment(database_url, "locmemcache://", ROOT / "staticfiles"))
    import django

    django.setup()


def fixture(path: Path) -> dict:
    """Ids for the simulated people, drawn from the database (read only)."""
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from harvest.models import Domain, HarvestDefinition, Job, JobConfiguration, JobStatistics
    from harvest.reports import TABLES
    from selection.models import Collection, Keyword, Record, Theme

    rng = random.Random(30)  # noqa: S311 (a load pattern, not a secret)
    record_ids = list(Record.objects.values_list("pk", flat=True))
    last_domain = Domain.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    sample = sorted(rng.sample(range(1, last_domain + 1), min(last_domain, 300)))
    domains = list(Domain.objects.filter(pk__in=sample).values_list("pk", "name"))
    running = list(Job.objects.filter(status="started").order_by("pk").values_list("pk", flat=True))
    large = list(
        Job.objects.filter(ended_at__isnull=False).order_by("-domain_count").values_list("pk", flat=True)[:20]
    )
    searches = [
        (job, name)
        for job in running[:5]
        for name in JobConfiguration.objects.filter(job_id=job).values_list("domain__name", flat=True)[:5]
    ]
    own = list(
        Collection.objects.filter(members__username__startswith="load-librarian-")
        .annotate(n=Count("pk"))
        .values_list("pk", flat=True)
    )
    data = {
        "records": rng.sample(record_ids, min(len(record_ids), 500)),
        "record_pages": max(1, min(20, len(record_ids) // 50)),  # the list's first pages (50 a page)
        "collections": list(Collection.objects.values_list("pk", flat=True)),
        "own_collections": own or list(Collection.objects.values_list("pk", flat=True)),
        "themes": list(Theme.objects.values_list("pk", flat=True)),
        "keywords": list(Keyword.objects.values_list("name", flat=True)),
        "words": [
            "journal",
            "mairie",
            "musee",
            "radio",
            "presse",
            "blog",
            "club",
            "ecole",
            "librairie",
            "atelier",
        ],
        "domains": [pk for pk, _name in domains],
        "domain_names": [name for _pk, name in domains],
        # 10 domains each (one in ten numbers has the word): musee-00123*
        "domain_prefixes": [
            name.rsplit("-", 1)[0] + "-" + name.rsplit("-", 1)[1][:5] + "*" for _pk, name in domains
        ],
        "definitions": list(HarvestDefinition.objects.values_list("pk", flat=True)),
        "running_jobs": running or large[:1],
        "large_jobs": large or running[:1],
        "log_searches": searches or [(job, "example.org") for job in (running or large)[:1]],
        "years": sorted(set(JobStatistics.objects.values_list("year", flat=True))) or [time.gmtime().tm_year],
        "tables": list(TABLES),
    }
    if not (data["records"] and data["domains"] and data["collections"] and data["large_jobs"]):
        raise SystemExit(
            "The database has no records, domains, collections or jobs: build it with volume.py first."
        )
    data["people"] = get_user_model().objects.filter(username__startswith="load-").count()
    path.write_text(json.dumps(data))
    return data


def read_stats(path: Path) -> list[dict]:
    with path.open() as stream:
        return list(csv.DictReader(stream))


def number(row: dict, key: str) -> float:
    value = row.get(key) or "0"
    return float(value) if value not in ("N/A", "") else 0.0


def report(rows: list[dict], failures: list[dict], about: dict) -> tuple[str, bool]:
    """The table per page and the whole mix, against the goal; whether the goal is met."""
    lines = [
        f"- machine: {about['machine']}; PostgreSQL {about['postgresql']}; database {about['database']}",
        f"- server: {about['server']}",
        f"- people: {about['mix']} (librarians, curators, engineers, managers); ramp-up {about['ramp_up']} s,"
        f" measured {about['duration']} s after it; load average (1 min) at the end {about['load']:.1f}",
        "",
        "| page | requests | median ms | p95 ms | max ms | failures | |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    pages = [row for row in rows if row["Name"] != "Aggregated"]
    pages.sort(key=lambda row: -number(row, "95%"))
    for row in pages:
        over = number(row, "95%") >= GOAL_MS
        lines.append(
            f"| {row['Name']} | {int(number(row, 'Request Count')):,} | {number(row, '50%'):,.0f}"
            f" | {number(row, '95%'):,.0f} | {number(row, 'Max Response Time'):,.0f}"
            f" | {int(number(row, 'Failure Count')):,} | {'**over goal**' if over else ''} |"
        )
    whole = next((row for row in rows if row["Name"] == "Aggregated"), None)
    met = False
    if whole:
        p95 = number(whole, "95%")
        met = p95 < GOAL_MS and not int(number(whole, "Failure Count"))
        lines += [
            f"| **whole mix** | **{int(number(whole, 'Request Count')):,}** | **{number(whole, '50%'):,.0f}**"
            f" | **{p95:,.0f}** | {number(whole, 'Max Response Time'):,.0f}"
            f" | {int(number(whole, 'Failure Count')):,} | {'**over goal**' if p95 >= GOAL_MS else ''}"
            " |",
            "",
            f"- whole mix: {number(whole, 'Requests/s'):.2f} requests/s,"
            f" median {number(whole, '50%'):,.0f} ms,"
            f" p95 {p95:,.0f} ms; goal p95 < {GOAL_MS} ms and no failure: {'met' if met else 'NOT met'}",
        ]
    if failures:
        lines += ["", "Failures:", ""]
        lines += [f"- {row['Name']}: {row['Error']} ({row['Occurrences']} times)" for row in failures]
    return "\n".join(lines), met


def _stop(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def work_directory():
    """A temporary directory, removed at the end."""
    work = Path(tempfile.mkdtemp(prefix="webarchive-load-"))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def serving(database_url: str, work: Path, *, workers: int, threads: int, server_log=None):
    """The web server as the README's production section starts it (static files collected into
    ``work``, a Redis server of its own for the cache), on 127.0.0.1 and a free port: yields its
    address, then stops both."""
    static_root = work / "static"
    redis_port, web_port = free_port(), free_port()
    environment = server_environment(database_url, f"redis://127.0.0.1:{redis_port}/1", static_root)
    log("collectstatic")
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=environment,
        check=True,
    )
    redis = [
        shutil.which("redis-server") or "redis-server",
        "--port",
        str(redis_port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
    ]
    gunicorn = [
        str(BIN / "gunicorn"),
        "webarchive.wsgi",
        "--bind",
        f"127.0.0.1:{web_port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
    ]
    host = f"http://127.0.0.1:{web_port}"
    with (
        started(redis, output=subprocess.DEVNULL),
        started(gunicorn, env=environment, cwd=ROOT, output=server_log) as web,
    ):
        log(f"gunicorn on {host}: {' '.join(gunicorn[1:])}")
        wait_for(f"{host}/login/", web)
        yield host


def main(argv: list[str] | None = None) -> int:
    from benchmarks.volume import DEFAULT_DATABASE_URL, LOAD_PASSWORD, accounts_ensure

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--database-url", default=DEFAULT_DATABASE_URL, help="the volume database (volume.py)"
    )
    parser.add_argument("--duration", type=int, default=180, help="seconds measured, after the ramp-up")
    parser.add_argument("--ramp-up", type=int, default=30, help="seconds over which the people start")
    parser.add_argument("--mix", default="24,12,8,6", help="librarians,curators,engineers,managers")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers (README: 4)")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads (README: 4)")
    parser.add_argument("--csv-dir", type=Path, help="keep locust's CSV files and the server's log here")
    args = parser.parse_args(argv)
    mix = [int(count) for count in args.mix.split(",")]
    if len(mix) != 4 or min(mix) < 0 or not sum(mix):
        parser.error("--mix is four counts: librarians,curators,engineers,managers")
    if args.duration < 1 or args.ramp_up < 0:
        parser.error("--duration must be positive, --ramp-up 0 or more")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _stop)

    from benchmarks.environment import cpus, maintenance_connection, memory

    maintenance_connection(args.database_url)  # refuses anything but PostgreSQL
    with work_directory() as work:
        out = args.csv_dir or work
        out.mkdir(parents=True, exist_ok=True)
        django_setup(args.database_url)
        from django.db import connection

        changed = accounts_ensure(dict(zip(ROLES, mix, strict=True)))
        log(f"Accounts: {sum(mix)} people ({changed} created or corrected)")
        data = fixture(work / "fixture.json")
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            postgresql = cursor.fetchone()[0]
        connection.close()

        users = sum(mix)
        with (
            (out / "server.log").open("w") as server_log,
            (out / "locust.log").open("w") as locust_log,
            serving(
                args.database_url, work, workers=args.workers, threads=args.threads, server_log=server_log
            ) as host,
        ):
            locust = [
                str(BIN / "locust"), "-f", str(ROOT / "benchmarks" / "locustfile.py"), "--headless",
                "--host", host, "--users", str(users),
                "--spawn-rate", str(max(users / max(args.ramp_up, 1), 0.1)),
                "--run-time", f"{args.ramp_up + args.duration}s", "--reset-stats", "--csv", str(out / "load"),
                "--stop-timeout", "30", "--only-summary", "--loglevel", "WARNING",
                "--exit-code-on-error", "0",
            ]  # fmt: skip
            log(f"locust: {users} people, {args.ramp_up} s ramp-up, {args.duration} s measured")
            subprocess.run(  # noqa: S603
                locust,
                env={**os.environ, "LOAD_FIXTURE": str(work / "fixture.json"), "LOAD_PASSWORD": LOAD_PASSWORD,
                     "LOAD_MIX": ",".join(map(str, mix))},
                cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=locust_log,
            )  # fmt: skip
            load = os.getloadavg()[0]
        about = {
            "machine": f"{cpus()} CPUs, {memory()}",
            "postgresql": postgresql,
            "database": f"{maintenance_connection(args.database_url)[1]} ({data['people']} load accounts)",
            "server": f"gunicorn webarchive.wsgi --workers {args.workers} --threads {args.threads}, DEBUG=0,"
            " conn_max_age=60, CACHE_URL redis",
            "mix": " + ".join(map(str, mix)) + f" = {users}",
            "ramp_up": args.ramp_up,
            "duration": args.duration,
            "load": load,
        }
        failures_path = out / "load_failures.csv"
        table, _met = report(
            read_stats(out / "load_stats.csv"),
            read_stats(failures_path) if failures_path.exists() else [],
            about,
        )
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
