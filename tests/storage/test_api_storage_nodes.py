"""/api/storage-nodes/: crawl engineers read the nodes with their replica counts; nothing is written."""

from __future__ import annotations

import hashlib

import pytest
import yaml
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from storage.models import Replica, StorageNode, WarcFile
from storage.services.nodes import node_create
from tests.access import assert_api_access
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

ENGINEERS = frozenset({Role.ENGINEER})


@pytest.fixture
def nodes(tmp_path):
    first = node_create(name="n1", location="paris", root=str(tmp_path / "n1"), local_worker=True)
    second = node_create(name="n2", location="lyon", root=str(tmp_path / "n2"))
    for number, (size, state) in enumerate([(1000, "ok"), (300, "ok"), (50, "corrupt")]):
        name = f"f{number}.warc.gz"
        warc = WarcFile.objects.create(
            name=name,
            path=f"/spool/{name}",
            size=size,
            sha256=hashlib.sha256(name.encode()).hexdigest(),
            created_at=timezone.now(),
            closed_at=timezone.now(),
        )
        Replica.objects.create(warc_file=warc, node=first, relative_path=name, state=state, size=size)
    StorageNode.objects.filter(pk=second.pk).update(state=StorageNode.State.OFFLINE)
    return first, second


def test_list_and_detail_are_for_crawl_engineers(client, nodes):
    assert_api_access(client, reverse("api:storagenode-list"), ENGINEERS)
    assert_api_access(client, reverse("api:storagenode-detail", kwargs={"pk": nodes[0].pk}), ENGINEERS)


def test_a_node_has_its_space_and_replica_counts(as_role, nodes):
    first, _second = nodes
    client = as_role(Role.ENGINEER)
    body = client.get(reverse("api:storagenode-list"), HTTP_ACCEPT="application/json").json()
    assert body["count"] == 2
    row = body["results"][0]
    first.refresh_from_db()
    assert row["name"] == "n1" and row["location"] == "paris" and row["root"] == first.root
    assert row["state"] == "online" and row["reachable"] is True and row["backend"] == "directory"
    assert row["replicas_ok"] == 2 and row["replicas_not_ok"] == 1 and row["bytes_stored"] == 1300
    assert row["capacity"] == first.capacity and row["free"] == first.free
    assert row["used_percent"] == first.used_percent
    assert row["local_worker"] is True and row["queue"] == "storage-n1"
    detail = client.get(reverse("api:storagenode-detail", kwargs={"pk": first.pk})).json()
    assert detail == row
    empty = body["results"][1]
    assert empty["name"] == "n2" and empty["replicas_ok"] == 0 and empty["bytes_stored"] == 0


def test_filters(as_role, nodes):
    client = as_role(Role.ENGINEER)
    names = lambda query: [  # noqa: E731
        row["name"] for row in client.get(reverse("api:storagenode-list") + query).json()["results"]
    ]
    assert names("?state=offline") == ["n2"]
    assert names("?location=paris") == ["n1"]
    assert names("?reachable=true") == ["n1", "n2"]
    assert client.get(reverse("api:storagenode-list") + "?state=gone").status_code == 400


def test_nodes_cannot_be_written_through_the_api(as_role, nodes, tmp_path):
    client = as_role(Role.ENGINEER)
    detail = reverse("api:storagenode-detail", kwargs={"pk": nodes[0].pk})
    data = {"name": "n3", "location": "x", "root": str(tmp_path / "n3")}
    assert client.post(reverse("api:storagenode-list"), data).status_code == 405
    assert client.patch(detail, {"state": "offline"}, content_type="application/json").status_code == 405
    assert client.delete(detail).status_code == 405
    assert StorageNode.objects.count() == 2
    assert StorageNode.objects.get(pk=nodes[0].pk).state == StorageNode.State.ONLINE


def test_the_schema_still_generates_without_warnings_and_describes_the_nodes(tmp_path):
    path = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--validate", "--file", str(path))
    schema = yaml.safe_load(path.read_text())
    assert {"/api/storage-nodes/", "/api/storage-nodes/{id}/"} <= schema["paths"].keys()
    assert list(schema["paths"]["/api/storage-nodes/"]) == ["get"]
    fields = schema["components"]["schemas"]["StorageNode"]["properties"]
    assert {"replicas_ok", "replicas_not_ok", "bytes_stored", "used_percent", "queue"} <= fields.keys()
