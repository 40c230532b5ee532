"""Why jobs and sites failed, in plain words, for the monitoring page and the job pages.

Failures are explained from what the crawl left behind, as codes rather than words: a site's
``stop_reason`` and ``report`` (``broken``: the crawler itself broke; ``error_code``: a
``harvest.crawler.outcomes.CrawlError``), and the site's first crawl log lines, whose negative
statuses and ``error:<code>:<text>`` annotations carry the ``FetchError`` of each fetch without an
answer (the address guard of ``webarchive.netguard``, DNS, refused connections, timeouts, TLS…).
Lines written before the codes (``error:<text>``) are explained from their status alone. The log is
read only for the sites that look failed, in one bounded pass per job. A failed job says why as a
``JobFailure`` code (``Job.failure``; a site the watchdog ended, in its report's ``error_code``);
jobs that failed before the codes are recognised by their (English) words.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Q
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext as _

from harvest.choices import JobFailure, JobStatus, SiteState, StopReason
from harvest.crawler.crawllog import NO_ANSWER, fetch_error
from harvest.crawler.outcomes import CrawlError, FetchError
from harvest.models import Job, JobConfiguration
from harvest.selectors import crawl_log_lines

logger = logging.getLogger(__name__)

FAILURE_HOURS = 24  # "failures in the last day"
FAILURES_SHOWN = 100  # rows of each failure list; the counts are of all of them
# The failed site crawls are counted up to this many, then shown as "more than": a day when a
# snapshot's sites failed by tens of thousands costs the page what a quiet day costs.
FAILED_SITES_COUNTED = 1000
LOG_LINES_PER_SITE = 20  # a failed site's first crawl log lines: its robots.txt and seeds are there
LOG_SCAN_LINES = 500_000  # lines of a job's crawl log read at most, looking for failed sites
PREREQUISITES = 3  # good answers a site gets before its first page: robots.txt and two sitemaps

DANGER, WARNING, INFO = "danger", "warning", "info"
# What a line without an error code (written before the codes) says by its status alone.
_ERROR_OF_STATUS = {
    NO_ANSWER["dns"]: FetchError.DNS,
    NO_ANSWER["refused"]: FetchError.REFUSED,
    NO_ANSWER["timeout"]: FetchError.TIMEOUT,
}


@dataclass(frozen=True)
class Explanation:
    """Why a job or a site failed: what happened (``title``), what to do (``action``), the raw error."""

    cause: str  # a stable name of the cause ("dns", "address-refused", …), for styles and tests
    title: str
    action: str
    detail: str
    severity: str = DANGER


def _says(text: str, *fragments: str) -> bool:
    """Whether ``text`` holds one of the fragments: for the jobs and sites that failed before their
    failure had a code, whose errors are in English."""
    lowered = text.lower()
    return any(fragment.lower() in lowered for fragment in fragments)


# Jobs ------------------------------------------------------------------------------------------


METADATA_FAILURES = (JobFailure.METADATA, JobFailure.METADATA_NO_SPACE, JobFailure.METADATA_PERMISSION)


def _failure_from_words(errors: str) -> str:
    """The failure of a job that ended before the codes, from its (English) errors; "" if none fits."""
    if _says(errors, "metadata could not be written"):
        if _says(errors, "No space left", "Errno 28", "Disk quota exceeded"):
            return JobFailure.METADATA_NO_SPACE
        if _says(errors, "Permission denied", "Errno 13", "Read-only file system"):
            return JobFailure.METADATA_PERMISSION
        return JobFailure.METADATA
    if _says(errors, "in the crawler itself"):
        return JobFailure.CRAWLER_BROKEN
    if _says(errors, "made progress for"):
        return JobFailure.STALLED
    return ""


def explain_job_failure(job: Job) -> Explanation | None:
    """Why ``job`` failed (or was stopped); None for a job with nothing to explain."""
    errors = job.errors.strip()
    if job.status != JobStatus.FAILED and not errors:
        if job.status == JobStatus.STOPPED:
            stopped = date_format(timezone.localtime(job.stop_requested_at), "DATETIME_FORMAT")
            return _operator_stop(
                _("The job was stopped by an operator on %(when)s.") % {"when": stopped}, detail=""
            )
        return None
    failure = job.failure or _failure_from_words(errors)
    if failure in METADATA_FAILURES:
        if failure == JobFailure.METADATA_NO_SPACE:
            title = _("The job's crawl log and reports could not be written: the disk is full.")
            action = _(
                "Free space on the disk that holds HARVEST_WARC_DIR and HARVEST_SPOOL_DIR (or move them), "
                "then resubmit the job. Its WARC files written so far are kept."
            )
        elif failure == JobFailure.METADATA_PERMISSION:
            title = _("The job's crawl log and reports could not be written: the worker may not write there.")
            action = _(
                "Give the user running the crawl workers write access to HARVEST_WARC_DIR and "
                "HARVEST_SPOOL_DIR, then resubmit the job."
            )
        else:
            title = _("The job's crawl log and reports could not be written at its end.")
            action = _("Check the disk and folders of HARVEST_WARC_DIR on the worker, then resubmit the job.")
        return Explanation("metadata", title, action, errors)
    if failure == JobFailure.CRAWLER_BROKEN or job.configurations.filter(report__broken=True).exists():
        return Explanation(
            "crawler-broken",
            _(
                "The crawler itself broke while crawling some of the sites: a fault of our software, "
                "not of the websites."
            ),
            _(
                "Read the crawl worker's log around the end of the job (“site crawl of … failed”, with the "
                "traceback), report it to the developers with the text below, then resubmit the job."
            ),
            errors,
        )
    if failure == JobFailure.STALLED:
        return Explanation(
            "stalled",
            _("The job stopped moving: no site made progress and no crawl worker of its queue reported."),
            _(
                "The watchdog failed it. Check that a worker consumes the job's queue (the worker table "
                "above) and can reach the database, then resubmit the job."
            ),
            errors,
        )
    if errors:
        return _unknown(errors)
    return Explanation(
        "unknown",
        _("The job failed without recording why."),
        _("Look at its sites below and at the crawl worker's log around its end, then resubmit it."),
        _("No error was recorded."),
    )


def _operator_stop(title: str, *, detail: str) -> Explanation:
    return Explanation(
        "operator",
        title,
        _(
            "Nothing to repair: what was harvested before the stop is kept. Resubmit the job or run the "
            "harvest again to go on."
        ),
        detail,
        INFO,
    )


def _unknown(detail: str) -> Explanation:
    return Explanation(
        "unknown",
        _("It failed with an error this page does not recognise."),
        _(
            "Read the error below and the crawl log of the site; if it names a fault of the crawler, "
            "report it with the crawl worker's log."
        ),
        detail,
    )


# Sites -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLine:
    """The fields of a crawl log line that explain a failure."""

    status: int
    url: str
    hop_path: str
    annotations: str

    @classmethod
    def parse(cls, line: str) -> LogLine | None:
        fields = line.rstrip("\n").split(" ")
        if len(fields) < 11:
            return None
        try:
            status = int(fields[1])
        except ValueError:
            return None
        return cls(status, fields[3].replace("%20", " "), fields[4], fields[10].replace("%20", " "))

    @property
    def error_code(self) -> FetchError | None:
        """Why the fetch got no answer: its code, or what the status says for a line without one."""
        code, _text = fetch_error(self.annotations)
        return code or _ERROR_OF_STATUS.get(self.status)

    @property
    def error(self) -> str:
        """The fetch error in the crawler's words ("connection refused", …), or ""."""
        return fetch_error(self.annotations)[1]

    @property
    def is_robots_txt(self) -> bool:
        return self.url.endswith("/robots.txt")


