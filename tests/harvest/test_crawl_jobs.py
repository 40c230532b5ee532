"""Site crawls of a job run in this process (the task's function, no broker): the database side.

What a crawl leaves in the database — the job's status, HarvestInfo, progress, the WARC
files, the crawl log, the external links — and the stop, the watchdog and the dispatch.
The same with a real worker and broker is in test_crawl_worker.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
import re2
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from harvest.choices import SITE_CRAWL_TRANSITIONS, JobStatus, SiteState, StopReason
from harvest.crawler.crawllog import search
from harvest.models import ExternalLink, HarvestInfo
from harvest.selectors import crawl_log_dir, crawl_log_lines
from harvest.services.crawls import (
    job_dispatch,
    job_stop,
    jobs_fail_stalled,
    site_crawl_begin,
    site_crawl_progress,
)
from harvest.services.domains import configuration_save
from harvest.services.jobs import job_resubmit
from harvest.services.launcher import definition_launch
from harvest.services.planning import definition_run_now, definition_save, template_save
from harvest.worker import run_site_crawl
from storage.models import WarcFile
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.sitecrawls import end
from webarchive.permissions import Role
from webarchive.testsite import TestSite

WARCIO = Path(sys.executable).with_name("warcio")


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=3, pages=30, hosts=3, large_file_bytes=100_000, slow_seconds=0.01) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


def records(paths) -> list:
    found = []
    for path in paths:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                found.append(
                    (
                        record.rec_type,
                        record.rec_headers.get_header("WARC-Target-URI"),
                        record.content_stream().read() if record.rec_type == "metadata" else b"",
                    )
                )
    return found


def check_job_metadata(job, found) -> None:
    """The job's metadata records, in their order, hold what the database holds about the job."""
    base = f"metadata://webarchive/job/{job.pk}/"
    # The crawl log went into the job's files in parts (one per crawl process's share of the job),
    # before the metadata file: together they hold a line for every URL of every site.
    log = b"".join(body for kind, uri, body in found if kind == "metadata" and uri == base + "crawl.log")
    sites = {line.split(" ")[9] for line in log.decode().splitlines()}
    assert sites == set(job.configurations.values_list("domain__name", flat=True))
    metadata = [(uri, body) for kind, uri, body in found if kind == "metadata" and uri != base + "crawl.log"]
    assert [uri.removeprefix(base) for uri, _ in metadata] == [
        "template-settings.json",
        "seeds.txt",
        "domain-report.json",
        "harvest-infos.json",
        "external-links.txt",
    ]
    bodies = {uri.removeprefix(base): body for uri, body in metadata}
    frozen = json.loads(bodies["template-settings.json"])
    assert frozen["job"] == job.pk and frozen["run"] == job.run_number
    assert frozen["harvest_definition"] == job.harvest_definition.name
    assert frozen["template_id"] == job.template_id and frozen["template_version"] == job.template_version
    assert frozen["template_settings"] == job.template_settings
    assert frozen["template_settings"]["template"] == job.template.name
    assert frozen["crawler_traps"] == job.crawler_traps and frozen["max_seconds"] == job.max_seconds
    # The template was edited after the job was made: the record keeps what the job froze.
    assert frozen["template_settings"]["depth_policy"] == "host"
    assert job.template.depth_policy == "domain" and job.template.version == job.template_version + 1

    expected_seeds = []
    for entry in job.configurations.select_related("domain", "configuration").order_by("domain__name"):
        expected_seeds.append(
            f"# {entry.domain.name} {entry.configuration.name}"
            f" max-objects={entry.max_objects} max-bytes={entry.max_bytes}"
        )
        expected_seeds += entry.seeds.split()
    assert bodies["seeds.txt"].decode().splitlines() == expected_seeds
    assert len(expected_seeds) == 2 * job.configurations.count()

    infos = json.loads(bodies["harvest-infos.json"])
    rows = HarvestInfo.objects.filter(job=job).order_by("domain__name")
    assert len(infos) == rows.count() == job.configurations.count()
    for written, info in zip(infos, rows, strict=True):
        assert written == {
            "domain": info.domain.name,
            "configuration": info.configuration_id,
            "configuration_name": info.configuration.name,
            "object_count": info.object_count,
            "byte_count": info.byte_count,
            "stop_reason": info.stop_reason,
            "recorded_at": info.created_at.isoformat(),
        }


