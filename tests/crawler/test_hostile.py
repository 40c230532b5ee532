"""What a hostile website can make a site crawl spend: memory (link floods, bombs) and time (dribbles).

The memory cases crawl the hostile server (tests/hostile_server.py) in a child process with the
crawler's default limits and read that process's peak resident memory: it must stay within the
budget of one site (MEMORY_BUDGET_MB), which the same crawls passed by far before the limits
(425 MB to 1 GB). The time cases show that a stop or a deadline ends a fetch that the server would
have kept going for hours: the crawl ends on its own (pytest-timeout guards it), with the record
kept, marked truncated and the reason logged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from harvest.crawler.engine import CrawlEngine, run_sites
from harvest.crawler.fetch import Fetcher
from harvest.crawler.site import OPERATOR, TIME_LIMIT, SiteCrawl
from tests.crawler.sitecrawl import Crawl, crawl
from tests.hostile_server import HostileServer

MEMORY_BUDGET_MB = 300  # per site (docs/harvesting.md, "Limits a hostile site meets")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as server:
        yield server


def _crawl(directory: Path, url: str, **options) -> Crawl:
    """One site crawl of the hostile ``url`` alone: no robots.txt, no sitemaps."""
    return crawl(directory, [url], obey_robots=False, extract_sitemaps=False, **options)


def crawl_in_child(url: str, max_objects: int) -> dict:
    """Crawl ``url`` with the default limits in a child process: its report and peak RSS (MB)."""
    result = subprocess.run(
        [sys.executable, __file__, url, str(max_objects)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _peak_resident_mb() -> float:
    """This process's own peak resident memory since it started its program (VmHWM, Linux).

    Not ``getrusage().ru_maxrss``: it keeps the peak of the process before ``exec``, a fork of the
    test runner, whose own size (hundreds of MB late in a full run) would be read instead.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024  # kB
    raise RuntimeError("no VmHWM in /proc/self/status")


def _child(url: str, max_objects: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        site_crawl = _crawl(Path(folder), url, max_objects=max_objects, threads=1).crawl
        peak = _peak_resident_mb()
        report = site_crawl.report()
        print(json.dumps({"peak_mb": peak, **report}))


@pytest.mark.timeout(120)
def test_a_page_flood_of_links_is_bounded_per_document_and_per_site(hostile):
    # Frame after frame, pages of 100,000 distinct links each: 800,000 links offered.
    result = crawl_in_child(hostile.url("/flood?links=100000"), max_objects=8)
    assert result["urls"] == 8
    assert result["peak_mb"] < MEMORY_BUDGET_MB
    assert result["links_skipped"] > 0  # beyond the links kept per document
    assert result["queue_full"] > 0  # beyond the URLs queued per site


@pytest.mark.timeout(120)
def test_one_enormous_line_of_one_link_is_read_only_up_to_the_cap(hostile):
    result = crawl_in_child(hostile.url(f"/line?bytes={100 * 1024 * 1024}"), max_objects=3)
    assert result["peak_mb"] < MEMORY_BUDGET_MB
    assert result["documents_cut"] == 1
    assert result["links_skipped"] > 0


@pytest.mark.timeout(120)
def test_a_gzip_bomb_is_decoded_only_up_to_the_cap(hostile):
    # 200 MB of links, a few hundred kilobytes on the wire; stored as sent, read for links in part.
    result = crawl_in_child(hostile.url(f"/bomb?bytes={200 * 1024 * 1024}"), max_objects=3)
    assert result["peak_mb"] < MEMORY_BUDGET_MB
    assert result["documents_cut"] == 1
    assert result["bytes"] < 10 * 1024 * 1024  # the compressed body, as sent


@pytest.mark.timeout(60)
def test_the_crawl_deadline_cuts_a_dribbling_response(hostile, tmp_path):
    # One byte every half second for 100,000 bytes: some 14 hours, had the deadline not cut it.
    url = hostile.url("/dribble?interval=0.5&bytes=100000")
    result = _crawl(tmp_path, url, deadline=time.time() + 2, threads=1)
    assert result.crawl.stop_reason == TIME_LIMIT
    record = result.responses()[url]
    assert record["truncated"] == "time"
    assert 0 < len(record["body"]) < 100_000
    assert "truncated:deadline" in result.line(url)[-1]


@pytest.mark.timeout(60)
def test_the_crawl_deadline_cuts_a_server_sending_its_headers_a_byte_at_a_time(hostile, tmp_path):
    # Every read gets a byte within the read timeout: only the watcher of the crawl can end it.
    url = hostile.url("/slow-headers?interval=0.5")
    result = _crawl(
        tmp_path, url, deadline=time.time() + 2, run=lambda site: run_sites([site], threads=1, interval=0.5)
    )
    assert result.crawl.stop_reason == TIME_LIMIT
    # The socket shut, what had come of the head is the record: marked truncated, the reason logged.
    assert "truncated:deadline" in result.line(url)[-1]
    record = result.responses()[url]
    assert (record["truncated"], record["body"]) == ("time", b"")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "path",
    [
        "/dribble?interval=0.5&bytes=100000",  # a byte now and then
        "/endless?interval=3",  # chunks that never end, the reader waiting inside a chunk header
    ],
)
def test_a_stop_cuts_the_fetch_under_way(hostile, tmp_path, path):
    url = hostile.url(path)

    def stop_during_the_fetch(site: SiteCrawl) -> None:
        engine = CrawlEngine(threads=1, name="hostile")
        handle = engine.submit(site)
        assert hostile.answer_started(path).wait(10)
        while site.progress().current_url != url:
            threading.Event().wait(0.05)
        threading.Event().wait(0.5)  # some bytes in, and the reader waiting for more
        handle.stop(OPERATOR)
        handle.wait()
        engine.shutdown()

    result = _crawl(tmp_path, url, run=stop_during_the_fetch)
    assert result.crawl.stop_reason == OPERATOR
    record = result.responses()[url]
    assert record["truncated"] == "unspecified"
    assert record["body"]
    assert "truncated:stopped" in result.line(url)[-1]


@pytest.mark.timeout(60)
def test_a_never_ending_chunked_response_is_cut_at_the_size_cap(hostile, tmp_path):
    url = hostile.url("/endless?interval=0")
    session = Fetcher(user_agent="t", address_check=lambda ip: None, max_response_bytes=1024 * 1024).session()
    with session:
        exchange = session.fetch(url)
    assert exchange.truncated == "length"
    assert exchange.body_length == 1024 * 1024
    exchange.close()


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]))
