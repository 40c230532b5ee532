"""Database connections: kept by default on PostgreSQL, bounded, replaced when the server drops them.

The settings are checked in a fresh process, as a deployment reads them. The rest runs the real
processes against the test database (PostgreSQL only: SQLite keeps a connection per request):
gunicorn with threads, as the README deploys it, and a Celery worker with a thread pool, as the crawl
workers run. Their connections are told apart from everyone else's by an ``application_name`` of
their own, and counted in ``pg_stat_activity`` and ``pg_stat_database.sessions`` (connections ever
made) through a connection of the test's own.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests
from django.db import connection

from tests.crawl_worker import CrawlWorker, database_url, wait_for
from tests.storage.test_benchmark_scripts import POSTGRESQL_ONLY
from tests.webarchive.test_settings import manage

GUNICORN = os.path.join(os.path.dirname(sys.executable), "gunicorn")
WORKERS, THREADS = 2, 3  # gunicorn's: at most WORKERS * THREADS kept connections
CLIENTS = 8  # requests sent at once, more than gunicorn's threads
BOGUS_TOKEN = {"Authorization": "Token " + "0" * 40}  # looked up in the database, then 401


# Settings -----------------------------------------------------------------------------------------

SETTINGS_SCRIPT = (
    "from django.conf import settings as s; d = s.DATABASES['default'];"
    "print(d['ENGINE'], d.get('CONN_MAX_AGE', 0), d.get('CONN_HEALTH_CHECKS', False))"
)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgres://archive@db.example.org:5432/archive", "postgresql 60 True"),
        ("postgres://archive@db.example.org:5432/archive?conn_max_age=0", "postgresql 0 True"),
        (
            "postgres://archive@db.example.org:5432/archive?conn_max_age=600&conn_health_checks=false",
            "postgresql 600 False",
        ),
        ("sqlite:///{tmp}/demo.sqlite3", "sqlite3 0 False"),
    ],
    ids=["postgresql-default", "conn_max_age=0", "explicit-age-and-checks", "sqlite-default"],
)
def test_connections_are_kept_on_postgresql_unless_the_url_says_otherwise(tmp_path, url, expected):
    result = manage(
        "shell",
        "-c",
        SETTINGS_SCRIPT,
        DATABASE_URL=url.format(tmp=tmp_path),
        WEBARCHIVE_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    engine, age, checks = result.stdout.split()[-3:]
    assert f"{engine.rsplit('.', 1)[-1]} {age} {checks}" == expected


# What the server sees -----------------------------------------------------------------------------


def _maintenance() -> psycopg.Connection:
    """A connection of the test's own to the server (not to the test database: not counted there)."""
    settings = connection.settings_dict
    return psycopg.connect(
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        user=settings["USER"] or "postgres",
        password=settings["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    )


class Backends:
    """The backends of one application name, as pg_stat_activity shows them, watched while a block runs."""

    def __init__(self, name: str):
        self.name = name
        self.server = _maintenance()
        self.seen: set[int] = set()
        self.most = 0

    def pids(self) -> set[int]:
        rows = self.server.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", [self.name]
        ).fetchall()
        return {pid for (pid,) in rows}

    def sessions(self) -> int:
        """Connections ever made to the test database (by anyone: the test's own process is idle)."""
        self.server.execute("SELECT pg_stat_clear_snapshot()")
        (count,) = self.server.execute(
            "SELECT sessions FROM pg_stat_database WHERE datname = %s", [connection.settings_dict["NAME"]]
        ).fetchone()
        return count

    def terminate(self) -> int:
        rows = self.server.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [self.name]
        ).fetchall()
        return len(rows)

    @contextlib.contextmanager
    def watched(self):
        """Sample the backends every few milliseconds while the block runs (distinct pids, most at once)."""
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                now = self.pids()
                self.seen |= now
                self.most = max(self.most, len(now))
                stop.wait(0.005)

        sampler = threading.Thread(target=sample, name="backend sampler")
        sampler.start()
        try:
            yield self
        finally:
            stop.set()
            sampler.join()
            now = self.pids()
            self.seen |= now
            self.most = max(self.most, len(now))

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def backends():
    watcher = Backends(f"test-connections-{uuid.uuid4().hex[:8]}")
    yield watcher
    watcher.terminate()  # nothing of this test's is left on the server, whatever happened
    watcher.close()


