"""Crawl-time deduplication in harvest jobs: the capture index is the dedup index.

A job of a harvest definition is crawled, then a later job: what did not change is
stored as revisits of the first job's captures, which the template's policy decides
(all earlier captures, the same harvest definition only, none).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from harvest.models import Job
from harvest.services.launcher import definition_launch
from harvest.worker import run_site_crawl
from storage.models import Capture, WarcFile
from tests.harvest.crawljobs import job_for_sites
from tests.storage.test_indexing import cdxj_indexer, index_lines
from webarchive.permissions import Role
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=5, pages=20, hosts=1, slow_seconds=0.01, large_file_bytes=30_000) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


def crawl(job: Job) -> Job:
    for entry in job.configurations.all():
        run_site_crawl(entry.pk)
    job.refresh_from_db()
    return job


def rerun(job: Job, days: int = 3) -> Job:
    """The next run of the job's harvest definition (launched as if ``days`` later)."""
    run = definition_launch(
        definition_id=job.harvest_definition_id, now=timezone.now() + timedelta(days=days)
    )
    return run.jobs.get()


def refers_to(capture: Capture) -> str:
    with open(capture.warc_file.path, "rb") as stream:
        stream.seek(capture.offset)
        record = next(iter(ArchiveIterator(stream)))
        assert record.rec_type == "revisit"
        return record.rec_headers.get_header("WARC-Refers-To")


@pytest.mark.django_db
def test_a_later_job_stores_the_unchanged_payloads_as_revisits_of_the_earlier_captures(site):
    first = crawl(job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="all"))
    second = crawl(rerun(first))
    responses = Capture.objects.filter(job=first, record_type="response").exclude(
        digest="sha256:4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ===="
    )
    revisits = Capture.objects.filter(job=second, record_type="revisit").select_related("warc_file")
    assert revisits.count() >= 0.9 * responses.count() > 20
    originals = {capture.record_id: capture for capture in Capture.objects.filter(job=first)}
    for revisit in revisits:
        assert revisit.mime == "warc/revisit"
        original = originals[refers_to(revisit)]  # a capture of the first job…
        assert original.record_type == "response" and original.digest == revisit.digest  # …with the payload
    # What the crawler indexed as it wrote is what cdxj-indexer reads in the files.
    for warc in WarcFile.objects.filter(job=second):
        assert index_lines(warc) == cdxj_indexer(Path(warc.path))
    # The job's statistics: per site and in total.
    entry = second.configurations.get()
    assert entry.duplicates == revisits.count() == entry.report["duplicates"]
    assert entry.duplicate_bytes == entry.report["duplicate_bytes"] > 0
    assert first.configurations.get().duplicates < 0.1 * entry.duplicates  # only same payloads at two URLs


@pytest.mark.django_db
def test_the_job_page_shows_the_revisits_and_the_bytes_saved(site, as_role):
    first = crawl(job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="all"))
    second = crawl(rerun(first))
    entry = second.configurations.get()
    page = (
        as_role(Role.ENGINEER).get(reverse("harvest:job_detail", kwargs={"pk": second.pk})).content.decode()
    )
    assert f'<td class="text-end site-duplicates">{entry.duplicates}</td>' in page
    assert f"{entry.duplicates} revisits" in page


@pytest.mark.django_db
def test_with_the_same_definition_policy_other_definitions_captures_are_not_originals(site):
    crawl(job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="all"))
    other = crawl(job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="same-definition"))
    own = set(Capture.objects.filter(job=other).values_list("record_id", flat=True))
    revisits = Capture.objects.filter(job=other, record_type="revisit").select_related("warc_file")
    # Only the same payload at two URLs of this crawl: never a capture of the other definition.
    assert revisits.count() < 0.1 * Capture.objects.filter(job=other, record_type="response").count()
    assert all(refers_to(revisit) in own for revisit in revisits)
    # Its next run does deduplicate against it.
    again = crawl(rerun(other))
    assert Capture.objects.filter(job=again, record_type="revisit").count() > 20


@pytest.mark.django_db
def test_with_deduplication_off_everything_is_stored_in_full(site):
    first = crawl(job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="off"))
    second = crawl(rerun(first))
    assert not Capture.objects.filter(job__in=[first, second], record_type="revisit").exists()
    assert second.configurations.get().duplicates == 0
