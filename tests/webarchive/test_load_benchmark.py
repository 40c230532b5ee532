"""benchmarks/volume.py, benchmarks/load.py and benchmarks/operations.py at a tiny size: the database is
built and kept, an existing one is never overwritten without --rebuild, a few seconds of load with one
person of each role produce the table of every page with every request answered (counts, never time),
and the operations' table has every line while the database is left as it was."""

from __future__ import annotations

import os
import re

import pytest

from tests.storage.test_benchmark_scripts import (
    BENCHMARKS,
    POSTGRESQL_ONLY,
    _database_exists,
    _run,
    _server,
    _url,
)


@POSTGRESQL_ONLY
@pytest.mark.timeout(900)
def test_volume_database_then_a_short_load_answers_every_request(db, tmp_path):
    name = f"volume_load_test_{os.getpid()}"
    database = _url(name)
    ready = tmp_path / "ready"
    try:
        built = _run(
            BENCHMARKS / "volume.py",
            "--smoke",
            "--database-url",
            database,
            "--data",
            str(tmp_path / "lists"),
            "--ready-file",
            str(ready),
            timeout=600,
        )
        again = _run(BENCHMARKS / "volume.py", "--smoke", "--database-url", database, timeout=60)
        loaded = _run(
            BENCHMARKS / "load.py",
            "--database-url",
            database,
            "--duration",
            "8",
            "--ramp-up",
            "1",
            "--mix",
            "1,1,1,1",
            "--workers",
            "1",
            "--threads",
            "4",
            "--csv-dir",
            str(tmp_path / "load"),
            timeout=300,
        )
        kept = _database_exists(name)
        counts = _counts(database)
        operated = _run(
            BENCHMARKS / "operations.py", "--database-url", database, "--repeat", "2", timeout=300
        )
        counts_after = _counts(database)
    finally:
        _server(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    assert built.returncode == 0, built.stderr
    assert ready.exists() and kept
    assert "| harvest_domain | 3,000 |" in built.stdout
    assert "| selection_record | 300 |" in built.stdout
    assert re.search(r"\| harvest_jobstatistics \| [1-9]", built.stdout)  # statistics of the ended jobs
    assert "started" in built.stdout  # jobs left running for the polling pages
    assert again.returncode != 0 and "--rebuild" in again.stderr + again.stdout

    assert loaded.returncode == 0, loaded.stderr
    report = loaded.stdout
    assert "| page | requests | median ms | p95 ms | max ms | failures | |" in report
    assert "1 + 1 + 1 + 1 = 4" in report
    whole = re.search(r"\| \*\*whole mix\*\* \| \*\*([\d,]+)\*\* \|.*\| ([\d,]+) \|", report)
    assert whole, report
    assert int(whole.group(1).replace(",", "")) > 0
    assert whole.group(2) == "0", report  # no failed request, no truncated CSV
    assert "Failures:" not in report

    # benchmarks/operations.py: issue 29's table, each line against its goal; the database as it was.
    assert operated.returncode == 0, operated.stderr
    table = operated.stdout
    assert "| what | measured | goal | |" in table
    for line in (
        "transfer of all 20 collections, first: every configuration new",
        "transfer of all 20 collections, again: nothing changed (0 created, 0 updated",
        "launch of the selective definition “News weekly” with its transfer",
        "launch of the snapshot “Broad crawl",
        "Operations → Running jobs",
        "Running jobs, its poll",
        "monitoring, its poll",
        "a running job's page",
        "an ended job's page",
        "an ended job's sites, page 40",
        "domain search `exam*`",
        "domain search by exact name",
        "reports dashboard",
    ):
        assert re.search(rf"^\| {re.escape(line)}.*\| (met|\*\*NOT met\*\*) \|$", table, re.MULTILINE), line
    assert re.search(r"first: every configuration new \([1-9][\d,]* created", table)
    assert "rolled back: the database is as it was" in operated.stderr
    assert counts_after == counts


def _counts(database: str) -> dict[str, int]:
    """Rows of the tables the operations write, counted."""
    import psycopg

    tables = (
        "harvest_domain",
        "harvest_domainconfiguration",
        "harvest_seedlist",
        "harvest_collectionmapping",
        "harvest_harvestrun",
        "harvest_job",
        "harvest_jobconfiguration",
    )
    with psycopg.connect(database.replace("postgres://", "postgresql://", 1)) as connection:
        return {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in tables}
