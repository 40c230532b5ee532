"""What runs inside a crawl worker process: the shared crawl engine, the job's WARC writer and crawl log.

One Celery task per site crawl (``harvest.crawl_site``) calls :func:`run_site_crawl`.
The task's thread only hands the site to the process's :class:`~harvest.crawler.engine.CrawlEngine`
and then, every HARVEST_PROGRESS_INTERVAL seconds, writes the site's progress to the database
and looks for a stop request; the fetching is done by the engine's fetch threads, shared by
all the sites of the process. Several sites of one job in one process share one WARC writer
and one crawl log (each closed when the last of them ends).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from harvest import hooks
from harvest.choices import DedupPolicy
from harvest.crawler import defaults, warc
from harvest.crawler.browser import BEHAVIOURS, BrowserPool
from harvest.crawler.crawllog import CrawlLog, abandoned
from harvest.crawler.dedup import MemoryDedupIndex
from harvest.crawler.engine import CrawlEngine
from harvest.crawler.fetch import Fetcher
from harvest.crawler.recovery import recover_open_files
from harvest.crawler.rendering import RENDER_OFF
from harvest.crawler.site import OPERATOR, SiteCrawl, SiteSettings
from harvest.models import ExternalLink, Job
from harvest.selectors import (
    crawl_log_dir,
    crawl_log_uri,
    job_frozen_settings,
    job_harvest_infos,
    job_seeds_text,
)
from harvest.services.crawls import site_crawl_begin, site_crawl_end, site_crawl_progress
from harvest.services.news import news_site_settings
from harvest.steering import steer_sites
from harvest.validators import trap_list
from webarchive import netguard
from webarchive.addresses import address_policy

logger = logging.getLogger(__name__)


_engine: CrawlEngine | None = None
_engine_lock = threading.Lock()
_browsers: BrowserPool | None = None
_jobs: dict[int, _JobFiles] = {}
_jobs_lock = threading.Lock()


def engine() -> CrawlEngine:
    """This process's crawl engine, started on first use (and its nameservers, if it has its own)."""
    global _engine
    with _engine_lock:
        if _engine is None:
            netguard.use_nameservers(settings.HARVEST_DNS_SERVERS)
            _engine = CrawlEngine(threads=settings.HARVEST_CRAWL_THREADS, name="crawl")
        _engine.ip_interval = settings.HARVEST_IP_MIN_INTERVAL  # read again: a test may change it
        return _engine


def browsers() -> BrowserPool:
    """This process's browsers for the pages to render, started when a page first needs one."""
    global _browsers
    with _engine_lock:
        if _browsers is None:
            _browsers = browser_pool()
        return _browsers


def browser_pool(size: int | None = None) -> BrowserPool:
    """A pool of browsers as the settings describe it."""
    return BrowserPool(
        size=size or settings.HARVEST_BROWSERS,
        executable=settings.HARVEST_BROWSER_EXECUTABLE,
        heap_mb=settings.HARVEST_BROWSER_HEAP_MB,
    )


def worker_host() -> str:
    """This machine's name as it goes into WARC file names: ``WEBARCHIVE_MACHINE`` (letters and digits,
    checked when the settings load), the name its files are ingested under."""
    return settings.MACHINE_NAME


def fetcher(digest_algorithm: str = defaults.DIGEST_ALGORITHM) -> Fetcher:
    return Fetcher(
        user_agent=settings.HARVEST_USER_AGENT,
        address_check=address_policy().refusal,
        connect_timeout=settings.HARVEST_CONNECT_TIMEOUT,
        read_timeout=settings.HARVEST_READ_TIMEOUT,
        max_response_bytes=settings.HARVEST_MAX_RESPONSE_BYTES,
        max_fetch_seconds=settings.HARVEST_MAX_FETCH_SECONDS,
        verify_tls=settings.HARVEST_VERIFY_TLS,
        digest_algorithm=digest_algorithm,
    )


def warcinfo(description: str) -> dict[str, str]:
    return {
        "software": "webarchive harvest crawler (harvest/crawler)",
        "hostname": socket.gethostname(),
        "http-header-user-agent": settings.HARVEST_USER_AGENT,
        "operator": settings.HARVEST_CONTACT_URL,
        "description": description,
        "format": "WARC File Format 1.1",
        "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
    }


