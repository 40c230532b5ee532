"""``manage.py crawl`` against a hostile site: its deadline and Ctrl-C end a fetch the site drags out.

The command runs in a child process (Ctrl-C is a signal to a process), against tests/hostile_server.py
sending one byte every half second for hours; pytest-timeout guards each test.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile_server import HostileServer

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "manage.py", "crawl", "--delay", "0", "--quiet", "--ignore-robots"]
DRIBBLE = "/dribble?interval=0.5&bytes=100000&test={}"  # some 14 hours


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as server:
        yield server


def _crawl(url: str, directory: Path, *arguments: str) -> subprocess.Popen:
    environment = {
        **os.environ,
        "WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES": "true",
        "WEBARCHIVE_VAR_DIR": str(directory / "var"),
    }
    return subprocess.Popen(
        [*COMMAND, url, "--warc-dir", str(directory), *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _log_line(directory: Path, url: str) -> str:
    return next(
        line for line in (directory / "crawl.log").read_text().splitlines() if line.split(" ")[3] == url
    )


@pytest.mark.timeout(90)
def test_max_seconds_ends_a_dribbling_fetch(hostile, tmp_path):
    url = hostile.url(DRIBBLE.format("deadline"))
    process = _crawl(url, tmp_path, "--max-seconds", "2")
    out, err = process.communicate()
    assert process.returncode == 0, err
    assert "stop reason time-limit" in out
    assert "truncated:deadline" in _log_line(tmp_path, url)


@pytest.mark.timeout(90)
def test_ctrl_c_ends_a_dribbling_fetch(hostile, tmp_path):
    path = DRIBBLE.format("interrupt")
    url = hostile.url(path)
    process = _crawl(url, tmp_path)
    assert hostile.answer_started(path).wait(60)
    time.sleep(1)  # a few bytes in, the fetch waiting for more
    process.send_signal(signal.SIGINT)
    out, err = process.communicate()
    assert "Interrupted" in err
    assert "stop reason operator" in out
    assert "truncated:stopped" in _log_line(tmp_path, url)
