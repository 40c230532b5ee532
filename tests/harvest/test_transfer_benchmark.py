"""benchmarks/transfer.py runs at a tiny size: three transfers and the peer, the second writing
nothing, and the database it made is gone (counts, never time)."""

from __future__ import annotations

import os
import re

import pytest

from tests.storage.test_benchmark_scripts import BENCHMARKS, POSTGRESQL_ONLY, _database_exists, _run, _url


@POSTGRESQL_ONLY
def test_transfer_benchmark_transfers_then_finds_nothing_changed(db):
    name = f"bench_transfer_test_{os.getpid()}"
    done = _run(
        BENCHMARKS / "transfer.py",
        "--records",
        "400",
        "--domains",
        "500",
        "--database-url",
        _url(name),
        timeout=600,
    )

    assert done.returncode == 0, done.stderr
    report = done.stdout
    assert report.startswith("## Transfer from selection to planning")
    assert "- 400 validated records in 20 collections; 500 existing domains" in report
    rows = {line.split(" | ")[0]: line.split(" | ") for line in report.splitlines() if line.startswith("| ")}
    first, second = rows["| first transfer (all new)"], rows["| second (nothing changed)"]
    created, skipped = int(first[2].replace(",", "")), int(first[6])
    assert created > 300 and created + skipped <= 400
    assert second[2:4] == ["0", "0"] and int(second[4].replace(",", "")) == created
    assert second[8] == "0"  # no history row
    assert int(rows["| third (after 4 records changed)"][3]) >= 1
    assert re.search(r"first transfer: \*\*[\d.]+ s\*\* for 400 records", report)
    assert "nothing written but the reports" in report
    assert not _database_exists(name)


@pytest.mark.parametrize("option", [["--records", "3"], ["--domains", "-1"], ["--changed", "0"]])
def test_transfer_benchmark_refuses_bad_sizes(option):
    done = _run(BENCHMARKS / "transfer.py", *option)
    assert done.returncode == 2 and "--records at least" in done.stderr
