"""Where a storage node keeps its bytes: the backend interface, and the one backend there is now.

A backend knows how to put a file's bytes on its node safely, read them back, hash them, remove
them and measure the node; the replication services (storage.services.replication) decide what
goes where. :class:`DirectoryBackend` is a local or mounted directory; an S3-compatible object store
is :class:`storage.backends_s3.S3Backend`, with the same methods (``put`` there is an upload to a
temporary key, read back and verified, then copied to its final key). ``StorageNode.backend`` names
one of :data:`BACKENDS`; each class builds itself from its node (``for_node``). Callers know a
stream's size through :func:`stream_size` (an object has no file descriptor to ``fstat``).

Writes never leave something that looks complete but is not: the bytes go to a temporary name,
are flushed to disk, read back and hashed, and only a matching copy is renamed to its final name
(a rename within a directory is atomic). A node's root holds a marker file naming the node, so
that an unmounted mount point (an empty directory) or someone else's disk is not taken for it.

A node never follows a symbolic link out of its root: a file is read (served to replay, copied,
audited) only when its real path, links and ``..`` resolved, is under the real path of the root;
otherwise :class:`OutsideNode` is raised. Links that stay inside the node, and a root that is itself
a link (a mount point elsewhere), are followed: they are harmless, every read is checked against
the file's size or checksum anyway, and refusing them would refuse ordinary mount layouts.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

CHUNK = 1024 * 1024
TEMP_SUFFIX = ".copying"  # a replica being written: never served, never counted
MARKER = ".webarchive-node"


class NodeUnavailable(OSError):
    """The node's storage cannot be reached (missing directory, wrong marker, I/O error)."""


class OutsideNode(OSError):
    """A path of the node whose real path (symbolic links and ``..`` resolved) is not under its root."""


class ChecksumMismatch(OSError):
    """What was written does not read back with the expected checksum."""


@dataclass(frozen=True)
class Usage:
    capacity: int | None  # None: unknown (an object store without a quota)
    free: int | None


def stream_size(stream: BinaryIO) -> int:
    """The size of what an opened replica (or spool file) holds: its ``size`` if it says it (an object
    store's stream), else what its file descriptor says."""
    size = getattr(stream, "size", None)
    if isinstance(size, int):
        return size
    return os.fstat(stream.fileno()).st_size


def file_sha256(stream: BinaryIO, *, on_chunk: Callable[[bytes], None] | None = None) -> tuple[str, int]:
    """SHA-256 (hex) and size of the rest of a stream, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    size = 0
    while chunk := stream.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        if on_chunk is not None:
            on_chunk(chunk)
    return digest.hexdigest(), size


class DirectoryBackend:
    """A node that is a directory (local disk or a mount): ``root/relative path``."""

    def __init__(self, root: str | Path, node_name: str):
        self.root = Path(root)
        self.node_name = node_name

    @classmethod
    def for_node(cls, node) -> DirectoryBackend:
        return cls(node.root, node.name)

    # The node as a whole

    def initialise(self) -> None:
        """Create the root and its marker (a new node); refuse a root that belongs to another node."""
        self.root.mkdir(parents=True, exist_ok=True)
        marker = self.root / MARKER
        if marker.exists():
            owner = marker.read_text().strip()
            if owner != self.node_name:
                raise NodeUnavailable(f"{self.root} already belongs to storage node {owner!r}")
            return
        marker.write_text(self.node_name + "\n")

    def check(self) -> None:
        """Raise NodeUnavailable unless the root is there, is this node's, and is readable."""
        try:
            owner = (self.root / MARKER).read_text().strip()
            os.listdir(self.root)
        except OSError as error:
            raise NodeUnavailable(f"{self.root}: {error.strerror or error}") from error
        if owner != self.node_name:
            raise NodeUnavailable(f"{self.root} is storage node {owner!r}'s, not {self.node_name!r}'s")

    def usage(self) -> Usage:
        try:
            total, _used, free = shutil.disk_usage(self.root)
        except OSError as error:
            raise NodeUnavailable(f"{self.root}: {error.strerror or error}") from error
        return Usage(capacity=total, free=free)

    # Files

    def path(self, relative: str) -> Path:
        return self.root / relative

    def real_path(self, relative: str) -> Path:
        """The real path of a file of the node; raises OutsideNode when it leads out of the root."""
        root = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(self.path(relative)))
        if not real.is_relative_to(root) or real == root:
            raise OutsideNode(
                f"{self.path(relative)} leads out of storage node {self.node_name}'s root {root} "
                f"(to {real}): not followed"
            )
        return real

    def exists(self, relative: str) -> bool:
        try:
            return self.real_path(relative).is_file()
        except OutsideNode:
            return False

    def open(self, relative: str) -> BinaryIO:
        """The file's bytes, opened for reading; OutsideNode when its real path is not in the node."""
        # The real path is opened without following a link there, so that a file swapped for a link
        # between the check and the open is refused too (ELOOP) rather than followed.
        return open(self.real_path(relative), "rb", opener=_open_no_follow)

    def size(self, relative: str) -> int:
        return self.real_path(relative).stat().st_size

    def sha256(self, relative: str) -> tuple[str, int]:
        with self.open(relative) as stream:
            return file_sha256(stream)

    def put(self, source: BinaryIO, relative: str, *, sha256: str) -> int:
        """Copy a stream to ``relative`` through a temporary name, verified before the rename.

        Raises ChecksumMismatch (and removes the temporary file) when the bytes written do not
        read back as ``sha256``; returns the size written.
        """
        final = self.path(relative)
        temporary = final.with_name(final.name + TEMP_SUFFIX)
        final.parent.mkdir(parents=True, exist_ok=True)
        # Written next to its final name: that directory must be the node's own, not a link out of
        # it. The final name itself may be a link (a bad replica being repaired): the rename
        # replaces the link, never writes where it points.
        self._parent_inside(relative)
        try:
            with temporary.open("wb") as out:
                shutil.copyfileobj(source, out, CHUNK)
                out.flush()
                os.fsync(out.fileno())
            with temporary.open("rb") as written:
                found, size = file_sha256(written)
            if found != sha256:
                raise ChecksumMismatch(f"{final}: wrote {found}, expected {sha256}")
            os.rename(temporary, final)
            _fsync_directory(final.parent)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        return size

    def delete(self, relative: str) -> None:
        self._parent_inside(relative)  # a link as the file itself is removed, not what it points to
        self.path(relative).unlink(missing_ok=True)

    def leftovers(self) -> list[Path]:
        """Temporary files of copies that never finished (a killed worker's), inside the node."""
        found = []
        for path in self.root.rglob("*" + TEMP_SUFFIX):
            try:
                self._parent_inside(str(path.relative_to(self.root)))
            except OutsideNode:
                continue
            found.append(path)
        return sorted(found)

    def _parent_inside(self, relative: str) -> None:
        """Raise OutsideNode when the directory of ``relative`` is not the node's own."""
        parent = str(Path(relative).parent)
        if parent != ".":
            self.real_path(parent)


def _open_no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _s3_backend():
    from storage.backends_s3 import S3Backend  # imported when used: it builds on this module

    return S3Backend


class _Backends(dict):
    """``StorageNode.backend`` -> its class (the S3 one imported on first use)."""

    def __missing__(self, kind):
        if kind == "s3":
            return _s3_backend()
        raise KeyError(kind)


BACKENDS = _Backends(directory=DirectoryBackend)
