"""A rendered capture replays in pywb as the visitor saw it: every article, picture, tab and loaded item.

The script-built section of the test website is crawled with rendering on (every
behaviour), the site is stopped, and the WARC files are served by pywb (its own
process, as the archive runs it). Chromium then opens the replay and does what a
reader would: scroll to the end, press "load more", each tab and the in-page link.
What it shows can only come from the archive.
"""

from __future__ import annotations

import pytest

from harvest.crawler.browser import BrowserPool, chromium_executable
from tests.components import require_component
from tests.crawler.reader import CHROMIUM_ARGS, VIEWPORT, read_page, replayed_frame
from tests.crawler.sitecrawl import crawl
from tests.crawler.test_replay import BIN, free_port, start_pywb
from webarchive.testsite import TestSite, scripted

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """(the pywb address of the rendered front page, the chromium to read it with)."""
    require_component("pywb", (BIN / "wayback").exists(), "pywb (requirements.txt) replays WARC files")
    executable = chromium_executable()
    require_component("chromium", executable is not None, "browser capture renders in chromium")
    root = tmp_path_factory.mktemp("pywb-rendered")
    browsers = BrowserPool(size=1)
    try:
        with TestSite(port=0, seed=5, pages=10, hosts=1) as site:
            base = site.url("/").rstrip("/")
            result = crawl(
                root / "crawl", [site.url("/js/")], browsers=browsers, render="seeds", depth_policy="page"
            )
    finally:
        browsers.close()
    assert result.crawl.render_failures == 0, result.crawl.render_errors
    port = free_port()
    server = start_pywb(root, [info.path for info in result.files], port)
    try:
        yield f"http://127.0.0.1:{port}/crawl/{base}/js/", executable
    finally:
        server.terminate()
        server.wait(30)


def test_the_replayed_page_shows_every_article_picture_tab_and_loaded_item(replayed):
    address, executable = replayed
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            origin = address.split("/crawl/")[0]
            outside: list[str] = []
            page.on(
                "request",
                lambda request: None if request.url.startswith(origin) else outside.append(request.url),
            )
            page.goto(address, wait_until="load", timeout=30_000)
            # pywb shows the capture in a frame under its banner, as readers see it.
            shown = read_page(replayed_frame(page))
        finally:
            browser.close()
    assert shown["titles"] == scripted.article_titles()
    assert shown["tabs"] == scripted.tab_texts()
    assert shown["extra"]
    assert shown["broken"] == []
    assert len([image for image in shown["images"] if image.startswith("img/")]) == len(
        scripted.article_titles()
    )
    assert outside == []  # nothing came from anywhere but the archive (the site is gone anyway)