def looks_failed(entry: JobConfiguration) -> bool:
    """Whether an ended site is worth explaining (its log is read only for these): it failed, was cut
    short, recorded an error, or got some errors and hardly any good answer: no more than its
    prerequisites (robots.txt and sitemaps), which answer even when every page fails. The log decides."""
    if entry.state != SiteState.ENDED:
        return False
    if entry.stop_reason in (StopReason.FAILED, StopReason.TIME_LIMIT, StopReason.OPERATOR) or entry.error:
        return True
    return entry.error_count > 0 and entry.urls_done - entry.error_count <= PREREQUISITES


def site_log_lines(job_id: int, sites: set[str]) -> dict[str, list[str]]:
    """The first LOG_LINES_PER_SITE crawl log lines of each of ``sites`` in one pass over the job's log
    (at most LOG_SCAN_LINES lines read); a missing or unreadable log gives nothing."""
    found: dict[str, list[str]] = defaultdict(list)
    wanted = set(sites)
    try:
        for number, line in enumerate(crawl_log_lines(job_id)):
            if not wanted or number >= LOG_SCAN_LINES:
                break
            fields = line.split(" ", 10)
            if len(fields) > 9 and fields[9] in wanted:
                found[fields[9]].append(line + "\n")
                if len(found[fields[9]]) >= LOG_LINES_PER_SITE:
                    wanted.discard(fields[9])
    except OSError:
        pass
    return dict(found)


