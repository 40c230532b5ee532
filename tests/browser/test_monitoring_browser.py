"""The crawl engineer's monitoring page, in a real browser: find it first under Operations, see a job
that failed with what happened and what to do, open the error as recorded, and follow the page's
polling without a reload."""

import socket

import pytest

from harvest.worker import run_site_crawl
from tests.browser.test_navigation import foreign_requests, log_in
from tests.factories import PASSWORD, UserFactory
from tests.harvest.crawljobs import job_for_sites
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


def test_an_engineer_sees_a_failed_job_explained(page, live_server, requested_urls, settings, monkeypatch):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    UserFactory(username="engineer", roles=[Role.ENGINEER])
    with socket.socket() as probe:  # a port nothing listens on once closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def disk_full(job):
        raise OSError(28, "No space left on device")

    # The site's seed is refused; the job's end then finds the disk full.
    monkeypatch.setattr("harvest.worker.write_job_metadata", disk_full)
    job = job_for_sites([("127.0.0.1", f"http://127.0.0.1:{port}/")])
    run_site_crawl(job.configurations.get().pk)

    page.goto("/login/")
    log_in(page, "engineer", PASSWORD)
    page.goto("/operations/")
    page.get_by_role("link", name="Monitoring", exact=True).first.click()
    expect(page.locator("h1")).to_have_text("Monitoring")

    failed = page.locator(f'.failed-job[data-job="{job.pk}"]')
    expect(failed).to_be_visible()
    expect(failed.locator(".failure-title")).to_contain_text("the disk is full")
    expect(failed.locator(".failure-action")).to_contain_text("Free space on the disk")
    detail = failed.locator(".failure-detail")
    expect(detail).to_be_hidden()  # the raw error is there, folded
    failed.get_by_text("The error as recorded").click()
    expect(detail).to_contain_text("No space left on device")

    site = page.locator('.failed-site[data-domain="127.0.0.1"]')
    expect(site.locator(".failure-title")).to_contain_text("refused the connection")

    # The live part polls: it is fetched again with htmx, the page is not reloaded.
    page.evaluate("window.notReloaded = true")
    with page.expect_request(lambda request: request.headers.get("hx-request") == "true", timeout=20_000):
        pass
    expect(page.locator(f'.failed-job[data-job="{job.pk}"]')).to_be_visible()
    assert page.evaluate("window.notReloaded") is True

    # From the failure to the job: the same explanation on the job's own page.
    failed.get_by_role("link", name=str(job)).click()
    expect(page.locator("#job-failure .failure-title")).to_contain_text("the disk is full")
    assert foreign_requests(requested_urls, live_server.url) == []