# The web process ----------------------------------------------------------------------------------


@contextlib.contextmanager
def web_server(application_name: str, query: str = ""):
    """gunicorn (WORKERS sync workers with THREADS threads each, DEBUG off) on the test database."""
    url = f"{database_url()}?application_name={application_name}{query}"
    port = _free_port()
    environment = {
        **os.environ,
        "DATABASE_URL": url,
        "DEBUG": "0",
        "SECRET_KEY": "test-only-" + "x" * 50,
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "PYTHONWARNINGS": "ignore::UserWarning",  # whitenoise: no collected static files here
    }
    command = [
        GUNICORN,
        "webarchive.wsgi:application",
        "--bind",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
    ]
    command += ["--workers", str(WORKERS), "--threads", str(THREADS)]
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as var, tempfile.TemporaryFile("w+") as errors:
        environment["WEBARCHIVE_VAR_DIR"] = var
        server = subprocess.Popen(command, env=environment, stderr=errors)
        try:

            def answers() -> bool:
                assert server.poll() is None, _read(errors)
                with contextlib.suppress(requests.ConnectionError, requests.Timeout):
                    return requests.get(f"{base}/cdx?url=x", timeout=5).status_code == 401
                return False

            wait_for(answers, timeout=60, message="gunicorn did not answer")
            yield base
        finally:
            server.terminate()
            server.wait(30)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _read(file) -> str:
    file.seek(0)
    return file.read()[-3000:]


def _requests(base: str, count: int) -> list[int]:
    """``count`` requests that read the database (a token looked up), CLIENTS at a time: their statuses."""

    def one(_):
        return requests.get(
            f"{base}/cdx?url=http://example.org/", headers=BOGUS_TOKEN, timeout=30
        ).status_code

    with ThreadPoolExecutor(CLIENTS) as clients:
        return list(clients.map(one, range(count)))


@POSTGRESQL_ONLY
def test_web_requests_reuse_at_most_one_connection_per_server_thread(transactional_db, backends):
    with web_server(backends.name) as base:
        before = backends.sessions()
        with backends.watched():
            statuses = _requests(base, 200)
        assert set(statuses) == {401}
        kept = backends.pids()
        # Kept: connections are still open after the requests, and no more than gunicorn's threads ever
        # were, however many requests came, CLIENTS at a time.
        assert 1 <= len(kept) <= WORKERS * THREADS
        assert len(backends.seen) <= WORKERS * THREADS
        assert backends.sessions() - before <= WORKERS * THREADS
        with backends.watched():
            assert set(_requests(base, 100)) == {401}
        assert len(backends.seen) <= WORKERS * THREADS
    # gunicorn stopped: its connections went with it.
    wait_for(lambda: not backends.pids(), timeout=30, message="connections left after gunicorn stopped")


@POSTGRESQL_ONLY
def test_conn_max_age_0_in_the_url_gives_a_connection_per_request(transactional_db, backends):
    with web_server(backends.name, "&conn_max_age=0") as base:
        before = backends.sessions()
        assert set(_requests(base, 40)) == {401}
        # Each request connected and closed: nothing kept, 40 connections made (the last ones counted
        # once their backends have exited).
        wait_for(lambda: not backends.pids(), timeout=30, message="a connection kept despite conn_max_age=0")
        wait_for(
            lambda: backends.sessions() - before >= 40, timeout=30, message="fewer connections than requests"
        )