@dataclass
class _JobFiles:
    """The WARC writer and crawl log of one job in this process, and the sites using them."""

    job_id: int
    description: str  # of the job, for the warcinfo records of its files
    writer: warc.WarcWriter
    crawl_log: CrawlLog  # this process's part of the job's log, rolled into a WARC file now and then
    captures: object  # what hooks.capture_recorder gives: record(info), flush()
    users: int = 0
    log_rolled_at: float = field(default_factory=time.monotonic)
    written: MemoryDedupIndex = field(default_factory=MemoryDedupIndex)  # for revisits within the job
    closed: list = field(default_factory=list)  # WarcFileInfo of files closed, not registered yet
    lock: threading.Lock = field(default_factory=threading.Lock)

    def file_closed(self, info) -> None:  # called from fetch threads when a file rolls
        with self.lock:
            self.closed.append(info)

    def register_closed(self) -> None:
        """Index the records written since the last call (within seconds of their capture), then
        register the files closed meanwhile; roll the crawl log when it is old enough."""
        self.captures.flush()
        with self.lock:
            infos, self.closed = self.closed, []
            roll = time.monotonic() - self.log_rolled_at >= settings.HARVEST_CRAWL_LOG_ROLL_SECONDS
            if roll:
                self.log_rolled_at = time.monotonic()
        register_files(infos, job_id=self.job_id)
        if roll:
            rolled = self.crawl_log.roll(crawl_log_file(self.job_id))
            store_crawl_log(self.job_id, self.description, rolled)


def crawl_log_file(job_id: int) -> Path:
    """A new file for this process's part of a job's crawl log, named after the machine and process (its
    lock tells a file left by a killed process: :func:`recover_crawl_logs`)."""
    return crawl_log_dir(job_id) / f"crawl-{settings.MACHINE_NAME}-{os.getpid()}-{next(_log_serial)}.log"


_log_serial = itertools.count()


def store_crawl_log(
    job_id: int, description: str, path: Path, *, writer: warc.WarcWriter | None = None
) -> None:
    """Put a part of a job's crawl log that is no longer written to into a WARC metadata record (in
    ``writer``, else in a small file of its own, closed and registered at once), then delete it: the log
    is kept, replicated and searched through storage like the rest of the job, from any machine."""
    try:
        empty = path.stat().st_size == 0
    except FileNotFoundError:
        return
    if not empty:
        own = writer is None
        holder: list = []
        if own:
            captures = hooks.capture_recorder.call(job_id=job_id, directory=settings.HARVEST_WARC_DIR)
            writer = _job_writer(
                job_id, f"{description}: crawl log", on_file_closed=holder.append, on_record=captures.record
            )
        with path.open("rb") as log:
            writer.write_metadata(target_uri=crawl_log_uri(job_id), content_type="text/plain", payload=log)
        if own:
            writer.close()
            captures.flush()
            register_files(holder, job_id=job_id)
    path.unlink(missing_ok=True)


def recover_crawl_logs() -> int:
    """Store the crawl logs left on this machine by crawl processes that died (a killed worker's): what
    they wrote before dying is kept with the job's files. A file still locked is being written. Returns
    how many."""
    stored = 0
    for path in Path(settings.HARVEST_SPOOL_DIR).glob(f"jobs/*/crawl-{settings.MACHINE_NAME}-*.log"):
        fd = abandoned(path)
        if fd is None:
            continue
        try:
            job = Job.objects.filter(pk=int(path.parent.name)).select_related("harvest_definition").first()
            if job is not None:
                store_crawl_log(job.pk, job_description(job), path)
                stored += 1
        finally:
            os.close(fd)
    return stored


def register_files(infos, *, job_id: int | None) -> None:
    """Hand closed WARC files to the storage side (it registers them and sends their ingest chain)."""
    if infos:
        hooks.warc_files_closed.call(infos=list(infos), job_id=job_id, recovered=False)


def job_description(job) -> str:
    return f"{job.harvest_definition.name}, run {job.run_number}, job {job.pk}"


