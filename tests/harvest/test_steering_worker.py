"""Steering jobs on a real Celery worker and broker (PostgreSQL): a job paused and resumed finishes
with every URL; a reject rule added mid-crawl is obeyed from then on, and kept in the job's history
and frozen settings. Deterministic: the tests wait on the rows the worker writes, not on time."""

from __future__ import annotations

import pytest

from harvest.choices import JobStatus, StopReason
from harvest.models import HarvestInfo, Job, JobConfiguration
from harvest.selectors import crawl_log_lines
from harvest.services.crawls import jobs_dispatch_submitted
from harvest.services.steering import job_pause, job_resume, job_rule_add
from tests.crawl_worker import wait_for
from tests.factories import UserFactory
from tests.harvest.crawljobs import job_for_sites
from webarchive.permissions import Role
from webarchive.testsite import TestSite

RULE = r"/site/calendar/"


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=17, pages=150) as site:
        yield site


def numbers(entry_id: int) -> tuple:
    return JobConfiguration.objects.values_list(
        "urls_done", "urls_queued", "bytes_done", "error_count", "progress_at", "state"
    ).get(pk=entry_id)


def wait_paused(entry_id: int, message: str) -> tuple:
    """Wait until two progress writes of the site (its heartbeat) carry the same numbers: it takes
    no more steps. Returns those numbers."""
    seen = {}

    def still() -> tuple | None:
        now = numbers(entry_id)
        last = seen.get("last")
        seen["last"] = now
        if last is not None and now[4] != last[4] and now[:4] == last[:4]:
            return now
        return None

    return wait_for(still, timeout=60, interval=0.1, message=message)


def status(job: Job) -> str:
    return Job.objects.values_list("status", flat=True).get(pk=job.pk)


def fetched_in_order(job: Job) -> list[str]:
    """The URLs the job stored, in the order its crawl log has them (a single site)."""
    return [fields[3] for fields in (line.split() for line in crawl_log_lines(job.pk)) if int(fields[1]) > 0]


def test_a_paused_job_takes_no_step_and_finishes_with_every_url_once_resumed(crawl_worker, site):
    engineer = UserFactory(roles=[Role.ENGINEER])
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.02, max_delay=0.02)
    jobs_dispatch_submitted()
    entry = job.configurations.get()
    wait_for(lambda: numbers(entry.pk)[0] >= 10, message=crawl_worker.logs())
    job_pause(job=job, user=engineer)
    paused = wait_paused(entry.pk, crawl_worker.logs())
    assert paused[5] == "running" and paused[1] > 0  # paused with URLs still queued
    # Another heartbeat: still nothing done.
    later = wait_for(lambda: numbers(entry.pk) if numbers(entry.pk)[4] > paused[4] else None)
    assert later[:4] == paused[:4]
    assert status(job) == JobStatus.STARTED
    job_resume(job=job, user=engineer)
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=crawl_worker.logs()
    )
    job.refresh_from_db()
    entry.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert entry.attempts == 1  # paused in place: not started again
    info = HarvestInfo.objects.get(job=job)
    assert info.stop_reason == StopReason.COMPLETED
    fetched = fetched_in_order(job)
    assert len(fetched) == len(set(fetched)) == info.object_count  # each URL once
    assert site.ground_truth(policy="host") <= set(fetched)  # none lost
    assert [row.history_change_reason for row in job.history.exclude(history_change_reason=None)] == [
        "Resumed",
        "Paused",
    ]


def test_a_reject_rule_added_mid_crawl_is_obeyed_and_kept(crawl_worker, site):
    engineer = UserFactory(roles=[Role.ENGINEER])
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.02, max_delay=0.02)
    jobs_dispatch_submitted()
    entry = job.configurations.get()
    wait_for(lambda: numbers(entry.pk)[0] >= 10, message=crawl_worker.logs())
    # Paused first, so that the moment the rule takes effect is known: the queue shrinks while
    # nothing is fetched.
    job_pause(job=job, user=engineer)
    paused = wait_paused(entry.pk, crawl_worker.logs())
    job_rule_add(job=job, kind="reject", rule=RULE, user=engineer)
    wait_for(lambda: numbers(entry.pk)[1] < paused[1], message=crawl_worker.logs())
    assert numbers(entry.pk)[0] == paused[0]
    job_resume(job=job, user=engineer)
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=crawl_worker.logs()
    )
    job.refresh_from_db()
    entry.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert entry.report["steered_out"] > 0
    fetched = fetched_in_order(job)
    before, after = fetched[: paused[0]], fetched[paused[0] :]
    assert after and not [url for url in after if "/site/calendar/" in url]
    calendar = {url for url in site.ground_truth(policy="host") if "/site/calendar/" in url}
    assert calendar - set(before)  # some calendar pages were left out
    assert set(fetched) >= site.ground_truth(policy="host") - calendar  # the rest is all there
    # Kept: in the job's frozen settings (a resubmission copies them) and its history.
    assert RULE in job.template_settings["reject_rules"]
    row = job.history.filter(history_change_reason__startswith="Reject rule added").get()
    assert row.history_change_reason == f"Reject rule added: {RULE}"
    assert row.history_user == engineer


def test_a_paused_site_stays_paused_across_a_worker_restart(crawl_worker, site):
    engineer = UserFactory(roles=[Role.ENGINEER])
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.02, max_delay=0.02)
    jobs_dispatch_submitted()
    entry = job.configurations.get()
    wait_for(lambda: numbers(entry.pk)[0] >= 10, message=crawl_worker.logs())
    job_pause(job=job, user=engineer)
    wait_paused(entry.pk, crawl_worker.logs())
    crawl_worker.stop()  # a clean stop gives the site's task back to the broker
    crawl_worker.start()
    # Started again by the new worker, paused from its first step: its attempts say so.
    wait_for(
        lambda: JobConfiguration.objects.filter(pk=entry.pk, attempts=2).exists(), message=crawl_worker.logs()
    )
    paused = wait_paused(entry.pk, crawl_worker.logs())
    assert paused[0] == 0 and paused[5] == "running"
    job_resume(job=job, user=engineer)
    wait_for(
        lambda: status(job) in (JobStatus.DONE, JobStatus.FAILED), timeout=120, message=crawl_worker.logs()
    )
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    info = HarvestInfo.objects.get(job=job)
    assert info.stop_reason == StopReason.COMPLETED
    assert site.ground_truth(policy="host") <= set(fetched_in_order(job))
