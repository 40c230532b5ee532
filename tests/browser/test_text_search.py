"""Full-text search in a real browser: a librarian types words without their accents and finds the
page, its snippet and its replay (pywb behind the replay gate); a reader finds it from the reading
room too, and nothing of a closed page. The archive is tests/access_fixtures.py's, with one French
page added to the open collection's crawl."""

from __future__ import annotations

import pytest

from storage.services.indexing import warc_file_index
from tests.access_fixtures import build_access_archive
from tests.browser.test_navigation import foreign_requests, log_in
from tests.factories import PASSWORD, UserFactory
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from tests.storage.test_fulltext import html, write_pages
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

REPLAY_TIMEOUT_MS = 30_000
FRENCH_PAGE = "http://open.fr/ete"


@pytest.fixture
def archive(pywb_replay, transactional_db, tmp_path, settings):  # noqa: F811
    settings.ACCESS_ANONYMOUS = True
    settings.ACCESS_READING_ROOMS = ["10.1.0.0/16"]
    archive = build_access_archive(tmp_path / "access-warcs")
    body = html(
        "Le café de l\u2019été", "Les terrasses du café restent ouvertes tout l\u2019été, même à Noël.", "fr"
    )
    path = write_pages(
        tmp_path / "access-warcs" / "french.warc.gz", [(FRENCH_PAGE, "text/html; charset=utf-8", body)]
    )
    warc_file_index(path=path, job_id=archive.captures["open"].job_id)
    return archive


def test_a_librarian_finds_a_page_by_its_words_without_accents_and_replays_it(
    page,
    browser_context,
    live_server,
    requested_urls,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    archive,
):
    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    UserFactory(username="bibliothecaire", roles=[Role.LIBRARIAN])
    page.goto("/login/")
    log_in(page, "bibliothecaire", PASSWORD)
    page.get_by_role("button", name="Access menu").click()
    page.locator("#main-nav .dropdown-menu").get_by_role("link", name="Search the text").click()

    page.get_by_label("Words on the page").fill("cafe ete")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#hit-count")).to_have_text("1 page")
    hit = page.locator("li.hit").first
    expect(hit.locator(".hit-title")).to_have_text("Le café de l\u2019été")
    expect(hit.locator(".hit-url")).to_have_text(FRENCH_PAGE)
    expect(hit.locator(".hit-snippet mark").first).to_have_text("café")
    expect(hit.locator(".hit-captures")).to_have_text("1 capture")
    expect(page.locator('[data-facet="language"] li')).to_contain_text("French")

    with browser_context.expect_page() as opened:
        hit.locator(".hit-replay").click()
    replay = opened.value
    replay.set_default_timeout(REPLAY_TIMEOUT_MS)
    replay.wait_for_load_state()
    frame = replay.locator("#replay_iframe").element_handle().content_frame()
    expect(frame.locator("body")).to_contain_text("Les terrasses du café restent ouvertes")

    # The hit's title opens the capture's page.
    hit.locator(".hit-title").click()
    expect(page.locator("h1")).to_contain_text(FRENCH_PAGE)
    pages = [url for url in requested_urls if not url.startswith(pywb_replay.url)]
    assert foreign_requests(pages, live_server.url) == []


def test_a_reader_searches_words_from_the_reading_room_and_finds_only_what_is_open(
    page,
    live_server,
    pywb_replay,  # noqa: F811
    archive,
):
    UserFactory(username="lecteur", roles=[Role.READER])
    page.goto("/login/")
    log_in(page, "lecteur", PASSWORD)
    page.goto("/access/reading-room/")
    page.get_by_label("Find pages by their words").fill("noel")
    page.locator("#reading-text-search button").click()
    expect(page.locator("li.hit .hit-url")).to_have_text([FRENCH_PAGE])

    page.get_by_label("Words on the page").fill("case staff")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#no-hits")).to_be_visible()
    expect(page.get_by_text("Case staff")).to_have_count(0)
