"""The ingest chain (checksum → index → store → replicate → clean): its end state, where it waits,
and an interruption after every step's work (before it is recorded) resuming to the same end."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from storage.backends import TEMP_SUFFIX
from storage.models import Capture, IngestStep, Replica, StorageEvent, StorageNode, WarcFile
from storage.services import ingest
from storage.services.indexing import warc_file_index
from storage.services.ingest import ingest_advance, ingest_pending
from storage.services.nodes import node_create
from tests.storage.dedup_files import write_warc
from tests.storage.storage_files import flip_byte, make_nodes, node_leftovers, replica_bytes, spool_warc

pytestmark = pytest.mark.django_db


class Killed(BaseException):
    """The worker dies (nothing catches it, as nothing runs after a SIGKILL)."""


def end_state(warc: WarcFile, original: bytes) -> dict:
    warc.refresh_from_db()
    return {
        "step": warc.ingest_step,
        "error": warc.ingest_error,
        "replicas": sorted(
            (replica.node.name, replica.state, replica.sha256, replica_bytes(replica) == original)
            for replica in warc.replicas.select_related("node")
        ),
        "spool": Path(warc.path).exists(),
        "temporary files": sorted(
            [path.name for path in Path(warc.path).parent.parent.rglob("*" + TEMP_SUFFIX)]
            + [leftover for node in StorageNode.objects.all() for leftover in node_leftovers(node)]
        ),
        "captures": Capture.objects.filter(warc_file=warc).count(),
        "events": sorted(warc.storage_events.values_list("kind", flat=True)),
        "sha256": warc.sha256,
        "wanted": warc.replicas_wanted,
    }


def test_a_crawled_file_goes_through_the_chain_and_leaves_the_spool(tmp_path, node_backend):
    make_nodes(tmp_path, "room-1", "room-1", "room-2", backend=node_backend)
    warc = spool_warc()
    original = Path(warc.path).read_bytes()
    ingest_advance(warc.pk)
    state = end_state(warc, original)
    assert state["step"] == IngestStep.CLEANED and state["error"] == ""
    assert [(name, ok, same) for name, ok, _sha, same in state["replicas"]] == [
        ("node-a", Replica.State.OK, True),  # first by name of the equal nodes (docs/storage.md)
        ("node-c", Replica.State.OK, True),  # another room than node-a's
    ]
    assert not state["spool"] and state["temporary files"] == []
    assert state["events"] == sorted([StorageEvent.Kind.COPIED] * 2 + [StorageEvent.Kind.SPOOL_CLEANED])
    assert state["wanted"] == 2 and state["captures"] == 2


def test_the_chain_waits_without_nodes_and_keeps_the_spool_copy(tmp_path):
    warc = spool_warc()
    ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == IngestStep.INDEXED
    assert "No storage node" in warc.ingest_error
    assert Path(warc.path).exists()
    make_nodes(tmp_path, "room-1")
    ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == IngestStep.STORED  # one of the two replicas it wants
    assert "1 of the 2 replicas" in warc.ingest_error and Path(warc.path).exists()
    node_create(name="node-b", location="room-2", root=str(tmp_path / "node-b"))
    ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == IngestStep.CLEANED and not Path(warc.path).exists()


def test_a_spool_copy_damaged_since_it_was_written_is_never_stored(tmp_path):
    make_nodes(tmp_path, "room-1", "room-2")
    warc = spool_warc()
    flip_byte(Path(warc.path))
    ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == IngestStep.REGISTERED
    assert "not " + warc.sha256 in warc.ingest_error
    assert not Replica.objects.exists() and Path(warc.path).exists()


def test_a_file_imported_from_elsewhere_is_stored_but_left_where_it_was(tmp_path):
    make_nodes(tmp_path, "room-1", "room-2")
    source = write_warc(
        tmp_path / "import" / "old.warc.gz", [("http://a.example/", "20100101000000", b"x", "text/plain")]
    )
    warc = warc_file_index(path=source).warc_file
    ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == IngestStep.CLEANED
    assert source.exists() and warc.replicas.filter(state=Replica.State.OK).count() == 2


def test_an_open_or_retired_file_is_not_ingested(tmp_path):
    make_nodes(tmp_path, "room-1", "room-2")
    warc = spool_warc()
    WarcFile.objects.filter(pk=warc.pk).update(closed_at=None)
    ingest_advance(warc.pk)
    assert WarcFile.objects.get(pk=warc.pk).ingest_step == IngestStep.REGISTERED
    assert warc.pk not in ingest_pending()


STEPS = list(ingest.STEPS)  # the step each call of _record completes, in order


@pytest.mark.parametrize("killed_at", range(len(STEPS)), ids=[f"after-{IngestStep(s).label}" for s in STEPS])
def test_killed_after_any_step_the_chain_resumes_to_the_same_end(
    tmp_path, monkeypatch, killed_at, node_backend
):
    """Each step does its work, then the worker dies before the step is recorded; the beat check
    sends the chain again, which ends exactly as an uninterrupted one."""
    make_nodes(tmp_path / "nodes", "room-1", "room-1", "room-2", backend=node_backend)
    warc = spool_warc()
    original = Path(warc.path).read_bytes()
    real_record = ingest._record
    calls = {"n": 0}

    def record_or_die(*args, **kwargs):
        if calls["n"] == killed_at:
            calls["n"] += 1
            raise Killed
        calls["n"] += 1
        return real_record(*args, **kwargs)

    monkeypatch.setattr(ingest, "_record", record_or_die)
    with pytest.raises(Killed):
        ingest_advance(warc.pk)
    warc.refresh_from_db()
    assert warc.ingest_step == STEPS[killed_at]  # its work done, not recorded
    monkeypatch.setattr(ingest, "_record", real_record)
    ingest.mark_sent([warc.pk])
    assert warc.pk not in ingest_pending()  # sent a moment ago: left alone...
    assert warc.pk in ingest_pending(now=timezone.now() + timedelta(seconds=ingest.RETRY_SECONDS + 1))
    ingest_advance(warc.pk)  # ...until the check sends it again
    state = end_state(warc, original)

    assert state["step"] == IngestStep.CLEANED
    # The placement rule: node-a and node-b (room-1) are on one file system, so equal, and node-a
    # comes first by name; the second replica goes to another room, node-c's.
    assert [(name, ok, same) for name, ok, _sha, same in state["replicas"]] == [
        ("node-a", Replica.State.OK, True),
        ("node-c", Replica.State.OK, True),
    ]
    assert not state["spool"] and state["temporary files"] == [] and state["captures"] == 2
    # Nothing done twice: two copies, one cleaning, whatever the point of interruption.
    assert state["events"] == sorted([StorageEvent.Kind.COPIED] * 2 + [StorageEvent.Kind.SPOOL_CLEANED])
