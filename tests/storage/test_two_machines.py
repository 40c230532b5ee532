"""Two machines: a crawl worker that shares no disk with the web process, only the database, the broker
and storage (a SeaweedFS S3 node and a directory node on the crawl machine, served by its own worker).

The worker is a real Celery process with its own machine name, spool and var directories; the test
process is the web side (its live server serves pywb). Once the job is crawled and its files ingested
on the crawl machine, the crawl machine's whole directory is moved away: whatever the web side then
shows of the job (replay, search, audit, crawl log) came through storage.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from django.urls import reverse

from harvest.choices import JobStatus
from harvest.models import Job
from harvest.selectors import crawl_log_uri
from harvest.services.crawls import jobs_dispatch_submitted
from storage.access import Viewer
from storage.models import Capture, IngestStep, Replica, StorageEvent, StorageNode, WarcFile
from storage.search import parse_query
from storage.selectors_search import SearchRequest, archive_search
from storage.services.audits import replica_verify
from storage.services.nodes import node_create
from tests.crawl_worker import crawl_worker, wait_for  # noqa: F401  (the fixture)
from tests.harvest.crawljobs import job_for_sites
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from tests.weed_server import unique_bucket
from webarchive.permissions import Role
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=17, pages=20, hosts=1, large_file_bytes=30_000) as site:
        yield site


def _files_ingested(job: Job) -> bool:
    files = WarcFile.objects.filter(job=job)
    return files.exists() and not files.exclude(ingest_step=IngestStep.CLEANED).exists()


def test_a_job_crawled_on_a_machine_sharing_no_disk_is_stored_replayed_searched_and_audited_from_the_web(
    crawl_worker,  # noqa: F811
    pywb_replay,  # noqa: F811
    weed_server,
    site,
    settings,
    tmp_path,
    client,
    user_with_role,
):
    web, crawler = tmp_path / "web", tmp_path / "crawler"
    settings.MACHINE_NAME = "web1"
    settings.HARVEST_WARC_DIR, settings.HARVEST_SPOOL_DIR = web / "warcs", web / "spool"
    settings.VAR_DIR = web / "var"
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.STORAGE_S3_PROFILES = {"archive-s3": weed_server.profile()}
    crawl_worker.environment.update(
        {
            "WEBARCHIVE_MACHINE": "crawler1",
            "WEBARCHIVE_VAR_DIR": str(crawler / "var"),
            "HARVEST_WARC_DIR": str(crawler / "warcs"),
            "HARVEST_SPOOL_DIR": str(crawler / "spool"),
            "STORAGE_S3_PROFILES": json.dumps(settings.STORAGE_S3_PROFILES),
        }
    )
    s3 = node_create(
        name="s3-a",
        location="building-1",
        backend=StorageNode.Backend.S3,
        bucket=unique_bucket("machines"),
        prefix="archive",
        profile="archive-s3",
    )
    disk = node_create(name="disk-b", location="building-2", root=str(crawler / "node"), local_worker=True)
    # The crawl machine's worker: the crawl queues, its directory node's queue and (added by the worker
    # itself, as it crawls) its spool queue; not the general queue, served on another machine.
    crawl_worker.queues = f"crawl-high,crawl-low,{disk.queue}"
    crawl_worker.start()

    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    jobs_dispatch_submitted()
    wait_for(
        lambda: Job.objects.filter(pk=job.pk, status__in=[JobStatus.DONE, JobStatus.FAILED]).exists(),
        timeout=180,
        message=crawl_worker.logs(),
    )
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    # The ingest chains ran on the crawl machine (its spool queue): two verified replicas each, spool emptied.
    wait_for(lambda: _files_ingested(job), timeout=120, message=crawl_worker.logs())
    files = list(WarcFile.objects.filter(job=job))
    for warc in files:
        assert warc.machine == "crawler1" and Path(warc.path).is_relative_to(crawler / "warcs")
        replicas = {replica.node.name: replica for replica in warc.replicas.select_related("node")}
        assert set(replicas) == {"s3-a", "disk-b"}
        assert all(replica.state == Replica.State.OK and replica.verified_at for replica in replicas.values())
    assert not any((crawler / "warcs").glob("*.warc.gz"))
    assert not web.exists() or not any(web.rglob("*.warc*"))  # nothing was ever written on the web side
    crawl_worker.stop()

    # From here on the crawl machine is out of reach: its disk (the spool, the directory node) is gone.
    crawler.rename(tmp_path / "elsewhere")

    # Replayed: pywb reads the records from the live server's /warcs/, which reads the S3 replica.
    pages = Capture.objects.filter(job=job, record_type="response", status=200, mime="text/html")
    assert pages.count() >= 5
    for capture in pages.order_by("url")[:5]:
        answer = pywb_replay.get(
            pywb_replay.capture_url(capture.url, capture.timestamp14, "id_"), headers={"Connection": "close"}
        )
        assert answer.status_code == 200, capture.url
        assert answer.content == requests.get(capture.url, timeout=10).content  # the site is deterministic

    # Searchable: the pages' text was indexed on the crawl machine as they were captured.
    results = archive_search(SearchRequest(query=parse_query("windows-1252")), Viewer("staff"))
    assert results.hits and {hit.capture.job_id for hit in results.hits} == {job.pk}
    assert {hit.url for hit in results.hits} & {site.url("/site/"), site.url("/site/latin1.html")}

    # Audited from here: the S3 replicas read back whole.
    for warc in files:
        replica = warc.replicas.get(node=s3)
        before = replica.verified_at
        assert replica_verify(replica.pk) == Replica.State.OK
        replica.refresh_from_db()
        assert replica.state == Replica.State.OK and replica.verified_at > before
    assert not StorageEvent.objects.filter(node=s3, kind__in=StorageEvent.ALERTS).exists()

    # The crawl log, searched from the job page: read through storage from the parts stored with the job.
    assert Capture.objects.filter(job=job, url=crawl_log_uri(job.pk)).exists()
    client.force_login(user_with_role(Role.ENGINEER))
    page = client.get(
        reverse("harvest:job_detail", args=[job.pk]), {"log_domain": "127.0.0.1", "log_pattern": "latin1"}
    )
    assert page.status_code == 200
    assert site.url("/site/latin1.html") in page.content.decode()
    assert "could not be read" not in page.content.decode()
