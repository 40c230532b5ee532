"""A curator checks what the browser rendered, in a real browser: from the job's page to its quality
view, where the screenshot of each rendered seed is a thumbnail that loads, beside its replay and its
capture.

The screenshot is a resource record written by the crawler's WARC writer and indexed as a crawl
indexes it; the image comes from the application's own image view of that capture.
"""

import pytest

from storage.replay import replay_url
from tests.browser.test_navigation import foreign_requests, log_in, path_of
from tests.factories import PASSWORD, UserFactory
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.screenshots import png, screenshot, write_renders
from tests.harvest.sitecrawls import end
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

SEED = "https://www.mairie-lille.fr/"
RENDERED_ERROR = "<img src=x onerror=alert(1)> page crashed"


def test_a_curator_sees_the_screenshot_of_each_rendered_seed(page, live_server, requested_urls, results_dir):
    job = job_for_sites([("mairie-lille.fr", SEED), ("mairie-lyon.fr", "https://www.mairie-lyon.fr/")])
    end(job, "mairie-lille.fr", urls_done=30, report={"pages_rendered": 3, "render_failures": 0})
    failure = {"url": "https://www.mairie-lyon.fr/", "error": RENDERED_ERROR}
    end(
        job,
        "mairie-lyon.fr",
        urls_done=2,
        report={"pages_rendered": 1, "render_failures": 1, "render_errors": [failure]},
    )
    capture = write_renders(job, [screenshot(SEED, png(64, 40, (30, 90, 160)))]).captures.get()
    UserFactory(username="curator", roles=[Role.CURATOR])

    page.goto("/login/")
    log_in(page, "curator", PASSWORD)
    page.goto(job.get_absolute_url())
    with page.expect_navigation():
        page.locator("#job-quality-link").click()
    assert path_of(page.url) == f"/harvest/jobs/{job.pk}/quality/"

    lille = page.locator('tr[data-render-domain="mairie-lille.fr"]')
    expect(lille.locator(".render-figures")).to_contain_text("3 pages rendered in a browser, 0 failed")
    thumbnail = lille.get_by_role("img", name=f"Screenshot of {SEED} as rendered at ")
    expect(thumbnail).to_have_attribute("loading", "lazy")
    thumbnail.scroll_into_view_if_needed()
    page.wait_for_function(
        "image => image.complete && image.naturalWidth > 0", arg=thumbnail.element_handle()
    )
    assert thumbnail.evaluate("image => [image.naturalWidth, image.naturalHeight]") == [64, 40]
    assert thumbnail.bounding_box()["width"] <= 320
    expect(lille.locator(".replay-link")).to_have_attribute("href", replay_url(SEED, capture.timestamp14))

    # The other site's render failed: said plainly, its error shown as the text it is.
    lyon = page.locator('tr[data-render-domain="mairie-lyon.fr"]')
    expect(lyon.locator(".no-screenshot")).to_have_text(
        "No screenshot of the seed https://www.mairie-lyon.fr/: it was not rendered, or its rendering failed."
    )
    expect(lyon.locator(".render-error")).to_contain_text(RENDERED_ERROR)
    assert lyon.locator(".render-error img").count() == 0
    page.screenshot(path=str(results_dir / "curator-quality-screenshots.png"), full_page=True)

    # The capture link opens the screenshot's capture in the Access area.
    with page.expect_navigation():
        lille.locator(".capture-link").click()
    assert path_of(page.url) == f"/access/captures/{capture.pk}/"
    expect(page.locator("h1")).to_contain_text(f"urn:screenshot:{SEED}")
    assert foreign_requests(requested_urls, live_server.url) == []
