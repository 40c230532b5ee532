"""Crawl machines that share no disk with the web host: the crawl log kept with the job's WARC files
and read through storage, the ingest chain sent to the machine whose spool holds a file, and the workers
that crawl serving that machine's queue."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from celery.app.amqp import Queues
from kombu import Queue

from harvest.crawler.crawllog import CrawlLog, log_line
from harvest.selectors import crawl_log_dir, crawl_log_lines, crawl_log_uri
from harvest.worker import crawl_log_file, recover_crawl_logs, run_site_crawl
from storage.models import Capture, IngestStep, WarcFile
from storage.services import ingest
from storage.services.ingest import ingest_advance
from tests.harvest.crawljobs import job_for_sites
from tests.storage.storage_files import make_nodes, spool_warc
from webarchive.celery import consume_spool_queue
from webarchive.testsite import TestSite

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=5, pages=12, hosts=2, large_file_bytes=10_000) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.1


def _line(url: str, site: str) -> str:
    from datetime import UTC, datetime

    return log_line(
        when=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
        status=200,
        size=10,
        url=url,
        hop_path="L",
        via="-",
        mime="text/html",
        duration=0.01,
        digest="-",
        site=site,
    )


def _log_files(job) -> list[str]:
    """The WARC files of a job that hold a part of its crawl log."""
    captures = Capture.objects.filter(job=job, url=crawl_log_uri(job.pk), record_type="metadata")
    return sorted(captures.values_list("warc_file__name", flat=True))


# The crawl log ----------------------------------------------------------------------------------------------


def test_a_finished_site_leaves_its_log_in_the_job_s_files_and_none_on_the_machine(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    run_site_crawl(job.configurations.get().pk)
    lines = list(crawl_log_lines(job.pk))
    assert lines and {line.split(" ")[9] for line in lines} == {"127.0.0.1"}
    assert site.url("/site/") in {line.split(" ")[3] for line in lines}
    assert list(crawl_log_dir(job.pk).glob("*.log")) == []
    # In the job's last file: no file of its own for the last part.
    assert len(_log_files(job)) == 1
    assert WarcFile.objects.get(name=_log_files(job)[0]).captures.filter(record_type="response").exists()


def test_a_long_crawl_rolls_its_log_into_files_of_their_own_and_loses_no_line(site, settings):
    settings.HARVEST_CRAWL_LOG_ROLL_SECONDS = 0  # at every progress report
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.05, max_delay=0.05)
    entry = job.configurations.get()
    run_site_crawl(entry.pk)
    entry.refresh_from_db()
    parts = _log_files(job)
    assert len(parts) >= 2
    own = [
        name
        for name in parts
        if not WarcFile.objects.get(name=name).captures.exclude(url=crawl_log_uri(job.pk)).exists()
    ]
    assert own, "no part was rolled into a file of its own"
    assert all(WarcFile.objects.get(name=name).closed_at for name in own)
    lines = list(crawl_log_lines(job.pk))
    # One line per URL dealt with, each once: no line lost or repeated between the parts.
    assert len(lines) == len(set(lines)) >= entry.urls_done


def test_the_log_is_read_through_storage_once_the_spool_copies_are_gone(site, tmp_path):
    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    run_site_crawl(job.configurations.get().pk)
    before = list(crawl_log_lines(job.pk))
    for warc in WarcFile.objects.filter(job=job):
        assert ingest_advance(warc.pk).ingest_step == IngestStep.CLEANED
        assert not Path(warc.path).exists()
    assert list(crawl_log_lines(job.pk)) == before


def test_a_killed_process_s_log_is_stored_by_the_next_one_and_a_living_one_s_is_left(
    site, settings, tmp_path
):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    folder = crawl_log_dir(job.pk)
    killed = folder / f"crawl-{settings.MACHINE_NAME}-4242-0.log"
    # A crawl process that wrote a line and was killed (SIGKILL: no clean-up; its lock goes with it).
    script = (
        "import os, sys\n"
        "from harvest.crawler.crawllog import CrawlLog\n"
        "log = CrawlLog(sys.argv[1])\n"
        "log.write(sys.argv[2])\n"
        "os.kill(os.getpid(), 9)\n"
    )
    subprocess.run([sys.executable, "-c", script, str(killed), _line("http://127.0.0.1/killed", "127.0.0.1")])
    assert killed.read_text().startswith("2026-03-01")
    elsewhere = folder / "crawl-othermachine-4243-0.log"  # a shared spool: not this machine's to judge
    with CrawlLog(elsewhere) as log:
        log.write(_line("http://127.0.0.1/elsewhere", "127.0.0.1"))
    living = CrawlLog(crawl_log_file(job.pk))  # this process's: it is still writing
    try:
        living.write(_line("http://127.0.0.1/living", "127.0.0.1"))
        assert recover_crawl_logs() == 1
        assert not killed.exists() and living.path.exists() and elsewhere.exists()
        assert len(_log_files(job)) == 1
        urls = [line.split(" ")[3] for line in crawl_log_lines(job.pk)]
        assert urls[0] == "http://127.0.0.1/killed"  # stored first, then what is being written here
        assert "http://127.0.0.1/living" in urls
    finally:
        living.close()
    # Once its writer has closed it, a part left behind is stored too.
    assert recover_crawl_logs() == 1 and not living.path.exists()
    assert len(_log_files(job)) == 2


def test_an_unreadable_part_of_the_log_is_said_on_the_job_page(site, as_role):
    from django.urls import reverse

    from webarchive.permissions import Role

    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    run_site_crawl(job.configurations.get().pk)
    for warc in WarcFile.objects.filter(job=job):
        Path(warc.path).unlink()  # no replica, and the spool copy gone
    client = as_role(Role.ENGINEER)
    page = client.get(reverse("harvest:job_detail", args=[job.pk]), {"log_pattern": "site"})
    assert page.status_code == 200
    assert "The crawl log could not be read" in page.content.decode()


# The ingest chain runs where the file is ------------------------------------------------------------------


def test_a_crawled_file_s_chain_goes_to_its_machine_s_queue_and_an_imported_one_s_anywhere(
    monkeypatch, settings
):
    sent = []
    monkeypatch.setattr(ingest, "enqueue", lambda task, *args, queue=None: sent.append((task, args, queue)))
    crawled = spool_warc("crawled.warc.gz")
    WarcFile.objects.filter(pk=crawled.pk).update(machine="crawler2", origin=WarcFile.Origin.CRAWLED)
    imported = spool_warc("imported.warc.gz", seed=2)
    WarcFile.objects.filter(pk=imported.pk).update(machine="", origin=WarcFile.Origin.IMPORTED)
    ingest.send_ingest([crawled.pk, imported.pk])
    assert sorted(sent, key=lambda item: item[1]) == [
        ("storage.ingest", (crawled.pk,), "spool.crawler2"),
        ("storage.ingest", (imported.pk,), None),
    ]


def test_another_machine_s_spool_copy_is_never_deleted_from_here(tmp_path, settings):
    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    warc = spool_warc()
    WarcFile.objects.filter(pk=warc.pk).update(machine="crawler2")
    settings.MACHINE_NAME = "web1"  # a path that looks like this machine's spool, but is crawler2's
    finished = ingest_advance(warc.pk)
    assert finished.ingest_step == IngestStep.CLEANED and finished.replicas.filter(state="ok").count() == 2
    assert Path(warc.path).exists()
    assert not finished.storage_events.filter(kind="cleaned").exists()


def test_files_written_here_name_this_machine(site, settings):
    settings.MACHINE_NAME = "crawler7"
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    run_site_crawl(job.configurations.get().pk)
    files = WarcFile.objects.filter(job=job)
    assert set(files.values_list("machine", flat=True)) == {"crawler7"}
    # The file names carry the same name (what an operator greps for on the storage nodes).
    names = list(files.values_list("name", flat=True))
    assert all(name.endswith("-crawler7.warc.gz") for name in names), names


@pytest.mark.parametrize("name", ["crawl-2", "crawl.bnf.fr", "", "a" * 64])
def test_a_machine_name_that_would_break_file_names_is_refused_at_start(name):
    result = subprocess.run(  # settings are read once per process: a fresh one reads this one
        [sys.executable, "-c", "import django; django.setup()"],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "webarchive.settings", "WEBARCHIVE_MACHINE": name},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "WEBARCHIVE_MACHINE" in result.stderr and "letters and digits" in result.stderr


# Every worker serves its machine's queue ------------------------------------------------------------------


def _worker(*names: str, selected: list[str] | None = None):
    queues = Queues([Queue(name, routing_key=name) for name in names])
    if selected:
        queues.select(selected)
    return SimpleNamespace(app=SimpleNamespace(amqp=SimpleNamespace(queues=queues)))


@pytest.mark.parametrize("selected", [["crawl-high", "crawl-low"], ["default"], ["storage-node-a"], None])
def test_a_worker_serves_its_machine_s_queue_beside_those_it_was_given(selected, settings):
    settings.MACHINE_NAME = "crawler2"
    worker = _worker("default", "crawl-high", "crawl-low", "storage-node-a", selected=selected)
    given = set(worker.app.amqp.queues.consume_from or worker.app.amqp.queues)
    consume_spool_queue(sender="test@crawler2", instance=worker)
    consumed = set(worker.app.amqp.queues.consume_from or worker.app.amqp.queues)
    assert consumed == given | {"spool.crawler2"}


# Copies on the crawl machine read its spool first -----------------------------------------------------------


def _copied_from(warc) -> list[str]:
    return list(warc.storage_events.filter(kind="copied").order_by("pk").values_list("detail", flat=True))


def test_on_the_crawl_machine_every_replica_is_copied_from_the_local_spool(tmp_path, settings):
    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    warc = spool_warc()
    WarcFile.objects.filter(pk=warc.pk).update(machine=settings.MACHINE_NAME, origin=WarcFile.Origin.CRAWLED)
    assert ingest_advance(warc.pk).ingest_step == IngestStep.CLEANED
    assert _copied_from(warc) == ["From the spool."] * 2


def test_elsewhere_the_second_replica_is_copied_from_the_first(tmp_path):
    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    warc = spool_warc()  # imported: no crawl machine's spool
    assert ingest_advance(warc.pk).ingest_step == IngestStep.CLEANED
    assert _copied_from(warc) == ["From the spool.", "From node-a."]


def test_a_spool_copy_damaged_after_its_checksum_gives_way_to_a_good_replica(tmp_path, settings):
    from storage.services.replication import file_replicate
    from tests.storage.storage_files import flip_byte

    make_nodes(tmp_path / "nodes", "room-1", "room-2")
    warc = spool_warc()
    WarcFile.objects.filter(pk=warc.pk).update(machine=settings.MACHINE_NAME, origin=WarcFile.Origin.CRAWLED)
    assert file_replicate(warc.pk, at_most=1) == 1
    flip_byte(Path(warc.path))
    assert file_replicate(warc.pk) == 2
    assert _copied_from(warc) == ["From the spool.", "From node-a."]
