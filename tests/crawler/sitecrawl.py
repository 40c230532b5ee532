"""One site crawl of the crawler's own parts into a directory, and what it left there (for the tests)."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from harvest.crawler import warc
from harvest.crawler.crawllog import CrawlLog
from harvest.crawler.engine import run_sites
from harvest.crawler.fetch import Fetcher
from harvest.crawler.site import SiteCrawl, SiteSettings
from webarchive.netguard import AddressPolicy

ALLOW_LOOPBACK = AddressPolicy(allow_private=True).refusal


class Crawl:
    """One crawl's outputs: the crawl log lines, the WARC records, the SiteCrawl itself."""

    def __init__(self, crawl: SiteCrawl, directory: Path, files: list):
        self.crawl = crawl
        self.directory = directory
        self.files = files
        log = directory / "crawl.log"
        self.lines = [line.split(" ") for line in log.read_text().splitlines()] if log.exists() else []

    @property
    def fetched(self) -> list[str]:
        """URLs with a response, in the order they were fetched."""
        return [fields[3] for fields in self.lines if int(fields[1]) > 0]

    def line(self, url: str) -> list[str]:
        return next(fields for fields in self.lines if fields[3] == url)

    def responses(self) -> dict[str, dict]:
        found = {}
        for info in self.files:
            with open(info.path, "rb") as stream:
                for record in ArchiveIterator(stream):
                    if record.rec_type == "response":
                        found[record.rec_headers.get_header("WARC-Target-URI")] = {
                            "digest": record.rec_headers.get_header("WARC-Payload-Digest"),
                            "body": record.content_stream().read(),
                            "status": int(record.http_headers.get_statuscode()),
                            "truncated": record.rec_headers.get_header("WARC-Truncated"),
                        }
        return found


def crawl(
    directory: Path,
    seeds: list[str],
    *,
    policy=ALLOW_LOOPBACK,
    threads=2,
    dedup=None,
    browsers=None,
    run=None,
    job_id: int = 1,
    **options,
) -> Crawl:
    """Crawl ``seeds`` as one site, no politeness delay unless asked, into ``directory``.

    ``dedup``: a dedup index (harvest.crawler.dedup) to write revisits and send conditional requests;
    ``browsers``: a browser.BrowserPool for the pages to render (with ``render="seeds"`` or ``"all"``);
    ``run``: what crawls the SiteCrawl (``run_sites`` with ``threads`` unless given: a test that
    stops it, say, runs it on an engine of its own); ``job_id``: the job number in the files' names
    (two crawls that must not share a file name, which holds the second they started, differ in it).
    """
    options = {"min_delay": 0.0, "max_delay": 0.0, "delay_factor": 0.0, **options}
    files: list = []
    writer = warc.WarcWriter(
        directory=directory,
        prefix="test",
        job_id=job_id,
        host="tests",
        warcinfo={"software": "tests"},
        on_file_closed=files.append,
    )
    session = Fetcher(user_agent="webarchive-test/1 (+http://127.0.0.1/)", address_check=policy).session()
    with CrawlLog(directory / "crawl.log") as log:
        site_crawl = SiteCrawl(
            SiteSettings(seeds=seeds, **options),
            session=session,
            writer=writer,
            crawl_log=log,
            dedup=dedup,
            browsers=browsers,
        )
        if run is None:
            run_sites([site_crawl], threads=threads)
        else:
            run(site_crawl)
        writer.close()
    return Crawl(site_crawl, directory, files)
