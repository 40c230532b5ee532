"""WACZ packages (storage.services.wacz, ``manage.py wacz_export``): a real crawl of the test website,
ingested onto two storage nodes, packaged, checked with py-wacz's own validator (``wacz validate``),
then replayed by a real pywb from the package's WARC files and CDXJ index, byte for byte; bad
sources and targets refused with nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import requests
from django.core.management import CommandError, call_command
from warcio.archiveiterator import ArchiveIterator

from harvest.choices import JobStatus
from harvest.models import Job
from selection.models import Collection
from storage.models import Capture, WarcFile
from tests.pywb_server import free_port, wait_until_up
from tests.storage import test_bagit_export as bagit_tests
from tests.storage.storage_files import flip_byte, replica_path

# The crawled and ingested job of the BagIt tests (a real crawl of the test website, two nodes).
site = bagit_tests.site
nodes = bagit_tests.nodes
crawled_job = bagit_tests.crawled_job
ingested_job = bagit_tests.ingested_job
verifications = bagit_tests.verifications
_crawl_settings = bagit_tests._crawl_settings

WACZ = Path(sys.executable).with_name("wacz")
WAYBACK = Path(sys.executable).with_name("wayback")


def wacz_validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(WACZ), "validate", "-f", str(path)], capture_output=True, text=True, timeout=300
    )


def record_payload(warc_path: Path, offset: int) -> bytes:
    """The HTTP payload of the record at ``offset``, read with warcio (the capture as archived)."""
    with warc_path.open("rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream)))
        return record.content_stream().read()


@pytest.mark.django_db
def test_a_job_is_exported_as_a_wacz_that_validates_and_replays_in_pywb(ingested_job, tmp_path):
    job = ingested_job
    target = tmp_path / "out" / f"job-{job.pk}.wacz"
    out = _call("--job", str(job.pk), "--to", str(target))
    assert f"Jobs {job.pk} packaged in {target}" in out

    result = wacz_validate(target)  # the format's own validator: layout, datapackage, every digest
    assert result.returncode == 0, result.stdout + result.stderr
    assert "valid" in (result.stdout + result.stderr).lower()

    files = list(WarcFile.objects.filter(job=job))
    with zipfile.ZipFile(target) as package:
        names = set(package.namelist())
        assert names == {f"archive/{warc.name}" for warc in files} | {
            "indexes/index.cdx",
            "pages/pages.jsonl",
            "datapackage.json",
            "datapackage-digest.json",
        }
        for warc in files:  # stored as they are, so that a reader seeks in them
            assert package.getinfo(f"archive/{warc.name}").compress_type == zipfile.ZIP_STORED
        datapackage = json.loads(package.read("datapackage.json"))
        hashes = {resource["path"]: resource["hash"] for resource in datapackage["resources"]}
        for warc in files:
            assert hashes[f"archive/{warc.name}"] == f"sha256:{warc.sha256}"
        lines = package.read("indexes/index.cdx").decode().splitlines()
        assert len(lines) == Capture.objects.filter(warc_file__in=files).count() > 0
        assert lines == sorted(lines)
        pages = [json.loads(line) for line in package.read("pages/pages.jsonl").decode().splitlines()]
        assert pages[0]["format"] == "json-pages-1.0"
        seeds = [seed for entry in job.configurations.all() for seed in entry.seed_urls]
        assert [page["url"] for page in pages[1:]] == seeds
        assert datapackage["mainPageURL"] == seeds[0]
        extracted = tmp_path / "pywb" / "collections" / "wacz"
        for name in names - {"datapackage.json", "datapackage-digest.json", "pages/pages.jsonl"}:
            package.extract(name, extracted)

    # Replay: pywb on the package's WARC files and index, the seed page as archived, byte for byte.
    seed = seeds[0]
    capture = (
        Capture.objects.filter(warc_file__in=files, url=seed, record_type="response")
        .order_by("timestamp")
        .first()
    )
    expected = record_payload(extracted / "archive" / capture.warc_file.name, capture.offset)
    assert expected
    port = free_port()
    log = tmp_path / "pywb.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            [str(WAYBACK), "--bind", "127.0.0.1", "--port", str(port)],
            cwd=tmp_path / "pywb",
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until_up(f"http://127.0.0.1:{port}/", process, log)
        response = requests.get(f"http://127.0.0.1:{port}/wacz/{capture.timestamp14}id_/{seed}", timeout=30)
        assert response.status_code == 200, log.read_text(errors="replace")
        assert response.content == expected
        missing = requests.get(
            f"http://127.0.0.1:{port}/wacz/{capture.timestamp14}id_/{seed}nowhere", timeout=30
        )
        assert missing.status_code == 404  # pywb answers from the package, not from the live site
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.django_db
def test_a_run_is_exported_too(ingested_job, tmp_path):
    target = tmp_path / "run.wacz"
    _call("--run", str(ingested_job.run_id), "--to", str(target))
    assert wacz_validate(target).returncode == 0
    # pywb's own way in: wb-manager unpacks the package into a collection and indexes its WARC files.
    manager = Path(sys.executable).with_name("wb-manager")
    for argv in (["init", "run"], ["add", "run", str(target), "--unpack-wacz"]):
        result = subprocess.run(
            [str(manager), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr
    collection = tmp_path / "collections" / "run"
    archived = list((collection / "archive").iterdir())  # renamed run-0.warc.gz, run-1.warc.gz…
    assert len(archived) == WarcFile.objects.filter(job=ingested_job).count()
    index = "".join(path.read_text() for path in (collection / "indexes").iterdir()).splitlines()
    assert len(index) == Capture.objects.filter(job=ingested_job).count()  # our lines, taken in


@pytest.mark.django_db
def test_bad_sources_and_targets_are_refused_with_nothing_written(crawled_job, tmp_path):
    job = crawled_job
    target = tmp_path / "out" / "package.wacz"

    with pytest.raises(CommandError, match="There is no job 999999"):
        _call("--job", "999999", "--to", str(target))
    with pytest.raises(CommandError, match="There is no harvest run 999999"):
        _call("--run", "999999", "--to", str(target))
    with pytest.raises(CommandError, match="There is no collection 999999"):
        _call("--collection", "999999", "--to", str(target))
    empty = Collection.objects.create(name="Nothing harvested")
    with pytest.raises(CommandError, match="Collection Nothing harvested has no job"):
        _call("--collection", str(empty.pk), "--to", str(target))
    # Crawled but not ingested: its files are still on their ingest chain.
    with pytest.raises(CommandError, match="is not ingested yet"):
        _call("--job", str(job.pk), "--to", str(target))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.STARTED)
    with pytest.raises(CommandError, match="is started: only a job that has ended"):
        _call("--job", str(job.pk), "--to", str(target))
    Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE)
    WarcFile.objects.filter(job=job).update(job=None)
    with pytest.raises(CommandError, match=f"Job {job.pk} has no WARC file to package"):
        _call("--job", str(job.pk), "--to", str(target))
    assert not (tmp_path / "out").exists()  # not even the parent directory


@pytest.mark.django_db
def test_an_existing_target_or_a_damaged_replica_is_refused(
    ingested_job, tmp_path, verifications, django_capture_on_commit_callbacks
):
    job = ingested_job
    existing = tmp_path / "there.wacz"
    existing.write_bytes(b"something else")
    with pytest.raises(CommandError, match="already exists: a package is never written over anything"):
        _call("--job", str(job.pk), "--to", str(existing))
    assert existing.read_bytes() == b"something else"

    warc = WarcFile.objects.filter(job=job).order_by("pk").first()
    replicas = list(warc.replicas.select_related("node"))
    for replica in replicas:
        flip_byte(replica_path(replica), warc.size // 2)
    target = tmp_path / "damaged" / "job.wacz"
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(CommandError, match=f"{warc.name} could not be read from a replica as its checksum"),
    ):
        _call("--job", str(job.pk), "--to", str(target))
    assert not (tmp_path / "damaged").exists()
    assert not list(tmp_path.glob("*.wacz-writing")) and not list(tmp_path.glob(".*wacz*"))  # no staging left
    # The replica read is sent to the fixity audit, which repairs it from a good copy.
    assert len(verifications) == 1 and verifications[0][0] in {replica.pk for replica in replicas}


def _call(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("wacz_export", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_an_engineer_makes_a_jobs_package_from_its_page_and_downloads_it(
    ingested_job, client, tmp_path, settings, monkeypatch
):
    from storage.tasks import wacz_job
    from tests.factories import UserFactory
    from webarchive.permissions import Role

    settings.STORAGE_WACZ_DIR = tmp_path / "wacz"
    sent = []
    monkeypatch.setattr("storage.services.wacz.enqueue", lambda task, *args: sent.append((task, args)))
    job = ingested_job
    page = f"/harvest/jobs/{job.pk}/"
    url = f"/access/jobs/{job.pk}/wacz/"

    client.force_login(UserFactory(roles=[Role.CURATOR]))
    assert client.post(url).status_code == 403  # the bytes of WARC files are the engineers'
    assert client.get(url).status_code == 403
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    assert b"Make a WACZ package of this job" in client.get(page).content
    response = client.get(url)
    assert response.status_code == 404 and b"has not been made yet" in response.content

    response = client.post(url, follow=True)
    assert sent == [("storage.wacz_job", (job.pk,))]
    assert "is being made" in response.content.decode()
    wacz_job(job.pk)  # what the worker runs
    made = tmp_path / "wacz" / f"job-{job.pk}.wacz"
    assert wacz_validate(made).returncode == 0
    assert b"Download the WACZ package" in client.get(page).content
    response = client.get(url)
    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="job-{job.pk}.wacz"'
    assert b"".join(response.streaming_content) == made.read_bytes()
    wacz_job(job.pk)  # sent twice: the package there is kept
    assert client.post(url).status_code == 302 and len(sent) == 1  # ready: nothing sent again


@pytest.mark.django_db
def test_a_job_not_ingested_is_refused_from_its_page(crawled_job, client, tmp_path, settings, monkeypatch):
    from tests.factories import UserFactory
    from webarchive.permissions import Role

    settings.STORAGE_WACZ_DIR = tmp_path / "wacz"
    sent = []
    monkeypatch.setattr("storage.services.wacz.enqueue", lambda task, *args: sent.append((task, args)))
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    response = client.post(f"/access/jobs/{crawled_job.pk}/wacz/", follow=True)
    assert "is not ingested yet" in response.content.decode()
    assert sent == [] and not (tmp_path / "wacz").exists()
