"""A reader in a real browser: reads an open capture in replay, and is refused a reading-room one from
outside the reading rooms. pywb runs behind the replay gate (tests/pywb_server.py) and reads the live
server; the archive is tests/access_fixtures.py's (the reading rooms are 10.1.0.0/16, so the browser,
on 127.0.0.1, is outside).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.access_fixtures import STAMP, build_access_archive, case_url
from tests.browser.test_navigation import log_in
from tests.factories import PASSWORD, UserFactory
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

REPLAY_TIMEOUT_MS = 30_000


@pytest.fixture
def archive(pywb_replay, transactional_db, tmp_path, settings):  # noqa: F811
    settings.ACCESS_ANONYMOUS = True
    settings.ACCESS_READING_ROOMS = ["10.1.0.0/16"]
    return build_access_archive(tmp_path / "access-warcs")


def test_a_reader_reads_an_open_capture_and_is_refused_a_reading_room_one_from_outside(
    page,
    browser_context,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    archive,
):
    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    UserFactory(username="lecteur", roles=[Role.READER])
    page.goto("/login/")
    log_in(page, "lecteur", PASSWORD)

    # The open capture: found by its URL, its page names the rule, and it replays with the rule shown.
    page.goto(f"{reverse('storage:search')}?url={case_url('open')}")
    page.locator("a.capture-link").first.click()
    expect(page.locator("#access-rule")).to_contain_text("Open")
    expect(page.locator("#raw-link")).to_have_count(0)  # no downloads for readers
    with browser_context.expect_page() as opened:
        page.locator("#replay-link").click()
    replay = opened.value
    replay.set_default_timeout(REPLAY_TIMEOUT_MS)
    replay.wait_for_load_state()
    assert replay.url.startswith(f"{pywb_replay.url}archive-reader/")
    frame = replay.locator("#replay_iframe").element_handle().content_frame()
    expect(frame.locator("h1")).to_have_text("Case open, page /")
    expect(replay.locator("#webarchive-access")).to_have_text("Access: Open")

    # The reading-room capture: not listed outside the reading rooms, and refused when asked for.
    page.goto(f"{reverse('storage:search')}?url={case_url('room')}")
    expect(page.locator("a.capture-link")).to_have_count(0)
    page.goto(reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": case_url("room")}))
    expect(page.locator("#refusal-title")).to_have_text("Not open to you here")
    expect(page.locator("#refusal-rule")).to_contain_text("Reading room")
    expect(page.get_by_text("Case room")).to_have_count(0)

    # Straight to the replay port with the reader's ticket: pywb has no such capture for readers.
    replay.goto(f"{pywb_replay.url}archive-reader/{STAMP}/{case_url('room')}")
    frame = replay.locator("#replay_iframe").element_handle().content_frame()
    expect(frame.locator("body")).to_contain_text(
        "is not in the archive, or its access rule does not let you read it"
    )
    expect(frame.get_by_text("Case room")).to_have_count(0)
