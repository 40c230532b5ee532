"""benchmarks/preload.py runs at a tiny size (--smoke, on SQLite): the figures are printed, never timed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "preload.py"


def test_smoke_run_loads_every_domain_and_prints_the_comparison_with_copy(tmp_path):
    environment = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke", "--data", str(tmp_path), "--database-url", ""],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "- data: 3 lists, 6,000 lines" in out and "3,000 unique domains" in out
    assert "| `COPY` of the lines into a one-column table (**peer**) |" in out
    assert "| **preload, whole** (read, normalise, merge, load) |" in out
    for stage in ("ingest", "merge", "dns", "redirects", "load"):
        assert f"| stage `{stage}` |" in out
    assert "- domains merged: 3,000, new: 3,000;" in out
    assert "not measured (3,000 domains)" in out
