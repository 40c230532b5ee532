"""The benchmarks (benchmarks/job_generation.py, crawl.py) work: counts and reports only, never time."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from harvest.models import Domain, HarvestInfo, Job, JobConfiguration

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "job_generation.py"


def _url(name: str) -> str:
    """A database of the test database's server."""
    settings = connection.settings_dict
    credentials = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    return f"postgres://{credentials}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{name}"


def _server(statement: str, params=None):
    """Run one statement on the test database's server, outside any transaction."""
    import psycopg

    settings = connection.settings_dict
    arguments = {
        key: settings[name]
        for key, name in (("user", "USER"), ("password", "PASSWORD"), ("host", "HOST"), ("port", "PORT"))
        if settings[name]
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **arguments) as server:
        row = server.execute(statement, params).fetchone() if params else server.execute(statement)
    return row[0] if params else None


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("job_generation_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def test_benchmark_launches_a_snapshot_of_every_domain_and_measures_the_peer(db, bench):
    result = bench.benchmark(domains=300, log=lambda text: None)

    assert Domain.objects.count() == 300
    # A fifth of the domains, give or take, have an earlier harvest, some of them two.
    infos = HarvestInfo.objects.count()
    assert result.setup[1].rows == infos
    assert 30 < HarvestInfo.objects.values("domain").distinct().count() < 100
    assert infos > HarvestInfo.objects.values("domain").distinct().count()

    jobs = Job.objects.filter(harvest_definition__name="benchmark: snapshot")
    assert result.jobs == jobs.count()
    # The varied expected sizes make the size-ratio rule split the snapshot.
    assert result.jobs > 1
    assert result.launch.rows == result.job_configurations == result.jobs_domain_count == 300
    assert JobConfiguration.objects.filter(job__in=jobs).values("domain").distinct().count() == 300

    # The peer wrote the same rows (same expected sizes, same seeds), then rolled them back.
    assert result.peer.rows == 300
    assert result.peer.expected_objects == result.launch.expected_objects > 0
    assert result.peer.seed_characters == result.launch.seed_characters > 300 * 4 * len("http://x.fr/")
    assert JobConfiguration.objects.count() == 300

    text = bench.report(result, {"database": connection.vendor})
    assert "| launcher: definition_launch |" in text
    assert "| peer: one INSERT ... SELECT |" in text
    assert f"- jobs: {result.jobs:,}" in text


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the script creates and drops a PostgreSQL database; run the suite on PostgreSQL",
)
def test_script_runs_on_a_database_of_its_own_and_drops_it(db):
    name = f"webarchive_bench_test_{os.getpid()}"

    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--domains", "300", "--database-url", _url(name)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={key: value for key, value in os.environ.items() if key != "DATABASE_URL"},
    )

    assert done.returncode == 0, done.stderr
    assert "Job generation, snapshot of 300 domains" in done.stdout
    assert "| launcher: definition_launch |" in done.stdout
    assert "| 300 |" in done.stdout
    assert f"Dropped the database {name}." in done.stderr
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_database WHERE datname = %s", [name])
        assert cursor.fetchone()[0] == 0


@pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the script creates and drops a PostgreSQL database; run the suite on PostgreSQL",
)
def test_script_never_uses_a_database_it_did_not_create(db):
    name = f"webarchive_bench_existing_{os.getpid()}"
    _server(f'CREATE DATABASE "{name}"')
    try:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), "--domains", "10", "--database-url", _url(name)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        still_there = _server("SELECT count(*) FROM pg_database WHERE datname = %s", [name])
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}"')

    assert done.returncode != 0
    assert f"The database {name} exists" in done.stderr
    assert still_there == 1


# The crawl benchmark (benchmarks/crawl.py) ---------------------------------------------------------

CRAWL_SCRIPT = SCRIPT.with_name("crawl.py")
WGET = Path("/usr/bin/wget")


@pytest.fixture(scope="module")
def crawl_bench():
    spec = importlib.util.spec_from_file_location("crawl_benchmark", CRAWL_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def _log_line(site: str, url: str, *, at_ms: int, duration_ms: int, status: int = 200) -> str:
    """A crawl log line as our crawler writes it."""
    from datetime import UTC, datetime, timedelta

    from harvest.crawler.crawllog import log_line

    when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(milliseconds=at_ms)
    fields = {"size": 10, "hop_path": "L", "via": "", "mime": "text/html", "digest": ""}
    return log_line(when=when, status=status, url=url, duration=duration_ms / 1000, site=site, **fields)


def test_politeness_ideal_and_lateness_come_from_the_crawl_log(crawl_bench, tmp_path):
    lines = [
        # Site a: 3 requests of 10 ms, each 600 ms after the start of the previous one.
        *(_log_line("a", f"http://a/{k}", at_ms=600 * k, duration_ms=10) for k in range(3)),
        # Site b: one request, and a URL robots.txt forbade (no request at all).
        _log_line("b", "http://b/", at_ms=0, duration_ms=0),
        _log_line("b", "http://b/private", at_ms=0, duration_ms=0, status=-9998),
    ]
    log = tmp_path / "crawl.log"
    log.write_text("\n".join(lines) + "\n")

    requests = crawl_bench.crawl_log_requests(log)
    figures = crawl_bench.politeness(requests, 0.5)

    assert {site: len(times) for site, times in requests.items()} == {"a": 3, "b": 1}
    assert figures["sites"] == 2
    assert figures["requests"] == (1, 2, 3, 4)
    assert figures["ideal"] == pytest.approx(1.0)  # (3 - 1) x 0.5 s, site a
    assert figures["ideal_with_fetches"] == pytest.approx(1.03)
    # Each next request came 600 - 10 - 500 = 90 ms later than the delay asked.
    assert figures["late"] == pytest.approx((0.09, 0.09, 0.09, 0.09), abs=1e-3)  # timestamps in ms


def test_crawl_benchmark_refuses_bad_options():
    for options in (["--only", "speed"], ["--pages", "0"], ["--delay", "-1"]):
        done = subprocess.run(
            [sys.executable, str(CRAWL_SCRIPT), *options], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2, (options, done.stderr)
        assert "error:" in done.stderr


@pytest.mark.skipif(not WGET.exists(), reason="the crawl benchmark's peer is Debian's wget")
def test_crawl_benchmark_runs_every_measurement_at_a_tiny_size(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(CRAWL_SCRIPT),
            *("--pages", "12", "--sites", "3", "--site-pages", "2", "--delay", "0.01"),
            *("--memory-pages", "12", "--workdir", str(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )

    assert done.returncode == 0, done.stderr
    report = done.stdout
    for title in (
        "### 1. Throughput: one site of 12 pages, no delay",
        "### 2. Completeness: the same crawls against the ground truth",
        "### 3. Politeness: 3 sites of 2 pages, 0.01 s delay, one process",
        "### 4. Memory: one site of 12 pages, no delay",
    ):
        assert title in report
    # Both contenders crawled something in each measurement, counted from their WARC files.
    rows = [line.split("|") for line in report.splitlines() if line.startswith(("| ours", "| wget"))]
    assert len(rows) == 8  # two in each of the four tables
    assert all(int(row[2].replace(",", "")) > 0 for row in rows if row[1].strip() in ("ours", "wget"))
    assert "| ours (1 process, 8 threads) | " in report
    assert "| wget (3 processes at once) | " in report
    assert "ours ⊇ (wget's ∩ ground truth): " in report
    assert "our crawler's peak RSS: " in report
    # The WARC files and logs are removed with the work directory (no --keep).
    assert list(tmp_path.iterdir()) == []
