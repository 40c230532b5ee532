"""The script-built section of the test website (``/js/``, webarchive.testsite.scripted), in a real browser.

Debian's chromium, driven by Playwright, opens the front page with and without
the behaviours of a browser-capture crawler (scroll, clicks, media played):
what it loads must be the section's ground truth, what it shows every title.
A plain reading of the HTML and of app.js must find none of it. The helper
pages (hang, crash, navigate, service worker, external parts) are checked to
do what a crawler's failure tests expect of them.

Playwright's sync API keeps an asyncio loop running while it is started, which
Django's async-safety check takes for an async context: it is started for this
module only, with ``DJANGO_ALLOW_ASYNC_UNSAFE`` set meanwhile (these tests use
no database; see tests/browser/conftest.py).
"""

import io
import json
import os
import re
import struct
import wave
import zlib
from urllib.parse import urljoin, urlsplit

import pytest
import requests

from harvest.crawler.browser import QUIET_SWITCHES
from tests.components import require_component
from webarchive.testsite import TestSite, scripted

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", *QUIET_SWITCHES]
SMALL_HEAP = "--js-flags=--max-old-space-size=64"
VIEWPORT = {"width": 1366, "height": 768}
TIMEOUT_MS = 10_000
QUIET_MS = 500  # the network is settled once nothing has been in flight for this long
ARTICLES = "#articles article"

# Scroll down from where the page is, by 80 % of a viewport at a time, two frames apart so
# that the IntersectionObservers see every position (a jump to the end skips the lazy images).
SCROLL_DOWN = """async (fromTop) => {
  const frames = () => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  if (fromTop) { window.scrollTo(0, 0); await frames(); }
  while (window.scrollY + window.innerHeight < document.documentElement.scrollHeight - 1) {
    window.scrollBy(0, Math.floor(window.innerHeight * 0.8));
    await frames();
  }
  await frames();
}"""
PLAY_MEDIA = "() => Promise.all([...document.querySelectorAll('audio, video')].map(m => m.play()))"


@pytest.fixture(scope="module")
def site():
    """The test website with its external host (127.0.0.3), for /js/refused."""
    with TestSite(port=0, hosts=3) as site:
        yield site


@pytest.fixture(scope="module")
def playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        require_component("chromium", False, f"the playwright package cannot be imported ({error})")
    require_component("chromium", os.access(CHROMIUM, os.X_OK), f"no {CHROMIUM}")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            yield playwright
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def launch(playwright, *extra_args):
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=[*CHROMIUM_ARGS, *extra_args]
    )


@pytest.fixture(scope="module")
def chromium(playwright):
    browser = launch(playwright)
    yield browser
    browser.close()


