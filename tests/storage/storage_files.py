"""Storage nodes as separate directories and WARC files in the crawler's spool, for the storage tests."""

from __future__ import annotations

import os
import random
from pathlib import Path

from django.conf import settings

from storage.models import StorageNode, WarcFile
from storage.services.indexing import warc_file_index
from storage.services.nodes import node_create
from tests.storage.dedup_files import write_warc


def make_nodes(root: Path, *locations: str) -> list[StorageNode]:
    """One node per location label given, named node-a, node-b, …, each its own directory."""
    return [
        node_create(name=f"node-{chr(97 + n)}", location=location, root=str(root / f"node-{chr(97 + n)}"))
        for n, location in enumerate(locations)
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
