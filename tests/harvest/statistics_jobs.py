"""Ended jobs with chosen numbers, for the statistics and reports tests (no crawler runs)."""

from __future__ import annotations

from harvest.choices import StopReason
from harvest.crawler.site import SiteProgress
from harvest.models import DomainConfiguration
from harvest.services.crawls import site_crawl_begin, site_crawl_end
from tests.factories import CollectionFactory
from tests.harvest.crawljobs import job_for_sites


def end_site(
    job, domain, *, urls, size, reason=StopReason.COMPLETED, mimes=None, statuses=None, duplicates=0
):
    entry = job.configurations.get(domain__name=domain)
    site_crawl_begin(entry_id=entry.pk, worker="worker-1")
    mimes = {"text/html": [urls, size]} if mimes is None else mimes
    statuses = {"200": urls} if statuses is None else statuses
    progress = SiteProgress(
        urls_done=urls,
        urls_queued=0,
        bytes=size,
        errors=sum(n for code, n in statuses.items() if int(code) >= 400),
        rate=0.0,
        current_url="",
        stop_reason=reason,
        error="",
        duplicates=duplicates,
        duplicate_bytes=duplicates * 10,
    )
    report = {"mime_types": mimes, "status_codes": statuses, "status_bytes": {"200": size}}
    return site_crawl_end(
        entry_id=entry.pk, stop_reason=reason, progress=progress, report=report, external_links={}
    )


def three_site_job(names=("alpha.fr", "beta.fr", "gamma.co.uk")):
    """A job over three domains (two .fr, one .co.uk), the first two selected in a collection."""
    job = job_for_sites([(name, f"http://{name}/") for name in names])
    collection = CollectionFactory()
    DomainConfiguration.objects.filter(domain__name__in=names[:2]).update(source_collection=collection)
    end_site(job, names[0], urls=5, size=500)
    end_site(
        job,
        names[1],
        urls=20,
        size=4000,
        reason=StopReason.CONFIG_OBJECT_LIMIT,
        mimes={"text/html": [15, 3000], "image/png": [5, 1000]},
        statuses={"200": 18, "404": 2},
        duplicates=4,
    )
    assert end_site(job, names[2], urls=0, size=0, reason=StopReason.FAILED, mimes={}, statuses={})
    job.refresh_from_db()
    return job, collection
