"""``manage.py crawl URL …``: an ad-hoc crawl in the foreground, WARC files into a directory."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from harvest.crawler import defaults, warc
from harvest.crawler.crawllog import CrawlLog
from harvest.crawler.engine import run_sites
from harvest.crawler.extractors.streams import STREAM_VARIANTS
from harvest.crawler.fetch import DIGEST_ALGORITHMS
from harvest.crawler.rendering import RENDER_ALL, RENDER_OFF
from harvest.crawler.scope import POLICIES
from harvest.crawler.site import SiteCrawl, SiteSettings
from harvest.crawler.urls import canonicalize, host_of
from harvest.worker import browser_pool, fetcher, trap_limits, warcinfo, worker_host
from webarchive.patterns import PatternError, compile_user_pattern


class Command(BaseCommand):
    help = (
        "Crawl the given URLs now, in the foreground (one site crawl per host, run side by side), "
        "writing WARC files and a crawl log into --warc-dir; prints progress and a summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("urls", nargs="+", metavar="URL")
        parser.add_argument(
            "--depth",
            type=int,
            help="Links to follow from the seeds (sets the depth policy to “the page and N clicks”).",
        )
        parser.add_argument(
            "--policy",
            choices=POLICIES,
            default=defaults.DEPTH_POLICY,
            help=f"Depth policy (default: {defaults.DEPTH_POLICY}).",
        )
        parser.add_argument("--max-objects", type=int, default=-1, help="Per site (default: no limit).")
        parser.add_argument("--max-bytes", type=int, default=-1, help="Per site (default: no limit).")
        parser.add_argument("--max-seconds", type=float, default=0, help="Time limit (default: none).")
        parser.add_argument(
            "--accept", action="append", default=[], metavar="RE", help="Accept rule (repeat)."
        )
        parser.add_argument(
            "--reject", action="append", default=[], metavar="RE", help="Reject rule (repeat)."
        )
        parser.add_argument("--warc-dir", default="warcs", help="Where to write (default: ./warcs).")
        parser.add_argument("--prefix", default="crawl", help="WARC file name prefix (default: crawl).")
        parser.add_argument(
            "--delay",
            type=float,
            default=defaults.MIN_DELAY,
            help=f"Seconds between two requests to a site (default: {defaults.MIN_DELAY:g}).",
        )
        robots = parser.add_mutually_exclusive_group()
        robots.add_argument("--obey-robots", dest="obey_robots", action="store_true", default=True)
        robots.add_argument("--ignore-robots", dest="obey_robots", action="store_false")
        parser.add_argument("--no-javascript", action="store_true", help="Do not look for URLs in scripts.")
        parser.add_argument(
            "--stream-variants",
            choices=STREAM_VARIANTS,
            default=defaults.STREAM_VARIANTS,
            help="Of an HLS or DASH stream, fetch the segments of every variant (all) or of the best (best).",
        )
        parser.add_argument(
            "--browser",
            action="store_true",
            help="Render every HTML page in scope in Chromium (scroll, click, play media) and capture "
            "everything it loads, for sites whose pages are built by script.",
        )
        parser.add_argument(
            "--page-seconds",
            type=float,
            default=defaults.RENDER_PAGE_SECONDS,
            help="With --browser: the most one rendered page may take "
            f"(default: {defaults.RENDER_PAGE_SECONDS:g}).",
        )
        parser.add_argument(
            "--threads", type=int, default=settings.HARVEST_CRAWL_THREADS, help="Fetch threads."
        )
        parser.add_argument("--digest", choices=DIGEST_ALGORITHMS, default=defaults.DIGEST_ALGORITHM)
        parser.add_argument("--quiet", action="store_true", help="No progress lines, only the summary.")

    def handle(self, *args, **options):
        seeds_by_host: dict[str, list[str]] = defaultdict(list)
        for url in options["urls"]:
            canonical = canonicalize(url)
            if canonical is None:
                raise CommandError(f"Not an http(s) URL: {url}")
            seeds_by_host[host_of(canonical)].append(canonical)
        for kind in ("accept", "reject"):
            for rule in options[kind]:
                try:
                    compile_user_pattern(rule)  # what the crawler runs them with: RE2, in linear time
                except PatternError as error:
                    raise CommandError(f"--{kind}: {error}") from None
        if not 5 <= options["page_seconds"] <= 300:
            raise CommandError("--page-seconds must be between 5 and 300.")
        for name in ("delay", "max_seconds"):
            if options[name] < 0:
                raise CommandError(f"--{name.replace('_', '-')} cannot be negative.")
        if options["threads"] < 1:
            raise CommandError("--threads must be at least 1.")
        policy, clicks = options["policy"], 1
        if options["depth"] is not None:
            if options["depth"] < 0:
                raise CommandError("--depth cannot be negative.")
            policy, clicks = ("page", 0) if options["depth"] == 0 else ("clicks", options["depth"])
        directory = Path(options["warc_dir"])
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise CommandError(f"Cannot create {directory}: {error}") from None

        closed: list = []
        writer = warc.WarcWriter(
            directory=directory,
            prefix=options["prefix"],
            job_id=0,
            host=worker_host(),
            max_size=settings.HARVEST_WARC_MAX_SIZE,
            warcinfo=warcinfo("ad-hoc crawl: " + " ".join(options["urls"])),
            on_file_closed=closed.append,
        )
        deadline = time.time() + options["max_seconds"] if options["max_seconds"] else None
        crawl_log = CrawlLog(directory / "crawl.log")
        browsers = browser_pool() if options["browser"] else None
        render = {
            "render": RENDER_ALL if browsers is not None else RENDER_OFF,
            "render_page_seconds": options["page_seconds"],
            "render_behaviour_seconds": min(10.0, options["page_seconds"] / 3),
            "render_cache_bytes": settings.HARVEST_BROWSER_CACHE_BYTES,
        }
        crawls = [
            SiteCrawl(
                SiteSettings(
                    seeds=seeds,
                    depth_policy=policy,
                    clicks=clicks,
                    accept_rules=options["accept"],
                    reject_rules=options["reject"],
                    obey_robots=options["obey_robots"],
                    min_delay=options["delay"],
                    max_delay=options["delay"],
                    delay_factor=0.0,
                    extract_javascript=not options["no_javascript"],
                    stream_variants=options["stream_variants"],
                    max_objects=options["max_objects"],
                    max_bytes=options["max_bytes"],
                    deadline=deadline,
                    **render,
                    **trap_limits(),
                ),
                session=fetcher(options["digest"]).session(),
                writer=writer,
                crawl_log=crawl_log,
                browsers=browsers,
            )
            for seeds in seeds_by_host.values()
        ]

        def progress():
            if options["quiet"]:
                return
            for crawl in crawls:
                p = crawl.progress()
                state = p.stop_reason or "running"
                self.stderr.write(
                    f"{crawl.site}: {state}, {p.urls_done} done, {p.urls_queued} queued, "
                    f"{p.bytes} bytes, {p.errors} errors, {p.rate:.1f} URLs/s {p.current_url}"
                )

        started = time.monotonic()
        try:
            run_sites(crawls, threads=options["threads"], on_progress=progress)
        except KeyboardInterrupt:  # pragma: no cover - interactive
            for crawl in crawls:
                crawl.request_stop()
            self.stderr.write("Interrupted: the files written so far are kept.")
        finally:
            if browsers is not None:
                browsers.close()
            writer.close()
            crawl_log.close()
        seconds = time.monotonic() - started
        for crawl in crawls:
            line = (
                f"{crawl.site}: {crawl.urls_done} objects, {crawl.bytes} bytes, {crawl.errors} errors, "
                f"stop reason {crawl.stop_reason}"
            )
            if crawl.error:
                line += f" ({crawl.error})"
            if browsers is not None:
                line += f"; {crawl.pages_rendered} pages rendered, {crawl.render_failures} failed"
                for failure in crawl.render_errors:
                    line += f"\n  not rendered: {failure['url']}: {failure['error']}"
            self.stdout.write(line)
        total = sum(crawl.urls_done for crawl in crawls)
        self.stdout.write(f"{total} objects in {seconds:.1f} s; WARC files in {directory}:")
        for info in closed:
            self.stdout.write(f"  {info.name} ({info.size} bytes, {info.records} records)")
        self.stdout.write(f"Crawl log: {directory / 'crawl.log'}")
        if any(crawl.broken for crawl in crawls):
            sys.exit(1)
