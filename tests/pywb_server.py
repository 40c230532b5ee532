"""``pywb_replay``: a real pywb process, behind the replay gate, reading the archive through
pytest-django's live server.

The configuration is written by ``manage.py replay --print-config --config-dir DIR`` (in this
process, so that it sees the test database: the replay account and its token), and pywb is then
started behind the gate exactly as the command would exec it (storage.replay's ``wayback_command``:
same argv, working directory and environment), in a subprocess on a free port. pywb then reads our
CDX API and WARC endpoint on the live server, as in production.

The gate lets in only a browser holding a ticket from the application: ``session(profile)`` is a
requests session holding one (made with the application's key, as the replay entry makes them), and
``get`` fetches with it; a browser gets one by going through the application's replay links.

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
from urllib.parse import urlsplit

import pytest
import requests
from django.core.management import call_command

from storage.replay import gate_ticket_key, profile_collection, pywb_installed, wayback_command
from storage.replay_ticket import COOKIE, ticket_make
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

    def capture_url(self, url: str, timestamp14: str, modifier: str = "", profile: str = "staff") -> str:
        """pywb's address of ``url`` at ``timestamp14`` for a kind of viewer (``modifier`` "id_": the
        bytes as archived)."""
        return f"{self.url}{profile_collection(profile)}/{timestamp14}{modifier}/{url}"

    def session(self, profile: str = "staff", address: str = "127.0.0.1") -> requests.Session:
        """A client holding the ticket the application would give ``address`` for ``profile``."""
        session = requests.Session()
        ticket = ticket_make(key=gate_ticket_key(), profile=profile, address=address, seconds=600)
        session.cookies.set(COOKIE, ticket, domain=urlsplit(self.url).hostname, path="/")
        return session

    def admit(self, context, profile: str = "staff") -> None:
        """Give a browser context (Playwright) the ticket the replay entry would give it for ``profile``."""
        ticket = ticket_make(key=gate_ticket_key(), profile=profile, address="127.0.0.1", seconds=600)
        context.add_cookies([{"name": COOKIE, "value": ticket, "url": self.url}])

    def get(self, url: str, profile: str = "staff", **options) -> requests.Response:
        """GET a pywb address with a ticket for ``profile`` (without following redirects)."""
        options.setdefault("timeout", 30)
        options.setdefault("allow_redirects", False)
        with self.session(profile) as session:
            return session.get(url, **options)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def wait_until_up(url: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"pywb exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            requests.get(url, timeout=2, allow_redirects=False)
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
    require_component("pywb", pywb_installed(), "pywb (requirements.txt) is the replay process")
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
