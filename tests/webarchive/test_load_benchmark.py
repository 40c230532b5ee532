"""benchmarks/volume.py and benchmarks/load.py at a tiny size: the database is built and kept, an existing
one is never overwritten without --rebuild, and a few seconds of load with one person of each role
produce the table of every page with every request answered (counts, never time)."""

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
