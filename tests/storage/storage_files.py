"""Storage nodes (separate directories, or prefixes of a bucket of the test SeaweedFS server) and WARC
files in the crawler's spool, for the storage tests.

``make_nodes(root, ..., backend=...)`` takes the ``node_backend`` fixture's value (tests/storage/conftest.py):
``"directory"`` or an :class:`S3Nodes`. The ``replica_*`` and ``node_*`` helpers reach a replica's bytes
behind the application's back (bit rot, a lost disk) on either kind of node: a file in the node's
directory, or an object changed with boto3 directly.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from storage.backends import MARKER
from storage.models import StorageNode, WarcFile
from storage.services.indexing import warc_file_index
from storage.services.nodes import node_create
from tests.storage.dedup_files import write_warc


@dataclass(frozen=True)
class S3Nodes:
    """Where a test's S3 nodes go: one bucket of the session's SeaweedFS server, a prefix per node."""

    server: object  # tests.weed_server.WeedServer
    bucket: str
    profile: str = "test"
    prefix: str = ""  # the test's own part of a shared bucket


def make_nodes(root: Path, *locations: str, backend: str | S3Nodes = "directory") -> list[StorageNode]:
    """One node per location label given, named node-a, node-b, …, each its own directory (or its own
    prefix of the test's bucket)."""
    names = [f"node-{chr(97 + n)}" for n in range(len(locations))]
    if isinstance(backend, S3Nodes):
        return [
            node_create(
                name=name,
                location=location,
                backend=StorageNode.Backend.S3,
                bucket=backend.bucket,
                prefix=f"{backend.prefix}/{name}" if backend.prefix else name,
                profile=backend.profile,
            )
            for name, location in zip(names, locations, strict=True)
        ]
    return [
        node_create(name=name, location=location, root=str(root / name))
        for name, location in zip(names, locations, strict=True)
    ]


def spool_warc(name: str = "crawl-1.warc.gz", *, body_bytes: int = 20_000, seed: int = 1) -> WarcFile:
    """A WARC file written into the crawler's spool (HARVEST_WARC_DIR) and registered and indexed."""
    noise = random.Random(seed).randbytes(body_bytes)  # incompressible: the file is about this size
    path = write_warc(
        Path(settings.HARVEST_WARC_DIR) / name,
        [
            ("http://example.com/", "20240101000000", b"<html><img src=data.bin></html>", "text/html"),
            ("http://example.com/data.bin", "20240101000001", noise, "application/octet-stream"),
        ],
    )
    return warc_file_index(path=path).warc_file


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Change one byte of a file in place (bit rot)."""
    size = path.stat().st_size
    offset = size // 2 if offset is None else offset
    with path.open("r+b") as stream:
        stream.seek(offset)
        byte = stream.read(1)
        stream.seek(offset)
        stream.write(bytes([byte[0] ^ 0xFF]))
        stream.flush()
        os.fsync(stream.fileno())


def replica_path(replica) -> Path:
    return Path(replica.node.root) / replica.relative_path


# A replica's bytes behind the application's back, on either kind of node


def _object(node: StorageNode, relative: str) -> tuple[object, str, str]:
    """(boto3 client, bucket, key) of a file of an S3 node."""
    backend = node.backend_instance()
    return backend.client, backend.bucket, backend.key(relative)


def replica_bytes(replica) -> bytes:
    if replica.node.is_s3:
        client, bucket, key = _object(replica.node, replica.relative_path)
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    return replica_path(replica).read_bytes()


def replica_exists(replica) -> bool:
    return replica.node.backend_instance().exists(replica.relative_path)


def write_replica(replica, data: bytes) -> None:
    """Overwrite a replica's bytes in place (a torn or rotted copy)."""
    if replica.node.is_s3:
        client, bucket, key = _object(replica.node, replica.relative_path)
        client.put_object(Bucket=bucket, Key=key, Body=data)
    else:
        replica_path(replica).write_bytes(data)


def remove_replica(replica) -> None:
    if replica.node.is_s3:
        client, bucket, key = _object(replica.node, replica.relative_path)
        client.delete_object(Bucket=bucket, Key=key)
    else:
        replica_path(replica).unlink()


def flip_replica_byte(replica, offset: int | None = None) -> None:
    """Change one byte of a replica in place (bit rot)."""
    if not replica.node.is_s3:
        flip_byte(replica_path(replica), offset)
        return
    data = bytearray(replica_bytes(replica))
    offset = len(data) // 2 if offset is None else offset
    data[offset] ^= 0xFF
    write_replica(replica, bytes(data))


def node_files(node: StorageNode) -> list[str]:
    """The replicas' final names a node holds (not its marker, not temporary copies)."""
    if node.is_s3:
        backend = node.backend_instance()
        keys = [item["Key"] for item in backend._list(backend.prefix + "/")]
    else:
        keys = [str(path) for path in Path(node.root).rglob("*") if path.is_file()]
    return sorted(key for key in keys if key.endswith((".warc.gz", ".warc", ".arc.gz")))


def node_leftovers(node: StorageNode) -> list[str]:
    return [str(leftover) for leftover in node.backend_instance().leftovers()]


def node_lose(node: StorageNode, away: Path) -> None:
    """The node's storage disappears: its directory moved to ``away`` (an unmounted disk), or its
    bucket's marker deleted (a wiped or wrong bucket)."""
    if node.is_s3:
        client, bucket, key = _object(node, MARKER)
        client.delete_object(Bucket=bucket, Key=key)
    else:
        Path(node.root).rename(away)


def node_return(node: StorageNode, away: Path) -> None:
    """The storage :func:`node_lose` took away comes back as it was."""
    if node.is_s3:
        client, bucket, key = _object(node, MARKER)
        client.put_object(Bucket=bucket, Key=key, Body=(node.name + "\n").encode())
    else:
        Path(away).rename(node.root)
