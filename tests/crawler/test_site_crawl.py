"""Site crawls against the test website: scope, order, traps, politeness, stop reasons, WARC output.

Everything here goes through the crawler's public surface (SiteCrawl, the engine, the
crawl log and the WARC files it writes) against the synthetic website on 127.0.0.1,
whose ground truth says what a crawl must capture.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest

from harvest.crawler import warc
from harvest.crawler.crawllog import CrawlLog
from harvest.crawler.engine import CrawlEngine, run_sites
from harvest.crawler.fetch import Fetcher
from harvest.crawler.frontier import Candidate, Frontier
from harvest.crawler.outcomes import CrawlError
from harvest.crawler.site import (
    BYTE_LIMIT,
    COMPLETED,
    FAILED,
    OBJECT_LIMIT,
    OPERATOR,
    TIME_LIMIT,
    SiteCrawl,
    SiteSettings,
)
from tests.crawler.sitecrawl import ALLOW_LOOPBACK, crawl
from webarchive.netguard import AddressPolicy
from webarchive.testsite import Router, TestSite
from webarchive.testsite.server import html_page, text

WARCIO = Path(sys.executable).with_name("warcio")


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=7, pages=60, hosts=3, large_file_bytes=300_000, slow_seconds=0.05) as site:
        yield site


def test_host_crawl_captures_the_ground_truth_and_keeps_to_its_scope(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], depth_policy="host")
    fetched = set(result.fetched)
    missing = site.ground_truth(policy="host") - fetched
    assert not missing, sorted(missing)[:20]
    assert result.crawl.stop_reason == COMPLETED
    # robots.txt obeyed: nothing under the disallowed directory; the external site's pages not crawled.
    assert not [url for url in fetched if "/site/private/" in url]
    assert not [
        url for url in fetched if url.startswith(site.host_url(2)) and not url.endswith("/robots.txt")
    ]
    # ...but reported as external links, with counts.
    assert any(url.startswith(site.host_url(2)) for url in result.crawl.external_links)
    # requisites on the CDN are fetched although the CDN is outside the host scope.
    assert any(url.startswith(site.host_url(1)) for url in fetched)
    # session ids were stripped before queueing: no URL carries one.
    assert not [url for url in fetched if "sid=" in url or "jsessionid" in url.lower()]


def test_components_are_fetched_right_after_the_page_that_needs_them(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")])
    position = {fields[3]: index for index, fields in enumerate(result.lines)}
    checked = 0
    for index, fields in enumerate(result.lines):
        hop_path, via = fields[4], fields[5]
        if not hop_path.endswith("E") or via not in position:
            continue
        between = result.lines[position[via] + 1 : index]
        # Only components (of that page or of its components), redirects and prerequisites in between.
        assert all(other[4][-1:] in "EPRX" for other in between), (fields[3], [o[3] for o in between])
        checked += 1
    assert checked > 20


def test_robots_txt_can_be_ignored(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], obey_robots=False)
    assert [url for url in result.fetched if "/site/private/" in url]
    assert not site.ground_truth(policy="host", obey_robots=False) - set(result.fetched)


@pytest.mark.parametrize("policy", ["page", "path"])
def test_narrow_policies_capture_their_ground_truth_and_not_more_pages(site, tmp_path, policy):
    start = "/site/" if policy == "page" else "/site/news/"
    result = crawl(tmp_path, [site.url(start)], depth_policy=policy)
    truth = site.ground_truth(policy=policy, start=start)
    fetched = set(result.fetched)
    assert not truth - fetched, sorted(truth - fetched)[:20]
    pages = {fields[3] for fields in result.lines if fields[4][-1:] in ("L", "M") and int(fields[1]) == 200}
    if policy == "page":
        assert not pages  # nothing reached by a link is followed
    wider = site.ground_truth(policy="host")
    assert len(fetched & wider) < len(wider)


def test_clicks_policy_counts_link_hops(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], depth_policy="clicks", clicks=1)
    truth = site.ground_truth(policy="clicks", clicks=1)
    assert not truth - set(result.fetched)
    for fields in result.lines:
        assert fields[4].count("L") <= 1, fields


def test_the_infinite_calendar_is_capped(site, tmp_path):
    # With hops unlimited, only the calendar trap rule stops the walk through the months.
    result = crawl(
        tmp_path, [site.url("/site/")], max_hops=1000, calendar_years_back=5, calendar_years_ahead=2
    )
    calendar = [url for url in result.fetched if "/calendar/" in url]
    assert calendar  # the months near today are there
    years = {int(part) for url in calendar for part in url.split("/") if part.isdigit() and len(part) == 4}
    this_year = datetime.now().year
    assert min(years) == this_year - 5 and max(years) == this_year + 2
    assert result.crawl.trapped > 0


def test_accept_and_reject_rules(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], reject_rules=[r"/site/s1/"], crawler_traps=[r"large"])
    assert not [url for url in result.fetched if "/site/s1/" in url or "large" in url]
    assert result.crawl.stop_reason == COMPLETED


def test_limits_end_the_crawl_with_their_stop_reason(site, tmp_path):
    by_objects = crawl(tmp_path / "objects", [site.url("/site/")], max_objects=15)
    assert by_objects.crawl.stop_reason == OBJECT_LIMIT
    assert by_objects.crawl.urls_done == 15 == len(by_objects.fetched)

    by_bytes = crawl(tmp_path / "bytes", [site.url("/site/")], max_bytes=20_000)
    assert by_bytes.crawl.stop_reason == BYTE_LIMIT
    assert by_bytes.crawl.bytes >= 20_000

    by_time = crawl(tmp_path / "time", [site.url("/site/")], deadline=time.time() - 1)
    assert by_time.crawl.stop_reason == TIME_LIMIT
    assert by_time.fetched == []


def test_an_operator_stop_ends_a_site_waiting_out_a_long_delay(site, tmp_path):
    files: list = []
    writer = warc.WarcWriter(
        directory=tmp_path, prefix="t", job_id=2, host="tests", warcinfo={}, on_file_closed=files.append
    )
    session = Fetcher(user_agent="t/1", address_check=ALLOW_LOOPBACK).session()
    settings = SiteSettings(seeds=[site.url("/site/")], min_delay=60, max_delay=60)
    site_crawl = SiteCrawl(settings, session=session, writer=writer)
    engine = CrawlEngine(threads=1)
    handle = engine.submit(site_crawl)
    told = []
    handle.when_done(lambda ended: told.append(("before", ended.done)))
    deadline = time.monotonic() + 10
    while site_crawl.urls_done < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not handle.wait(0.2)  # waiting out its 60 s delay
    assert told == []
    handle.stop(OPERATOR)
    assert handle.wait(10)
    engine.shutdown()  # its fetch thread, which ended the site and called back, has ended
    # Told once it has ended (a callback given before the end, by the thread that ended it; one given
    # after, at once).
    handle.when_done(lambda ended: told.append(("after", ended.done)))
    assert told == [("before", True), ("after", True)]
    writer.close()
    assert site_crawl.stop_reason == OPERATOR
    assert 1 <= site_crawl.urls_done < 5
    check = subprocess.run([str(WARCIO), "check", str(files[0].path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_politeness_delay_spaces_the_requests_of_a_site(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], min_delay=0.2, max_delay=0.2, max_objects=6)
    starts = [datetime.fromisoformat(fields[0].replace("Z", "+00:00")) for fields in result.lines]
    gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(starts)]
    assert len(gaps) >= 5
    assert min(gaps) >= 0.19  # a lower bound the crawler guarantees, not a speed


def test_many_polite_sites_share_few_fetch_threads(tmp_path):
    sites = [TestSite(port=0, seed=index, pages=8, hosts=1) for index in range(6)]
    for one in sites:
        one.start()
    try:
        writer = warc.WarcWriter(directory=tmp_path, prefix="t", job_id=3, host="tests", warcinfo={})
        fetcher = Fetcher(user_agent="t/1", address_check=ALLOW_LOOPBACK)
        crawls = [
            SiteCrawl(
                SiteSettings(
                    seeds=[one.url("/site/")], min_delay=0.05, max_delay=0.05, reject_rules=["calendar"]
                ),
                session=fetcher.session(),
                writer=writer,
            )
            for one in sites
        ]
        engine = CrawlEngine(threads=2, name="probe")
        handles = [engine.submit(one) for one in crawls]
        # All six are under way at once on two threads: each has fetched before any has ended.
        deadline = time.monotonic() + 30
        while not all(one.urls_done for one in crawls) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert all(one.urls_done for one in crawls)
        assert not any(handle.done for handle in handles)
        assert len([t for t in threading.enumerate() if t.name.startswith("probe-")]) == 2
        for handle in handles:
            assert handle.wait(60)
        engine.shutdown()
        writer.close()
        assert all(one.stop_reason == COMPLETED for one in crawls)
    finally:
        for one in sites:
            one.stop()


def test_warc_records_match_what_was_served_and_pass_warcio_check(site, tmp_path):
    result = crawl(tmp_path, [site.url("/site/")], max_objects=80)
    for info in result.files:
        check = subprocess.run([str(WARCIO), "check", str(info.path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    responses = result.responses()
    for fields in result.lines:
        if int(fields[1]) > 0:
            assert fields[3] in responses
            assert responses[fields[3]]["digest"] == fields[8]
            assert responses[fields[3]]["status"] == int(fields[1])


def test_a_site_without_a_valid_seed_says_so_with_a_code():
    settings = SiteSettings(seeds=["ftp://example.org/", "not a url"])
    with Fetcher(user_agent="t").session() as session:
        site_crawl = SiteCrawl(settings, session=session)
        assert site_crawl.step() is None
    assert (site_crawl.error_code, site_crawl.error) == (CrawlError.NO_VALID_SEED, "No valid seed URL.")
    assert site_crawl.report()["error_code"] == "no-valid-seed"


def test_the_address_guard_refuses_the_seed_and_the_site_fails_saying_why(site, tmp_path):
    before = len(site.requests)
    result = crawl(tmp_path, [site.url("/site/")], policy=AddressPolicy().refusal)
    assert result.crawl.stop_reason == FAILED
    assert result.crawl.urls_done == 0
    assert result.crawl.error_code == CrawlError.NO_SEED_FETCHED
    assert result.crawl.report()["error_code"] == "no-seed-fetched"
    assert "seed" in result.crawl.error.lower()
    assert all(int(fields[1]) == -7 for fields in result.lines)
    # The code for machines, then the words for people.
    notes = [fields[10] for fields in result.lines]
    assert all("error:refused:address_refused:_127.0.0.1_is_a_loopback" in note for note in notes)
    assert len(site.requests) == before  # not a single request reached the site


def test_a_seed_that_redirects_makes_its_target_a_seed(site, tmp_path):
    seed = site.url("/site/redirect/301/3")
    result = crawl(tmp_path, [seed], depth_policy="page")
    lines = {fields[3]: fields for fields in result.lines}
    assert lines[seed][1] in ("301", "302")
    targets = [fields for fields in result.lines if fields[4] == "R" and fields[5] == seed]
    assert targets and int(targets[0][1]) > 0


def test_the_address_guard_checks_every_connection_requisites_included(tmp_path):
    # Only 127.0.0.1 is allowed: the CDN's requisites on 127.0.0.2 are refused, nothing reaches it.
    with TestSite(port=0, seed=8, pages=10, hosts=2, large_file_bytes=1000, slow_seconds=0) as two_hosts:
        result = crawl(
            tmp_path, [two_hosts.url("/site/")], policy=AddressPolicy.allowing(["127.0.0.1/32"]).refusal
        )
        refused = [fields for fields in result.lines if fields[3].startswith(two_hosts.host_url(1))]
        assert refused and all(fields[1] == "-7" and "error:refused:" in fields[10] for fields in refused)
        assert not [request for request in two_hosts.requests if request.host_index == 1]
        assert result.crawl.urls_done > 10  # the site itself was crawled


def test_robots_crawl_delay_is_honoured_when_robots_txt_is_obeyed(tmp_path):
    router = Router()
    router.add("/robots.txt", lambda request: text("User-agent: *\nCrawl-delay: 0.3\n"))
    router.add("/", lambda request: html_page("Home", "<a href='/a'>a</a> <a href='/b'>b</a>"))
    router.add("/a", lambda request: html_page("A", "<p>a</p>"))
    router.add("/b", lambda request: html_page("B", "<p>b</p>"))
    with TestSite(port=0, router=router) as delayed:
        obeyed = crawl(tmp_path / "obeyed", [delayed.url("/")], extract_sitemaps=False)
        ignored = crawl(tmp_path / "ignored", [delayed.url("/")], extract_sitemaps=False, obey_robots=False)
    for result, low in ((obeyed, 0.29), (ignored, None)):
        starts = [datetime.fromisoformat(fields[0].replace("Z", "+00:00")) for fields in result.lines]
        gaps = [(later - earlier).total_seconds() for earlier, later in itertools.pairwise(starts)]
        assert len(gaps) >= 3
        if low is not None:
            assert min(gaps) >= low
    assert "/robots.txt" not in {fields[3].rsplit(":", 1)[-1].split("/", 1)[-1] for fields in ignored.lines}


def test_dynamic_and_static_pages_are_served_in_turn_after_components():
    frontier = Frontier()
    for name in ("s1.html", "s2.html", "s3.html"):
        frontier.add_page(Candidate(f"http://example.org/{name}", "L", "", True))
    for query in ("a", "b"):
        frontier.add_page(Candidate(f"http://example.org/list?q={query}", "L", "", True))
    frontier.add_component(Candidate("http://example.org/style.css", "E", "", False))
    assert frontier.add_page(Candidate("http://example.org/s1.html", "L", "", True)) is False  # seen
    order = [frontier.pop().url.rsplit("/", 1)[-1] for _ in range(len(frontier))]
    assert order == ["style.css", "list?q=a", "s1.html", "list?q=b", "s2.html", "s3.html"]
    assert frontier.pop() is None


def test_a_saved_rule_re2_cannot_run_is_reported_and_the_crawl_goes_on(site, tmp_path):
    """Rules saved before patterns were checked with RE2: the crawl skips one it cannot run and says so."""
    result = crawl(tmp_path, [site.url("/")], reject_rules=[r"(a)\1", "/never-there/"])
    assert len(result.fetched) > 1
    report = result.crawl.report()
    assert [rule["rule"] for rule in report["skipped_rules"]] == [r"(a)\1"]
    assert report["skipped_rules"][0]["kind"] == "reject"
    assert "skipped_rules" not in crawl(tmp_path / "again", [site.url("/")], max_objects=2).crawl.report()


# -- the WARC writer's thread ------------------------------------------------------------------


class FillingDisk(warc.WarcWriter):
    """A writer whose disk is full after ``room`` exchanges (the failure a crawl must report)."""

    def __init__(self, *, room: int, **kwargs):
        super().__init__(**kwargs)
        self.room = room

    def write_exchange(self, exchange, **kwargs):
        if self.room == 0:
            raise OSError(28, "No space left on device")
        self.room -= 1
        return super().write_exchange(exchange, **kwargs)


def no_delay(**options) -> SiteSettings:
    return SiteSettings(min_delay=0.0, max_delay=0.0, delay_factor=0.0, **options)


def test_a_site_crawl_has_written_its_records_and_log_lines_when_it_reports_its_end(site, tmp_path):
    announced: list = []
    writer = warc.WarcWriter(
        directory=tmp_path, prefix="t", job_id=5, host="tests", warcinfo={}, on_record=announced.append
    )
    session = Fetcher(user_agent="t/1", address_check=ALLOW_LOOPBACK).session()
    with CrawlLog(tmp_path / "crawl.log") as log:
        site_crawl = SiteCrawl(
            no_delay(seeds=[site.url("/site/")], max_objects=40),
            session=session,
            writer=writer,
            crawl_log=log,
        )
        engine = CrawlEngine(threads=2)
        handle = engine.submit(site_crawl)
        assert handle.wait(60)
        # Before the writer is closed: whatever the crawl counted is written, records and log lines.
        responses = [info.target_uri for info in announced if info.record_type == "response"]
        lines = [line.split(" ") for line in (tmp_path / "crawl.log").read_text().splitlines()]
        fetched = [fields[3] for fields in lines if int(fields[1]) > 0]
        assert site_crawl.stop_reason == OBJECT_LIMIT
        assert responses == fetched  # in the same order
        assert len(responses) == site_crawl.urls_done == 40
        engine.shutdown()
    writer.close()
    for info in writer.files:
        check = subprocess.run([str(WARCIO), "check", str(info.path)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr


def test_an_operator_stop_without_delay_leaves_every_counted_url_written(site, tmp_path):
    announced: list = []
    writer = warc.WarcWriter(
        directory=tmp_path, prefix="t", job_id=6, host="tests", warcinfo={}, on_record=announced.append
    )
    session = Fetcher(user_agent="t/1", address_check=ALLOW_LOOPBACK).session()
    site_crawl = SiteCrawl(no_delay(seeds=[site.url("/site/")]), session=session, writer=writer)
    engine = CrawlEngine(threads=1)
    handle = engine.submit(site_crawl)
    deadline = time.monotonic() + 30
    while site_crawl.urls_done < 20 and time.monotonic() < deadline:
        time.sleep(0.005)
    handle.stop(OPERATOR)
    assert handle.wait(30)
    engine.shutdown()
    assert site_crawl.stop_reason == OPERATOR
    assert len([info for info in announced if info.record_type == "response"]) == site_crawl.urls_done
    writer.close()
    [info] = writer.files
    check = subprocess.run([str(WARCIO), "check", str(info.path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_record_the_writer_cannot_write_fails_the_crawl_saying_why(site, tmp_path):
    writer = FillingDisk(room=5, directory=tmp_path, prefix="t", job_id=7, host="tests", warcinfo={})
    session = Fetcher(user_agent="t/1", address_check=ALLOW_LOOPBACK).session()
    site_crawl = SiteCrawl(no_delay(seeds=[site.url("/site/")]), session=session, writer=writer)
    run_sites([site_crawl], threads=1)
    writer.close()
    assert site_crawl.stop_reason == FAILED
    assert site_crawl.broken
    assert site_crawl.error_code == CrawlError.BROKEN
    assert "No space left on device" in site_crawl.error
    assert site_crawl.urls_done < 5 + warc.QUEUE_ITEMS  # it stopped soon after, not at the site's end
    [info] = writer.files  # what was written before the failure is whole
    check = subprocess.run([str(WARCIO), "check", str(info.path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert info.records == 1 + 2 * 5