@pytest.mark.django_db
def test_a_job_crawls_its_sites_and_records_what_they_yielded(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    entries = list(job.configurations.order_by("pk"))
    template_save(template=job.template, depth_policy="domain")  # after the job froze its settings
    for entry in entries:
        run_site_crawl(entry.pk)

    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    assert job.started_at and job.ended_at
    for entry in entries:
        entry.refresh_from_db()
        info = HarvestInfo.objects.get(job=job, configuration=entry.configuration)
        assert entry.state == SiteState.ENDED and entry.attempts == 1
        assert info.stop_reason == StopReason.COMPLETED
        assert info.object_count == entry.urls_done > 0
        assert info.byte_count == entry.bytes_done > 0
        lines = list(search(crawl_log_lines(job.pk), site=entry.domain.name, limit=100_000))
        assert info.object_count == sum(1 for line in lines if int(line.split(" ")[1]) > 0)

    files = list(WarcFile.objects.filter(job=job))
    assert files and all(Path(f.path).exists() for f in files)
    for warc_file in files:
        check = subprocess.run([str(WARCIO), "check", warc_file.path], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    found = records(f.path for f in files)
    # The same payload at a second URL is a revisit of the first (the template deduplicates).
    captured = {uri for kind, uri, _ in found if kind in ("response", "revisit")}
    assert not site.ground_truth(policy="host") - captured
    metadata = {uri.rsplit("/", 1)[-1]: body for kind, uri, body in found if kind == "metadata"}
    assert set(metadata) == {
        "template-settings.json",
        "seeds.txt",
        "crawl.log",
        "domain-report.json",
        "harvest-infos.json",
        "external-links.txt",
    }
    assert site.url("/site/").encode() in metadata["crawl.log"]
    assert b'"stop_reason": "completed"' in metadata["domain-report.json"]
    check_job_metadata(job, found)
    # The 127.0.0.1 site links to the external host: kept with counts, per site.
    external = ExternalLink.objects.filter(entry__job=job, entry__domain__name="127.0.0.1")
    assert external.exists() and all(link.count >= 1 for link in external)
    assert all(link.url.startswith(site.host_url(2)) for link in external)


@pytest.mark.django_db
def test_a_site_crawl_delivered_again_after_it_ended_does_nothing(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/s0/"))], depth_policy="page")
    entry = job.configurations.get()
    run_site_crawl(entry.pk)
    first = HarvestInfo.objects.get(job=job)
    assert run_site_crawl(entry.pk) == "nothing to do"
    entry.refresh_from_db()
    assert entry.attempts == 1 and HarvestInfo.objects.get(job=job).object_count == first.object_count


@pytest.mark.django_db
def test_a_site_crawl_that_ended_does_not_start_again_even_redelivered():
    job = job_for_sites([("127.0.0.1", "http://127.0.0.1/"), ("127.0.0.3", "http://127.0.0.3/")])
    assert end(job, "127.0.0.1") is False  # the other site is still queued: the job goes on
    entry = job.configurations.get(domain__name="127.0.0.1")
    assert site_crawl_begin(entry_id=entry.pk, worker="worker-2", redelivered=True) is None
    entry.refresh_from_db()
    assert (entry.state, entry.attempts, entry.worker) == (SiteState.ENDED, 1, "worker-1")
    with pytest.raises(ValidationError, match="A site crawl that is ended cannot become running") as excinfo:
        SITE_CRAWL_TRANSITIONS.apply(entry, SiteState.RUNNING)  # what the service asks its table
    assert excinfo.value.code == "illegal_transition" and entry.state == SiteState.ENDED
    job.refresh_from_db()
    assert job.status == JobStatus.STARTED


@pytest.mark.django_db
def test_limits_give_the_configuration_stop_reason(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    entry = job.configurations.get()
    entry.max_objects = 5
    entry.save()
    run_site_crawl(entry.pk)
    info = HarvestInfo.objects.get(job=job)
    assert (info.stop_reason, info.object_count) == (StopReason.CONFIG_OBJECT_LIMIT, 5)


@pytest.mark.django_db
def test_stopping_a_submitted_job_ends_its_sites_as_operator_and_the_job(site, user_with_role):
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    with pytest.raises(PermissionDenied):  # a curator may look, not stop
        job_stop(job=job, user=user_with_role(Role.CURATOR))
    job = job_stop(job=job, user=user_with_role(Role.ENGINEER))
    assert job.status == JobStatus.STOPPED and job.stop_requested_at and job.ended_at
    assert set(HarvestInfo.objects.filter(job=job).values_list("stop_reason", flat=True)) == {
        StopReason.OPERATOR
    }
    # A site task arriving later finds nothing to do.
    assert run_site_crawl(job.configurations.first().pk) == "nothing to do"
    with pytest.raises(ValidationError, match="Only a submitted or running job can be stopped"):
        job_stop(job=job, user=user_with_role(Role.ENGINEER))


@pytest.mark.django_db
def test_a_stop_request_reaches_a_running_site(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))], min_delay=0.3, max_delay=0.3)
    entry = job.configurations.get()
    # An engineer stops the job while the site runs: here, just before its second progress write.
    calls = []

    def progress_then_stop(**kwargs):
        calls.append(kwargs["progress"].urls_done)
        if len(calls) == 2:
            job_stop(job=job)
        return site_crawl_progress(**kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("harvest.worker.site_crawl_progress", progress_then_stop)
        run_site_crawl(entry.pk)
    entry.refresh_from_db()
    job.refresh_from_db()
    assert entry.stop_reason == StopReason.OPERATOR
    assert job.status == JobStatus.STOPPED
    assert 0 < entry.urls_done < len(site.ground_truth(policy="host"))
    assert entry.urls_queued > 0  # what it still had to do when it stopped: its bar is not full
    assert entry.progress_at is not None
    # A stopped job is run again as a new job with the same sites.
    copy = job_resubmit(job=job)
    job.refresh_from_db()
    assert (job.status, job.resubmitted_as_id) == (JobStatus.RESUBMITTED, copy.pk)
    assert copy.status == JobStatus.SUBMITTED
    assert list(copy.configurations.values_list("domain__name", flat=True)) == ["127.0.0.1"]


@pytest.mark.django_db
def test_the_watchdog_fails_a_job_whose_queue_is_dead_and_the_job_can_be_resubmitted(site, settings):
    settings.HARVEST_STALL_SECONDS = 600
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    entry = job.configurations.get()
    site_crawl_begin(entry_id=entry.pk, worker="gone")  # started, then its worker vanished
    assert jobs_fail_stalled() == []  # not yet
    failed = jobs_fail_stalled(now=timezone.now() + timedelta(seconds=601))
    assert [j.pk for j in failed] == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert "No site of this job made progress for 10 minutes" in job.errors
    assert "crawl-high" in job.errors
    assert HarvestInfo.objects.get(job=job).stop_reason == StopReason.FAILED

    copy = job_resubmit(job=job)
    assert copy.status == JobStatus.SUBMITTED
    run_site_crawl(copy.configurations.get().pk)
    copy.refresh_from_db()
    assert copy.status == JobStatus.DONE


@pytest.mark.django_db
def test_a_job_is_dispatched_once(site, monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(
        "harvest.tasks.crawl_site.apply_async", lambda args, kwargs, queue: sent.append((args, queue))
    )
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    with django_capture_on_commit_callbacks(execute=True):
        assert job_dispatch(job_id=job.pk) == 2
    with django_capture_on_commit_callbacks(execute=True):
        assert job_dispatch(job_id=job.pk) == 0
    job.refresh_from_db()
    assert job.dispatched_at is not None
    entries = sorted(job.configurations.values_list("pk", flat=True))
    assert sorted(sent) == [((pk,), job.queue) for pk in entries]


@pytest.mark.django_db
def test_crawl_log_search_by_site_and_pattern(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    for entry in job.configurations.all():
        run_site_crawl(entry.pk)
    # Each site's part of the log went into the job's WARC files when its crawl ended: read from there.
    path = list(crawl_log_lines(job.pk))
    assert path and not any(crawl_log_dir(job.pk).glob("crawl*.log"))
    external = list(search(path, site="127.0.0.3"))
    assert external and all(line.split(" ")[9] == "127.0.0.3" for line in external)
    css = list(search(path, pattern=r"\.css "))
    assert css and all(".css " in line for line in css)
    assert len(list(search(path, limit=3))) == 3
    with pytest.raises(re2.error):
        list(search(path, pattern="("))
    with pytest.raises(re2.error):  # RE2 runs the patterns: no back-reference, no look-around
        list(search(path, pattern=r"(\S)\1"))
    assert list(search(path, pattern=r"(\S+)+!")) == []  # at once, where Python's re takes minutes


@pytest.mark.django_db
def test_a_snapshot_limit_smaller_than_the_configuration_s_is_the_harvest_s_stop_reason(
    snapshot, make_domain
):
    small = make_domain("small.fr")
    make_domain("large.fr")
    configuration_save(configuration=small.default_configuration, max_objects=100)  # below the harvest's
    snapshot = definition_save(definition=snapshot, max_objects_per_domain=1000, max_bytes_per_domain=10**6)
    definition_run_now(definition=snapshot)
    job = definition_launch(definition_id=snapshot.pk).jobs.get()
    end(job, "small.fr", "object-limit", urls_done=100)
    end(job, "large.fr", "object-limit", urls_done=1000)
    reasons = dict(HarvestInfo.objects.filter(job=job).values_list("domain__name", "stop_reason"))
    assert reasons == {"small.fr": StopReason.CONFIG_OBJECT_LIMIT, "large.fr": StopReason.OBJECT_LIMIT}
