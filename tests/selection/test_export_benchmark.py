"""benchmarks/export.py runs at a tiny size: the export and PostgreSQL's own CSV of the same records
give as many lines, and the database it made is gone (counts, never time)."""

from __future__ import annotations

import os
import re

import pytest

from tests.storage.test_benchmark_scripts import BENCHMARKS, POSTGRESQL_ONLY, _database_exists, _run, _url


@POSTGRESQL_ONLY
def test_export_benchmark_exports_every_record_as_postgresql_does(db):
    name = f"bench_export_test_{os.getpid()}"
    done = _run(BENCHMARKS / "export.py", "--records", "300", "--runs", "1", "--database-url", _url(name))

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## CSV export of the records")
    assert "- 300 records in 20 collections, 2 keywords each" in report
    rows = [line for line in report.splitlines() if line.startswith("| `records_csv_stream`")]
    rows += [line for line in report.splitlines() if line.startswith("| PostgreSQL alone")]
    assert len(rows) == 2 and all("| 301 |" in row for row in rows)  # the header and 300 records
    assert re.search(r"per record: \*\*[\d.]+ µs\*\*", report)
    assert not _database_exists(name)


@pytest.mark.parametrize("option", [["--records", "0"], ["--runs", "0"], ["--keywords", "-1"]])
def test_export_benchmark_refuses_bad_sizes(option):
    done = _run(BENCHMARKS / "export.py", *option)
    assert done.returncode == 2 and "must be positive" in done.stderr
