"""Reading the script-built test page as a reader does, live or in replay (tests and benchmarks/browser.py).

The reader scrolls to the end a viewport at a time (so that lazy images and the
infinite scroll fire), presses "load more", each tab and the in-page link, and
scrolls again; :func:`read_page` then says what the page shows.
"""

from __future__ import annotations

from harvest.crawler.browser import QUIET_SWITCHES
from webarchive.testsite import scripted

CHROMIUM_ARGS = ["--no-sandbox", *QUIET_SWITCHES]
VIEWPORT = {"width": 1366, "height": 768}


def scroll_to_end(page) -> None:
    """Scroll down a viewport at a time until the page has stopped growing at its end."""
    still, last = 0, -1
    for _ in range(300):
        height = page.evaluate(
            "() => { window.scrollBy(0, Math.floor(window.innerHeight * 0.8));"
            " return document.scrollingElement.scrollHeight; }"
        )
        page.wait_for_timeout(150)
        at_end = page.evaluate(
            "() => window.scrollY + window.innerHeight >= document.scrollingElement.scrollHeight - 2"
        )
        still = still + 1 if at_end and height == last else 0
        if still >= 3:
            return
        last = height


def read_page(page) -> dict:
    """Go through ``/js/`` (a page or pywb's frame of it); the titles, pictures, tab and in-page texts."""
    page.wait_for_selector("#load-more", timeout=30_000)
    scroll_to_end(page)
    page.click("#load-more")
    tabs = []
    for name, (_label, text) in scripted.TABS.items():
        page.click(f"#tab-{name}")
        page.wait_for_function(
            "(text) => document.querySelector('#tab-panel').innerText.includes(text)",
            arg=text,
            timeout=10_000,
        )
        tabs.append(page.inner_text("#tab-panel").strip())
    page.click("#more-link")
    page.wait_for_function(
        "(text) => document.body.innerText.includes(text)", arg=scripted.extra_text(), timeout=10_000
    )
    scroll_to_end(page)
    articles = page.inner_text("main#articles")
    return {
        "titles": [title for title in scripted.article_titles() if title in articles],
        "images": sorted(
            page.evaluate(
                "() => Array.from(document.querySelectorAll('img')).filter("
                "(img) => img.complete && img.naturalWidth > 0).map((img) => img.src.split('/js/').pop())"
            )
        ),
        "broken": page.evaluate(
            "() => Array.from(document.querySelectorAll('img')).filter("
            "(img) => !img.complete || img.naturalWidth === 0).map((img) => img.src)"
        ),
        "tabs": tabs,
        "extra": scripted.extra_text() in page.inner_text("body"),
    }


def replayed_frame(page):
    """The frame pywb shows the capture in (under its banner), once it is there."""
    for _ in range(300):
        for frame in page.frames:
            if "mp_/" in frame.url:
                return frame
        page.wait_for_timeout(100)
    raise AssertionError(f"no replay frame in {page.url}")
