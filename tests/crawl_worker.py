"""A real Celery crawl worker in a subprocess, on a real broker (RabbitMQ), sharing the test database.

For the tests of what only a real worker shows: jobs that run, stop, are resubmitted, and a
worker killed with SIGKILL in the middle of a crawl (RabbitMQ gives the unacknowledged task
to the next worker). The worker must see the test's rows, so the tests using it are
transactional and run on PostgreSQL (an in-memory SQLite test database cannot be shared
with another process).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from tests.components import require_component
from webarchive.tasks import spool_queue

BROKER_URL = os.environ.get("WEBARCHIVE_TEST_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")
QUEUES = "default,crawl-high,crawl-low"


def _die_with_parent() -> None:
    """In the worker, before exec: the kernel kills it if the test process dies (no orphan workers)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def broker_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 5672), timeout=2):
            return True
    except OSError:
        return False


def database_url() -> str:
    """The test database as a DATABASE_URL the worker process can use."""
    db = connection.settings_dict
    credentials = db["USER"] or "postgres"
    if db.get("PASSWORD"):
        credentials += f":{db['PASSWORD']}"
    return f"postgres://{credentials}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


class CrawlWorker:
    """``celery worker`` for every queue, thread pool, started and stopped by the test (``pool`` and
    ``concurrency``: another pool, as the README runs the general worker with prefork)."""

    def __init__(
        self, environment: dict[str, str], log_dir: Path, *, pool: str = "threads", concurrency: int = 8
    ):
        self.environment = environment
        self.log_dir = log_dir
        self.pool, self.concurrency = pool, concurrency
        self.queues = QUEUES  # a test may add a storage node's own queue
        self.process: subprocess.Popen | None = None
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"worker-{self.starts}.log"

    def start(self) -> CrawlWorker:
        self.starts += 1
        command = [
            sys.executable, "-m", "celery", "-A", "webarchive", "worker",
            "--pool", self.pool, "--concurrency", str(self.concurrency), "--queues", self.queues,
            "--hostname", f"test-{uuid.uuid4().hex[:8]}@%h",
            "--without-gossip", "--without-mingle", "--loglevel", "INFO",
        ]  # fmt: skip
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            command,
            env=self.environment,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            cwd=Path.cwd(),
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if "ready." in self.log_path.read_text(errors="replace"):
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"the worker did not start:\n{self.log_path.read_text()}")

    def kill(self) -> None:
        """SIGKILL: no clean-up at all, as when the machine's OOM killer strikes."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self._log.close()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)
        self._log.close()

    def logs(self) -> str:
        return "\n".join(
            (self.log_dir / f"worker-{n}.log").read_text(errors="replace") for n in range(1, self.starts + 1)
        )


@pytest.fixture
def crawl_worker(transactional_db, settings, tmp_path):
    """A crawl worker not started yet (``.start()``), and the test process sending to the same broker."""
    if connection.vendor != "postgresql":
        pytest.skip("a worker process shares the test database only on PostgreSQL (CI runs it there)")
    require_component("RabbitMQ", broker_reachable(), "a real broker on 127.0.0.1:5672 redelivers tasks")
    from webarchive.celery import app

    warc_dir, spool_dir = tmp_path / "warcs", tmp_path / "spool"
    settings.HARVEST_WARC_DIR = warc_dir
    settings.HARVEST_SPOOL_DIR = spool_dir
    settings.HARVEST_PROGRESS_INTERVAL = 0.5
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": BROKER_URL,
        "WEBARCHIVE_VAR_DIR": str(tmp_path / "var"),
        "HARVEST_WARC_DIR": str(warc_dir),
        "HARVEST_SPOOL_DIR": str(spool_dir),
        "HARVEST_PROGRESS_INTERVAL": "0.5",
        "HARVEST_CRAWL_THREADS": "4",
        "HARVEST_IP_MIN_INTERVAL": "0",  # the test sites share 127.0.0.1
        "WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES": "1",
    }
    saved = (app.conf.broker_url, app.conf.broker_transport_options)
    app.conf.broker_url, app.conf.broker_transport_options = BROKER_URL, {}
    _reset_pools(app)
    with app.connection_for_write() as conn:
        # And the messages a previous run left behind (the worker declares them again).
        for queue in [*QUEUES.split(","), spool_queue()]:
            conn.default_channel.queue_delete(queue)
    worker = CrawlWorker(environment, tmp_path)
    yield worker
    worker.stop()
    app.conf.broker_url, app.conf.broker_transport_options = saved
    _reset_pools(app)


def _reset_pools(app) -> None:
    """Forget the broker connection pools: they are made again from broker_url on next use.

    (Not closed: kombu keeps one producer pool per broker URL for the whole process, which
    would then refuse to work the next time a test sends to this broker.)
    """
    app._pool = None
    app.amqp._producer_pool = None


def wait_for(condition, *, timeout: float = 60, interval: float = 0.2, message: str = ""):
    """Poll ``condition()`` until it is true (returns its value) or fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(message or "condition not met in time")