def _site_name(entry: JobConfiguration) -> str:
    return entry.domain.name


def explain_site_failure(entry: JobConfiguration, log_lines: list[str] | None = None) -> Explanation | None:
    """Why the site crawl of ``entry`` failed or was cut short; None for a site that went well.

    ``log_lines``: its first crawl log lines (:func:`site_log_lines`); read here when not given.
    """
    if entry.state != SiteState.ENDED:
        return None
    report = entry.report or {}
    error = entry.error.strip()
    code = report.get("error_code")
    if report.get("broken") or code == CrawlError.BROKEN:
        return Explanation(
            "crawler-broken",
            _("The crawler itself broke on this site: a fault of our software, not of the website."),
            _(
                "Read the crawl worker's log at the time this site ended (“site crawl of %(site)s failed”, "
                "with the traceback) and report it with the error below; then resubmit the job."
            )
            % {"site": _site_name(entry)},
            error or _("No error was recorded."),
        )
    stalled = report.get("error_code") == JobFailure.STALLED or (
        not report and _says(error, "Stopped by the watchdog")  # ended before the codes
    )
    if entry.stop_reason == StopReason.FAILED and stalled:
        return Explanation(
            "stalled",
            _("The site stopped moving: its crawl worker stopped reporting, and the watchdog failed it."),
            _(
                "The worker was probably stopped, killed or cut off from the database. Check the workers "
                "of the job's queue, then resubmit the job."
            ),
            error,
        )
    if not looks_failed(entry):
        return None
    if log_lines is None:
        log_lines = site_log_lines(entry.job_id, {_site_name(entry)}).get(_site_name(entry), [])
    lines = [parsed for parsed in map(LogLine.parse, log_lines) if parsed is not None]
    from_log = _explain_from_log(entry, lines)
    if from_log is not None:
        return from_log
    if entry.stop_reason == StopReason.TIME_LIMIT:
        return Explanation(
            "time-limit",
            _("The site was still being crawled when the job's time limit came: it is incomplete."),
            _(
                "Nothing is broken. If the site matters, give the harvest more time (the template's time "
                "limit) or fewer sites per job, or raise its request rate if the site allows."
            ),
            error,
            WARNING,
        )
    if entry.stop_reason == StopReason.OPERATOR:
        return _operator_stop(_("The site was stopped by an operator."), detail=error)
    statuses = {int(code): count for code, count in (report.get("status_codes") or {}).items()}
    if entry.urls_done and statuses and all(code >= 400 for code in statuses):
        codes = ", ".join(f"{code}: {count}" for code, count in sorted(statuses.items()))
        return Explanation(
            "all-failed",
            _("Every URL of the site answered with an HTTP error: nothing useful was collected."),
            _(
                "Open the seed in a browser: the site may be down, moved, or refusing crawlers. Fix the "
                "seed or retry later."
            ),
            error or _("HTTP statuses: %(codes)s") % {"codes": codes},
        )
    if code == CrawlError.NO_SEED_FETCHED or (entry.urls_done == 0 and entry.error_count):
        return Explanation(
            "no-seed",
            _("None of the site's seeds could be fetched: no answer came from the website."),
            _("Search this site's crawl log for its seeds' lines: they say what went wrong for each."),
            error,
        )
    if code == CrawlError.NO_VALID_SEED:
        return Explanation(
            "no-valid-seed",
            _("The site has no seed that is a valid http(s) URL, so nothing was crawled."),
            _("Correct the seed list of its domain configuration, then run the harvest again."),
            error,
        )
    if error or entry.stop_reason == StopReason.FAILED:
        return _unknown(error or _("No error was recorded."))
    return None