@POSTGRESQL_ONLY
@pytest.mark.parametrize(("checks", "errors_expected"), [("", False), ("&conn_health_checks=false", True)])
def test_a_connection_the_server_dropped_is_replaced_without_an_error(
    transactional_db, backends, checks, errors_expected
):
    with web_server(backends.name, checks) as base:
        assert set(_requests(base, 60)) == {401}
        dropped = backends.pids()
        assert dropped
        assert backends.terminate() == len(dropped)
        wait_for(lambda: not backends.pids(), timeout=30, message="the backends did not end")
        statuses = _requests(base, 60)
        if errors_expected:
            # Without the check, the first request on each dropped connection fails (500): this test does
            # reach the dropped connections.
            assert 500 in statuses
            assert set(statuses) <= {401, 500}
        else:
            assert set(statuses) == {401}
        assert backends.pids().isdisjoint(dropped)


# Celery workers -----------------------------------------------------------------------------------


@POSTGRESQL_ONLY
@pytest.mark.timeout(180)
def test_a_thread_pool_worker_keeps_no_connection_between_tasks(crawl_worker, backends):
    """A worker with a thread pool (8 threads, as crawl workers run) keeps none of its threads'
    connections once their tasks are done; while they run, no more than one per thread."""
    from webarchive.celery import app

    crawl_worker.environment["DATABASE_URL"] = f"{database_url()}?application_name={backends.name}"
    crawl_worker.queues = backends.name  # its own: a broker shared with other runs gives it nothing else
    crawl_worker.start()
    tasks = 40
    try:
        with backends.watched():
            for _ in range(tasks):
                app.send_task("harvest.fail_stalled", queue=backends.name)
            wait_for(
                lambda: _succeeded(crawl_worker.logs(), "harvest.fail_stalled") >= tasks,
                timeout=120,
                message="the tasks did not all run",
            )
        assert backends.seen, "the tasks used no connection of the worker's: nothing was measured"
        assert backends.most <= 8
        wait_for(lambda: not backends.pids(), timeout=30, message="task threads kept their connections")
    finally:
        crawl_worker.stop()
        _delete_queue(app, backends.name)


CHILDREN = 2


@POSTGRESQL_ONLY
@pytest.mark.timeout(180)
def test_a_prefork_worker_keeps_one_connection_per_child_and_replaces_a_dropped_one(
    crawl_worker, backends, tmp_path
):
    from webarchive.celery import app

    environment = {**crawl_worker.environment}
    environment["DATABASE_URL"] = f"{database_url()}?application_name={backends.name}"
    worker = CrawlWorker(
        environment, tmp_path, pool="prefork", concurrency=CHILDREN
    )  # the README's general worker
    worker.queues = backends.name
    try:
        worker.start()
        with backends.watched():
            for _ in range(30):
                app.send_task("harvest.fail_stalled", queue=backends.name)
            wait_for(lambda: _succeeded(worker.logs(), "harvest.fail_stalled") >= 30, message="tasks not run")
        # Kept between tasks, never more than one per child, however many tasks.
        kept = backends.pids()
        assert 1 <= len(kept) <= CHILDREN
        assert len(backends.seen) <= CHILDREN
        # Dropped by the server (a restart, a failover, pg_terminate_backend): the next tasks reconnect.
        assert backends.terminate() == len(kept)
        wait_for(lambda: not backends.pids(), timeout=30, message="the backends did not end")
        for _ in range(10):
            app.send_task("harvest.fail_stalled", queue=backends.name)
        wait_for(lambda: _succeeded(worker.logs(), "harvest.fail_stalled") >= 40, message="tasks not run")
        log = worker.logs()
        assert "raised unexpected" not in log and "OperationalError" not in log, log[-3000:]
        assert backends.pids() and backends.pids().isdisjoint(kept)
    finally:
        worker.stop()
        _delete_queue(app, backends.name)


def _succeeded(log: str, task: str) -> int:
    return sum(1 for line in log.splitlines() if f"{task}[" in line and " succeeded in " in line)


def _delete_queue(app, name: str) -> None:
    with app.connection_for_write() as conn:
        conn.default_channel.queue_delete(name)
