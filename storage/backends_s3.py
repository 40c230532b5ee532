"""Storage nodes in an S3-compatible object store: a bucket and a prefix, through the backend interface.

:class:`S3Backend` has the methods of :class:`storage.backends.DirectoryBackend`, with the same
promises, so the replication, audit and read services use it unchanged:

- a node is ``s3://<bucket>/<prefix>`` (``StorageNode.root``); its replicas are the keys
  ``<prefix>/<year>/<file name>``, and ``<prefix>/.webarchive-node`` is its marker, naming the node;
- the endpoint and keys come from a **credentials profile** of ``STORAGE_S3_PROFILES`` (settings,
  from the environment), named by the node (``StorageNode.credentials``): never the database;
- ``put`` uploads to ``<key>.copying`` (one PUT, or for a larger file a multipart upload of
  ``PART_SIZE`` parts, sent ``UPLOAD_THREADS`` at a time), each request carrying the SHA-256 of its
  bytes (``ChecksumSHA256``: SeaweedFS 4.x checks it and refuses a body that does not match with
  BadDigest), hashes the whole stream on the way, then **reads the temporary object back** and
  hashes it, as a directory node re-reads its file from disk; only a matching copy is copied
  server-side to its final key (CopyObject, or a multipart copy above 5 GiB) and the temporary one
  deleted. A copy that dies leaves at most a ``.copying`` object or an unfinished multipart upload:
  :meth:`S3Backend.leftovers` lists both, and the next copy of the same key aborts the unfinished
  upload first;
- ``open`` gives a seekable stream of ranged GETs (:class:`RangedObject`), buffered by 1 MiB, so a
  record read at an offset (replay, deduplication) fetches only what it reads;
- an object store has no disk size: capacity is the node's quota if it has one, otherwise unknown
  (see :meth:`S3Backend.usage`);
- every error of the store (refused keys, missing bucket, endpoint down) is a NodeUnavailable
  with a sentence naming the node; a missing object is FileNotFoundError (the replica is missing).

What SeaweedFS 4.48 (``weed server -s3``, the tests' store) does with these requests, as tried:
PutObject and UploadPart check ``ChecksumSHA256`` and refuse a body that does not match (BadDigest);
HeadObject gives the checksum back; multipart uploads work, with S3's 5 MiB least part size but for
the last one (EntityTooSmall), and are listed (ListMultipartUploads) and aborted; CopyObject and
UploadPartCopy with ranges work (CopyObject copies the bytes, 1.9 s for 256 MB); ranged GETs work.
The checksums guard each request's bytes on the wire; the read-back guards what the store kept.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import logging
import os
import re
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import BinaryIO

from storage.backends import CHUNK, MARKER, TEMP_SUFFIX, ChecksumMismatch, NodeUnavailable, Usage, file_sha256

logger = logging.getLogger(__name__)

# Multipart parts: 10,000 of them is 160 GiB, far above any WARC file; at least 5 MiB (S3's rule).
PART_SIZE = 16 * 1024 * 1024
UPLOAD_THREADS = 4  # parts sent at once by one copy (boto3's managed transfers send 10)
COPY_LIMIT = 5 * 1024**3  # above this, CopyObject is refused: the copy is made in parts
READ_BUFFER = 1024 * 1024
USAGE_LISTING_LIMIT = 100_000  # objects counted by usage(); beyond, the sum is a lower bound
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
REFUSED_CREDENTIALS = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403", "Forbidden"}
NOT_FOUND = {"NoSuchKey", "404", "NotFound"}


def parse_root(root: str) -> tuple[str, str]:
    """(bucket, prefix) of ``s3://bucket/prefix`` (prefix without slashes around it; may be empty)."""
    if not root.startswith("s3://"):
        raise ValueError(f"{root}: not an s3://bucket/prefix address")
    bucket, _slash, prefix = root[len("s3://") :].partition("/")
    if not BUCKET_NAME.match(bucket) or ".." in bucket:
        raise ValueError(f"{bucket!r}: a bucket name has 3 to 63 lowercase letters, digits, dots and hyphens")
    prefix = prefix.strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise ValueError(f"{prefix!r}: a prefix has no empty, . or .. parts")
    return bucket, prefix


def make_root(bucket: str, prefix: str = "") -> str:
    return f"s3://{bucket}/{prefix.strip('/')}".rstrip("/")


def _b64_sha256(data: bytes) -> str:
    return base64.b64encode(hashlib.sha256(data).digest()).decode()


