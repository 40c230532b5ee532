"""Jobs on a real Celery worker and broker: dispatch, stop, and a worker killed in mid-crawl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harvest.choices import JobStatus, SiteState, StopReason
from harvest.crawler.browser import chromium_executable
from harvest.models import HarvestInfo, Job, JobConfiguration
from harvest.services.crawls import job_stop, jobs_dispatch_submitted
from storage.models import Capture, WarcFile
from tests.components import require_component
from tests.crawl_worker import wait_for
from tests.harvest.crawljobs import job_for_sites
from webarchive.testsite import TestSite, scripted

WARCIO = Path(sys.executable).with_name("warcio")


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=11, pages=120, hosts=3, large_file_bytes=200_000, slow_seconds=0.01) as site:
        yield site


def status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def assert_valid_warcs(job: Job) -> list[WarcFile]:
    files = list(WarcFile.objects.filter(job=job))
    assert files
    for warc_file in files:
        check = subprocess.run([str(WARCIO), "check", warc_file.path], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    return files


def test_a_dispatched_job_is_crawled_by_the_worker(crawl_worker, site):
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    assert jobs_dispatch_submitted() == 2
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=crawl_worker.logs()
    )
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    infos = HarvestInfo.objects.filter(job=job)
    assert {info.stop_reason for info in infos} == {StopReason.COMPLETED}
    for entry in job.configurations.all():
        assert entry.urls_done == infos.get(configuration=entry.configuration).object_count > 0
    assert_valid_warcs(job)


def test_an_operator_stop_ends_the_running_sites_within_seconds(crawl_worker, site):
    crawl_worker.start()
    job = job_for_sites(
        [("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))],
        min_delay=0.3,
        max_delay=0.3,
    )
    jobs_dispatch_submitted()
    big = job.configurations.get(domain__name="127.0.0.1")
    wait_for(
        lambda: JobConfiguration.objects.filter(
            pk=big.pk, state=SiteState.RUNNING, urls_done__gte=3
        ).exists(),
        message=crawl_worker.logs(),
    )
    job_stop(job=job)
    # The site notices at its next progress write (0.5 s here) and ends at its next step.
    wait_for(lambda: status(job) == JobStatus.STOPPED, timeout=15, message=crawl_worker.logs())
    info = HarvestInfo.objects.get(job=job, configuration=big.configuration)
    assert info.stop_reason == StopReason.OPERATOR
    assert 3 <= info.object_count < len(site.ground_truth(policy="host"))
    # The small external site (three URLs) had finished on its own before the stop.
    assert HarvestInfo.objects.get(job=job, domain__name="127.0.0.3").stop_reason == StopReason.COMPLETED
    assert_valid_warcs(job)


def test_a_worker_killed_mid_crawl_is_replaced_and_the_site_crawled_again(crawl_worker, site):
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.02, max_delay=0.02)
    jobs_dispatch_submitted()
    entry = job.configurations.get()
    wait_for(
        lambda: JobConfiguration.objects.filter(pk=entry.pk, urls_done__gte=20).exists(),
        message=crawl_worker.logs(),
    )
    crawl_worker.kill()
    entry.refresh_from_db()
    assert entry.state == SiteState.RUNNING  # nobody told the database: the worker just vanished
    crawl_worker.start()  # RabbitMQ hands the unacknowledged task to the new worker
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=crawl_worker.logs()
    )
    entry.refresh_from_db()
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert entry.attempts == 2
    info = HarvestInfo.objects.get(job=job)
    assert info.stop_reason == StopReason.COMPLETED
    assert info.object_count == entry.urls_done >= len(site.ground_truth(policy="host"))
    files = assert_valid_warcs(job)
    # The killed worker's open file was closed by the next one (a torn record, if any, cut off).
    assert any(warc_file.recovered for warc_file in files)


def test_a_worker_killed_mid_render_is_replaced_and_the_page_rendered_again(crawl_worker, site):
    require_component("chromium", chromium_executable() is not None, "browser capture renders in chromium")
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/js/"))], render="seeds", depth_policy="page")
    jobs_dispatch_submitted()
    entry = job.configurations.get()
    # The front page takes its browser several seconds (scrolling, clicks, media): kill the worker
    # once the browser's first requests are stored and before the page is done.
    wait_for(
        lambda: JobConfiguration.objects.filter(pk=entry.pk, urls_done__gte=6).exists(),
        message=crawl_worker.logs(),
    )
    crawl_worker.kill()
    entry.refresh_from_db()
    assert entry.state == SiteState.RUNNING
    assert entry.urls_done < len(scripted.browser_urls(site.url("/").rstrip("/")))
    crawl_worker.start()
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=180, message=crawl_worker.logs()
    )
    entry.refresh_from_db()
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert entry.attempts == 2
    assert entry.report["pages_rendered"] == 1
    assert entry.report["render_failures"] == 0, entry.report["render_errors"]
    captured = set(Capture.objects.filter(job=job).values_list("url", flat=True))
    assert scripted.browser_urls(site.url("/").rstrip("/")) <= captured
    assert "urn:screenshot:" + site.url("/js/") in captured
    files = assert_valid_warcs(job)
    assert any(warc_file.recovered for warc_file in files)
