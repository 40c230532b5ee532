"""``pywb_replay``: a real pywb process reading the archive through pytest-django's live server.

The configuration is written by ``manage.py replay --print-config --config-dir DIR`` (in this
process, so that it sees the test database: the replay account and its token), and pywb's
``wayback`` is then started on it exactly as the command would exec it (storage.replay's
``wayback_command``: same argv, working directory and environment), in a subprocess on a free
port. pywb then reads our CDX API and WARC endpoint on the live server, as in production.

Tests that use it need the live server's transactional database; the replay account is made
again for each test (the database is flushed after each), so pywb is started for each test too.
"""

from __future__ import annotations

import io
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from django.core.management import call_command

from storage.replay import wayback_command
from tests.components import require_component

START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class PywbReplay:
    """A running pywb: its base URL, collection, configuration directory and log file."""

    url: str
    collection: str
    config_dir: Path
    log: Path

    def capture_url(self, url: str, timestamp14: str, modifier: str = "") -> str:
        """pywb's address of ``url`` at ``timestamp14`` (``modifier`` "id_": the bytes as archived)."""
        return f"{self.url}{self.collection}/{timestamp14}{modifier}/{url}"

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def wait_until_up(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"pywb exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            requests.get(url, timeout=2)
            return
        except requests.ConnectionError:
            time.sleep(0.2)
    pytest.fail(f"pywb did not answer on {url} within {START_SECONDS} s:\n{log.read_text(errors='replace')}")


@pytest.fixture
def pywb_replay(live_server, transactional_db, settings, tmp_path) -> Iterator[PywbReplay]:
    """pywb started on the configuration ``manage.py replay`` writes, reading the live server."""
    port = free_port()
    settings.WEBARCHIVE_URL = live_server.url + "/"
    settings.REPLAY_URL = f"http://127.0.0.1:{port}/"
    config_dir = tmp_path / "replay"
    call_command(
        "replay",
        "--print-config",
        "--config-dir",
        str(config_dir),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    wayback = wayback_command(directory=config_dir, host="127.0.0.1", port=port)
    require_component("pywb", Path(wayback.argv[0]).exists(), "pywb (requirements.txt) is the replay process")
    log = tmp_path / "wayback.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            wayback.argv, cwd=wayback.cwd, env=wayback.env, stdout=out, stderr=subprocess.STDOUT
        )
    try:
        wait_until_up(settings.REPLAY_URL, process, log)
        yield PywbReplay(settings.REPLAY_URL, settings.REPLAY_COLLECTION, config_dir, log)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
