"""A crawl engineer's quality-assurance path through the Access area, in a real browser, on a crawl
of the test website.

Log in, open "Search the archive" from the Access area, search a crawled page (typed without its
scheme), open its capture, read its WARC and HTTP headers, and download the raw record (engineers
only: readers download nothing, see test_reader_access.py): the downloaded bytes are the record as
stored in the crawl's WARC file, decompressed.
"""

import gzip
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from storage.models import Capture
from storage.services.indexing import warc_file_index
from tests.browser.test_navigation import foreign_requests, log_in
from tests.factories import PASSWORD, UserFactory
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


def test_an_engineer_finds_a_crawled_page_reads_its_headers_and_downloads_the_raw_record(
    page,
    live_server,
    crawled_site,
    warc_paths,
    requested_urls,
):
    for path in warc_paths:
        warc_file_index(path=path)
    UserFactory(username="engineer", roles=[Role.ENGINEER])
    page_url = next(url for url in crawled_site.truth if urlsplit(url).path == "/site/")
    capture = Capture.objects.get(url=page_url, record_type="response")

    page.goto("/login/")
    log_in(page, "engineer", PASSWORD)
    page.goto("/access/")
    page.get_by_role("link", name="Search the archive").click()
    page.get_by_label("URL", exact=True).fill(page_url.removeprefix("http://"))
    page.get_by_role("button", name="Search").click()

    results = page.locator("#results")
    expect(results).to_contain_text(f"1 capture of {page_url}")
    page.locator(f'tr[data-capture="{capture.pk}"] a.capture-link').click()

    expect(page.locator("h1")).to_have_text(page_url)
    warc_headers = page.locator("#warc-headers")
    expect(warc_headers).to_contain_text("WARC-Record-ID")
    expect(warc_headers).to_contain_text(capture.record_id)
    expect(warc_headers).to_contain_text(capture.digest)
    expect(page.locator("#http-status-line")).to_contain_text("200")
    expect(page.locator("#http-headers")).to_contain_text("Content-Type")

    with page.expect_download() as download_info:
        page.locator("#raw-link").click()
    download = download_info.value
    assert download.suggested_filename.endswith(f"-{capture.offset}.warc")
    stored = Path(capture.warc_file.path).read_bytes()[capture.offset : capture.offset + capture.length]
    assert Path(download.path()).read_bytes() == gzip.decompress(stored)
    assert foreign_requests(requested_urls, live_server.url) == []
