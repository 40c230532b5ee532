"""Browser capture: pages built by script, rendered in Chromium, everything they load through the crawler.

Against the script-built section of the test website (``webarchive.testsite.scripted``),
whose ground truth says what a browser loads with and without each behaviour. Every
request of the browser must appear in the crawl log and the WARC files exactly as
the plain crawler writes its own: the crawl log's annotation ``browser`` tells them apart.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from harvest.crawler import warc
from harvest.crawler.browser import BrowserPool, chromium_executable
from harvest.crawler.crawllog import NO_ANSWER, CrawlLog
from harvest.crawler.dedup import MemoryDedupIndex
from harvest.crawler.engine import CrawlEngine
from harvest.crawler.fetch import Fetcher
from harvest.crawler.site import COMPLETED, OBJECT_LIMIT, SiteCrawl, SiteSettings
from tests.components import require_component
from tests.crawler.sitecrawl import ALLOW_LOOPBACK, crawl
from webarchive.testsite import TestSite, scripted

pytestmark = pytest.mark.browser
WARCIO = Path(sys.executable).with_name("warcio")
FAVICON = "/favicon.ico"


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=3, pages=10, hosts=3) as site:
        yield site


@pytest.fixture(scope="module")
def browsers():
    require_component("chromium", chromium_executable() is not None, "browser capture renders in chromium")
    # A small JavaScript heap, so that /js/crash crashes its tab quickly; the other pages need little.
    pool = BrowserPool(size=1, heap_mb=64, grace_seconds=2)
    yield pool
    pool.close()


@pytest.fixture(scope="module")
def front_page(site, browsers, tmp_path_factory):
    """The front page rendered with every behaviour, its links followed one click (not rendered)."""
    return render(tmp_path_factory.mktemp("front"), site, browsers, ["/js/"], depth_policy="clicks", clicks=1)


def base(site) -> str:
    return site.url("/").rstrip("/")


def render(tmp_path, site, browsers, paths, **options):
    options = {"render": "seeds", "depth_policy": "page", "obey_robots": False, **options}
    return crawl(tmp_path, [site.url(path) for path in paths], browsers=browsers, **options)


def browser_fetched(result) -> set[str]:
    """URLs the browser asked for and the crawler fetched (with an answer), favicon aside."""
    return {
        fields[3]
        for fields in result.lines
        if "browser" in fields[-1].split(",") and int(fields[1]) > 0 and not fields[3].endswith(FAVICON)
    }


def records(result, record_type: str) -> dict[str, object]:
    found = {}
    for info in result.files:
        with open(info.path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == record_type:
                    found[record.rec_headers.get_header("WARC-Target-URI")] = (
                        record.rec_headers.get_header("Content-Type"),
                        record.content_stream().read(),
                    )
    return found


def test_a_rendered_front_page_is_captured_as_the_browser_loads_it(site, front_page):
    result = front_page
    assert result.crawl.stop_reason == COMPLETED
    assert result.crawl.render_failures == 0, result.crawl.render_errors
    expected = scripted.browser_urls(base(site))
    assert browser_fetched(result) | {site.url("/js/")} == expected
    assert expected <= set(result.fetched)
    # The page itself was fetched once, by the crawler, and given to the browser from there.
    assert result.fetched.count(site.url("/js/")) == 1


def test_without_rendering_the_crawler_finds_only_the_shell(site, tmp_path):
    result = crawl(tmp_path, [site.url("/js/")], depth_policy="page", obey_robots=False)
    captured = set(result.fetched) & scripted.browser_urls(base(site))
    assert captured == scripted.plain_crawler_urls(base(site))


@pytest.mark.parametrize(
    ("behaviours", "added", "absent"),
    [
        ((), set(), {"/js/api/articles?page=2", "/js/api/more?batch=1", "/js/media/clip.wav"}),
        (
            ("scroll",),
            {"/js/api/articles?page=2", "/js/api/articles?page=3", "/js/img/12.png"},
            {"/js/api/more?batch=1"},
        ),
        (
            ("click",),
            {"/js/api/more?batch=1", "/js/api/extra", "/js/api/tab/culture"},
            {"/js/api/articles?page=3"},
        ),
        (("media",), {"/js/media/clip.wav"}, {"/js/api/more?batch=1", "/js/api/articles?page=2"}),
    ],
)
def test_each_behaviour_loads_what_it_should_and_no_more(site, browsers, tmp_path, behaviours, added, absent):
    result = render(tmp_path, site, browsers, ["/js/"], behaviours=behaviours)
    fetched = browser_fetched(result) | {site.url("/js/")}
    root = base(site)
    assert scripted.initial_urls(root) <= fetched
    assert {root + path for path in added} <= fetched
    assert not {root + path for path in absent} & fetched
    if not behaviours:
        assert fetched == scripted.initial_urls(root)


def test_links_of_the_rendered_page_are_followed(site, front_page):
    result = front_page
    # Links made by script exist only in the rendered DOM; they were queued like any link.
    for url in scripted.article_urls(base(site)):
        fields = result.line(url)
        assert fields[4] == "L" and fields[5] == site.url("/js/")
    assert result.crawl.render_failures == 0, result.crawl.render_errors


def test_a_page_that_navigates_away_stays_and_its_target_becomes_a_link(site, browsers, tmp_path):
    result = render(tmp_path, site, browsers, ["/js/navigate"], depth_policy="clicks", clicks=1)
    target = site.url(scripted.NAVIGATE_TARGET)
    fields = result.line(target)
    # Fetched by the crawler as a link of the page (not by the browser, which stayed on the page).
    assert fields[4] == "L" and fields[5] == site.url("/js/navigate")
    assert "browser" not in fields[-1]
    assert result.crawl.pages_rendered == 1
    assert result.crawl.render_failures == 0, result.crawl.render_errors


def test_a_refused_address_is_never_reached_by_the_browser(site, browsers, tmp_path):
    def refuse_external(address: str) -> str | None:
        return "refused by the test" if address == "127.0.0.3" else ALLOW_LOOPBACK(address)

    before = sum(1 for request in list(site.requests) if request.host_index == 2)
    result = render(tmp_path, site, browsers, ["/js/refused"], policy=refuse_external)
    assert scripted.refused_urls(base(site)) <= set(result.fetched)
    assert sum(1 for request in list(site.requests) if request.host_index == 2) == before
    for url in scripted.external_urls(base(site)):
        fields = result.line(url)
        assert int(fields[1]) == NO_ANSWER["refused"]
        assert "browser" in fields[-1]


def test_service_workers_are_blocked(site, browsers, tmp_path):
    result = render(tmp_path, site, browsers, ["/js/service-worker"])
    fetched = set(result.fetched)
    assert site.url("/js/api/articles?page=1") in fetched
    assert site.url("/js/sw.js") not in fetched
    assert not site.requests_to("/js/sw.js")


def test_a_hung_page_is_ended_and_the_next_page_renders(site, browsers, tmp_path):
    restarts = browsers.restarts
    result = render(
        tmp_path,
        site,
        browsers,
        ["/js/hang", "/js/"],
        render_page_seconds=6,
        render_behaviour_seconds=2,
        behaviours=(),
    )
    assert result.crawl.stop_reason == COMPLETED
    assert [error["url"] for error in result.crawl.render_errors] == [site.url("/js/hang")]
    assert "hung" in result.crawl.render_errors[0]["error"]
    assert site.url("/js/hang") in result.fetched  # stored as the server sent it all the same
    assert scripted.initial_urls(base(site)) <= set(result.fetched)
    assert browsers.restarts > restarts


def test_a_crashed_tab_ends_that_page_only(site, browsers, tmp_path):
    result = render(tmp_path, site, browsers, ["/js/crash", "/js/"], behaviours=(), render_page_seconds=20)
    assert result.crawl.stop_reason == COMPLETED
    assert [error["url"] for error in result.crawl.render_errors] == [site.url("/js/crash")]
    assert "crashed" in result.crawl.render_errors[0]["error"]
    assert scripted.initial_urls(base(site)) <= set(result.fetched)


def test_warc_files_are_valid_with_a_screenshot_and_the_text_of_each_seed(site, front_page):
    result = front_page
    for info in result.files:
        check = subprocess.run([str(WARCIO), "check", str(info.path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    resources = records(result, "resource")
    content_type, screenshot = resources["urn:screenshot:" + site.url("/js/")]
    assert content_type == "image/png"
    assert screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    content_type, text = resources["urn:text:" + site.url("/js/")]
    assert content_type == "text/plain; charset=utf-8"
    for title in scripted.article_titles():
        assert title in text.decode()
    # Every browser request is a request/response pair, like the plain crawler's.
    responses, requests_ = records(result, "response"), records(result, "request")
    for url in browser_fetched(result):
        assert url in responses and url in requests_


def test_a_second_crawl_writes_revisits_for_what_the_browser_loads_again(site, browsers, tmp_path):
    dedup = MemoryDedupIndex()
    render(tmp_path / "first", site, browsers, ["/js/"], dedup=dedup)
    second = render(tmp_path / "second", site, browsers, ["/js/"], dedup=dedup)
    revisits = records(second, "revisit")
    assert site.url("/js/app.js") in revisits
    assert site.url("/js/api/articles?page=2") in revisits
    assert second.crawl.duplicates >= len(scripted.browser_urls(base(site))) - 1


def test_the_object_budget_stops_the_browser_too(site, browsers, tmp_path):
    result = render(tmp_path, site, browsers, ["/js/"], max_objects=6)
    assert result.crawl.stop_reason == OBJECT_LIMIT
    assert result.crawl.urls_done == 6
    assert len(result.fetched) == 6


def test_a_site_waiting_for_a_browser_holds_no_fetch_thread(site, browsers, tmp_path):
    """One browser, two fetch threads: while a hung page holds the browser and a second rendering
    site waits for it, the plain site is crawled to its end on the other thread."""
    log_path = tmp_path / "crawl.log"
    writer = warc.WarcWriter(directory=tmp_path, prefix="test", job_id=1, host="tests", warcinfo={})
    fetcher = Fetcher(user_agent="webarchive-test/1", address_check=ALLOW_LOOPBACK)
    quick = {"min_delay": 0.0, "max_delay": 0.0, "delay_factor": 0.0, "obey_robots": False, "behaviours": ()}

    def site_crawl(seed: str, policy: str, render: str) -> SiteCrawl:
        settings = SiteSettings(
            seeds=[seed], depth_policy=policy, render=render, render_page_seconds=6, **quick
        )
        return SiteCrawl(settings, session=fetcher.session(), writer=writer, crawl_log=log, browsers=browsers)

    engine = CrawlEngine(threads=2)
    with TestSite(port=0, seed=9, pages=40) as other, CrawlLog(log_path) as log:
        hung = engine.submit(site_crawl(site.url("/js/hang"), "page", "seeds"))
        for _ in range(200):  # until the hung page holds the only browser
            if browsers.in_use:
                break
            time.sleep(0.05)
        assert browsers.in_use == 1
        waiting = engine.submit(site_crawl(site.url("/js/article/4"), "page", "seeds"))
        plain = engine.submit(site_crawl(other.url("/site/"), "host", "off"))
        plain.wait(60)
        assert not hung.done and browsers.in_use == 1  # the browser is still held by the hung page
        assert not waiting.crawl.pages_rendered
        engine.shutdown()
    writer.close()
    assert plain.crawl.stop_reason == COMPLETED
    assert plain.crawl.urls_done >= len(other.ground_truth(policy="host"))
    assert waiting.crawl.pages_rendered == 1 and waiting.crawl.render_failures == 0
    assert hung.crawl.render_failures == 1
