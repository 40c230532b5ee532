"""S3 storage nodes on a real SeaweedFS server: adding one (and refusing bad input), refused keys said
clearly, verified multipart uploads, seekable ranged reads, and WARC bytes served from an S3-only replica.

What the directory and S3 nodes share (copies, audits, repairs, node loss, draining) is in
test_replication.py, which runs on both."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator

from storage import backends_s3
from storage.backends import NodeUnavailable
from storage.models import Capture, Replica, StorageEvent, StorageNode
from storage.services.audits import replica_verify
from storage.services.indexing import warc_file_index
from storage.services.nodes import check_round, node_check, node_create
from storage.services.replication import file_replicate
from tests.factories import UserFactory
from tests.storage.storage_files import make_nodes, node_leftovers, replica_bytes, spool_warc
from tests.weed_server import unique_bucket
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def s3(weed_server, settings):
    """The profile ``test`` reaches the session's server; ``bad-key`` has a wrong secret; ``down`` an
    endpoint where nothing listens."""
    settings.STORAGE_S3_PROFILES = {
        "test": weed_server.profile(),
        "bad-key": weed_server.profile(secret_key="not-the-secret"),
        "down": weed_server.profile(endpoint_url="http://127.0.0.1:9"),
    }
    return weed_server


def s3_node(name: str, bucket: str, *, profile: str = "test", prefix: str | None = None, **fields):
    return node_create(
        name=name,
        location=fields.pop("location", "room-1"),
        backend=StorageNode.Backend.S3,
        bucket=bucket,
        prefix=name if prefix is None else prefix,
        profile=profile,
        **fields,
    )


def test_an_s3_node_is_a_bucket_and_prefix_with_its_marker(s3):
    bucket = unique_bucket()
    node = s3_node("node-s3", bucket, quota=10**9)
    assert node.root == f"s3://{bucket}/node-s3" and node.credentials == "test"
    assert node.reachable and node.capacity == 10**9
    assert node.free == 10**9 - len(b"node-s3\n")  # the marker is all it holds
    marker = s3.client().get_object(Bucket=bucket, Key="node-s3/.webarchive-node")["Body"].read()
    assert marker == b"node-s3\n"
    # Without a quota the capacity is unknown; the node still takes files (placement: no room check).
    other = s3_node("node-s3b", bucket, quota=None)
    assert other.reachable and other.capacity is None and other.free is None


def test_s3_node_creation_refuses_bad_input_and_changes_nothing(s3):
    bucket = unique_bucket()
    s3_node("node-a", bucket)
    before = StorageNode.objects.count(), StorageEvent.objects.count()
    cases = [
        ({"profile": "nobody"}, "profile", "No credentials profile nobody"),
        ({"bucket": "AB"}, "bucket", "3 to 63 lowercase"),
        ({"prefix": "node-a/inner"}, "prefix", "overlaps node node-a"),
        ({"prefix": ""}, "prefix", "overlaps node node-a"),
        ({"prefix": "a/../b"}, "bucket", "no empty, . or .. parts"),
        ({"profile": "bad-key", "bucket": unique_bucket()}, "bucket", "refused the credentials"),
        ({"profile": "down", "bucket": unique_bucket()}, "bucket", "cannot reach the S3 endpoint"),
    ]
    for change, field, message in cases:
        arguments = {"bucket": bucket, "prefix": "node-z", "profile": "test", **change}
        with pytest.raises(ValidationError) as refused:
            s3_node("node-z", **arguments)
        assert message in " ".join(refused.value.message_dict[field]), (change, refused.value.message_dict)
    # Another node's marker already in the prefix (a bucket reused by someone else's archive).
    s3.client().put_object(Bucket=bucket, Key="taken/.webarchive-node", Body=b"somebody-else\n")
    with pytest.raises(ValidationError) as taken:
        s3_node("node-z", bucket, prefix="taken")
    assert "somebody-else" in taken.value.message_dict["bucket"][0]
    assert (StorageNode.objects.count(), StorageEvent.objects.count()) == before
    names = [bucket["Name"] for bucket in s3.client().list_buckets()["Buckets"]]
    assert "AB" not in names


def test_refused_keys_make_the_node_unreachable_with_a_clear_reason_on_its_page(s3, settings, client):
    bucket = unique_bucket()
    node = s3_node("node-a", bucket)
    warc = spool_warc()
    warc.replicas_wanted = 1
    warc.save()
    assert file_replicate(warc.pk) == 1
    settings.STORAGE_S3_PROFILES = {**settings.STORAGE_S3_PROFILES, "test": s3.profile(secret_key="rotated")}
    check_round()  # the beat's check: no exception escapes it
    node.refresh_from_db()
    assert not node.reachable
    assert node.unreachable_reason == (
        "storage node node-a: the S3 endpoint refused the credentials (SignatureDoesNotMatch)"
    )
    assert warc.replicas.get().state == Replica.State.MISSING
    with pytest.raises(NodeUnavailable, match="refused the credentials"):
        node.backend_instance().check()
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    page = client.get(node.get_absolute_url()).content.decode()
    assert "the S3 endpoint refused the credentials (SignatureDoesNotMatch)" in page
    assert "Traceback" not in page and "rotated" not in page and s3.secret_key not in page
    assert (s3.endpoint_url in page and f"s3://{bucket}" not in page) or bucket in page

    settings.STORAGE_S3_PROFILES = {**settings.STORAGE_S3_PROFILES, "test": s3.profile()}
    work = check_round()
    node.refresh_from_db()
    assert node.reachable and (warc.replicas.get().pk, "default") in work["verify"]
    assert replica_verify(warc.replicas.get().pk) == Replica.State.OK


def test_an_unknown_profile_is_an_unreachable_node_not_an_error(s3, settings):
    node = s3_node("node-a", unique_bucket())
    settings.STORAGE_S3_PROFILES = {}
    assert not node_check(node)
    node.refresh_from_db()
    assert "no S3 credentials profile 'test'" in node.unreachable_reason


def test_a_large_file_goes_up_in_verified_parts_and_reads_back_at_any_offset(s3, tmp_path, monkeypatch):
    # Parts of 5 MiB, the least S3 (and SeaweedFS: EntityTooSmall) takes but for the last one: six
    # of them, more than are sent at once, so that some wait for a thread and finish out of order.
    monkeypatch.setattr(backends_s3, "PART_SIZE", 5 * 1024 * 1024)
    assert backends_s3.UPLOAD_THREADS < 6
    (node,) = make_nodes(tmp_path, "room-1", backend=backends_s3_nodes(s3))
    warc = spool_warc(body_bytes=26 * 1024 * 1024 + 12345)
    warc.replicas_wanted = 1
    warc.save()
    assert file_replicate(warc.pk) == 1
    original = Path(warc.path).read_bytes()
    replica = warc.replicas.select_related("node").get()
    assert replica_bytes(replica) == original and node_leftovers(node) == []
    backend = node.backend_instance()
    assert backend.size(replica.relative_path) == len(original)
    with backend.open(replica.relative_path) as stream:
        assert stream.size == len(original) and stream.seekable()
        for offset, length in [
            (0, 10),
            (len(original) - 7, 100),
            (1024 * 1024 - 3, 6),
            (12345, 2 * 1024 * 1024),
        ]:
            stream.seek(offset)
            assert stream.read(length) == original[offset : offset + length]
        assert stream.seek(0, io.SEEK_END) == len(original) and stream.read(5) == b""
    with pytest.raises(FileNotFoundError):
        backend.open("2024/no-such-file.warc.gz")
    with pytest.raises(FileNotFoundError):
        backend.size("2024/no-such-file.warc.gz")


def test_a_copy_whose_bytes_do_not_read_back_is_refused_and_leaves_nothing(s3, tmp_path):
    (node,) = make_nodes(tmp_path, "room-1", backend=backends_s3_nodes(s3))
    backend = node.backend_instance()
    with pytest.raises(backends_s3.ChecksumMismatch):
        backend.put(io.BytesIO(b"some bytes"), "2024/x.warc.gz", sha256="0" * 64)
    assert not backend.exists("2024/x.warc.gz") and backend.leftovers() == []


def backends_s3_nodes(server):
    from tests.storage.storage_files import S3Nodes

    return S3Nodes(server=server, bucket=unique_bucket())


def test_warc_bytes_and_records_come_from_an_s3_only_replica(s3, client, copy_warcs, tmp_path):
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    path = max(copy_warcs(), key=lambda path: path.stat().st_size)
    warc = warc_file_index(path=path).warc_file
    make_nodes(tmp_path, "room-1", backend=backends_s3_nodes(s3))
    warc.replicas_wanted = 1
    warc.save()
    assert file_replicate(warc.pk) == 1
    original = path.read_bytes()
    path.unlink()  # the S3 replica is the only copy
    url = reverse("warc_bytes", kwargs={"filename": warc.name})
    whole = client.get(url)
    assert whole.status_code == 200 and b"".join(whole.streaming_content) == original
    assert whole["Content-Length"] == str(len(original))
    suffix = client.get(url, headers={"Range": "bytes=-500"})
    assert suffix.status_code == 206 and b"".join(suffix.streaming_content) == original[-500:]
    captures = Capture.objects.filter(warc_file=warc).order_by("offset")
    assert captures.exists()
    for capture in captures[:5]:
        header = f"bytes={capture.offset}-{capture.offset + capture.length - 1}"
        data = b"".join(client.get(url, headers={"Range": header}).streaming_content)
        (record,) = list(ArchiveIterator(io.BytesIO(data)))
        assert record.rec_headers.get_header("WARC-Target-URI") == capture.url
    # warcio straight on the node's stream, at a record's offset, as deduplication and replay read it.
    capture = captures.last()
    replica = warc.replicas.select_related("node").get()
    with replica.node.backend_instance().open(replica.relative_path) as stream:
        stream.seek(capture.offset)
        record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.get_header("WARC-Target-URI") == capture.url


def test_an_engineer_adds_an_s3_node_on_the_page_and_sees_no_keys(s3, client):
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    bucket = unique_bucket()
    response = client.post(
        reverse("storage:node_add"),
        {
            "name": "node-s3",
            "location": "room-1",
            "backend": "s3",
            "bucket": bucket,
            "prefix": "p",
            "profile": "test",
        },
    )
    node = StorageNode.objects.get(name="node-s3")
    assert response.status_code == 302 and node.root == f"s3://{bucket}/p" and node.reachable
    page = client.get(node.get_absolute_url()).content.decode()
    assert bucket in page and s3.endpoint_url in page and "<code>test</code>" in page
    assert "unknown: an object store without a quota" in page  # no quota: no capacity to show
    assert s3.secret_key not in page and s3.access_key not in page
    api = client.get(reverse("api:storagenode-detail", kwargs={"pk": node.pk})).json()
    assert api["s3_bucket"] == bucket and api["s3_prefix"] == "p" and api["endpoint_url"] == s3.endpoint_url
    assert s3.secret_key not in str(api)

    refused = client.post(
        reverse("storage:node_add"),
        {"name": "node-x", "location": "room-1", "backend": "s3", "bucket": "x", "profile": "test"},
    )
    assert refused.status_code == 200 and "3 to 63 lowercase" in refused.content.decode()
    assert not StorageNode.objects.filter(name="node-x").exists()