def _job_writer(job_id: int, description: str, *, on_file_closed, on_record=None) -> warc.WarcWriter:
    """A WARC writer for a job's files in HARVEST_WARC_DIR."""
    return warc.WarcWriter(
        directory=settings.HARVEST_WARC_DIR,
        prefix=settings.HARVEST_WARC_PREFIX,
        job_id=job_id,
        host=worker_host(),
        max_size=settings.HARVEST_WARC_MAX_SIZE,
        warcinfo=warcinfo(description),
        on_file_closed=on_file_closed,
        on_record=on_record,
    )


def _acquire(job) -> _JobFiles:
    with _jobs_lock:
        files = _jobs.get(job.pk)
        if files is None:
            holder: list[_JobFiles] = []
            captures = hooks.capture_recorder.call(job_id=job.pk, directory=settings.HARVEST_WARC_DIR)
            description = job_description(job)
            writer = _job_writer(
                job.pk,
                description,
                on_file_closed=lambda info: holder[0].file_closed(info),
                on_record=captures.record,
            )
            files = _JobFiles(job.pk, description, writer, CrawlLog(crawl_log_file(job.pk)), captures)
            holder.append(files)
            _jobs[job.pk] = files
        files.users += 1
        return files


def _release(files: _JobFiles) -> None:
    with _jobs_lock:
        files.users -= 1
        last = files.users == 0
        if last:
            del _jobs[files.job_id]
    if last:
        # This process's part of the log goes into the job's last file here, before it is closed.
        rolled = files.crawl_log.roll(None)
        try:
            store_crawl_log(files.job_id, files.description, rolled, writer=files.writer)
        finally:
            files.writer.close()
    files.register_closed()


def recover_warc_files() -> int:
    """Close and register the WARC files left open by a killed worker (a torn last record is cut off)."""
    directory = Path(settings.HARVEST_WARC_DIR)
    if not directory.is_dir():
        return 0
    recovered = recover_open_files(directory, log=logger.warning)
    for info in recovered:
        match = warc.FILE_NAME.search(info.name)
        # The dead writer's last captures were never indexed: the storage side indexes the whole file
        # again; its ingest chain is sent by the storage check, as for any file left behind.
        job_id = int(match["job"]) if match else None
        hooks.warc_files_closed.call(infos=[info], job_id=job_id, recovered=True)
    return len(recovered)


_recovered = threading.Event()


def _recover_once() -> None:
    """At a process's first site crawl: the files a killed predecessor left (a job's end looks again)."""
    if not _recovered.is_set():
        with _jobs_lock:
            if not _recovered.is_set():
                recover_warc_files()
                recover_crawl_logs()
                _recovered.set()


def site_settings(entry, job) -> SiteSettings:
    """What the crawler is told for one JobConfiguration: the job's frozen template, the entry's limits."""
    template = job.template_settings or {}
    deadline = None
    if job.max_seconds and job.started_at:
        deadline = job.started_at.timestamp() + job.max_seconds
    return SiteSettings(
        seeds=entry.seed_urls,
        domain=entry.domain.name,
        depth_policy=template.get("depth_policy", defaults.DEPTH_POLICY),
        clicks=template.get("clicks", defaults.CLICKS),
        max_hops=template.get("max_hops", defaults.MAX_HOPS),
        accept_rules=list(template.get("accept_rules", [])),
        reject_rules=list(template.get("reject_rules", [])),
        crawler_traps=list(job.crawler_traps or []) + trap_list(entry.crawler_traps),
        obey_robots=template.get("obey_robots", True),
        min_delay=template.get("min_delay", defaults.MIN_DELAY),
        max_delay=template.get("max_delay", defaults.MAX_DELAY),
        delay_factor=template.get("delay_factor", defaults.DELAY_FACTOR),
        max_request_rate=entry.max_request_rate,
        extract_javascript=template.get("extract_javascript", True),
        extract_sitemaps=template.get("extract_sitemaps", True),
        extract_forms=template.get("extract_forms", False),
        stream_variants=template.get("stream_variants", defaults.STREAM_VARIANTS),
        dedup_verify=template.get("dedup_verify", False),
        **render_settings(template),
        max_objects=entry.max_objects,
        max_bytes=entry.max_bytes,
        deadline=deadline,
        **trap_limits(),
        **news_site_settings(job),
    )


