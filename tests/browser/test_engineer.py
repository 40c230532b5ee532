"""The crawl engineer's path, in a real browser: watch a job crawl live, then stop it.

A real Celery worker (tests/crawl_worker.py) crawls the test website while the
engineer's job page polls the progress with htmx: the progress bars move without
the page being reloaded, and the Stop button ends every site within seconds.
"""

import re

import pytest

from harvest.choices import JobStatus
from harvest.models import HarvestInfo, Job
from harvest.services.crawls import jobs_dispatch_submitted
from tests.browser.test_navigation import foreign_requests, log_in
from tests.crawl_worker import wait_for
from tests.factories import PASSWORD, UserFactory
from tests.harvest.crawljobs import job_for_sites
from webarchive.permissions import Role
from webarchive.testsite import TestSite

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=5, pages=300, hosts=1, slow_seconds=0.01) as site:
        yield site


def test_an_engineer_watches_progress_move_and_stops_the_job(
    page, live_server, crawl_worker, site, requested_urls
):
    UserFactory(username="engineer", roles=[Role.ENGINEER])
    crawl_worker.start()
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.1, max_delay=0.1)
    jobs_dispatch_submitted()

    page.goto("/login/")
    log_in(page, "engineer", PASSWORD)
    page.goto(f"/harvest/jobs/{job.pk}/")
    page.evaluate("window.notReloaded = true")  # gone if the page were loaded again

    bar = page.locator("#job-sites .progress-bar").first
    expect(bar).to_have_attribute("data-done", re.compile(r"^[1-9]\d*$"), timeout=30_000)
    first = int(bar.get_attribute("data-done"))
    page.wait_for_function(
        "first => Number(document.querySelector('#job-sites .progress-bar').dataset.done) > first",
        arg=first,
        timeout=20_000,
    )
    assert page.evaluate("window.notReloaded") is True

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#job-stop").click()
    wait_for(
        lambda: Job.objects.values_list("status", flat=True).get(pk=job.pk) == JobStatus.STOPPED,
        timeout=20,
        message=crawl_worker.logs(),
    )
    info = HarvestInfo.objects.get(job=job)
    assert info.stop_reason == "operator"
    assert 0 < info.object_count < len(site.ground_truth(policy="host"))
    page.reload()
    expect(page.locator("#job-sites")).to_contain_text("Stopped by an operator")
    # The stopped job says so (not "Done"), its bar is not full, and it can be run again.
    expect(page.locator("#job-status")).to_have_text("Stopped")
    expect(page.locator("#job-failure")).to_contain_text("The job was stopped by an operator on")
    bar = page.locator("#job-sites .progress-bar").first
    assert int(bar.get_attribute("data-done")) < int(bar.get_attribute("data-total"))
    page.locator("#job-resubmit").click()
    expect(page.locator(".alert-success")).to_contain_text("was resubmitted as")
    job.refresh_from_db()
    assert job.status == JobStatus.RESUBMITTED
    assert page.url.endswith(f"/harvest/jobs/{job.resubmitted_as_id}/")
    assert foreign_requests(requested_urls, live_server.url) == []
