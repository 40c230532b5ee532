"""A crawl job's captures are searchable while it runs; its index is what cdxj-indexer says of its files."""

from __future__ import annotations

from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvest.services.crawls import site_crawl_progress
from harvest.worker import run_site_crawl
from storage.models import Capture, WarcFile
from tests.harvest.crawljobs import job_for_sites
from tests.storage.test_indexing import cdxj_indexer, index_lines
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=7, pages=30, hosts=1, slow_seconds=0.01) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


def record_at(path: Path, offset: int):
    """The record a capture points to, read as pywb would: from its offset in the file."""
    with path.open("rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream)))
        return record.rec_type, record.rec_headers.get_header("WARC-Target-URI")


@pytest.mark.django_db
def test_captures_are_indexed_while_the_crawl_runs_and_point_into_the_file_being_written(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.05, max_delay=0.05)
    entry = job.configurations.get()
    seen_while_running = []

    def progress_and_look(**kwargs):
        running = site_crawl_progress(**kwargs)
        captures = list(Capture.objects.filter(job=job).select_related("warc_file"))
        if captures and not seen_while_running:
            for capture in captures:
                warc = capture.warc_file
                assert warc.is_open  # the file is still being written…
                path = Path(warc.path + ".open")
                # …and the capture is in it already, where the index says.
                assert record_at(path, capture.offset) == (capture.record_type, capture.url)
            seen_while_running.append(len(captures))
        return running

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("harvest.worker.site_crawl_progress", progress_and_look)
        run_site_crawl(entry.pk)

    assert seen_while_running, "no capture was searchable before the crawl ended"
    assert 0 < seen_while_running[0] < len(site.ground_truth(policy="host"))
    entry.refresh_from_db()
    stored = Capture.objects.filter(job=job, record_type__in=["response", "revisit"])
    assert stored.count() == entry.urls_done  # revisits: the same payload at a second URL
    # Once the job has ended, the index of its files is the one cdxj-indexer makes of them.
    files = list(WarcFile.objects.filter(job=job).order_by("name"))
    assert files and all(not warc.is_open and warc.sha256 for warc in files)
    for warc in files:
        assert index_lines(warc) == cdxj_indexer(Path(warc.path))
    # The metadata WARC: template settings, seeds, crawl log, domain report, harvest infos, external links.
    assert Capture.objects.filter(job=job, record_type="metadata").count() == 6