def render_settings(template: dict) -> dict:
    """The browser capture settings of a frozen template, as SiteSettings takes them."""
    return {
        "render": template.get("render", RENDER_OFF),
        "behaviours": tuple(template.get("behaviours", BEHAVIOURS)),
        "render_page_seconds": float(template.get("render_page_seconds", defaults.RENDER_PAGE_SECONDS)),
        "render_behaviour_seconds": float(
            template.get("render_behaviour_seconds", defaults.RENDER_BEHAVIOUR_SECONDS)
        ),
        "viewport": (
            int(template.get("viewport_width", defaults.VIEWPORT[0])),
            int(template.get("viewport_height", defaults.VIEWPORT[1])),
        ),
        "render_cache_bytes": settings.HARVEST_BROWSER_CACHE_BYTES,
    }


def trap_limits() -> dict:
    """The deployment's trap limits and hostile-site bounds, as SiteSettings takes them."""
    return {
        "max_queued_urls": settings.HARVEST_MAX_QUEUED_URLS,
        "extract_max_bytes": settings.HARVEST_EXTRACT_MAX_BYTES,
        "extract_max_html_bytes": settings.HARVEST_EXTRACT_MAX_HTML_BYTES,
        "extract_max_links": settings.HARVEST_EXTRACT_MAX_LINKS,
        "max_path_repeats": settings.HARVEST_TRAP_PATH_REPEATS,
        "max_per_directory": settings.HARVEST_TRAP_PER_DIRECTORY,
        "max_per_script": settings.HARVEST_TRAP_PER_SCRIPT,
        "calendar_years_back": settings.HARVEST_TRAP_CALENDAR_YEARS_BACK,
        "calendar_years_ahead": settings.HARVEST_TRAP_CALENDAR_YEARS_AHEAD,
    }


@dataclass
class RunningSite:
    """A site crawl of this process, from its start to its end (what the watcher needs of it)."""

    entry_id: int
    job_id: int
    crawl: SiteCrawl
    handle: object  # the engine's SiteHandle
    files: _JobFiles
    dedup: object | None  # a dedup index whose database questions some thread must answer
    reported: tuple = ()  # the numbers of its last progress written (by a crawl worker's consumer)
    reported_at: float = 0.0  # when (time.monotonic())
    rules_serial: int = 0  # the job's rules_serial its crawl has the rules of (harvest.steering)


def site_crawl_start(
    entry_id: int, *, redelivered: bool = False, worker: str = "", dedup_questions=None
) -> RunningSite | None:
    """Mark a site crawl running and hand it to this process's engine; None if there is nothing to
    do (ended already, running elsewhere, its job stopped). Returns at once: the engine crawls.

    ``dedup_questions``: a queue for the database questions of the site's dedup index, answered by
    threads of the caller's (otherwise by whoever calls the index's ``serve``)."""
    _recover_once()
    worker = worker or f"{socket.gethostname()}:{threading.get_native_id()}"
    entry = site_crawl_begin(entry_id=entry_id, worker=worker, redelivered=redelivered)
    if entry is None:
        return None
    job = entry.job
    template = job.template_settings or {}
    files = _acquire(job)
    try:
        policy = template.get("dedup", DedupPolicy.OFF)
        dedup = None
        if policy != DedupPolicy.OFF:
            dedup = hooks.dedup_index.call(
                policy=policy,
                harvest_definition_id=job.harvest_definition_id,
                memory=files.written,
                questions=dedup_questions,
            )
        site = site_settings(entry, job)
        crawl = SiteCrawl(
            site,
            session=fetcher(template.get("digest_algorithm", defaults.DIGEST_ALGORITHM)).session(),
            writer=files.writer,
            crawl_log=files.crawl_log,
            dedup=dedup,
            browsers=browsers() if site.render != RENDER_OFF else None,
        )
        # Paused (the job or the site): it starts paused, after a worker's restart too (harvest.steering).
        handle = engine().submit(crawl, paused=entry.paused_at is not None or job.paused_at is not None)
    except BaseException:
        _release(files)
        raise
    return RunningSite(entry_id, job.pk, crawl, handle, files, dedup, rules_serial=job.rules_serial)


def release_site(site: RunningSite) -> None:
    """A site let go unfinished (its worker stops): its share of the job's files is closed."""
    _release(site.files)


