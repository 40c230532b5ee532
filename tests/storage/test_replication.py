"""Replicas on storage nodes: placement, verified copies, audits and repair, node failure and return,
draining, copies killed halfway, and reads that fall back to another replica. The tests that take
``node_backend`` run on directory nodes and on S3 nodes (the session's SeaweedFS server)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from harvest.models import CollectionMapping
from selection.choices import Frequency
from storage import backends_s3
from storage.backends import TEMP_SUFFIX
from storage.models import REPLICA_TRANSITIONS, Replica, StorageEvent, StorageNode, WarcFile
from storage.services import nodes, placement, replication
from storage.services.audits import audit_due, replica_verify
from storage.services.nodes import check_round, node_create, node_drain, node_set_offline, node_set_online
from storage.services.placement import lost_files, under_replicated
from storage.services.replication import file_replicate
from tests.factories import CollectionFactory, UserFactory
from tests.harvest.crawljobs import job_for_sites
from tests.storage.storage_files import (
    flip_replica_byte,
    make_nodes,
    node_files,
    node_leftovers,
    node_lose,
    node_return,
    remove_replica,
    replica_bytes,
    replica_exists,
    spool_warc,
    write_replica,
)
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def stored(warc: WarcFile) -> WarcFile:
    """A file with its wish recorded (what the ingest chain's first step does) and replicated."""
    warc.replicas_wanted = placement.replicas_for(warc)
    warc.save(update_fields=["replicas_wanted"])
    file_replicate(warc.pk)
    return warc


def kinds(warc: WarcFile) -> list[str]:
    return list(warc.storage_events.order_by("pk").values_list("kind", flat=True))


def test_a_file_is_placed_on_two_nodes_at_distinct_locations(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", "room-1", "room-2", backend=node_backend)
    warc = stored(spool_warc())
    replicas = list(warc.replicas.select_related("node"))
    assert len(replicas) == 2
    assert {replica.node.location for replica in replicas} == {"room-1", "room-2"}
    original = Path(warc.path).read_bytes()
    for replica in replicas:
        assert replica.state == Replica.State.OK and replica.verified_at is not None
        assert replica.sha256 == warc.sha256 and replica.size == warc.size
        assert replica_bytes(replica) == original
        assert node_leftovers(replica.node) == []
    assert kinds(warc) == [StorageEvent.Kind.COPIED] * 2
    assert not under_replicated().exists() and not lost_files().exists()


def test_never_two_replicas_on_one_node(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", backend=node_backend)
    warc = stored(spool_warc())
    assert warc.replicas.count() == 1
    assert file_replicate(warc.pk) == 1  # again: still one, nowhere else to go
    assert warc.replicas.count() == 1


def test_the_replica_count_comes_from_the_harvest_definition_or_its_collections(tmp_path, settings):
    settings.STORAGE_REPLICAS = 2
    make_nodes(tmp_path, "room-1", "room-2", "room-3")
    job = job_for_sites([("example.com", "http://example.com/")])
    definition = job.harvest_definition
    warc = spool_warc()
    warc.job = job
    warc.save(update_fields=["job"])
    assert placement.replicas_for(warc) == 2
    collection = CollectionFactory(replica_count=3)
    CollectionMapping.objects.create(
        collection=collection, frequency=Frequency.ANNUAL, harvest_definition=definition
    )
    assert placement.replicas_for(warc) == 3
    definition.replica_count = 1
    definition.save()
    assert placement.replicas_for(warc) == 1
    definition.replica_count = None
    definition.save()
    assert stored(warc).replicas.count() == 3  # "up to all nodes"


def test_placement_prefers_the_node_with_the_most_free_space(tmp_path):
    a, b, c = make_nodes(tmp_path, "room-1", "room-2", "room-3")
    StorageNode.objects.filter(pk=a.pk).update(free=10**9)
    StorageNode.objects.filter(pk=b.pk).update(free=10**12)
    StorageNode.objects.filter(pk=c.pk).update(free=10**11)
    warc = spool_warc()
    assert [node.name for node in placement.placement(warc, 2)] == ["node-b", "node-c"]
    StorageNode.objects.filter(pk=b.pk).update(free=warc.size - 1)  # no room for it there
    assert [node.name for node in placement.placement(warc, 2)] == ["node-c", "node-a"]


@pytest.mark.parametrize("added_first", ["node-a", "node-b"])
@pytest.mark.parametrize("measured_roomier", ["node-a", "node-b"])
def test_two_equal_nodes_always_get_a_file_in_the_same_order(tmp_path, added_first, measured_roomier):
    """Two nodes at one location on the machine's one file system: whichever was added first, and
    whichever the disk's free space favoured when they were measured, the name decides."""
    added = {
        name: node_create(name=name, location="room-1", root=str(tmp_path / name))
        for name in sorted(["node-a", "node-b"], key=lambda name: name != added_first)
    }
    assert StorageNode.objects.order_by("pk").values_list("name", flat=True).first() == added_first
    # The disk changes between two measurements (8 MiB written meanwhile, as any process may do).
    (other,) = set(added) - {measured_roomier}
    nodes.node_check(added[measured_roomier])
    filler = tmp_path / "filler"
    with filler.open("wb") as stream:
        stream.write(os.urandom(8 << 20))
        stream.flush()
        os.fsync(stream.fileno())
    nodes.node_check(added[other])
    filler.unlink()
    warc = spool_warc()
    assert [node.name for node in placement.placement(warc, 1)] == ["node-a"]
    assert [node.name for node in placement.placement(warc, 2)] == ["node-a", "node-b"]
    assert sorted(stored(warc).replicas.values_list("node__name", flat=True)) == ["node-a", "node-b"]


@pytest.mark.parametrize(
    ("a_more", "expected"),
    [
        (0, "node-a"),
        (placement.FREE_SPACE_MARGIN, "node-a"),  # within the margin: equal, the name decides
        (-placement.FREE_SPACE_MARGIN, "node-a"),
        (placement.FREE_SPACE_MARGIN + 1, "node-a"),  # beyond it: the most free space
        (-placement.FREE_SPACE_MARGIN - 1, "node-b"),
    ],
)
def test_free_space_tells_nodes_apart_only_beyond_the_margin(tmp_path, a_more, expected):
    a, b = make_nodes(tmp_path, "room-1", "room-1")
    base = 100 * placement.FREE_SPACE_MARGIN
    StorageNode.objects.filter(pk=a.pk).update(free=base + a_more)
    StorageNode.objects.filter(pk=b.pk).update(free=base)
    assert [node.name for node in placement.placement(spool_warc(), 1)] == [expected]


def test_a_flipped_byte_is_found_by_the_audit_and_repaired_from_the_other_replica(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = stored(spool_warc())
    Path(warc.path).unlink()  # the spool copy is gone: only the other replica can repair it
    bad = warc.replicas.select_related("node").first()
    flip_replica_byte(bad)
    assert replica_verify(bad.pk) == Replica.State.CORRUPT
    bad.refresh_from_db()
    assert bad.state == Replica.State.OK
    good = warc.replicas.exclude(pk=bad.pk).select_related("node").get()
    assert replica_bytes(bad) == replica_bytes(good)
    assert kinds(warc)[-2:] == [StorageEvent.Kind.CORRUPT, StorageEvent.Kind.REPAIRED]
    corrupt = warc.storage_events.get(kind=StorageEvent.Kind.CORRUPT)
    assert corrupt.node == bad.node and warc.sha256 in corrupt.detail


def test_a_missing_replica_is_replaced(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = stored(spool_warc())
    replica = warc.replicas.select_related("node").first()
    remove_replica(replica)
    assert replica_verify(replica.pk) == Replica.State.MISSING
    replica.refresh_from_db()
    assert replica.state == Replica.State.OK and replica_exists(replica)
    assert StorageEvent.Kind.MISSING in kinds(warc) and kinds(warc)[-1] == StorageEvent.Kind.REPAIRED


def test_a_file_with_no_good_replica_left_raises_an_alert(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = stored(spool_warc())
    Path(warc.path).unlink()
    for replica in warc.replicas.select_related("node"):
        flip_replica_byte(replica)
    for replica in warc.replicas.all():
        replica_verify(replica.pk)
    assert list(lost_files()) == [warc]
    alerts = warc.storage_events.filter(kind=StorageEvent.Kind.NO_GOOD_REPLICA)
    assert alerts.count() == 1  # once, not at every attempt
    assert "No good copy" in alerts.get().detail
    # The corrupt replicas are kept as they are for an engineer: nothing was overwritten.
    assert set(warc.replicas.values_list("state", flat=True)) == {Replica.State.CORRUPT}


def test_a_corrupt_source_is_never_copied(tmp_path, node_backend):
    a, b = make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = spool_warc()
    warc.replicas_wanted = 1
    warc.save()
    file_replicate(warc.pk)
    Path(warc.path).unlink()
    first = warc.replicas.select_related("node").get()
    flip_replica_byte(first)  # rotted, not audited yet: it still says ok
    warc.replicas_wanted = 2
    warc.save()
    file_replicate(warc.pk)
    first.refresh_from_db()
    assert first.state == Replica.State.CORRUPT
    assert not warc.replicas.filter(state=Replica.State.OK).exists()
    assert node_files(b if first.node == a else a) == []
    assert node_leftovers(b if first.node == a else a) == []


def test_an_unreachable_node_has_its_files_replicated_elsewhere_then_is_verified_on_return(
    tmp_path, node_backend
):
    a, _b, _c = make_nodes(tmp_path, "room-1", "room-2", "room-3", backend=node_backend)
    warc = stored(spool_warc())
    holding = {replica.node.name for replica in warc.replicas.select_related("node")}
    assert holding == {"node-a", "node-b"}
    away = tmp_path / "node-a-unmounted"
    node_lose(a, away)  # as an unmounted disk: the directory (or the bucket's marker) is not there

    work = check_round()
    a.refresh_from_db()
    assert not a.reachable and "node-a" in a.unreachable_reason
    assert warc.replicas.get(node=a).state == Replica.State.MISSING
    assert work["replicate"] == [warc.pk]
    file_replicate(warc.pk)
    assert set(placement.good_replicas(warc).values_list("node__name", flat=True)) == {"node-b", "node-c"}

    node_return(a, away)  # back
    work = check_round()
    a.refresh_from_db()
    assert a.reachable
    returning = warc.replicas.get(node=a)
    assert returning.state == Replica.State.MISSING  # it does not count before it is verified
    assert (returning.pk, "default") in work["verify"]
    assert replica_verify(returning.pk) == Replica.State.OK
    assert [k for k in kinds(warc) if k != StorageEvent.Kind.COPIED][-1] == StorageEvent.Kind.VERIFIED
    events = list(StorageEvent.objects.filter(node=a).values_list("kind", flat=True))
    assert StorageEvent.Kind.NODE_UNREACHABLE in events and StorageEvent.Kind.NODE_ONLINE in events


def test_a_returning_node_with_a_damaged_replica_is_repaired_not_trusted(tmp_path, node_backend):
    a, _b, _c = make_nodes(tmp_path, "room-1", "room-2", "room-3", backend=node_backend)
    warc = stored(spool_warc())
    node_set_offline(node_id=a.pk, reason="disk replaced")
    flip_replica_byte(warc.replicas.select_related("node").get(node=a))
    to_verify = node_set_online(node_id=a.pk)
    assert to_verify == [warc.replicas.get(node=a).pk]
    assert replica_verify(to_verify[0]) == Replica.State.CORRUPT
    assert warc.replicas.get(node=a).state == Replica.State.OK  # repaired in place


def test_marking_a_node_offline_counts_its_replicas_missing(tmp_path):
    engineer = UserFactory(roles=[Role.ENGINEER])
    a, _b, _c = make_nodes(tmp_path, "room-1", "room-2", "room-3")
    warc = stored(spool_warc())
    node_set_offline(node_id=a.pk, user=engineer, reason="maintenance")
    assert list(under_replicated()) == [warc]
    assert check_round()["replicate"] == [warc.pk]
    event = StorageEvent.objects.filter(node=a).latest("pk")
    assert (
        event.kind == StorageEvent.Kind.NODE_OFFLINE
        and event.user == engineer
        and "maintenance" in event.detail
    )
    file_replicate(warc.pk)
    assert not under_replicated().exists()


def test_draining_a_node_moves_its_replicas_away_then_retires_it(tmp_path, node_backend):
    a, b, c = make_nodes(tmp_path, "room-1", "room-2", "room-3", backend=node_backend)
    files = [stored(spool_warc(f"crawl-{n}.warc.gz", seed=n)) for n in range(3)]
    node_drain(node_id=a.pk)
    work = check_round()  # nothing is removed before its file has its count elsewhere
    assert Replica.objects.filter(node=a).count() == 3
    for warc_file_id in work["replicate"]:
        file_replicate(warc_file_id)
    check_round()
    a.refresh_from_db()
    assert a.state == StorageNode.State.RETIRED
    assert not Replica.objects.filter(node=a).exists() and node_files(a) == []
    for warc in files:
        assert placement.good_replicas(warc).filter(node__in=[b, c]).count() == 2
    with pytest.raises(ValidationError):
        node_drain(node_id=a.pk)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        (StorageNode.State.RETIRED, "Node node-a is retired."),
        (StorageNode.State.ONLINE, "Node node-a is online."),
    ],
)
def test_a_node_that_is_retired_or_online_is_not_set_online(tmp_path, state, message):
    (a,) = make_nodes(tmp_path, "room-1")
    StorageNode.objects.filter(pk=a.pk).update(state=state)
    events = StorageEvent.objects.count()
    with pytest.raises(ValidationError) as excinfo:
        node_set_online(node_id=a.pk)
    assert excinfo.value.messages == [message] and excinfo.value.code == "illegal_transition"
    a.refresh_from_db()
    assert a.state == state and StorageEvent.objects.count() == events


def test_a_replica_may_be_claimed_for_a_copy_whatever_its_state():
    """The services' moves of a replica, as its table allows them: a copy claims any replica (even
    one a verification found ok meanwhile, or a dead worker's), and a verification or a copy may
    leave it ok, missing or corrupt."""
    State = Replica.State
    for state in State:
        assert REPLICA_TRANSITIONS.may(state, State.COPYING)
        assert REPLICA_TRANSITIONS[state] | {state} == set(State)
    assert REPLICA_TRANSITIONS.ended() == frozenset()


def test_a_copy_interrupted_halfway_leaves_no_replica_marked_ok(
    tmp_path, settings, monkeypatch, node_backend
):
    nodes_made = make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = spool_warc(body_bytes=3 * 1024 * 1024)
    warc.replicas_wanted = 2
    warc.save()
    reads = {"n": 0}
    real_read = replication._Heartbeat.read

    def read_then_die(self, size=1024 * 1024):
        reads["n"] += 1
        if reads["n"] == 2:
            raise KeyboardInterrupt  # the process dies here
        return real_read(self, size)

    monkeypatch.setattr(replication._Heartbeat, "read", read_then_die)
    with pytest.raises(KeyboardInterrupt):
        file_replicate(warc.pk)
    assert not warc.replicas.filter(state=Replica.State.OK).exists()
    assert all(node_files(node) == [] for node in nodes_made)  # no final name written
    monkeypatch.setattr(replication._Heartbeat, "read", real_read)
    assert file_replicate(warc.pk) == 2
    assert all(node_leftovers(node) == [] for node in nodes_made)
    assert all(len(node_files(node)) == 1 for node in nodes_made)


def _copy_and_die(warc_file_id: int) -> None:
    """In a forked child: replicate, and SIGKILL ourselves halfway through the first copy."""
    from storage.services import replication as child_replication

    real_read = child_replication._Heartbeat.read
    reads = {"n": 0}

    def read_then_kill(self, size=1024 * 1024):
        reads["n"] += 1
        if reads["n"] == 7:  # S3: after its first part of 5 MiB was sent
            os.kill(os.getpid(), signal.SIGKILL)
        return real_read(self, size)

    child_replication._Heartbeat.read = read_then_kill
    child_replication.file_replicate(warc_file_id)


@pytest.mark.django_db(transaction=True)
def test_a_copy_killed_by_sigkill_leaves_a_temporary_file_only_and_is_taken_over(
    tmp_path, settings, monkeypatch, node_backend
):
    if connection.vendor != "postgresql":
        pytest.skip("the killed process shares the test database only on PostgreSQL (CI runs it there)")
    # S3: 5 MiB parts (the least S3 takes), so that the copy dies with one part of its multipart
    # upload sent.
    monkeypatch.setattr(backends_s3, "PART_SIZE", 5 * 1024 * 1024)
    make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = spool_warc(body_bytes=12 * 1024 * 1024)
    warc.replicas_wanted = 2
    warc.save()
    connection.close()  # the child opens its own
    child = multiprocessing.get_context("fork").Process(target=_copy_and_die, args=(warc.pk,))
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL
    replica = warc.replicas.select_related("node").get()
    assert replica.state == Replica.State.COPYING  # its claim, never released: a dead worker's
    (leftover,) = node_leftovers(replica.node)  # the temporary file, or the unfinished upload
    assert leftover.endswith(replica.relative_path + TEMP_SUFFIX)
    if not replica.node.is_s3:
        assert 0 < Path(leftover).stat().st_size < warc.size
    assert not replica_exists(replica)
    assert placement.good_replicas(warc).count() == 0 and list(lost_files()) == [warc]

    assert file_replicate(warc.pk) == 1  # the claim is fresh: another worker leaves it alone...
    settings.STORAGE_COPY_STALE_SECONDS = 0  # ...until it is stale
    assert file_replicate(warc.pk) == 2
    assert node_leftovers(replica.node) == []
    assert replica_bytes(replica) == Path(warc.path).read_bytes()


def test_the_audit_verifies_every_replica_within_its_period_with_an_even_load(tmp_path, settings):
    settings.STORAGE_AUDIT_DAYS = 10
    settings.STORAGE_AUDIT_INTERVAL = 86400  # one round a day: a tenth of the replicas each round
    make_nodes(tmp_path, "room-1", "room-2")
    for n in range(10):
        stored(spool_warc(f"crawl-{n}.warc.gz", body_bytes=1000, seed=n))
    start = timezone.now()
    Replica.objects.update(verified_at=None)  # never audited: all due at once the first time
    assert len(audit_due(now=start)) == 20
    # Spread their last verification over the period, as a running archive has it.
    for n, replica in enumerate(Replica.objects.order_by("pk")):
        Replica.objects.filter(pk=replica.pk).update(verified_at=start - timedelta(days=n / 2))
    last_seen = dict(Replica.objects.values_list("pk", "verified_at"))
    sizes = []
    for day in range(1, 31):
        now = start + timedelta(days=day)
        due = audit_due(now=now)
        sizes.append(len(due))
        Replica.objects.filter(pk__in=due).update(verified_at=now)
        for pk in due:
            last_seen[pk] = now
        for pk, verified in last_seen.items():
            assert now - verified <= timedelta(days=10), f"replica {pk} unaudited for {now - verified}"
    assert max(sizes) <= 3 and sum(sizes) <= 30 * 3  # about 20 / 10 a round, never all at once


def test_node_creation_refuses_bad_input_and_changes_nothing(tmp_path):
    make_nodes(tmp_path, "room-1")
    before = StorageNode.objects.count(), StorageEvent.objects.count()
    with pytest.raises(ValidationError) as relative:
        node_create(name="rel", location="x", root="relative/dir")
    assert "root" in relative.value.message_dict
    with pytest.raises(ValidationError) as inside:
        node_create(name="inner", location="x", root=str(tmp_path / "node-a" / "inner"))
    assert "overlaps node node-a" in inside.value.message_dict["root"][0]
    with pytest.raises(ValidationError) as duplicate:
        node_create(name="node-a", location="x", root=str(tmp_path / "other"))
    assert "name" in duplicate.value.message_dict
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / ".webarchive-node").write_text("somebody-else\n")
    with pytest.raises(ValidationError) as taken:
        node_create(name="node-z", location="x", root=str(foreign))
    assert "somebody-else" in taken.value.message_dict["root"][0]
    assert (StorageNode.objects.count(), StorageEvent.objects.count()) == before
    assert not (tmp_path / "other").exists()


def test_a_directory_that_is_not_the_nodes_own_is_unreachable(tmp_path):
    (a,) = make_nodes(tmp_path, "room-1")
    (Path(a.root) / ".webarchive-node").write_text("node-x\n")  # another disk mounted there
    assert not nodes.node_check(a)
    a.refresh_from_db()
    assert "node-x" in a.unreachable_reason


# Reads


@pytest.fixture
def reader(client):
    # Who reads WARC bytes: crawl engineers (and the replay account).
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    return client


def warc_bytes(client, name: str, range_header: str | None = None):
    headers = {"Range": range_header} if range_header else {}
    response = client.get(reverse("warc_bytes", kwargs={"filename": name}), headers=headers)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body


def test_warc_bytes_come_from_a_replica_and_survive_a_node_offline_or_a_failed_read(
    tmp_path, reader, node_backend
):
    a, b = make_nodes(tmp_path, "room-1", "room-2", backend=node_backend)
    warc = stored(spool_warc())
    original = Path(warc.path).read_bytes()
    Path(warc.path).unlink()  # only the replicas have it now
    assert warc_bytes(reader, warc.name) == (200, original)
    assert warc_bytes(reader, warc.name, "bytes=10-99") == (206, original[10:100])

    node_set_offline(node_id=a.pk)
    assert warc_bytes(reader, warc.name, "bytes=10-99") == (206, original[10:100])

    node_set_online(node_id=a.pk)
    replica_verify(warc.replicas.get(node=a).pk)
    remove_replica(warc.replicas.select_related("node").get(node=b))  # a read fails on b
    write_replica(warc.replicas.select_related("node").get(node=a), original[:50])  # torn on a
    status, _body = warc_bytes(reader, warc.name)
    assert status == 503  # neither can be read: said so, not served wrong
    write_replica(warc.replicas.select_related("node").get(node=a), original)
    assert warc_bytes(reader, warc.name) == (200, original)
