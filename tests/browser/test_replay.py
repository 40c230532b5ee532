"""Replay in a real browser: crawled pages of the test website, through pywb, from our archive.

pywb runs as ``manage.py replay`` configures it (tests/pywb_server.py), behind the replay gate, and
reads the live server's CDX API and WARC endpoint; the browser holds a staff ticket (the captures are
of imported files, which no access rule covers: staff only). The test website was stopped once
crawled (``crawled_site``), and every request the browser makes must go to pywb or to the
application: what the pages show can only come from the archive. A page stored again later as a
revisit record (no body: "same payload as before") replays with the original's content, which pywb
finds by asking our CDX API for the original.
"""

from __future__ import annotations

import datetime
import io
import re
import time
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from django.core.management import call_command
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

from harvest.crawler.dedup import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, MemoryDedupIndex
from storage.models import Capture
from storage.services.indexing import warc_file_index
from storage.services.replication import warc_file_open
from tests.crawler.sitecrawl import crawl
from tests.factories import PASSWORD, UserFactory
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from webarchive.permissions import Role
from webarchive.testsite import TestSite

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

REPLAY_TIMEOUT_MS = 30_000  # the banner, then the page and its requisites, each through pywb and our API


@pytest.fixture
def indexed_crawl(transactional_db, crawled_site, warc_paths):
    """The crawl of the test website in the capture index (the live server's database)."""
    for path in warc_paths:
        warc_file_index(path=path)
    return crawled_site


def site_url(crawl, path: str) -> str:
    (url,) = [url for url in crawl.truth if urlsplit(url).path == path and "127.0.0.1" in url]
    return url


def capture_of(url: str) -> Capture:
    return Capture.objects.get(url=url, record_type="response")


def banner_date(moment: datetime.datetime) -> str:
    """A capture's date as pywb's banner writes it (the "en" locale, lower case)."""
    hour = moment.hour % 12 or 12
    noon = "am" if moment.hour < 12 else "pm"
    return f"{moment.month}/{moment.day}/{moment.year}, {hour}:{moment:%M:%S} {noon}"


def search_link(live_server, url: str) -> str:
    # The banner builds it with JavaScript's encodeURIComponent, which keeps these characters.
    encoded = quote(url, safe="-_.!~*'()")
    return f"{live_server.url}{reverse('storage:search')}?url={encoded}"


def replay_frame(page):
    return page.locator("#replay_iframe").element_handle().content_frame()


def expect_banner(page, moment: datetime.datetime) -> None:
    # pywb's second bar: "Current Capture: <title> | <date>"; chromium may put a narrow no-break
    # space before am/pm.
    text = page.locator("#second-navbar")
    expect(text).to_contain_text("Current Capture")
    expect(text).to_have_text(re.compile(re.escape(banner_date(moment)).replace(r"\ ", r"[\s\u202f]")))


def image_width(frame, selector: str) -> int:
    """The natural width of an image of the replayed page once it has loaded (0: it could not be)."""
    image = frame.locator(selector).element_handle()
    frame.wait_for_function("image => image.complete", arg=image)  # loaded, or failed to
    return image.evaluate("image => image.naturalWidth")


def foreign_requests(urls: list[str], *origins: str) -> list[str]:
    allowed = {urlsplit(origin)[:2] for origin in origins}
    return [
        url
        for url in urls
        if url.split(":", 1)[0] not in ("data", "blob", "about") and urlsplit(url)[:2] not in allowed
    ]


