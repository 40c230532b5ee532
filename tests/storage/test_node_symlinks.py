"""A storage node never follows a symbolic link out of its root: not to serve /warcs/, not in an audit.

A replica is served, copied and audited only when its real path (symbolic links and ``..`` resolved)
is under the real path of its node's root; links that stay inside the node, and a root that is itself
a link (a mount point elsewhere), are fine.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from storage.backends import DirectoryBackend, OutsideNode
from storage.models import Replica, StorageEvent, WarcFile
from storage.services import placement
from storage.services.audits import replica_verify
from storage.services.replication import file_replicate
from tests.storage.storage_files import make_nodes, replica_path, spool_warc
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def reader(client, user_with_role):
    """Who reads WARC bytes: crawl engineers (and the replay account)."""
    client.force_login(user_with_role(Role.ENGINEER))
    return client


def replicated(tmp_path) -> tuple[WarcFile, Replica]:
    """A file with one good replica on one node, its spool copy gone (only the node can serve it)."""
    make_nodes(tmp_path / "nodes", "room-1")
    warc = spool_warc()
    warc.replicas_wanted = placement.replicas_for(warc)
    warc.save(update_fields=["replicas_wanted"])
    file_replicate(warc.pk)
    Path(warc.path).unlink()
    return warc, warc.replicas.select_related("node").get()


def link_out(replica: Replica, outside: Path) -> Path:
    """Replace the replica by a symbolic link to a copy of its bytes outside the node."""
    path = replica_path(replica)
    outside.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside)
    return path


def warc_bytes(client, warc: WarcFile):
    return client.get(reverse("warc_bytes", kwargs={"filename": warc.name}))


def test_the_replica_is_served_from_the_node(reader, tmp_path):
    warc, replica = replicated(tmp_path)
    response = warc_bytes(reader, warc)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == replica_path(replica).read_bytes()


def test_a_link_out_of_the_node_is_not_served(reader, tmp_path, caplog):
    warc, replica = replicated(tmp_path)
    # The very same bytes, so that only where they are tells the link from the replica.
    link_out(replica, tmp_path / "elsewhere" / "copy.warc.gz")
    with caplog.at_level(logging.WARNING):
        response = warc_bytes(reader, warc)
    assert response.status_code == 404
    assert "out of storage node" in caplog.text
    assert str(tmp_path / "elsewhere" / "copy.warc.gz") in caplog.text


def test_a_link_to_a_system_file_is_not_served(reader, tmp_path):
    warc, replica = replicated(tmp_path)
    path = replica_path(replica)
    path.unlink()
    path.symlink_to("/etc/hostname")
    response = warc_bytes(reader, warc)
    assert response.status_code == 404
    assert Path("/etc/hostname").read_bytes() not in response.content


def test_a_directory_linked_out_of_the_node_is_not_followed(reader, tmp_path):
    warc, replica = replicated(tmp_path)
    year = replica_path(replica).parent  # root/YYYY/name: the year directory becomes a link
    outside = tmp_path / "other-disk" / year.name
    shutil.copytree(year, outside)
    shutil.rmtree(year)
    year.symlink_to(outside, target_is_directory=True)
    assert warc_bytes(reader, warc).status_code == 404


def test_the_spool_copy_is_served_when_the_replica_links_out(reader, tmp_path, settings):
    make_nodes(tmp_path / "nodes", "room-1")
    warc = spool_warc()
    file_replicate(warc.pk)
    replica = warc.replicas.select_related("node").get()
    link_out(replica, tmp_path / "elsewhere" / "copy.warc.gz")
    response = warc_bytes(reader, warc)
    assert response.status_code == 200  # the crawler's own copy, not what the link points to
    assert b"".join(response.streaming_content) == Path(warc.path).read_bytes()


def test_links_inside_the_node_and_a_linked_root_are_followed(tmp_path):
    real_root = tmp_path / "mount" / "disk-1"
    backend = DirectoryBackend(real_root, "node-a")
    backend.initialise()
    (real_root / "2024").mkdir()
    (real_root / "2024" / "a.warc.gz").write_bytes(b"bytes of a")
    (real_root / "2024" / "b.warc.gz").symlink_to("a.warc.gz")
    linked_root = tmp_path / "node-a"
    linked_root.symlink_to(real_root, target_is_directory=True)

    through_link = DirectoryBackend(linked_root, "node-a")
    for relative in ("2024/a.warc.gz", "2024/b.warc.gz"):
        with through_link.open(relative) as stream:
            assert stream.read() == b"bytes of a"
    assert through_link.sha256("2024/b.warc.gz")[1] == len(b"bytes of a")
    with pytest.raises(OutsideNode):
        through_link.open("../../outside.warc.gz")


def test_the_audit_reports_a_link_out_of_the_node(tmp_path):
    warc, replica = replicated(tmp_path)
    link_out(replica, tmp_path / "elsewhere" / "copy.warc.gz")
    assert replica_verify(replica.pk, repair=False) == Replica.State.MISSING
    missing = warc.storage_events.get(kind=StorageEvent.Kind.MISSING)
    assert "out of storage node" in missing.detail
    assert missing.node == replica.node


def test_the_audit_repair_replaces_the_link_by_a_real_copy(tmp_path):
    make_nodes(tmp_path / "nodes", "room-1")
    warc = spool_warc()  # the spool copy is kept: the repair copies from it
    file_replicate(warc.pk)
    replica = warc.replicas.select_related("node").get()
    outside = tmp_path / "elsewhere" / "copy.warc.gz"
    path = link_out(replica, outside)
    outside_before = outside.read_bytes()

    replica_verify(replica.pk)  # finds the link, then repairs in place

    replica.refresh_from_db()
    assert replica.state == Replica.State.OK
    assert not path.is_symlink() and path.read_bytes() == Path(warc.path).read_bytes()
    assert outside.read_bytes() == outside_before  # the link's target was never written to