class Network:
    """The requests of a browser context: every URL asked, and those still in flight."""

    def __init__(self, context):
        self.asked: list[str] = []
        self.in_flight: set = set()
        context.on("request", self._start)
        context.on("requestfinished", self._end)
        context.on("requestfailed", self._end)

    def _start(self, request):
        self.asked.append(request.url)
        self.in_flight.add(request)

    def _end(self, request):
        self.in_flight.discard(request)

    def urls(self) -> set[str]:
        return {url for url in self.asked if urlsplit(url).path != "/favicon.ico"}

    def settle(self, page) -> None:
        """Wait until nothing has been in flight for QUIET_MS (late requests would then be seen)."""
        quiet = 0
        for _ in range(TIMEOUT_MS // 50):
            page.wait_for_timeout(50)
            quiet = 0 if self.in_flight else quiet + 50
            if quiet >= QUIET_MS:
                return
        pytest.fail(f"requests still in flight: {sorted(r.url for r in self.in_flight)}")


@pytest.fixture
def context(chromium):
    context = chromium.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture
def network(context):
    return Network(context)


def titles_shown(page) -> list[str]:
    return page.locator(f"{ARTICLES} h2").all_text_contents()


def scroll_to_the_end(page) -> None:
    """Scroll down in steps until the infinite scroll has nothing more to fetch."""
    from_top = True
    for _ in range(scripted.PAGES + 2):
        count = page.locator(ARTICLES).count()  # before the pass: a page may arrive during it
        page.evaluate(SCROLL_DOWN, from_top)
        from_top = False
        # The sentinel seen at the end fetches the next page; wait for it, or for the end of the feed.
        page.wait_for_function(
            "n => document.querySelectorAll('#articles article').length > n"
            " || document.getElementById('feed-status').dataset.state === 'end'",
            arg=count,
        )
        if page.locator(ARTICLES).count() == count:  # the pass went through every article there is
            return
    pytest.fail("the infinite scroll did not end")


def wait_for_images(page) -> None:
    """Wait until every image that has a src has loaded it."""
    page.wait_for_function(
        "[...document.images].every(image => !image.hasAttribute('src') || image.complete)"
        " && [...document.images].filter(image => image.hasAttribute('src')).every(i => i.naturalWidth > 0)"
    )


# The front page in a browser --------------------------------------------------------------------------


def test_opening_the_front_page_loads_only_the_first_screen(site, context, network):
    page = context.new_page()
    page.goto(site.url("/js/"))
    page.wait_for_function(f"document.querySelectorAll('{ARTICLES}').length === {scripted.PER_PAGE}")
    page.wait_for_function("document.querySelector('#story-1 img').complete")
    network.settle(page)
    assert network.urls() == scripted.initial_urls(site.base_url)
    assert len(network.urls()) == 8
    lazy = page.eval_on_selector_all("img.lazy", "images => images.map(image => image.hasAttribute('src'))")
    assert lazy == [True, False, False, False]
    assert page.locator("#feed-status").get_attribute("data-state") == "more"
    assert page.frame_locator("#frame").locator("img").evaluate("image => image.naturalWidth") > 0


def test_the_behaviours_load_everything_and_show_every_title(site, context, network):
    page = context.new_page()
    page.goto(site.url("/js/"))
    page.wait_for_function(f"document.querySelectorAll('{ARTICLES}').length === {scripted.PER_PAGE}")

    scroll_to_the_end(page)
    assert page.locator(ARTICLES).count() == scripted.PAGES * scripted.PER_PAGE
    assert page.locator("#feed-status").text_content() == "No more stories"

    page.click("#load-more")
    page.wait_for_function(f"document.querySelectorAll('{ARTICLES}').length === {len(scripted.TITLES)}")
    assert page.locator("#load-more").is_disabled()
    for (name, _tab), text in zip(scripted.TABS.items(), scripted.tab_texts(), strict=True):
        page.click(f"#tab-{name}")
        page.wait_for_function("text => document.getElementById('tab-panel').textContent === text", arg=text)
        assert page.locator(f"#tab-{name}").get_attribute("aria-selected") == "true"
    page.click("#more-link")
    page.wait_for_function(
        "text => document.getElementById('extra').textContent === text", arg=scripted.extra_text()
    )
    page.evaluate(PLAY_MEDIA)
    page.evaluate(SCROLL_DOWN, True)  # again from the top: the load-more articles' images are lazy too
    wait_for_images(page)
    network.settle(page)

    assert page.url == site.url("/js/")  # nothing clicked navigated away
    assert network.urls() == scripted.browser_urls(site.base_url)
    assert 30 <= len(network.urls()) <= 45
    assert titles_shown(page) == scripted.article_titles()
    for title in scripted.article_titles():
        assert page.get_by_role("heading", name=title).is_visible()
    links = page.eval_on_selector_all("a.read-more, #lead-link", "links => links.map(link => link.href)")
    assert set(links) == scripted.article_urls(site.base_url)
    assert page.locator("#more-link").get_attribute("href") == "#more"
    assert not page.eval_on_selector_all("img.lazy", "images => images.filter(i => !i.src).length")


def test_an_article_page_is_built_by_script(site, context, network):
    page = context.new_page()
    page.goto(site.url("/js/article/3"))
    page.wait_for_selector("#article h1")
    wait_for_images(page)
    network.settle(page)
    assert network.urls() == scripted.article_page_urls(site.base_url, 3)
    assert page.locator("#article h1").text_content() == scripted.article_titles()[2]
    assert page.title() == scripted.article_titles()[2]
    assert page.locator("#front-link").evaluate("link => link.href") == site.url("/js/")


# What a crawler that does not run scripts finds ------------------------------------------------------


def literal_strings(script: str) -> list[str]:
    return [match[2] for match in re.finditer(r"""(['"])((?:\\.|(?!\1).)*)\1""", script)]


def test_a_plain_crawler_finds_only_the_shell_and_its_script(site):
    page_url = site.url("/js/")
    html = requests.get(page_url, timeout=5).text
    script_url = site.url("/js/app.js")
    script = requests.get(script_url, timeout=5).text

    # What an extractor gets: the HTML's href and src, and the script's strings that look like URLs.
    found = {urljoin(page_url, url) for url in re.findall(r"""(?:href|src)=["']([^"']+)""", html)}
    strings = literal_strings(script)
    assert "Load more" in strings and "articles" in strings  # the reading sees the strings
    found |= {urljoin(script_url, string) for string in strings if "/" in string or "." in string}
    assert {page_url, *found} == scripted.plain_crawler_urls(site.base_url)
    assert not re.search(r"<a[\s>]", html)

    # Nor would a looser reading: no path, relative path or file name of theirs is in the text.
    hidden = scripted.browser_urls(site.base_url) - scripted.plain_crawler_urls(site.base_url)
    hidden |= scripted.article_urls(site.base_url)
    for url in hidden:
        path = url[len(site.base_url) :]
        looks_like_a_url = [
            part for part in (path[len("/js/") :], path.rpartition("/")[2]) if re.search("[/.?]", part)
        ]
        for text in (html, script):
            assert path not in text
            for part in looks_like_a_url:
                assert part not in text


# Every URL over plain HTTP ----------------------------------------------------------------------------


def expected_type(url: str) -> str:
    path = urlsplit(url).path
    if "/api/" in path or path.endswith(".json"):
        return "application/json"
    extension = path.rpartition(".")[2] if "." in path.rpartition("/")[2] else ""
    return {
        "js": "application/javascript",
        "css": "text/css",
        "png": "image/png",
        "woff2": "font/woff2",
        "wav": "audio/wav",
    }.get(extension, "text/html")


def test_every_url_answers_get_and_head_with_its_type(site):
    urls = scripted.served_urls(site.base_url) | scripted.external_urls(site.base_url)
    assert scripted.browser_urls(site.base_url) <= urls
    pngs = set()
    for url in sorted(urls):
        head = requests.head(url, timeout=5)
        response = requests.get(url, timeout=5)
        assert (head.status_code, response.status_code) == (200, 200), url
        content_type = response.headers["Content-Type"].split(";")[0]
        assert content_type == expected_type(url), url
        assert head.headers["Content-Type"] == response.headers["Content-Type"]
        assert int(head.headers["Content-Length"]) == len(response.content) > 0
        assert head.content == b""
        if content_type == "image/png":
            assert response.content.startswith(b"\x89PNG\r\n\x1a\n")
            width, height = struct.unpack(">II", response.content[16:24])
            assert width > 0 and height > 0
            zlib.decompress(response.content[41 : 41 + struct.unpack(">I", response.content[33:37])[0]])
            pngs.add(response.content)
        elif content_type == "audio/wav":
            with wave.open(io.BytesIO(response.content)) as sound:
                assert 0.4 <= sound.getnframes() / sound.getframerate() <= 1.0
        elif content_type == "application/json":
            assert json.loads(response.content)
    assert len(pngs) == len(scripted.TITLES) + 3  # one per article, the frame's, own.png, the external one


def test_the_api_refuses_what_it_does_not_have(site):
    for path in (
        "/js/api/articles?page=0",
        f"/js/api/articles?page={scripted.PAGES + 1}",
        "/js/api/articles",
        "/js/api/more?batch=2",
        "/js/api/tab/sport",
        f"/js/api/article/{len(scripted.TITLES) + 1}",
    ):
        response = requests.get(site.url(path), timeout=5)
        assert (response.status_code, response.headers["Content-Type"]) == (404, "application/json"), path
    for path in ("/js/article/0", "/js/article/17", "/js/img/0.png", "/js/img/01.png", "/js/img/1.jpg"):
        assert requests.get(site.url(path), timeout=5).status_code == 404, path


def test_the_index_lists_the_pages_of_the_section(site):
    links = set(re.findall(r"href='([^']+)'", requests.get(site.url("/"), timeout=5).text))
    pages = {"/js/", "/js/article/1", "/js/hang", "/js/crash", "/js/navigate", "/js/service-worker"}
    assert pages | {"/js/refused"} <= links
    assert not {link for link in links if link.startswith("/js/")} - pages - {"/js/refused"}


# The helper pages -------------------------------------------------------------------------------------


def test_the_hang_page_stops_answering_after_its_load(site, context, network):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = context.new_page()
    page.goto(site.url("/js/hang"))  # returns: the spin begins 100 ms after the load event
    assert network.urls() == {site.url("/js/hang")}
    page.wait_for_timeout(500)  # past those 100 ms (a timer of Playwright's, not of the page)
    # A page that still ran scripts would answer at once; this one cannot answer any more.
    with pytest.raises(PlaywrightTimeout):
        page.locator("#state").text_content(timeout=2000)


def test_the_crash_page_kills_a_renderer_with_a_small_heap(site, playwright):
    browser = launch(playwright, SMALL_HEAP)
    try:
        page = browser.new_page()
        with page.expect_event("crash", timeout=30_000):  # fails unless the renderer crashes
            page.goto(site.url("/js/crash"))  # returns: the allocation begins 100 ms after the load event
        # The browser itself lives on: another page opens.
        other = browser.new_page()
        other.goto(site.url("/js/article/1"))
        other.wait_for_selector("#article h1")
    finally:
        browser.close()


def test_the_navigate_page_leaves_for_an_article_by_itself(site, context, network):
    page = context.new_page()
    page.goto(site.url("/js/navigate"))
    page.wait_for_url(site.url(scripted.NAVIGATE_TARGET))
    page.wait_for_selector("#article h1")
    wait_for_images(page)
    network.settle(page)
    assert network.urls() == {site.url("/js/navigate")} | scripted.article_page_urls(site.base_url, 2)


@pytest.mark.parametrize(("workers", "served_by"), [("allow", "worker"), ("block", "network")])
def test_the_service_worker_page_fetches_through_its_worker(site, chromium, workers, served_by):
    context = chromium.new_context(viewport=VIEWPORT, service_workers=workers)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        network = Network(context)
        page = context.new_page()
        page.goto(site.url("/js/service-worker"))
        page.wait_for_selector(f"#state[data-state={served_by}]")
        network.settle(page)
        expected = scripted.service_worker_urls(site.base_url)
        if workers == "block":
            expected -= {site.url("/js/sw.js")}
        assert network.urls() == expected
        assert page.locator("#state").text_content() == f"{served_by}: {scripted.PER_PAGE} articles"
    finally:
        context.close()


@pytest.mark.parametrize("refuse", [False, True])
def test_the_refused_page_reaches_the_external_host_unless_refused(site, context, network, refuse):
    def asked_of_the_external_host() -> list[str]:
        return [request.path for request in list(site.requests) if request.host_index == 2]

    before = asked_of_the_external_host()
    if refuse:
        context.route(re.compile(r"^https?://127\.0\.0\.3[:/]"), lambda route: route.abort())
    page = context.new_page()
    page.goto(site.url("/js/refused"))
    page.wait_for_selector("body[data-state=settled]")
    network.settle(page)

    external = scripted.external_urls(site.base_url)
    assert network.urls() == scripted.refused_urls(site.base_url) | external  # asked, refused or not
    assert page.locator("#own").text_content() == scripted.extra_text()
    reached = asked_of_the_external_host()[len(before) :]
    if refuse:
        assert not reached
        assert page.locator("#external").text_content() == "refused"
        assert page.locator("#external-image").evaluate("image => image.naturalWidth") == 0
    else:
        assert set(reached) == {urlsplit(url).path for url in external}
        assert page.locator("#external").text_content() == "From the external site."
        assert page.locator("#external-image").evaluate("image => image.naturalWidth") > 0