def test_a_crawled_page_replays_with_its_images_and_styles_from_the_archive(
    page,
    requested_urls,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    indexed_crawl,
):
    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    news = site_url(indexed_crawl, "/site/news/")
    capture = capture_of(news)
    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(news, capture.timestamp14))

    expect_banner(page, capture.timestamp)
    frame = replay_frame(page)
    frame.wait_for_load_state("load")
    assert frame.locator("h1").inner_text() == "News 1"
    # Its own picture, on the site, and the logo, on the other host (the CDN): both from the archive.
    assert image_width(frame, "img[alt='Picture 1']") > 0
    assert image_width(frame, "img[alt='Logo']") > 0
    # The style sheets applied: site.css (max-width: 60em), base.css that it @imports (html colour),
    # theme.css from the CDN (a background image on header images).
    assert frame.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    assert frame.evaluate("getComputedStyle(document.documentElement).color") == "rgb(34, 34, 34)"
    assert "pattern.png" in frame.evaluate(
        "getComputedStyle(document.querySelector('header img')).backgroundImage"
    )

    link = page.locator("#webarchive-captures")
    expect(link).to_have_attribute("href", search_link(live_server, news))
    # Following a link inside the replayed page, the banner's link follows too.
    frame.get_by_role("link", name="Home", exact=True).click()
    home = site_url(indexed_crawl, "/site/")
    expect(link).to_have_attribute("href", search_link(live_server, home))
    expect(page.locator("#second-navbar")).to_contain_text("Home")

    assert foreign_requests(requested_urls, pywb_replay.url, live_server.url) == []


def test_the_banner_leads_back_to_the_captures_of_the_page_in_the_application(
    page,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    indexed_crawl,
):
    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    UserFactory(username="reader", roles=[Role.LIBRARIAN])
    page.goto(f"{live_server.url}/login/")
    page.locator("input[name=username]").fill("reader")
    page.locator("input[name=password]").fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()

    home = site_url(indexed_crawl, "/site/")
    capture = capture_of(home)
    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(home, capture.timestamp14))
    expect_banner(page, capture.timestamp)
    frame = replay_frame(page)
    # An image behind a redirect replays; the one that was missing (404) on the website still is.
    assert image_width(frame, "img[alt='Old logo']") > 0
    assert image_width(frame, "img[alt='Missing image']") == 0
    with page.expect_navigation() as navigation:
        page.locator("#webarchive-captures").click()
    assert navigation.value.status == 200
    assert page.url == search_link(live_server, home)
    expect(page.get_by_text(home).first).to_be_visible()

    # pywb's logo leads to the Access area of the application.
    page.go_back()
    expect(page.locator("a.navbar-brand")).to_have_attribute("href", f"{live_server.url}/access/")


def write_revisit(directory: Path, original: Capture, later: datetime.datetime) -> Path:
    """A WARC file: one revisit record of ``original`` at ``later``, as a deduplicating crawl writes it."""
    with open(original.warc_file.path, "rb") as stream:
        stream.seek(original.offset)
        record = next(iter(ArchiveIterator(stream)))
        http_headers = record.http_headers
        original_date = record.rec_headers.get_header("WARC-Date")
        assert record.rec_headers.get_header("WARC-Payload-Digest") == original.digest
    path = directory / f"revisits-{later:%Y%m%d%H%M%S}-00000.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        revisit = writer.create_revisit_record(
            original.url,
            digest=original.digest,
            refers_to_uri=original.url,
            refers_to_date=original_date,
            http_headers=http_headers,  # the response headers kept, no body
            warc_headers_dict={"WARC-Date": later.strftime("%Y-%m-%dT%H:%M:%SZ")},
        )
        writer.write_record(revisit)
    return path


def test_a_page_stored_as_a_revisit_replays_with_the_original_content(
    page,
    requested_urls,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    indexed_crawl,
    tmp_path,
):
    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    sport = site_url(indexed_crawl, "/site/sport/")
    original = capture_of(sport)
    later = original.timestamp + datetime.timedelta(days=1, hours=2, minutes=3)
    indexed = warc_file_index(path=write_revisit(tmp_path, original, later))
    revisit = indexed.warc_file.captures.get()
    assert (revisit.record_type, revisit.url, revisit.digest) == ("revisit", sport, original.digest)

    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(sport, revisit.timestamp14))
    # The revisit is the capture shown (its date), with the original's page, images and styles.
    expect_banner(page, later)
    frame = replay_frame(page)
    frame.wait_for_load_state("load")
    assert frame.evaluate("wbinfo.timestamp") == revisit.timestamp14
    assert frame.locator("h1").inner_text() == "Sport 2"
    assert image_width(frame, "img[srcset]") > 0  # its own picture (2.png, or 2-960.png from its srcset)
    assert image_width(frame, "img[alt='Logo']") > 0
    assert frame.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    assert foreign_requests(requested_urls, pywb_replay.url, live_server.url) == []