def _explain_from_log(entry: JobConfiguration, lines: list[LogLine]) -> Explanation | None:
    """The cause read from the site's first log lines: its seeds' failures, else the first failure."""
    # A fetch the crawl itself ended (an operator's stop, the time limit) explains nothing: the stop
    # reason does.
    lines = [line for line in lines if line.error_code != FetchError.INTERRUPTED]
    seeds = [line for line in lines if line.hop_path == "-"]
    failed = [line for line in seeds if line.status < 0 or line.status >= 400]
    if not failed:
        # A seed that answered well: a failure of another URL does not explain the site, except a
        # network failure of every URL (the seed's line may be past the lines read).
        if seeds or not lines or not all(line.status < 0 for line in lines):
            return None
        failed = [line for line in lines if not line.is_robots_txt] or lines
    line = failed[0]
    detail = f"{line.url}: {line.error or line.status}"
    if entry.error:
        detail = f"{entry.error}\n{detail}"
    code = line.error_code
    if line.status == NO_ANSWER["robots"]:
        return Explanation(
            "robots",
            _("The site's robots.txt forbids our crawler to fetch its seed."),
            _(
                "Ask the site's owner to allow the crawler, or, if legal deposit allows, set the "
                "configuration's template to ignore robots.txt for this domain."
            ),
            f"{line.url}: robots.txt",
            WARNING,
        )
    if code == FetchError.REFUSED:
        return Explanation(
            "address-refused",
            _("The crawler refused to connect: the site's name points to a private or local address."),
            _(
                "A public website never has such an address: the seed or its DNS record is wrong, or the "
                "site is internal. Correct the seed; only a deployment that must crawl private networks "
                "sets WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES."
            ),
            detail,
        )
    if code == FetchError.DNS:
        return Explanation(
            "dns",
            _("The site's name does not exist (or the DNS did not answer): no address to connect to."),
            _(
                "Check the spelling of the seed and whether the domain has expired; if many sites fail "
                "this way at once, check the DNS resolver of the crawl workers."
            ),
            detail,
        )
    if code == FetchError.TLS:
        return Explanation(
            "tls",
            _("The secure (HTTPS) connection to the site failed."),
            _(
                "The site's certificate or TLS setup is broken or too old, or the seed uses https:// on a "
                "server that speaks plain http. Try the seed with http://, or leave HARVEST_VERIFY_TLS off."
            ),
            detail,
        )
    if code == FetchError.CONNECTION_REFUSED:
        return Explanation(
            "connection-refused",
            _("The site's server refused the connection: nothing listens at that address and port."),
            _("The website is down or the seed names a wrong port. Retry later, then check the seed."),
            detail,
        )
    if code in (FetchError.TIMEOUT, FetchError.CONNECT_TIMEOUT):
        return Explanation(
            "timeout",
            _("The site's server did not answer in time."),
            _(
                "The site is slow, overloaded or blocking us. Retry later; lower the request rate of its "
                "configuration; raise HARVEST_CONNECT_TIMEOUT / HARVEST_READ_TIMEOUT only if it is just slow."
            ),
            detail,
        )
    if line.status < 0:
        return Explanation(
            "connection",
            _("The connection to the site failed or broke before a complete answer."),
            _("Retry later; if it lasts, open the seed in a browser to see what the server does."),
            detail,
        )
    return _http_explanation(line, detail)


