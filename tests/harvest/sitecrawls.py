"""Site crawls of a job moved through their states by the services, as a crawl worker moves them.

For the tests of the pages and the API that show progress: no crawler runs, the
numbers are the test's own.
"""

from __future__ import annotations

from harvest.choices import SiteState
from harvest.crawler.site import SiteProgress
from harvest.models import Job, JobConfiguration
from harvest.services.crawls import site_crawl_begin, site_crawl_end, site_crawl_progress
from harvest.services.launcher import launch_due
from harvest.services.planning import definition_run_now

DOMAINS = ["alpha.fr", "beta.fr", "gamma.fr"]


def launch(definition) -> Job:
    """A new run of the definition, as the launcher makes it: one submitted job."""
    before = set(Job.objects.values_list("pk", flat=True))
    definition_run_now(definition=definition)
    launch_due()
    return Job.objects.exclude(pk__in=before).get(harvest_definition=definition)


def entry_of(job, domain) -> JobConfiguration:
    return job.configurations.get(domain__name=domain)


def progress(
    urls_done=0, urls_queued=0, bytes=0, errors=0, rate=0.0, current_url="", stop_reason="", error=""
) -> SiteProgress:
    return SiteProgress(
        urls_done=urls_done,
        urls_queued=urls_queued,
        bytes=bytes,
        errors=errors,
        rate=rate,
        current_url=current_url,
        stop_reason=stop_reason,
        error=error,
    )


def run(job, domain, **numbers) -> JobConfiguration:
    """Start the site crawl of a domain and report its progress."""
    entry = entry_of(job, domain)
    assert site_crawl_begin(entry_id=entry.pk, worker="worker-1") is not None
    site_crawl_progress(entry_id=entry.pk, job_id=job.pk, progress=progress(**numbers))
    return entry


def end(job, domain, reason="completed", *, links=None, report=None, **numbers) -> bool:
    """End the site crawl of a domain (started first if it is not); True when that ended the job.

    ``report`` is the crawler's report of the site (empty by default).
    """
    entry = entry_of(job, domain)
    if entry.state == SiteState.QUEUED:
        site_crawl_begin(entry_id=entry.pk, worker="worker-1")
    return site_crawl_end(
        entry_id=entry.pk,
        stop_reason=reason,
        progress=progress(**numbers),
        report=report or {},
        external_links=links or {},
    )
