"""The crawl-time dedup index's two questions (storage.services.dedup_index), answered from the capture
index as the ORM reads it: the earliest response with a payload, the latest 2xx response of a URL, each
within the template's policy."""

from __future__ import annotations

from datetime import UTC

import pytest

from harvest.choices import DedupPolicy
from harvest.crawler.dedup import MemoryDedupIndex
from harvest.models import Job
from harvest.worker import run_site_crawl
from storage.models import Capture
from storage.services.dedup_index import CaptureDedupIndex
from tests.harvest.crawljobs import job_for_sites
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=11, pages=8, hosts=1, slow_seconds=0.0, large_file_bytes=5_000) as site:
        yield site


@pytest.fixture
def crawled(site, settings) -> Job:
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], dedup="off")
    for entry in job.configurations.all():
        run_site_crawl(entry.pk)
    return job


def index(policy=DedupPolicy.ALL, definition_id=None) -> CaptureDedupIndex:
    return CaptureDedupIndex(policy=policy, harvest_definition_id=definition_id, memory=MemoryDedupIndex())


def as_original(capture: Capture) -> tuple:
    date = capture.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return (capture.url, date, capture.record_id, capture.digest, capture.warc_file.path, capture.offset)


def fields(original) -> tuple:
    return (original.url, original.date, original.record_id, original.digest, original.path, original.offset)


@pytest.mark.django_db
def test_each_payload_and_url_is_answered_with_the_capture_the_orm_finds(crawled):
    responses = Capture.objects.filter(record_type="response").select_related("warc_file")
    assert responses.count() > 8
    dedup = index()
    for capture in responses:
        earliest = responses.filter(digest=capture.digest).order_by("timestamp", "pk").first()
        assert fields(dedup.original_in_index(capture.digest)) == as_original(earliest)
        latest = responses.filter(url=capture.url, status__gte=200, status__lt=300)
        latest = latest.order_by("-timestamp", "-pk").first()
        found = dedup.previous_in_index(capture.url)
        assert (found and fields(found)) == (latest and as_original(latest))
    assert dedup.original_in_index("sha256:NOTADIGEST") is None
    assert dedup.previous_in_index("http://127.0.0.1:1/never-crawled") is None


@pytest.mark.django_db
def test_the_same_definition_policy_answers_from_that_definitions_captures_only(crawled):
    capture = Capture.objects.filter(record_type="response", status=200).select_related("warc_file").first()
    own = index(DedupPolicy.SAME_DEFINITION, crawled.harvest_definition_id)
    assert fields(own.previous_in_index(capture.url))[0] == capture.url
    assert own.original_in_index(capture.digest) is not None
    other = index(DedupPolicy.SAME_DEFINITION, crawled.harvest_definition_id + 1000)
    assert other.previous_in_index(capture.url) is None
    assert other.original_in_index(capture.digest) is None


@pytest.mark.django_db
def test_an_originals_record_is_read_through_its_file_once_the_spool_copy_is_gone(crawled):
    capture = Capture.objects.filter(record_type="response", status=200).select_related("warc_file").first()
    original = index().original_in_index(capture.digest)
    with open(capture.warc_file.path, "rb") as expected, original.opener() as stream:
        expected.seek(original.offset)
        stream.seek(original.offset)
        assert stream.read(capture.length) == expected.read(capture.length)


@pytest.mark.django_db
def test_a_host_the_index_never_saw_is_asked_about_once_not_for_each_url(crawled, django_assert_num_queries):
    capture = Capture.objects.filter(record_type="response", status=200).first()
    others = list(
        Capture.objects.filter(record_type="response", status=200)
        .exclude(pk=capture.pk)
        .values_list("url", flat=True)
    )
    dedup = index()
    dedup.serve(0)  # this thread answers its own questions
    with django_assert_num_queries(2):  # is the host in the index; the URL's latest capture
        assert dedup.previous(capture.url).record_id == capture.record_id
    with django_assert_num_queries(1):  # the host is known now
        assert dedup.previous(others[0]).url == others[0]
    with django_assert_num_queries(1):
        assert dedup.previous("http://never-crawled.example/") is None
    with django_assert_num_queries(0):
        for path in ("a", "b", "c"):
            assert dedup.previous(f"http://never-crawled.example/{path}") is None
        assert dedup.previous("http://www.never-crawled.example/d") is None  # the same SURT host
    # Another index (another site crawl) asks again: a host captured since is then seen.
    with django_assert_num_queries(1):
        fresh = index()
        fresh.serve(0)
        assert fresh.previous("http://never-crawled.example/") is None