def _http_explanation(line: LogLine, detail: str) -> Explanation:
    status = line.status
    if status in (401, 403):
        title = _("The site refused to give its seed to our crawler (HTTP %(status)d).")
        action = _(
            "The page needs a login or the site blocks crawlers. Ask the site's owner to allow the "
            "crawler's user agent, or choose a public seed."
        )
    elif status in (404, 410):
        title = _("The seed does not exist on the site (HTTP %(status)d): the page was moved or removed.")
        action = _("Find the page's new address and correct the seed (its selection record or seed list).")
    elif status == 429:
        title = _("The site asked our crawler to slow down (HTTP 429, too many requests).")
        action = _("Lower the request rate of the domain's configuration, then run it again.")
    elif status >= 500:
        title = _("The site's server failed to answer the seed (HTTP %(status)d, a server error).")
        action = _("The website has a problem of its own: retry later.")
    else:
        title = _("The seed answered with an HTTP error (%(status)d).")
        action = _("Open the seed in a browser and correct it if needed.")
    return Explanation("seed-http", title % {"status": status}, action, detail)


# Failures of the last day ----------------------------------------------------------------------


@dataclass
class Failures:
    """The failed jobs and sites of the last ``hours``, each with its explanation."""

    jobs: list[tuple[Job, Explanation]]
    job_count: int
    sites: list[tuple[JobConfiguration, Explanation]]
    site_count: int  # at most FAILED_SITES_COUNTED
    hours: int
    more_sites: bool = False  # more than site_count failed


def failed_sites() -> Q:
    return Q(state=SiteState.ENDED) & (Q(stop_reason=StopReason.FAILED) | ~Q(error=""))


def recent_failures(*, now=None, hours: int = FAILURE_HOURS) -> Failures:
    """Failed jobs (ended in the last ``hours``) and failed site crawls, with their explanations."""
    since = (now or timezone.now()) - timedelta(hours=hours)
    jobs = Job.objects.filter(status=JobStatus.FAILED, ended_at__gte=since)
    jobs = jobs.select_related("harvest_definition").defer("template_settings", "crawler_traps")
    sites = (
        JobConfiguration.objects.filter(failed_sites(), ended_at__gte=since)
        .select_related("domain", "job")
        .defer("job__template_settings", "job__crawler_traps")
        .order_by("-ended_at", "-pk")
    )
    shown_jobs = list(jobs.order_by("-ended_at", "-pk")[:FAILURES_SHOWN])
    shown_sites = list(sites[:FAILURES_SHOWN])
    site_count = sites[: FAILED_SITES_COUNTED + 1].count()
    return Failures(
        jobs=[(job, explain_job_failure(job) or _unknown(job.errors)) for job in shown_jobs],
        job_count=jobs.count(),
        sites=list(zip(shown_sites, explain_sites(shown_sites), strict=True)),
        site_count=min(site_count, FAILED_SITES_COUNTED),
        hours=hours,
        more_sites=site_count > FAILED_SITES_COUNTED,
    )


def explain_sites(entries: list[JobConfiguration]) -> list[Explanation | None]:
    """:func:`explain_site_failure` of each entry, reading each job's crawl log once (and, when the
    entries were read without their report, the reports of the ended ones in one query)."""
    deferred = [
        entry
        for entry in entries
        if entry.state == SiteState.ENDED and "report" in entry.get_deferred_fields()
    ]
    if deferred:
        reports = dict(
            JobConfiguration.objects.filter(pk__in=[entry.pk for entry in deferred]).values_list(
                "pk", "report"
            )
        )
        for entry in deferred:
            entry.report = reports.get(entry.pk) or {}
    by_job: dict[int, set[str]] = defaultdict(set)
    for entry in entries:
        if looks_failed(entry):
            by_job[entry.job_id].add(_site_name(entry))
    logs = {job_id: site_log_lines(job_id, sites) for job_id, sites in by_job.items()}
    return [
        explain_site_failure(entry, logs.get(entry.job_id, {}).get(_site_name(entry), []))
        for entry in entries
    ]
