"""Storage on a real Celery worker and broker (PostgreSQL and RabbitMQ): a finished crawl's files
ingested and replicated by the worker, the beat tasks finding and repairing a flipped byte (on the
node's own queue) and re-replicating the files of a node that went away, and replay through
/warcs/ with a node offline."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.urls import reverse

from harvest.choices import JobStatus
from harvest.models import Job
from harvest.services.crawls import jobs_dispatch_submitted
from storage.models import IngestStep, Replica, StorageEvent, WarcFile
from storage.services.nodes import node_set_offline
from storage.services.placement import good_replicas
from storage.tasks import storage_audit, storage_check
from tests.crawl_worker import QUEUES, wait_for
from tests.factories import UserFactory
from tests.harvest.crawljobs import job_for_sites
from tests.storage.storage_files import flip_byte, replica_path
from webarchive.permissions import Role
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=21, pages=40, hosts=1, large_file_bytes=100_000) as site:
        yield site


def ingested(job: Job) -> bool:
    files = WarcFile.objects.filter(job=job)
    return files.exists() and not files.exclude(ingest_step=IngestStep.CLEANED).exists()


def test_a_crawl_is_ingested_replicated_audited_and_repaired_by_the_worker(
    crawl_worker, site, settings, client
):
    from storage.services.nodes import node_create

    settings.STORAGE_AUDIT_DAYS = 0.0001  # every replica is due at every audit round
    root = Path(settings.HARVEST_WARC_DIR).parent / "nodes"
    a = node_create(name="node-a", location="room-1", root=str(root / "a"), local_worker=True)
    b = node_create(name="node-b", location="room-2", root=str(root / "b"))
    c = node_create(name="node-c", location="room-3", root=str(root / "c"))
    crawl_worker.queues = f"{QUEUES},{a.queue}"
    crawl_worker.environment["STORAGE_AUDIT_DAYS"] = "0.0001"
    crawl_worker.start()

    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    assert jobs_dispatch_submitted() == 1
    wait_for(lambda: Job.objects.get(pk=job.pk).status in (JobStatus.DONE, JobStatus.FAILED), timeout=120)
    assert Job.objects.get(pk=job.pk).status == JobStatus.DONE
    # The worker ingests the files it closed: two verified replicas each, the spool emptied.
    wait_for(lambda: ingested(job), timeout=60, message=crawl_worker.logs())
    files = list(WarcFile.objects.filter(job=job))
    for warc in files:
        assert good_replicas(warc).count() == 2
        assert not Path(warc.path).exists()
    assert "storage.ingest" in crawl_worker.logs()

    # Bit rot on node-a: the audit (a beat task, its verifications on node-a's own queue) repairs it.
    replica = Replica.objects.filter(node=a, warc_file__in=files).select_related("node").first()
    assert replica is not None  # the node measured with the most free space is chosen first
    warc = replica.warc_file
    flip_byte(replica_path(replica))
    storage_audit.delay()
    repaired = warc.storage_events.filter(kind=StorageEvent.Kind.REPAIRED)
    wait_for(repaired.exists, timeout=60, message=crawl_worker.logs())
    assert warc.storage_events.filter(kind=StorageEvent.Kind.CORRUPT, node=replica.node).exists()
    assert (
        replica_path(replica).read_bytes()
        == replica_path(warc.replicas.exclude(pk=replica.pk)[0]).read_bytes()
    )

    # A node goes away (its disk unmounted): the check finds it, the files are copied elsewhere.
    holding = Replica.objects.filter(node=b).exists()
    Path(b.root).rename(root / "b-away")
    storage_check.delay()

    def all_safe():
        return all(good_replicas(warc).exclude(node=b).count() == 2 for warc in files)

    wait_for(all_safe, timeout=60, message=crawl_worker.logs())
    if holding:
        assert Replica.objects.filter(node=c, state=Replica.State.OK).exists()

    # Replay's byte source keeps working with a node offline (read as an engineer: who downloads bytes).
    node_set_offline(node_id=a.pk)
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    for warc in files:
        response = client.get(
            reverse("warc_bytes", kwargs={"filename": warc.name}), headers={"Range": "bytes=0-99"}
        )
        assert response.status_code == 206
        assert b"".join(response.streaming_content).startswith(b"\x1f\x8b")
