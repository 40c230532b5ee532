"""The sites of one job start and end side by side on PostgreSQL, and the job still ends exactly once.

A snapshot is one job of thousands of sites: if every site's start and end held the job's row
lock, a crawl worker's database threads would take turns on it (issue 25). These tests hold
locks from a second connection and check who waits for whom; PostgreSQL only (SQLite locks the
whole database).
"""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from harvest.choices import JobStatus, SiteState, StopReason
from harvest.models import HarvestInfo, Job, JobConfiguration
from harvest.services.crawls import jobs_fail_stalled, site_crawl_begin, site_crawl_end
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.sitecrawls import progress

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks between connections"),
]


class Holder(threading.Thread):
    """A second connection that locks rows (SELECT … FOR UPDATE) and keeps them until released."""

    def __init__(self, queryset):
        super().__init__(daemon=True)
        self.queryset = queryset
        self.locked = threading.Event()
        self.release = threading.Event()
        self.error: BaseException | None = None

    def run(self):
        try:
            with transaction.atomic():
                list(self.queryset.order_by("pk").select_for_update())  # those rows only, no join
                self.locked.set()
                self.release.wait(60)
        except BaseException as error:  # reported to the test
            self.error = error
            self.locked.set()
        finally:
            connection.close()

    def __enter__(self):
        self.start()
        self.locked.wait(60)
        assert self.error is None, self.error
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.join(60)


def lock_timeout():
    """Fail at once, rather than wait, when a row lock is taken elsewhere."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '5s'")


def started_job(domains: int) -> Job:
    job = job_for_sites([(f"site-{n}.fr", f"http://site-{n}.fr/") for n in range(domains)])
    first = job.configurations.order_by("pk").first()
    assert site_crawl_begin(entry_id=first.pk, worker="worker-1") is not None
    job.refresh_from_db()
    assert job.status == JobStatus.STARTED
    return job


def test_a_site_of_a_started_job_starts_while_the_job_s_row_is_locked_elsewhere():
    job = started_job(2)
    second = job.configurations.order_by("pk").last()
    lock_timeout()
    with Holder(Job.objects.filter(pk=job.pk)):
        entry = site_crawl_begin(entry_id=second.pk, worker="worker-2")
    assert entry is not None and entry.state == SiteState.RUNNING


def test_a_site_s_end_waits_for_the_job_s_lock_only_for_its_last_statements():
    """The end writes the site, its HarvestInfo and links under the site's lock, then takes the job's:
    with the job locked elsewhere it waits, and does it once the lock is released."""
    job = started_job(2)
    first, second = job.configurations.order_by("pk")
    assert site_crawl_begin(entry_id=second.pk, worker="worker-2") is not None
    results = []

    def end_first():
        try:
            results.append(
                site_crawl_end(
                    entry_id=first.pk,
                    stop_reason="completed",
                    progress=progress(urls_done=7, bytes=700),
                    report={},
                    external_links={"https://elsewhere.fr/": 2},
                )
            )
        finally:
            connection.close()

    with Holder(Job.objects.filter(pk=job.pk)) as holder:
        ending = threading.Thread(target=end_first, daemon=True)
        ending.start()
        # The end is blocked on the job's row: PostgreSQL says so, and its site's row is locked.
        _wait_for_lock_wait(on_table="harvest_job")
        with pytest.raises(OperationalError), transaction.atomic():  # its site's row: locked by the end
            list(JobConfiguration.objects.filter(pk=first.pk).order_by("pk").select_for_update(nowait=True))
        assert not results
        holder.release.set()
        ending.join(60)
    assert results == [False]
    job.refresh_from_db()
    assert (job.sites_ended, job.ended_urls_done, job.ended_bytes_done) == (1, 7, 700)
    assert JobConfiguration.objects.get(pk=first.pk).state == SiteState.ENDED


def _wait_for_lock_wait(*, on_table: str) -> None:
    """Until another connection of this database waits for a row lock of ``on_table``: a SELECT of its
    rows waiting on a lock (only a locking SELECT waits). Matched on the query's start: PostgreSQL
    keeps only its first 1 kB (track_activity_query_size), shorter than a SELECT of every column."""
    for _ in range(1200):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND query LIKE %s",
                [f'SELECT "{on_table}".%'],
            )
            if cursor.fetchone()[0]:
                return
        threading.Event().wait(0.05)
    raise AssertionError(f"nobody waited for a row lock of {on_table}")


def test_many_sites_ending_together_end_the_job_exactly_once_with_exact_counters():
    job = started_job(24)
    entries = list(job.configurations.order_by("pk").values_list("pk", flat=True))
    barrier = threading.Barrier(8)
    ended_job = []
    errors = []

    def crawl(mine):
        try:
            barrier.wait(60)
            for entry_id in mine:
                site_crawl_begin(entry_id=entry_id, worker="worker-x")
            for entry_id in mine:
                ended_job.append(
                    site_crawl_end(
                        entry_id=entry_id,
                        stop_reason="completed",
                        progress=progress(urls_done=entry_id % 5 + 1, bytes=100),
                        report={},
                        external_links={},
                    )
                )
        except BaseException as error:
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=crawl, args=(entries[n::8],)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert sorted(ended_job) == [False] * 23 + [True]
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert job.sites_ended == 24
    assert job.ended_urls_done == sum(pk % 5 + 1 for pk in entries)
    assert job.ended_bytes_done == 2400
    assert HarvestInfo.objects.filter(job=job).count() == 24


def test_the_watchdog_leaves_a_site_whose_end_is_being_recorded_to_that_end(settings):
    settings.HARVEST_STALL_SECONDS = 600
    job = started_job(2)
    first, second = job.configurations.order_by("pk")
    lock_timeout()
    with Holder(JobConfiguration.objects.filter(pk=first.pk)):
        failed = jobs_fail_stalled(now=timezone.now() + timedelta(seconds=601))
    assert [j.pk for j in failed] == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert JobConfiguration.objects.get(pk=second.pk).stop_reason == StopReason.FAILED
    assert JobConfiguration.objects.get(pk=first.pk).state == SiteState.RUNNING
    assert job.sites_ended == 1
    # The site's own end, whose lock the watchdog skipped, then records it and counts it.
    assert not site_crawl_end(
        entry_id=first.pk,
        stop_reason="completed",
        progress=progress(urls_done=3),
        report={},
        external_links={},
    )
    job.refresh_from_db()
    assert (job.status, job.sites_ended, job.ended_urls_done) == (JobStatus.FAILED, 2, 3)
