"""BagIt packages of jobs (storage.services.bags, ``manage.py bag_job``): a real crawl of the test
website, ingested onto two storage nodes, bagged and checked with the Library of Congress's bagit;
damage found by bagit; bad jobs, targets and replicas refused with nothing written; the bag made by
the workers after ingest (in process, and on a real worker and broker)."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import bagit
import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from harvest.choices import JobStatus
from harvest.models import HarvestInfo, Job
from harvest.services.crawls import jobs_dispatch_submitted
from harvest.services.statistics import job_statistics_compute
from harvest.worker import run_site_crawl
from storage.models import IngestStep, Replica, WarcFile
from storage.services.bags import job_bag_send_when_ingested, job_bag_write
from storage.services.ingest import ingest_advance
from storage.tasks import bag_job
from tests.crawl_worker import wait_for
from tests.harvest.crawljobs import job_for_sites
from tests.storage.storage_files import flip_byte, make_nodes, replica_path
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=28, pages=12, hosts=1, large_file_bytes=50_000) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2
    settings.STORAGE_BAG_ORGANIZATION = "Test web archive"
    settings.STORAGE_BAG_DIR = ""


def crawl(site) -> Job:
    """A job over the test website, crawled here to its end (its metadata WARC written)."""
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    for entry in job.configurations.all():
        run_site_crawl(entry.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    job_statistics_compute(job_id=job.pk, refresh_periods=False)
    return job


def ingest(job: Job) -> list[WarcFile]:
    """Every file of the job through its ingest chain: on the nodes, the spool emptied."""
    files = list(WarcFile.objects.filter(job=job).order_by("pk"))
    for warc in files:
        ingest_advance(warc.pk)
    for warc in files:
        warc.refresh_from_db()
        assert warc.ingest_step == IngestStep.CLEANED, warc.ingest_error
        assert not Path(warc.path).exists()  # from now on, only the replicas hold it
    return files


@pytest.fixture
def nodes(tmp_path):
    return make_nodes(tmp_path / "nodes", "room-1", "room-2")


@pytest.fixture
def crawled_job(db, site, nodes) -> Job:
    return crawl(site)


@pytest.fixture
def ingested_job(crawled_job) -> Job:
    ingest(crawled_job)
    return crawled_job


@pytest.fixture
def verifications(monkeypatch) -> list[tuple[int, str]]:
    """The replicas sent to the fixity audit (storage.verify), with their queue."""
    sent = []
    monkeypatch.setattr(
        "storage.tasks.verify_replica.apply_async",
        lambda args, kwargs, queue: sent.append((args[0], queue)),
    )
    return sent


def everything_under(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*"))


@pytest.mark.django_db
def test_an_ingested_job_is_bagged_and_bagit_validates_it(ingested_job, tmp_path, settings):
    job = ingested_job
    target = tmp_path / "handoff" / "spar" / f"job-{job.pk}"  # its parents are made
    made = job_bag_write(job_id=job.pk, target=target)

    bag = bagit.Bag(str(target))
    assert bag.validate() is True  # structure, Payload-Oxum, every sha256 and sha512 recomputed
    assert bag.version_info == (1, 0) and sorted(bag.algorithms) == ["sha256", "sha512"]
    files = list(WarcFile.objects.filter(job=job))
    assert len(files) >= 2 and made.warc_files == len(files)  # the crawl's files and the metadata one
    assert set(bag.payload_files()) == {f"data/warcs/{warc.name}" for warc in files} | {"data/job.json"}
    for warc in files:
        entry = bag.entries[f"data/warcs/{warc.name}"]
        assert entry["sha256"] == warc.sha256  # the archive's own checksum, read from a replica
        assert (target / "data" / "warcs" / warc.name).stat().st_size == warc.size
    assert set(bag.entries) >= {"bagit.txt", "bag-info.txt", "manifest-sha256.txt", "manifest-sha512.txt"}

    payload_bytes = sum(warc.size for warc in files) + (target / "data" / "job.json").stat().st_size
    assert bag.info["Payload-Oxum"] == made.oxum == f"{payload_bytes}.{len(files) + 1}"
    assert bag.info["Source-Organization"] == "Test web archive"
    assert bag.info["External-Identifier"] == f"{settings.HARVEST_WARC_PREFIX}-job-{job.pk}"
    assert bag.info["Job-Identifier"] == str(job.pk) and bag.info["Job-Status"] == "done"
    assert bag.info["Harvest-Definition"] == job.harvest_definition.name
    assert bag.info["Job-Ended"] == job.ended_at.isoformat()
    assert bag.info["Bagging-Date"] == timezone.localdate().isoformat()
    assert bag.info["WARC-File-Count"] == str(len(files))

    metadata = json.loads((target / "data" / "job.json").read_text(encoding="utf-8"))
    assert metadata["format"] == "webarchive-job-metadata/1"
    assert metadata["job"]["id"] == job.pk and metadata["job"]["status"] == "done"
    assert metadata["harvest_definition"]["name"] == job.harvest_definition.name
    assert metadata["template"] == {
        "id": job.template_id,
        "name": job.template.name,
        "version": job.template_version,
        "settings": job.template_settings,
    }
    assert metadata["crawler_traps"] == job.crawler_traps
    entry = job.configurations.get()
    [site_entry] = metadata["sites"]
    assert site_entry["domain"] == "127.0.0.1" and site_entry["seeds"] == entry.seed_urls
    assert site_entry["urls_done"] == entry.urls_done > 0 and site_entry["stop_reason"] == "completed"
    info = HarvestInfo.objects.get(job=job)
    [info_entry] = metadata["harvest_infos"]
    assert (info_entry["object_count"], info_entry["byte_count"]) == (info.object_count, info.byte_count)
    whole_job = next(row for row in metadata["statistics"] if row["collection"] is None)
    assert whole_job["urls"] > 0 and whole_job["lines"]
    assert {row["name"]: row["sha256"] for row in metadata["warc_files"]} == {
        warc.name: warc.sha256 for warc in files
    }
    # Nothing but the bag was written beside it: its hidden working copy has its name now.
    assert [path.name for path in target.parent.iterdir()] == [target.name]


@pytest.mark.django_db
def test_bagit_finds_a_damaged_payload_file_and_a_damaged_tag_file(ingested_job, tmp_path):
    target = tmp_path / "bag"
    job_bag_write(job_id=ingested_job.pk, target=target)
    warc = next(path for path in (target / "data" / "warcs").iterdir())
    flip_byte(warc)
    with pytest.raises(bagit.BagValidationError) as damaged:
        bagit.Bag(str(target)).validate()
    mismatches = [detail for detail in damaged.value.details if isinstance(detail, bagit.ChecksumMismatch)]
    assert {(detail.path, detail.algorithm) for detail in mismatches} == {
        (f"data/warcs/{warc.name}", "sha256"),
        (f"data/warcs/{warc.name}", "sha512"),
    }
    flip_byte(warc)  # back as it was
    assert bagit.Bag(str(target)).validate()

    info = target / "bag-info.txt"
    info.write_text(info.read_text().replace("Job-Status: done", "Job-Status: failed"))
    with pytest.raises(bagit.BagValidationError):
        bagit.Bag(str(target)).validate()

    (target / "bag-info.txt").unlink()
    (target / "data" / "extra.txt").write_text("not in the manifest")
    assert not bagit.Bag(str(target)).is_valid()


@pytest.mark.django_db
def test_a_job_not_ended_or_not_ingested_is_refused_and_nothing_is_written(crawled_job, site, tmp_path):
    target = tmp_path / "bags" / "job"
    count = WarcFile.objects.filter(job=crawled_job).count()
    waiting_files = f"Job {crawled_job.pk} is not ingested yet: {count} of its {count} WARC files"
    with pytest.raises(ValidationError, match=waiting_files):
        job_bag_write(job_id=crawled_job.pk, target=target)
    assert not (tmp_path / "bags").exists()

    waiting = job_for_sites([("127.0.0.1", site.url("/site/s0/"))])  # submitted, never crawled
    with pytest.raises(ValidationError, match="only a job that has ended"):
        job_bag_write(job_id=waiting.pk, target=target)
    with pytest.raises(CommandError, match=f"Job {waiting.pk} is submitted: only a job that has ended"):
        call_command("bag_job", str(waiting.pk), "--to", str(target))
    with pytest.raises(CommandError, match="There is no job 999999"):
        call_command("bag_job", "999999", "--to", str(target))
    assert not (tmp_path / "bags").exists()

    ingest(crawled_job)  # now it can be
    call_command("bag_job", str(crawled_job.pk), "--to", str(target))
    assert bagit.Bag(str(target)).is_valid()


@pytest.mark.django_db
def test_a_target_that_exists_and_is_not_empty_is_refused(ingested_job, tmp_path, capsys):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("an engineer's notes")
    with pytest.raises(CommandError, match="already exists and is not empty"):
        call_command("bag_job", str(ingested_job.pk), "--to", str(full))
    assert everything_under(full) == ["notes.txt"]
    assert (full / "notes.txt").read_text() == "an engineer's notes"
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    with pytest.raises(ValidationError, match="exists and is not a directory"):
        job_bag_write(job_id=ingested_job.pk, target=a_file)
    assert a_file.read_text() == "x"
    assert not any(path.name.endswith(".bagging") for path in tmp_path.iterdir())

    empty = tmp_path / "empty"
    empty.mkdir()
    call_command("bag_job", str(ingested_job.pk), "--to", str(empty))  # an empty directory is taken
    assert f"Job {ingested_job.pk} bagged in {empty}" in capsys.readouterr().out
    assert bagit.Bag(str(empty)).is_valid()
    assert not any(path.name.endswith(".bagging") for path in tmp_path.iterdir())


@pytest.mark.django_db
def test_a_replica_failing_its_checksum_is_skipped_and_sent_to_the_audit(
    ingested_job, nodes, tmp_path, verifications, django_capture_on_commit_callbacks
):
    warc = WarcFile.objects.filter(job=ingested_job).order_by("pk").first()
    bad = warc.replicas.select_related("node").get(node=nodes[0])
    # The replica read first (the most recently verified), rotten since.
    Replica.objects.filter(pk=bad.pk).update(verified_at=timezone.now() + timedelta(minutes=1))
    flip_byte(replica_path(bad))
    target = tmp_path / "bag"
    with django_capture_on_commit_callbacks(execute=True):
        job_bag_write(job_id=ingested_job.pk, target=target)
    bag = bagit.Bag(str(target))
    assert bag.validate() and bag.entries[f"data/warcs/{warc.name}"]["sha256"] == warc.sha256
    good = warc.replicas.exclude(pk=bad.pk).select_related("node").get()
    assert (target / "data" / "warcs" / warc.name).read_bytes() == replica_path(good).read_bytes()
    assert verifications == [(bad.pk, bad.node.queue)]


@pytest.mark.django_db
def test_a_file_whose_every_replica_fails_its_checksum_is_refused_and_nothing_is_written(
    ingested_job, tmp_path, verifications, django_capture_on_commit_callbacks
):
    warc = WarcFile.objects.filter(job=ingested_job).order_by("-pk").first()
    replicas = list(warc.replicas.select_related("node"))
    for replica in replicas:
        flip_byte(replica_path(replica))
    target = tmp_path / "out" / "bag"
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(CommandError) as refused:
        call_command("bag_job", str(ingested_job.pk), "--to", str(target))
    message = str(refused.value)
    assert f"No replica of {warc.name} passes its checksum, so the bag is not written" in message
    assert all(f"{replica.node.name}: SHA-256 " in message for replica in replicas)
    assert not (tmp_path / "out").exists()  # not even the parent made for it
    assert sorted(verifications) == sorted((replica.pk, replica.node.queue) for replica in replicas)


@pytest.mark.django_db
def test_with_a_bag_directory_the_last_file_ingested_sends_the_job_s_bag(
    crawled_job, tmp_path, settings, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("storage.tasks.bag_job.delay", sent.append)
    settings.STORAGE_BAG_DIR = str(tmp_path / "bags")
    with django_capture_on_commit_callbacks(execute=True):
        ingest(crawled_job)
    assert sent == [crawled_job.pk]  # once: when its last file was done

    bag_job(crawled_job.pk)  # what the worker does
    target = tmp_path / "bags" / f"job-{crawled_job.pk}"
    assert bagit.Bag(str(target)).validate()
    written = {path: path.stat().st_mtime_ns for path in target.rglob("*")}
    bag_job(crawled_job.pk)  # sent twice: the bag is there, nothing is written again
    assert {path: path.stat().st_mtime_ns for path in target.rglob("*")} == written

    settings.STORAGE_BAG_DIR = ""  # off by default: nothing is sent
    assert job_bag_send_when_ingested(crawled_job.pk) is False


def test_a_worker_bags_a_job_once_it_is_ingested(crawl_worker, site, settings):
    """On a real worker and broker (PostgreSQL, RabbitMQ): crawl, ingest, bag, all sent by the worker."""
    from storage.services.nodes import node_create

    root = Path(settings.HARVEST_WARC_DIR).parent
    node_create(name="node-a", location="room-1", root=str(root / "nodes" / "a"))
    node_create(name="node-b", location="room-2", root=str(root / "nodes" / "b"))
    bags = root / "bags"
    crawl_worker.environment["STORAGE_BAG_DIR"] = str(bags)
    crawl_worker.environment["STORAGE_BAG_ORGANIZATION"] = "Test web archive"
    crawl_worker.start()

    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    assert jobs_dispatch_submitted() == 1
    target = bags / f"job-{job.pk}"
    wait_for(lambda: (target / "bagit.txt").exists(), timeout=120, message=crawl_worker.logs())
    bag = bagit.Bag(str(target))
    assert bag.validate() and bag.info["Source-Organization"] == "Test web archive"
    files = WarcFile.objects.filter(job=job)
    assert {f"data/warcs/{warc.name}" for warc in files} | {"data/job.json"} == set(bag.payload_files())
    assert all(warc.ingest_step == IngestStep.CLEANED for warc in files)
    assert not [name for name in os.listdir(bags) if name.endswith(".bagging")]