def site_crawl_finish(site: RunningSite) -> str:
    """After the engine has ended a site: close its share of the job's files, record its end."""
    _release(site.files)
    crawl = site.crawl
    site_crawl_end(
        entry_id=site.entry_id,
        stop_reason=crawl.stop_reason,
        progress=crawl.progress(),
        report=crawl.report(),
        external_links=dict(crawl.external_links),
        external_sources=crawl.external_sources,
        broken=crawl.broken,
    )
    return f"{crawl.site}: {crawl.stop_reason}, {crawl.urls_done} URLs, {crawl.bytes} bytes"


def run_site_crawl(entry_id: int, *, redelivered: bool = False) -> str:
    """Crawl one domain configuration of a job to its end in this thread, watching it meanwhile;
    returns what happened, for the task's log (``harvest.crawl_site`` run by a task pool; a crawl
    worker's consumer (harvest.consumer) watches all its sites from one thread instead)."""
    site = site_crawl_start(entry_id, redelivered=redelivered)
    if site is None:
        return "nothing to do"
    handle, crawl = site.handle, site.crawl
    try:
        while not _wait(handle, settings.HARVEST_PROGRESS_INTERVAL, site.dedup):
            handle.stop_if_overdue()
            if site_crawl_progress(entry_id=entry_id, job_id=site.job_id, progress=crawl.progress()):
                handle.stop(OPERATOR)
            steer_sites([site])
            site.files.register_closed()
    except BaseException:
        _release(site.files)
        raise
    return site_crawl_finish(site)


def _wait(handle, seconds: float, dedup) -> bool:
    """Wait up to ``seconds`` for the crawl to end (True), answering its dedup questions meanwhile."""
    if dedup is None:
        return handle.wait(seconds)
    deadline = time.monotonic() + seconds
    while not handle.wait(0):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        dedup.serve(min(remaining, 0.05))
    return True


def write_job_metadata(job) -> None:
    """At the end of a job, as WARC metadata records (NetarchiveSuite's metadata ARC): the settings and
    seeds it froze, its per-domain report, harvest infos and external links. Its crawl log is already in
    its files, one metadata record per part written by each crawl process (:func:`store_crawl_log`)."""
    recover_warc_files()
    recover_crawl_logs()
    holder: list = []
    captures = hooks.capture_recorder.call(job_id=job.pk, directory=settings.HARVEST_WARC_DIR)
    writer = _job_writer(
        job.pk, f"{job_description(job)}: metadata", on_file_closed=holder.append, on_record=captures.record
    )
    base = f"metadata://webarchive/job/{job.pk}"
    entries = job.configurations.select_related("domain").order_by("pk")
    with writer:
        writer.write_metadata(
            target_uri=f"{base}/template-settings.json",
            content_type="application/json",
            payload=_json(job_frozen_settings(job)),
        )
        writer.write_metadata(
            target_uri=f"{base}/seeds.txt", content_type="text/plain", payload=job_seeds_text(job).encode()
        )
        report = [
            {
                "domain": entry.domain.name,
                "configuration": entry.configuration_id,
                "state": entry.state,
                "stop_reason": entry.stop_reason,
                "attempts": entry.attempts,
                **(entry.report or {}),
            }
            for entry in entries.iterator(chunk_size=2000)
        ]
        writer.write_metadata(
            target_uri=f"{base}/domain-report.json",
            content_type="application/json",
            payload=_json(report),
        )
        writer.write_metadata(
            target_uri=f"{base}/harvest-infos.json",
            content_type="application/json",
            payload=_json(job_harvest_infos(job)),
        )
        lines = [
            f"{link.count} {link.url} {link.entry.domain.name}\n"
            for link in _external_links(job).iterator(chunk_size=2000)
        ]
        writer.write_metadata(
            target_uri=f"{base}/external-links.txt",
            content_type="text/plain",
            payload="".join(lines).encode(),
        )
    captures.flush()
    register_files(holder, job_id=job.pk)


def _json(value) -> bytes:
    return json.dumps(value, indent=1, sort_keys=True).encode()


def _external_links(job):
    return (
        ExternalLink.objects.filter(entry__job=job).select_related("entry__domain").order_by("-count", "url")
    )
