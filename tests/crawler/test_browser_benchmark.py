"""benchmarks/browser.py still works: its cost measurement on one small site (figures not checked)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harvest.crawler.browser import chromium_executable
from tests.components import require_component

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "browser.py"
pytestmark = pytest.mark.browser


def run(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *arguments], capture_output=True, text=True, timeout=300
    )


def test_the_cost_measurement_runs_and_reports_each_contender():
    require_component("chromium", chromium_executable() is not None, "browser capture renders in chromium")
    done = run("--only", "cost", "--sites", "1", "--browsers", "1", "--articles", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| plain | 2 | — |" in done.stdout
    assert "| render-1 | 2 | 2 (0) |" in done.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [(["--only", "speed"], "unknown measurement"), (["--articles", "17"], "--articles is 0 to 16")],
)
def test_bad_arguments_are_refused(arguments, message):
    done = run(*arguments)
    assert done.returncode == 2 and message in done.stderr