class S3Backend:
    """A node that is a prefix of a bucket of an S3-compatible store (``s3://bucket/prefix``)."""

    def __init__(self, root: str, node_name: str, *, profile: dict, profile_name: str = "", quota=None):
        self.root = root
        self.node_name = node_name
        self.bucket, self.prefix = parse_root(root)
        self.profile = profile
        self.profile_name = profile_name
        self.quota = quota
        self._client = None

    @classmethod
    def for_node(cls, node) -> S3Backend:
        """The backend of a StorageNode: its profile looked up in STORAGE_S3_PROFILES."""
        from django.conf import settings

        profile = settings.STORAGE_S3_PROFILES.get(node.credentials)
        if profile is None:
            profile = {}  # every call then says the profile is missing (check: the node is unreachable)
        return cls(node.root, node.name, profile=profile, profile_name=node.credentials, quota=node.quota)

    @property
    def endpoint_url(self) -> str:
        return self.profile.get("endpoint_url", "")

    @property
    def client(self):
        if self._client is None:
            if not self.profile:
                raise NodeUnavailable(
                    f"storage node {self.node_name}: no S3 credentials profile {self.profile_name!r} "
                    "in STORAGE_S3_PROFILES"
                )
            self._client = _client_for(
                self.profile.get("endpoint_url") or None,
                self.profile.get("access_key"),
                self.profile.get("secret_key"),
                self.profile.get("region") or "us-east-1",
            )
        return self._client

    def key(self, relative: str) -> str:
        relative = relative.strip("/")
        if any(part in ("", ".", "..") for part in relative.split("/")):
            raise ValueError(f"{relative!r}: not a path inside a node")
        return f"{self.prefix}/{relative}" if self.prefix else relative

    @contextlib.contextmanager
    def _errors(self, *, missing_is_file_not_found: bool = False):
        """The store's errors, as NodeUnavailable naming the node (or FileNotFoundError: no such object)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            if missing_is_file_not_found and code in NOT_FOUND:
                raise FileNotFoundError(
                    f"storage node {self.node_name}: no such object in {self.root} ({code})"
                ) from None
            raise NodeUnavailable(self._describe(code, error)) from None
        except BotoCoreError as error:
            raise NodeUnavailable(
                f"storage node {self.node_name}: cannot reach the S3 endpoint {self.endpoint_url} ({error})"
            ) from None

    def _request(self, operation: str, *, missing_is_file_not_found: bool = False, **parameters):
        """One request to the store, ``Bucket`` filled in; its errors as :meth:`_errors` says."""
        client = self.client
        with self._errors(missing_is_file_not_found=missing_is_file_not_found):
            return getattr(client, operation)(Bucket=self.bucket, **parameters)

    def _quietly(self, operation: str, **parameters) -> None:
        """A clean-up after a failure: its own failure is logged (leftovers() lists what stays)."""
        try:
            self._request(operation, **parameters)
        except OSError as error:
            logger.warning("storage node %s: %s failed: %s", self.node_name, operation, error)

    def _describe(self, code: str, error) -> str:
        if code in REFUSED_CREDENTIALS:
            return f"storage node {self.node_name}: the S3 endpoint refused the credentials ({code})"
        if code in ("NoSuchBucket",):
            return f"storage node {self.node_name}: bucket {self.bucket} does not exist ({code})"
        message = error.response.get("Error", {}).get("Message", "") or str(error)
        return f"storage node {self.node_name}: the S3 endpoint answered {code}: {message}"

    # The node as a whole

    def initialise(self) -> None:
        """Create the bucket if it is missing and the marker; refuse a prefix that is another node's."""
        try:
            self._request("head_bucket", missing_is_file_not_found=True)
        except FileNotFoundError:
            self._request("create_bucket")
        owner = self._marker_owner()
        if owner is not None:
            if owner != self.node_name:
                raise NodeUnavailable(f"{self.root} already belongs to storage node {owner!r}")
            return
        self._request("put_object", Key=self.key(MARKER), Body=(self.node_name + "\n").encode())

    def _marker_owner(self) -> str | None:
        try:
            response = self._request("get_object", Key=self.key(MARKER), missing_is_file_not_found=True)
        except FileNotFoundError:
            return None
        with self._errors():
            return response["Body"].read().decode(errors="replace").strip()

    def check(self) -> None:
        """Raise NodeUnavailable unless the bucket answers and holds this node's marker."""
        try:
            owner = self._marker_owner()
        except FileNotFoundError:  # the bucket itself is gone
            owner = None
        if owner is None:
            raise NodeUnavailable(f"storage node {self.node_name}: {self.root} has no {MARKER} marker")
        if owner != self.node_name:
            raise NodeUnavailable(f"{self.root} is storage node {owner!r}'s, not {self.node_name!r}'s")

    def usage(self) -> Usage:
        """Capacity: the node's quota (None: unknown, an object store has no disk size); free: the
        quota less the sizes of the objects under the prefix (None without a quota)."""
        if self.quota is None:
            return Usage(capacity=None, free=None)
        used = 0
        for count, item in enumerate(self._list(self.prefix + "/" if self.prefix else "")):
            if count >= USAGE_LISTING_LIMIT:
                break
            used += item["Size"]
        return Usage(capacity=self.quota, free=max(self.quota - used, 0))

    def _list(self, prefix: str):
        """The objects under ``prefix``, page after page."""
        token = None
        while True:
            page = self._request(
                "list_objects_v2", Prefix=prefix, **({"ContinuationToken": token} if token else {})
            )
            yield from page.get("Contents", [])
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return

    # Files

    def _head(self, key: str) -> dict:
        return self._request("head_object", Key=key, missing_is_file_not_found=True)

    def exists(self, relative: str) -> bool:
        try:
            self._head(self.key(relative))
        except FileNotFoundError:
            return False
        return True

    def size(self, relative: str) -> int:
        return self._head(self.key(relative))["ContentLength"]

    def open(self, relative: str) -> BinaryIO:
        """The object's bytes as a seekable, buffered stream (``.size`` is its length); a missing object
        is FileNotFoundError."""
        return self._open_key(self.key(relative))

    def _open_key(self, key: str) -> RangedReader:
        return RangedReader(RangedObject(self, key, self._head(key)["ContentLength"]), READ_BUFFER)

    def sha256(self, relative: str) -> tuple[str, int]:
        with self.open(relative) as stream:
            return file_sha256(stream)

    def put(self, source: BinaryIO, relative: str, *, sha256: str) -> int:
        """Upload a stream to ``relative`` through ``<key>.copying``, read back and verified before the
        server-side copy to its final key.

        Raises ChecksumMismatch (the temporary object deleted) when what the store holds does not
        read back as ``sha256``; returns the size written.
        """
        final = self.key(relative)
        temporary = final + TEMP_SUFFIX
        self._abort_uploads(temporary)  # a dead copier's: this replica is claimed by us now
        try:
            sent, size = self._upload(source, temporary)
            with self._open_key(temporary) as written:
                found, read_back = file_sha256(written)
            if found != sha256 or read_back != size:
                raise ChecksumMismatch(
                    f"storage node {self.node_name}: {final}: wrote {found} ({read_back} bytes), "
                    f"expected {sha256}" + ("" if sent == found else f" (sent {sent})")
                )
            self._copy(temporary, final, size)
        except BaseException:
            self._quietly("delete_object", Key=temporary)
            raise
        self._request("delete_object", Key=temporary)
        return size

    def _upload(self, source: BinaryIO, key: str) -> tuple[str, int]:
        """Send the stream to ``key`` (one PUT, or a multipart upload), each request with its SHA-256 for
        the store to check; returns the SHA-256 (hex) and size of what was read.

        The stream is read in this thread (the copy's heartbeat reads it) and the parts are sent by
        UPLOAD_THREADS threads, at most that many held in memory at once."""
        digest = hashlib.sha256()
        size = 0
        part = _read_part(source, PART_SIZE)
        digest.update(part)
        size += len(part)
        if len(part) < PART_SIZE:  # the whole file in one request
            self._request("put_object", Key=key, Body=part, ChecksumSHA256=_b64_sha256(part))
            return digest.hexdigest(), size
        upload_id = self._request("create_multipart_upload", Key=key, ChecksumAlgorithm="SHA256")["UploadId"]
        parts: dict[int, dict] = {}
        sending: dict[Future, tuple[int, str]] = {}

        def sent(done) -> None:
            for future in done:
                number, checksum = sending.pop(future)
                etag = future.result()["ETag"]  # a failed part raises here
                parts[number] = {"PartNumber": number, "ETag": etag, "ChecksumSHA256": checksum}

        try:
            with ThreadPoolExecutor(max_workers=UPLOAD_THREADS, thread_name_prefix="s3-upload") as pool:
                number = 0
                while part:
                    number += 1
                    checksum = _b64_sha256(part)
                    future = pool.submit(
                        self._request,
                        "upload_part",
                        Key=key,
                        UploadId=upload_id,
                        PartNumber=number,
                        Body=part,
                        ChecksumSHA256=checksum,
                    )
                    sending[future] = (number, checksum)
                    del part  # held by its request only, until sent
                    if len(sending) >= UPLOAD_THREADS:
                        sent(wait(sending, return_when=FIRST_COMPLETED).done)
                    part = _read_part(source, PART_SIZE)
                    digest.update(part)
                    size += len(part)
                sent(wait(sending).done)
            self._request(
                "complete_multipart_upload",
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": [parts[number] for number in sorted(parts)]},
            )
        except BaseException:
            self._quietly("abort_multipart_upload", Key=key, UploadId=upload_id)
            raise
        return digest.hexdigest(), size

    def _copy(self, source: str, target: str, size: int) -> None:
        """Server-side copy; in parts (UploadPartCopy) above the 5 GiB a CopyObject may copy."""
        copy_source = {"Bucket": self.bucket, "Key": source}
        if size <= COPY_LIMIT:
            self._request("copy_object", Key=target, CopySource=copy_source)
            return
        upload_id = self._request("create_multipart_upload", Key=target)["UploadId"]
        parts = []
        step = COPY_LIMIT // 5
        try:
            for number, first in enumerate(range(0, size, step), start=1):
                last = min(first + step, size) - 1
                response = self._request(
                    "upload_part_copy",
                    Key=target,
                    UploadId=upload_id,
                    PartNumber=number,
                    CopySource=copy_source,
                    CopySourceRange=f"bytes={first}-{last}",
                )
                parts.append({"PartNumber": number, "ETag": response["CopyPartResult"]["ETag"]})
            self._request(
                "complete_multipart_upload", Key=target, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            self._quietly("abort_multipart_upload", Key=target, UploadId=upload_id)
            raise

    def _uploads(self, prefix: str) -> list[dict]:
        return self._request("list_multipart_uploads", Prefix=prefix).get("Uploads", [])

    def _abort_uploads(self, key: str) -> None:
        for upload in self._uploads(key):
            if upload["Key"] == key:
                self._request("abort_multipart_upload", Key=key, UploadId=upload["UploadId"])

    def delete(self, relative: str) -> None:
        self._request("delete_object", Key=self.key(relative))

    def leftovers(self) -> list[str]:
        """Keys of copies that never finished: ``.copying`` objects and unfinished multipart uploads."""
        prefix = self.prefix + "/" if self.prefix else ""
        found = {item["Key"] for item in self._list(prefix) if item["Key"].endswith(TEMP_SUFFIX)}
        found |= {upload["Key"] for upload in self._uploads(prefix) if upload["Key"].endswith(TEMP_SUFFIX)}
        return sorted(found)


_CLIENTS: dict[tuple, object] = {}


def _client_for(endpoint_url, access_key, secret_key, region):
    """One boto3 client per profile and process (clients are thread-safe, and slow to make; a forked
    worker makes its own rather than share its parent's connections)."""
    key = (os.getpid(), endpoint_url, access_key, secret_key, region)
    client = _CLIENTS.get(key)
    if client is None:
        import boto3
        from botocore.config import Config

        client = _CLIENTS[key] = boto3.client(
            "s3",
            endpoint_url=endpoint_url,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            region_name=region,
            config=Config(
                s3={"addressing_style": "path"},
                retries={"max_attempts": 3, "mode": "standard"},
                connect_timeout=5,
                read_timeout=60,
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            ),
        )
    return client


def _read_part(source: BinaryIO, size: int) -> bytes:
    buffer = bytearray()
    while len(buffer) < size:
        chunk = source.read(min(CHUNK, size - len(buffer)))
        if not chunk:
            break
        buffer += chunk
    return bytes(buffer)


class RangedObject(io.RawIOBase):
    """An object read with ranged GETs: one GET from the position to the end, kept while reads follow
    on, a new one after a seek. Errors are the backend's (NodeUnavailable, FileNotFoundError)."""

    def __init__(self, backend: S3Backend, key: str, size: int):
        self.backend, self.key, self.size = backend, key, size
        self.position = 0
        self._body = None
        self._body_at = -1

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self.position = base + offset
        return self.position

    def readinto(self, buffer) -> int:
        if self.position >= self.size or len(buffer) == 0:
            return 0
        if self._body is None or self._body_at != self.position:
            self._drop_body()
            start = self.position
            response = self.backend._request(
                "get_object",
                Key=self.key,
                Range=f"bytes={start}-{self.size - 1}",
                missing_is_file_not_found=True,
            )
            self._body, self._body_at = response["Body"], start
        wanted = min(len(buffer), self.size - self.position)
        with self.backend._errors():
            data = self._body.read(wanted)
        if not data:
            raise NodeUnavailable(
                f"storage node {self.backend.node_name}: {self.key} ended at {self.position} "
                f"of {self.size} bytes"
            )
        buffer[: len(data)] = data
        self.position += len(data)
        self._body_at = self.position
        return len(data)

    def _drop_body(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None

    def close(self) -> None:
        self._drop_body()
        super().close()


class RangedReader(io.BufferedReader):
    """A buffered RangedObject that says its size (there is no file descriptor to ask)."""

    @property
    def size(self) -> int:
        return self.raw.size
