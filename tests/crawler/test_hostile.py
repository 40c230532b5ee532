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
from warcio.archiveiterator import ArchiveIterator

from harvest.crawler import warc
from harvest.crawler.crawllog import CrawlLog
from harvest.crawler.engine import CrawlEngine, run_sites
from harvest.crawler.fetch import Fetcher
from harvest.crawler.site import OPERATOR, TIME_LIMIT, SiteCrawl, SiteSettings
from tests.hostile_server import HostileServer

MEMORY_BUDGET_MB = 300  # per site (docs/harvesting.md, "Limits a hostile site meets")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def hostile():
    with HostileServer() as server:
        yield server


def _site_crawl(directory: Path, url: str, **options) -> tuple[SiteCrawl, warc.WarcWriter, CrawlLog]:
    options = {"min_delay": 0.0, "max_delay": 0.0, "delay_factor": 0.0, "obey_robots": False, **options}
    writer = warc.WarcWriter(directory=directory, prefix="t", job_id=1, host="t", warcinfo={})
    log = CrawlLog(directory / "crawl.log")
    session = Fetcher(user_agent="webarchive-test/1", address_check=lambda ip: None).session()
    crawl = SiteCrawl(
        SiteSettings(seeds=[url], extract_sitemaps=False, **options),
        session=session,
        writer=writer,
        crawl_log=log,
    )
    return crawl, writer, log


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
        crawl, writer, log = _site_crawl(Path(folder), url, max_objects=max_objects)
        with writer, log:
            run_sites([crawl], threads=1)
        peak = _peak_resident_mb()
        report = crawl.report()
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


def _records(directory: Path) -> dict[str, dict]:
    found = {}
    for path in directory.glob("*.warc.gz"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    found[record.rec_headers.get_header("WARC-Target-URI")] = {
                        "truncated": record.rec_headers.get_header("WARC-Truncated"),
                        "body": record.content_stream().read(),
                    }
    return found


def _log_fields(directory: Path, url: str) -> list[str]:
    lines = (directory / "crawl.log").read_text().splitlines()
    return next(line.split(" ") for line in lines if line.split(" ")[3] == url)


@pytest.mark.timeout(60)
def test_the_crawl_deadline_cuts_a_dribbling_response(hostile, tmp_path):
    # One byte every half second for 100,000 bytes: some 14 hours, had the deadline not cut it.
    url = hostile.url("/dribble?interval=0.5&bytes=100000")
    crawl, writer, log = _site_crawl(tmp_path, url, deadline=time.time() + 2)
    with writer, log:
        run_sites([crawl], threads=1)
    assert crawl.stop_reason == TIME_LIMIT
    record = _records(tmp_path)[url]
    assert record["truncated"] == "time"
    assert 0 < len(record["body"]) < 100_000
    assert "truncated:deadline" in _log_fields(tmp_path, url)[-1]


@pytest.mark.timeout(60)
def test_the_crawl_deadline_cuts_a_server_sending_its_headers_a_byte_at_a_time(hostile, tmp_path):
    # Every read gets a byte within the read timeout: only the watcher of the crawl can end it.
    url = hostile.url("/slow-headers?interval=0.5")
    crawl, writer, log = _site_crawl(tmp_path, url, deadline=time.time() + 2)
    with writer, log:
        run_sites([crawl], threads=1, interval=0.5)
    assert crawl.stop_reason == TIME_LIMIT
    # The socket shut, what had come of the head is the record: marked truncated, the reason logged.
    assert "truncated:deadline" in _log_fields(tmp_path, url)[-1]
    assert _records(tmp_path)[url] == {"truncated": "time", "body": b""}


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
    crawl, writer, log = _site_crawl(tmp_path, url)
    engine = CrawlEngine(threads=1, name="hostile")
    with writer, log:
        handle = engine.submit(crawl)
        assert hostile.answer_started(path).wait(10)
        while crawl.progress().current_url != url:
            threading.Event().wait(0.05)
        threading.Event().wait(0.5)  # some bytes in, and the reader waiting for more
        handle.stop(OPERATOR)
        handle.wait()
        engine.shutdown()
    assert crawl.stop_reason == OPERATOR
    record = _records(tmp_path)[url]
    assert record["truncated"] == "unspecified"
    assert record["body"]
    assert "truncated:stopped" in _log_fields(tmp_path, url)[-1]


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