@pytest.mark.parametrize("conditional", [False, True], ids=["same-digest", "not-modified"])
def test_a_deduplicated_recrawl_replays_from_the_first_crawl_payloads(
    page,
    requested_urls,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    transactional_db,
    tmp_path,
    conditional,
):
    # Two crawls of an unchanged website, the second deduplicated against the first: its pages,
    # images and style sheets are revisits (same digest, or a 304 to a conditional request).
    index = MemoryDedupIndex()
    with TestSite(
        port=0, seed=4, pages=12, hosts=2, large_file_bytes=20_000, conditional=conditional
    ) as site:
        first = crawl(tmp_path / "first", [site.url("/site/")], dedup=index)
        time.sleep(1.1)  # a later second
        second = crawl(tmp_path / "second", [site.url("/site/")], dedup=index)
        news = site.url("/site/news/")
    for result in (first, second):
        for info in result.files:
            warc_file_index(path=info.path)
    profile = SERVER_NOT_MODIFIED if conditional else IDENTICAL_PAYLOAD
    revisit = Capture.objects.get(url=news, record_type="revisit")
    with warc_file_open(revisit.warc_file) as stream:
        stream.seek(revisit.offset)
        assert next(iter(ArchiveIterator(stream))).rec_headers.get_header("WARC-Profile") == profile
    stored_again = Capture.objects.filter(warc_file__name__in=[info.name for info in second.files])
    assert (
        stored_again.filter(record_type="revisit").count()
        > 0.9 * stored_again.exclude(record_type="request").filter(url__contains="/site/").count()
    )

    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(news, revisit.timestamp14))
    expect_banner(page, revisit.timestamp)
    frame = replay_frame(page)
    frame.wait_for_load_state("load")
    assert frame.evaluate("wbinfo.timestamp") == revisit.timestamp14
    assert frame.locator("h1").inner_text() == "News 1"
    assert image_width(frame, "img[alt='Picture 1']") > 0
    assert image_width(frame, "img[alt='Logo']") > 0
    assert frame.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    assert foreign_requests(requested_urls, pywb_replay.url, live_server.url) == []


def test_a_recrawl_deduplicated_after_the_fact_replays_from_the_registered_output(
    page,
    requested_urls,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    transactional_db,
    tmp_path,
):
    # Two full crawls of an unchanged website, then manage.py dedup_warcs on both: the validated
    # output is registered (and indexed) in their place, the second crawl's payloads as revisits.
    with TestSite(port=0, seed=4, pages=12, hosts=2, large_file_bytes=20_000) as site:
        crawl(tmp_path / "first", [site.url("/site/")])
        time.sleep(1.1)  # a later second
        crawl(tmp_path / "second", [site.url("/site/")])
        news = site.url("/site/news/")
    call_command(
        "dedup_warcs",
        tmp_path / "first",
        tmp_path / "second",
        "--out",
        tmp_path / "out",
        stdout=io.StringIO(),
    )
    revisit = Capture.objects.get(url=news, record_type="revisit")
    assert revisit.warc_file.origin == "deduplicated"
    original = Capture.objects.get(url=news, record_type="response")
    assert original.timestamp < revisit.timestamp

    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(news, revisit.timestamp14))
    expect_banner(page, revisit.timestamp)
    frame = replay_frame(page)
    frame.wait_for_load_state("load")
    assert frame.evaluate("wbinfo.timestamp") == revisit.timestamp14
    assert frame.locator("h1").inner_text() == "News 1"
    assert image_width(frame, "img[alt='Picture 1']") > 0
    assert image_width(frame, "img[alt='Logo']") > 0
    assert frame.evaluate("getComputedStyle(document.body).maxWidth") == "960px"
    assert foreign_requests(requested_urls, pywb_replay.url, live_server.url) == []
