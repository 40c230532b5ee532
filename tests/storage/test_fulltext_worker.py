"""The full-text index filled in real time by a real worker (PostgreSQL and RabbitMQ): the pages a job
captures are found by their words, through the API, once the worker has read them."""

from __future__ import annotations

import pytest

from harvest.choices import JobStatus
from harvest.models import Job
from harvest.services.crawls import jobs_dispatch_submitted
from storage.models import Capture
from storage.models_search import SearchEntry
from tests.crawl_worker import wait_for
from tests.factories import UserFactory
from tests.harvest.crawljobs import job_for_sites
from webarchive.permissions import Role
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=23, pages=20, hosts=1) as site:
        yield site


def test_a_jobs_pages_are_found_by_their_words_once_the_worker_has_read_them(crawl_worker, site, client):
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    assert jobs_dispatch_submitted() == 1
    wait_for(lambda: Job.objects.get(pk=job.pk).status in (JobStatus.DONE, JobStatus.FAILED), timeout=120)
    assert Job.objects.get(pk=job.pk).status == JobStatus.DONE

    pages = Capture.objects.filter(job=job, record_type="response", status=200, mime="text/html")
    indexed = lambda: SearchEntry.objects.filter(urlkey__in=pages.values("urlkey")).count() == pages.count()  # noqa: E731
    wait_for(indexed, timeout=60, message=crawl_worker.logs())
    assert "storage.index_texts" in crawl_worker.logs()

    client.force_login(UserFactory(roles=[Role.CURATOR]))
    body = client.get("/api/search/", {"q": "cafe creme ete"}).json()
    assert [hit["url"] for hit in body["results"]] == [site.url("/site/latin1.html")]
    hit = body["results"][0]
    assert hit["title"] == "Café crème à l\u2019été" and hit["language"] == "fr"
    assert hit["timestamp"] == pages.get(url=hit["url"]).timestamp14
