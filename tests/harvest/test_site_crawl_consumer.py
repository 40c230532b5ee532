"""A crawl worker holding many site crawls at once, none on a thread of its own (harvest.consumer).

Real parts: a Celery worker process on RabbitMQ (tests.crawl_worker), many small websites by host
name on loopback addresses (webarchive.testsite.broad), a DNS server resolving their names
(dnsmasq, tests.dns_server) that the worker asks (HARVEST_DNS_SERVERS).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harvest.choices import JobStatus, SiteState, StopReason
from harvest.models import HarvestInfo, Job, JobConfiguration
from harvest.services.crawls import job_stop, jobs_dispatch_submitted
from storage.models import WarcFile
from tests.components import require_component
from tests.crawl_worker import wait_for
from tests.dns_server import dns_server, dnsmasq_available
from tests.harvest.crawljobs import job_for_sites
from webarchive.testsite.broad import BroadSites, urls_per_site

WARCIO = Path(sys.executable).with_name("warcio")
PAGES = 6


@pytest.fixture(scope="module")
def sites():
    with BroadSites(sites=40, pages=PAGES) as served:
        yield served


@pytest.fixture
def resolver(sites):
    require_component("dnsmasq", dnsmasq_available(), "the sites' names resolve through a real DNS server")
    with dns_server({sites.name(n): sites.site_address(n) for n in range(sites.sites)}) as server:
        yield server


@pytest.fixture
def worker(crawl_worker, resolver):
    crawl_worker.environment.update(
        {"HARVEST_DNS_SERVERS": resolver.nameserver, "HARVEST_SITES_PER_WORKER": "100"}
    )
    return crawl_worker


def job_of(sites: BroadSites, count: int, **template) -> Job:
    return job_for_sites([(sites.name(n), sites.url(n, "/")) for n in range(count)], **template)


def status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def threads_of(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def assert_valid_warcs(job: Job) -> None:
    files = list(WarcFile.objects.filter(job=job))
    assert files
    for warc_file in files:
        check = subprocess.run([str(WARCIO), "check", warc_file.path], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_a_worker_crawls_all_its_sites_at_once_on_a_few_threads(worker, sites):
    worker.start()
    baseline = threads_of(worker.process.pid)
    count = sites.sites
    job = job_of(sites, count, min_delay=1.0, max_delay=1.0)  # about 9 s a site, one URL a second
    assert jobs_dispatch_submitted() == count

    # Every site of the job runs at the same time in the one worker process (at most 8 task
    # threads, 4 fetch threads)…
    def all_running() -> bool:
        return (
            JobConfiguration.objects.filter(job=job, state=SiteState.RUNNING, urls_done__gte=1).count()
            == count
        )

    wait_for(all_running, timeout=60, message=worker.logs())
    # …and the process did not grow a thread per site.
    assert threads_of(worker.process.pid) < baseline + 12 < count

    wait_for(lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=worker.logs())
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    infos = HarvestInfo.objects.filter(job=job)
    assert infos.count() == count
    assert {info.stop_reason for info in infos} == {StopReason.COMPLETED}
    assert {info.object_count for info in infos} == {urls_per_site(PAGES)}
    assert_valid_warcs(job)


def test_a_warm_shutdown_gives_the_running_sites_back_whole(worker, sites):
    worker.start()
    job = job_of(sites, 5, min_delay=1.0, max_delay=1.0)
    jobs_dispatch_submitted()
    wait_for(
        lambda: (
            JobConfiguration.objects.filter(job=job, state=SiteState.RUNNING, urls_done__gte=2).count() == 5
        ),
        message=worker.logs(),
    )
    worker.stop()  # SIGTERM: a warm shutdown

    assert "5 site crawls stopped and given back to the broker" in worker.logs()
    entries = JobConfiguration.objects.filter(job=job)
    # Not ended: marked let go (no recent progress), so that the next worker starts them at once…
    assert set(entries.values_list("state", "progress_at")) == {(SiteState.RUNNING, None)}
    assert not HarvestInfo.objects.filter(job=job).exists()
    # …and the files they wrote were closed whole and registered, nothing left to recover.
    assert_valid_warcs(job)
    assert not WarcFile.objects.filter(job=job, recovered=True).exists()

    worker.start()  # the broker hands the five tasks to the next worker
    wait_for(lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=worker.logs())
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert set(entries.values_list("attempts", flat=True)) == {2}
    assert {info.object_count for info in HarvestInfo.objects.filter(job=job)} == {urls_per_site(PAGES)}


def test_a_worker_over_its_memory_budget_takes_no_new_site(worker, sites):
    worker.environment["HARVEST_WORKER_MEMORY_MB"] = "1"  # below any Python process
    worker.start()
    job = job_of(sites, 3)
    jobs_dispatch_submitted()
    wait_for(lambda: "over its memory budget" in worker.logs(), timeout=30, message=worker.logs())
    # The tasks are held by the worker, unacknowledged, and none started.
    assert set(JobConfiguration.objects.filter(job=job).values_list("state", flat=True)) == {SiteState.QUEUED}
    worker.stop()  # they go back to the broker…

    worker.environment["HARVEST_WORKER_MEMORY_MB"] = "1024"
    worker.start()  # …and a worker with room crawls them
    wait_for(lambda: status(job) == JobStatus.DONE, timeout=120, message=worker.logs())
    assert HarvestInfo.objects.filter(job=job, stop_reason=StopReason.COMPLETED).count() == 3


def test_a_second_crawl_through_the_worker_stores_what_has_not_changed_as_revisits(worker, sites):
    """The sites' deduplication questions (the template's default policy: every earlier capture) are
    answered by the worker's own threads, for all its sites at once."""
    worker.start()
    first = job_of(sites, 3)
    jobs_dispatch_submitted()
    wait_for(lambda: status(first) == JobStatus.DONE, timeout=120, message=worker.logs())
    assert set(JobConfiguration.objects.filter(job=first).values_list("duplicates", flat=True)) == {0}

    second = job_of(sites, 3)
    jobs_dispatch_submitted()
    wait_for(lambda: status(second) == JobStatus.DONE, timeout=120, message=worker.logs())
    # The same pages again: each is written as a revisit of the first job's capture.
    for entry in JobConfiguration.objects.filter(job=second):
        assert entry.urls_done == urls_per_site(PAGES)
        assert entry.duplicates >= PAGES, entry.report
    assert_valid_warcs(second)


