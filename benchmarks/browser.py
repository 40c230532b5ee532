"""Benchmark: browser capture on the script-built section of the test website (127.0.0.1 only).

    .venv/bin/python benchmarks/browser.py [--only completeness,replay,cost] [--sites N] [--browsers 1,2]

Three figures, each against a peer measured in the same run:

1. completeness: the share of the URLs a browser loads on ``/js/`` (the section's
   ground truth, ``webarchive.testsite.scripted.browser_urls``, checked live here by
   Chromium doing a reader's actions) that each contender captured: our crawler
   rendering the page, our crawler without rendering, and ``wget --page-requisites
   --warc-file``;
2. replay: the captured page opened in pywb (its own process, the site stopped)
   against the live page, both read by Chromium with the same actions (scroll to
   the end, "load more", every tab, the in-page link): the article titles, the
   pictures that loaded, the tab and in-page texts; and every request pywb could
   not answer from the archive;
3. cost: ``--sites`` copies of the section (each its own test website process and
   port, so its own site crawl), every HTML page in scope rendered (front page and
   articles), on a pool of B browsers for each B in ``--browsers``: pages rendered
   per minute per browser, and the peak memory (proportional set size) of the
   crawling process with its browsers; against the plain crawler on the same sites.

It prints the results as Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WGET = "/usr/bin/wget"
MEASUREMENTS = ("completeness", "replay", "cost")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# 1. Completeness ------------------------------------------------------------------------------------


def live_loads(url: str) -> set[str]:
    """What Chromium loads on ``url`` while a reader goes through it (favicon aside)."""
    from playwright.sync_api import sync_playwright

    from tests.crawler.reader import CHROMIUM_ARGS, VIEWPORT, read_page

    loaded: set[str] = set()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport=VIEWPORT)
        page.on("request", lambda request: loaded.add(request.url))
        page.goto(url, wait_until="load")
        read_page(page)
        for media in ("#audio", "#video"):
            page.evaluate(f"() => document.querySelector('{media}').play().catch(() => {{}})")
        page.wait_for_timeout(1000)
        browser.close()
    return {url for url in loaded if not url.endswith("/favicon.ico")}


def crawl_ours(directory: Path, seeds: list[str], *, render: str, browsers=None, **options):
    from tests.crawler.sitecrawl import crawl

    return crawl(directory, seeds, browsers=browsers, render=render, obey_robots=False, **options)


def crawl_wget(directory: Path, url: str) -> set[str]:
    directory.mkdir(parents=True, exist_ok=True)
    command = [WGET, "--page-requisites", "--span-hosts", "-e", "robots=off", "--tries=1", "--timeout=30"]
    command += ["--no-verbose", f"--output-file={directory / 'wget.log'}", f"--directory-prefix={directory}"]
    command += [f"--warc-file={directory / 'wget'}", url]
    subprocess.run(command, check=False, stdin=subprocess.DEVNULL)  # noqa: S603 (our own test site)
    return warc_uris([directory / "wget.warc.gz"])


def warc_uris(paths) -> set[str]:
    from warcio.archiveiterator import ArchiveIterator

    found = set()
    for path in paths:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    found.add(record.rec_headers.get_header("WARC-Target-URI"))
    return found


def completeness(work: Path, pool) -> list[str]:
    from webarchive.testsite import TestSite, scripted

    with TestSite(port=0, seed=2, pages=10, hosts=1) as site:
        base = site.url("/").rstrip("/")
        truth = scripted.browser_urls(base)
        log("  live: Chromium reading /js/")
        live = live_loads(site.url("/js/"))
        log("  ours, rendering")
        started = time.monotonic()
        rendered = crawl_ours(work / "rendered", [site.url("/js/")], render="seeds", browsers=pool)
        rendered_seconds = time.monotonic() - started
        log("  ours, without rendering")
        plain = crawl_ours(work / "plain", [site.url("/js/")], render="off", depth_policy="page")
        log("  wget --page-requisites")
        wget = crawl_wget(work / "wget", site.url("/js/"))
    same = "the same set" if live == truth else f"NOT the same set: {sorted(live ^ truth)}"
    contenders = [
        ("ours, rendering (`render: seeds`)", set(rendered.fetched), f"{rendered_seconds:.1f} s"),
        ("ours, without rendering", set(plain.fetched), ""),
        ("wget --page-requisites", wget, ""),
    ]
    lines = [
        "### 1. Completeness: the URLs a browser loads on `/js/`",
        "",
        f"Ground truth: {len(truth)} URLs (`scripted.browser_urls`); Chromium reading the live page"
        f" loaded {len(live)}, {same}.",
        "",
        "| contender | captured | share | notes |",
        "|---|---:|---:|---|",
    ]
    for name, captured, notes in contenders:
        got = captured & truth
        lines.append(f"| {name} | {len(got)} / {len(truth)} | **{len(got) / len(truth):.0%}** | {notes} |")
    missing = sorted(truth - set(rendered.fetched))
    lines += ["", f"- missed with rendering: {missing if missing else 'nothing'}"]
    return lines


# 2. Replay ------------------------------------------------------------------------------------------


def replay(work: Path, pool) -> list[str]:
    from playwright.sync_api import sync_playwright

    from tests.crawler.reader import CHROMIUM_ARGS, VIEWPORT, read_page, replayed_frame
    from tests.crawler.test_replay import free_port, start_pywb
    from webarchive.testsite import TestSite

    with TestSite(port=0, seed=2, pages=10, hosts=1) as site:
        base = site.url("/").rstrip("/")
        log("  ours, rendering, for pywb")
        result = crawl_ours(work / "crawl", [site.url("/js/")], render="seeds", browsers=pool)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(site.url("/js/"), wait_until="load")
            live = read_page(page)
            browser.close()
    port = free_port()
    server = start_pywb(work, [info.path for info in result.files], port)
    missing: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
            page = browser.new_page(viewport=VIEWPORT)
            page.on("response", lambda answer: missing.append(answer.url) if answer.status == 404 else None)
            log("  pywb: Chromium reading the capture")
            page.goto(f"http://127.0.0.1:{port}/crawl/{base}/js/", wait_until="load")
            archived = read_page(replayed_frame(page))
            browser.close()
    finally:
        server.terminate()
        server.wait(30)
    missing = [url for url in missing if not url.endswith("/favicon.ico")]
    rows = [
        (
            "article titles shown",
            len(live["titles"]),
            len(archived["titles"]),
            live["titles"] == archived["titles"],
        ),
        (
            "pictures loaded",
            len(live["images"]),
            len(archived["images"]),
            live["images"] == archived["images"],
        ),
        ("tab texts", len(live["tabs"]), len(archived["tabs"]), live["tabs"] == archived["tabs"]),
        (
            "in-page link's text",
            int(live["extra"]),
            int(archived["extra"]),
            live["extra"] == archived["extra"],
        ),
    ]
    lines = [
        "### 2. Replay: the captured page in pywb against the live page, read the same way",
        "",
        "| what the reader sees | live | replay (pywb) | identical |",
        "|---|---:|---:|---|",
    ]
    lines += [f"| {name} | {a} | {b} | {'yes' if same else '**no**'} |" for name, a, b, same in rows]
    lines += ["", f"- requests pywb answered 404 (not in the archive): {missing if missing else 'none'}"]
    return lines


# 3. Cost --------------------------------------------------------------------------------------------


class Sites:
    """``count`` test websites, each its own process (``manage.py testsite``) and port."""

    def __init__(self, count: int, articles: int):
        self.count = count
        self.articles = articles
        self.ports: list[int] = []
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> Sites:
        from tests.crawler.test_replay import free_port

        for _ in range(self.count):
            port = free_port()
            self.ports.append(port)
            self.processes.append(
                subprocess.Popen(  # noqa: S603 (our own test website on 127.0.0.1)
                    [sys.executable, str(ROOT / "manage.py"), "testsite", "--port", str(port)],
                    cwd=ROOT,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for port in self.ports:
            _wait_port(port)
        return self

    def __exit__(self, *exc_info) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(30)

    def seeds(self) -> list[list[str]]:
        """Per site: the front page and its first article pages (both contenders handle the same pages)."""
        return [
            [
                f"http://127.0.0.1:{port}/js/",
                *[f"http://127.0.0.1:{port}/js/article/{number}" for number in range(1, self.articles + 1)],
            ]
            for port in self.ports
        ]


def _wait_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the test website on port {port} did not start")


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        pending.extend(children.get(current, []))
    return found


def _pss_kib(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


class PeakMemory:
    """The peak of the summed PSS of this process and its descendants (browsers, driver), sampled;
    the test websites' processes (``servers``) are not the crawler's and are left out."""

    def __init__(self, servers: Sites):
        self.servers = servers
        self.peak_kib = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._done.set()
        self._thread.join()
        self.sample()

    def sample(self) -> None:
        servers = {pid for process in self.servers.processes for pid in _descendants(process.pid)}
        crawler = [pid for pid in _descendants(os.getpid()) if pid not in servers]
        self.peak_kib = max(self.peak_kib, sum(_pss_kib(pid) for pid in crawler))

    def _watch(self) -> None:
        self.sample()
        while not self._done.wait(0.1):
            self.sample()


def cost(work: Path, sites: int, pools: list[int], articles: int = 16) -> list[str]:
    from harvest.crawler import warc
    from harvest.crawler.browser import BrowserPool
    from harvest.crawler.crawllog import CrawlLog
    from harvest.crawler.engine import run_sites
    from harvest.crawler.fetch import Fetcher
    from harvest.crawler.site import SiteCrawl, SiteSettings
    from tests.crawler.sitecrawl import ALLOW_LOOPBACK

    def run(name: str, render: str, size: int) -> dict:
        directory = work / name
        writer = warc.WarcWriter(
            directory=directory, prefix="bench", job_id=1, host="bench", warcinfo={"software": "bench"}
        )
        pool = BrowserPool(size=size) if size else None
        with (
            Sites(sites, articles) as servers,
            CrawlLog(directory / "crawl.log") as crawl_log,
            PeakMemory(servers) as memory,
        ):
            crawls = [
                SiteCrawl(
                    SiteSettings(
                        seeds=seeds,
                        depth_policy="page",
                        obey_robots=False,
                        min_delay=0.0,
                        max_delay=0.0,
                        delay_factor=0.0,
                        render=render,
                    ),
                    session=Fetcher(user_agent="webarchive-bench/1", address_check=ALLOW_LOOPBACK).session(),
                    writer=writer,
                    crawl_log=crawl_log,
                    browsers=pool,
                )
                for seeds in servers.seeds()
            ]
            started = time.monotonic()
            try:
                run_sites(crawls, threads=8)
                memory.sample()  # the browsers are still up
            finally:
                seconds = time.monotonic() - started
                if pool is not None:
                    pool.close()
                writer.close()
        pages = sum(len(crawl.settings.seeds) for crawl in crawls)  # each seed an HTML page
        rendered = sum(crawl.pages_rendered for crawl in crawls)
        failures = sum(crawl.render_failures for crawl in crawls)
        urls = sum(crawl.urls_done for crawl in crawls)
        return {
            "name": name,
            "seconds": seconds,
            "pages": pages,
            "rendered": rendered,
            "failures": failures,
            "urls": urls,
            "peak_mib": memory.peak_kib / 1024,
            "browsers": size,
        }

    runs = []
    log(f"  plain crawler, {sites} sites")
    runs.append(run("plain", "off", 0))
    for size in pools:
        log(f"  rendering every page, {sites} sites, {size} browser(s)")
        runs.append(run(f"render-{size}", "all", size))
    plain = runs[0]
    lines = [
        f"### 3. Cost: {sites} copies of the section, the front page and {articles} article pages as seeds",
        "",
        "| contender | pages | rendered (failed) | URLs | seconds | pages/min | pages/min per browser"
        " | peak memory (PSS, MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for item in runs:
        per_minute = 60 * item["pages"] / item["seconds"]
        per_browser = f"{per_minute / item['browsers']:.1f}" if item["browsers"] else "—"
        rendered = f"{item['rendered']} ({item['failures']})" if item["browsers"] else "—"
        lines.append(
            f"| {item['name']} | {item['pages']} | {rendered} | {item['urls']} | {item['seconds']:.1f}"
            f" | {per_minute:.1f} | {per_browser} | {item['peak_mib']:.0f} |"
        )
    plain_rate = plain["pages"] / plain["seconds"]
    ratios = ", ".join(
        f"{item['browsers']} browser(s) {plain_rate / (item['pages'] / item['seconds']):.0f} times"
        for item in runs[1:]
    )
    return [*lines, "", f"- the plain crawler's pages/min over the rendering runs': {ratios}"]


# Main -----------------------------------------------------------------------------------------------


def chromium() -> str:
    from harvest.crawler.browser import chromium_executable

    found = chromium_executable()
    if found is None:
        raise SystemExit("chromium is needed (Debian's package chromium)")
    return found


def machine() -> list[str]:
    cpu = ""
    with contextlib.suppress(OSError):
        models = re.findall(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
        cpu = models[0] if models else ""
    version = subprocess.run([chromium(), "--version"], capture_output=True, text=True, check=False)  # noqa: S603
    return [
        f"- machine: {os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}",
        f"- browser: {version.stdout.strip()}, Playwright (Python) driving it",
    ]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webarchive.settings")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only", default=",".join(MEASUREMENTS), help="comma-separated: " + ", ".join(MEASUREMENTS)
    )
    parser.add_argument("--sites", type=int, default=4, help="copies of the section for the cost (default 4)")
    parser.add_argument("--browsers", default="1,2", help="pool sizes for the cost (default 1,2)")
    parser.add_argument(
        "--articles", type=int, default=16, help="article pages per site for the cost, 0 to 16 (default 16)"
    )
    args = parser.parse_args(argv)
    wanted = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(wanted) - set(MEASUREMENTS)
    if unknown:
        parser.error(f"unknown measurement(s): {', '.join(sorted(unknown))}")
    pools = [int(size) for size in args.browsers.split(",")]
    if not 0 <= args.articles <= 16 or args.sites < 1 or min(pools) < 1:
        parser.error("--articles is 0 to 16; --sites and each of --browsers at least 1")

    from harvest.crawler.browser import BrowserPool

    lines = ["## Browser capture (`benchmarks/browser.py`)", "", *machine(), ""]
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as folder:
        work = Path(folder)
        pool = BrowserPool(size=1)
        try:
            if "completeness" in wanted:
                log("completeness")
                lines += [*completeness(work / "completeness", pool), ""]
            if "replay" in wanted:
                log("replay")
                (work / "replay").mkdir()
                lines += [*replay(work / "replay", pool), ""]
        finally:
            pool.close()
        if "cost" in wanted:
            log("cost")
            lines += [*cost(work / "cost", args.sites, pools, args.articles), ""]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
