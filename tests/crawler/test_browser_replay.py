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
from tests.crawler.sitecrawl import crawl
from tests.crawler.test_replay import BIN, free_port, start_pywb
from webarchive.testsite import TestSite, scripted

pytestmark = pytest.mark.browser
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    """(the pywb address of the rendered front page, the site's base URL)."""
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
        yield f"http://127.0.0.1:{port}/crawl/{base}/js/", base, executable
    finally:
        server.terminate()
        server.wait(30)


def test_the_replayed_page_shows_every_article_picture_tab_and_loaded_item(replayed):
    address, _base, executable = replayed
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 768})
            outside: list[str] = []
            page.on(
                "request",
                lambda request: (
                    outside.append(request.url)
                    if not request.url.startswith(address.split("/crawl/")[0])
                    else None
                ),
            )
            page.goto(address, wait_until="load", timeout=30_000)
            # pywb shows the capture in a frame under its banner, as readers see it.
            page.wait_for_function("() => document.querySelector('iframe')", timeout=30_000)
            page = next(frame for frame in wait_frames(page) if "mp_/" in frame.url)
            page.wait_for_selector("#load-more", timeout=30_000)
            read(page, scroll_to_end=True)
            page.click("#load-more")
            for name, (_label, text) in scripted.TABS.items():
                page.click(f"#tab-{name}")
                page.wait_for_function(
                    "(text) => document.querySelector('#tab-panel').innerText.includes(text)",
                    arg=text,
                    timeout=10_000,
                )
            page.click("#more-link")
            read(page, scroll_to_end=True)
            shown = page.inner_text("main#articles")
            for title in scripted.article_titles():
                assert title in shown, title
            assert scripted.extra_text() in page.inner_text("body")
            broken = page.evaluate(
                "() => Array.from(document.querySelectorAll('img')).filter("
                "(img) => !img.complete || img.naturalWidth === 0).map((img) => img.src)"
            )
            assert broken == []
            assert len(page.query_selector_all("article.story img")) == len(scripted.article_titles())
            # Nothing came from anywhere but the archive (the site is gone anyway).
            assert outside == []
        finally:
            browser.close()


def wait_frames(page) -> list:
    for _ in range(100):
        if any("mp_/" in frame.url for frame in page.frames):
            break
        page.wait_for_timeout(100)
    return page.frames


def read(page, *, scroll_to_end: bool) -> None:
    """Scroll down a viewport at a time until the page stops growing, as a reader would."""
    still = 0
    last = -1
    for _ in range(200):
        height = page.evaluate(
            "() => { window.scrollBy(0, Math.floor(window.innerHeight * 0.8));"
            " return document.scrollingElement.scrollHeight; }"
        )
        page.wait_for_timeout(150)
        at_end = page.evaluate(
            "() => window.scrollY + window.innerHeight >= document.scrollingElement.scrollHeight - 2"
        )
        if at_end and height == last:
            still += 1
            if still >= 3 or not scroll_to_end:
                return
        else:
            still = 0
        last = height