def test_a_site_waiting_out_a_long_delay_keeps_its_heartbeat_and_is_stopped_at_once(worker, sites):
    """The worker writes a site's row when its numbers change, and every few intervals otherwise (its
    heartbeat, 2 s here): a site waiting out a delay is not taken for a dead worker's, and a stop of
    its job reaches it although it has nothing new to report."""
    worker.start()
    job = job_of(sites, 2, min_delay=60.0, max_delay=60.0)
    jobs_dispatch_submitted()
    entries = JobConfiguration.objects.filter(job=job)

    def first_urls_written():
        rows = list(
            entries.filter(state=SiteState.RUNNING, urls_done__gte=1).values_list("pk", "progress_at")
        )
        return dict(rows) if len(rows) == 2 else None

    seen = wait_for(first_urls_written, message=worker.logs())
    done = dict(entries.values_list("pk", "urls_done"))
    # Its row is written again with the same numbers: the heartbeat.
    wait_for(
        lambda: all(row.progress_at > seen[row.pk] for row in entries.all()),
        timeout=30,
        message=worker.logs(),
    )
    assert dict(entries.values_list("pk", "urls_done")) == done  # still waiting out its 60 s
    job_stop(job=job)
    wait_for(lambda: status(job) == JobStatus.STOPPED, timeout=30, message=worker.logs())
    assert set(entries.values_list("stop_reason", flat=True)) == {StopReason.OPERATOR}
