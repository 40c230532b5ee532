"""Statistics of ended jobs: computed from the site crawls, checked against what was archived."""

from __future__ import annotations

from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader

from harvest.choices import JobStatus, StopReason
from harvest.models import Dimension, JobStatistics
from harvest.services.statistics import job_statistics_compute, size_class, size_classes, tld_of
from harvest.worker import run_site_crawl
from storage.models import WarcFile
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.statistics_jobs import three_site_job
from webarchive.testsite import TestSite


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=5, pages=25, hosts=3, large_file_bytes=50_000) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


def lines(statistics, dimension) -> dict[str, tuple[int, int, int]]:
    return {
        line.key: (line.urls, line.bytes, line.domains)
        for line in statistics.lines.filter(dimension=dimension)
    }


def entity_length(record) -> int:
    """The entity body's length as sent (de-chunked, still content-encoded), what the crawler counts."""
    stream = record.raw_stream
    if (record.http_headers.get_header("Transfer-Encoding") or "").lower() == "chunked":
        stream = ChunkedDataReader(stream, decomp_type=None)
    return len(stream.read())


def archived(job) -> tuple[Counter, Counter, Counter, Counter, int]:
    """Read back from the job's WARC files: answers by MIME type and status, their payload bytes."""
    mimes, statuses, mime_bytes, status_bytes, revisits = Counter(), Counter(), Counter(), Counter(), 0
    answers, sizes = [], {}
    for warc_file in WarcFile.objects.filter(job=job).order_by("pk"):
        with open(warc_file.path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type not in ("response", "revisit") or record.http_headers is None:
                    continue
                digest = record.rec_headers.get_header("WARC-Payload-Digest")
                if record.rec_type == "response":
                    sizes[digest] = entity_length(record)
                status = record.http_headers.get_statuscode()
                mime = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
                answers.append((record.rec_type, digest, status, mime or "unknown"))
    for kind, digest, status, mime in answers:
        size = sizes.get(digest, 0)  # a revisit counts its original's payload, fetched again
        revisits += kind == "revisit"
        mimes[mime] += 1
        statuses[status] += 1
        mime_bytes[mime] += size
        status_bytes[status] += size
    return mimes, statuses, mime_bytes, status_bytes, revisits


@pytest.mark.django_db
def test_the_statistics_of_a_crawl_are_what_its_warc_files_hold(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/")), ("127.0.0.3", site.host_url(2, "/"))])
    for entry in job.configurations.order_by("pk"):
        run_site_crawl(entry.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors

    statistics = job_statistics_compute(job_id=job.pk)

    mimes, statuses, mime_bytes, status_bytes, revisits = archived(job)
    assert statistics.urls == sum(mimes.values()) > 0
    assert statistics.duplicate_urls == revisits
    assert {key: urls for key, (urls, _, _) in lines(statistics, Dimension.MIME).items()} == dict(mimes)
    assert {key: size for key, (_, size, _) in lines(statistics, Dimension.MIME).items()} == dict(mime_bytes)
    by_status = lines(statistics, Dimension.STATUS)
    assert {key: urls for key, (urls, _, _) in by_status.items()} == {str(k): v for k, v in statuses.items()}
    assert {key: size for key, (_, size, _) in by_status.items()} == {
        str(k): v for k, v in status_bytes.items()
    }
    assert statistics.bytes == sum(mime_bytes.values())
    families = lines(statistics, Dimension.MIME_FAMILY)
    assert families["text"][0] == sum(n for mime, n in mimes.items() if mime.startswith("text/"))
    assert lines(statistics, Dimension.STATUS_CLASS)["2xx"][0] == sum(
        n for code, n in statuses.items() if code.startswith("2")
    )
    # Every URL of the ground truth is counted under the type and status the site serves it with.
    served = [site.generated.resource(url) for url in site.ground_truth(policy="host")]
    types = Counter(resource.content_type.split(";")[0] for resource in served if resource)
    for mime, count in types.items():
        assert mimes[mime] >= count, mime
    for status, count in Counter(resource.status if resource else 404 for resource in served).items():
        assert statuses[str(status)] >= count, status
    # Both sites are crawled by address; both completed.
    assert lines(statistics, Dimension.TLD) == {"IP": (statistics.urls, statistics.bytes, 2)}
    assert lines(statistics, Dimension.STOP_REASON)[StopReason.COMPLETED][2] == 2
    assert statistics.domains == statistics.sites == 2
    assert statistics.year == statistics.ended_at.year and statistics.duration_seconds >= 0
    assert statistics.kind == job.harvest_definition.kind


@pytest.fixture
def job_of_three(db):
    return three_site_job()


def test_a_job_has_its_totals_and_distributions_and_one_row_per_collection(job_of_three):
    job, collection = job_of_three
    whole = job_statistics_compute(job_id=job.pk)

    assert (whole.urls, whole.bytes, whole.domains, whole.sites) == (25, 4500, 2, 3)
    assert (whole.duplicate_urls, whole.duplicate_bytes, whole.new_bytes) == (4, 40, 4460)
    assert whole.errors == 2 and whole.budget_stopped == 1
    assert lines(whole, Dimension.TLD) == {"fr": (25, 4500, 2), "uk": (0, 0, 1)}
    assert lines(whole, Dimension.MIME) == {"text/html": (20, 3500, 2), "image/png": (5, 1000, 1)}
    assert lines(whole, Dimension.MIME_FAMILY) == {"text": (20, 3500, 2), "image": (5, 1000, 1)}
    assert lines(whole, Dimension.STATUS_CLASS) == {"2xx": (23, 4500, 2), "4xx": (2, 0, 1)}
    assert lines(whole, Dimension.SIZE_CLASS) == {"< 10": (5, 500, 2), "10-10,000": (20, 4000, 1)}
    assert lines(whole, Dimension.STOP_REASON) == {
        "completed": (5, 500, 1),
        "config-object-limit": (20, 4000, 1),
        "failed": (0, 0, 1),
    }
    assert lines(whole, Dimension.SEED_SOURCE) == {"selection": (25, 4500, 2), "other": (0, 0, 1)}

    share = JobStatistics.objects.get(job=job, collection=collection)
    assert (share.urls, share.bytes, share.sites, share.domains) == (25, 4500, 2, 2)
    assert lines(share, Dimension.TLD) == {"fr": (25, 4500, 2)}
    assert JobStatistics.objects.filter(job=job).count() == 2


def test_computing_again_replaces_the_rows(job_of_three):
    job, _ = job_of_three
    first = job_statistics_compute(job_id=job.pk)
    count = first.lines.count()
    again = job_statistics_compute(job_id=job.pk)
    assert JobStatistics.objects.filter(job=job).count() == 2
    assert again.lines.count() == count and (again.urls, again.bytes) == (first.urls, first.bytes)


@pytest.mark.django_db
def test_a_job_that_has_not_ended_has_no_statistics():
    job = job_for_sites([("alpha.fr", "http://alpha.fr/")])
    assert job_statistics_compute(job_id=job.pk) is None
    assert not JobStatistics.objects.exists()


def test_size_classes_follow_their_setting(settings):
    assert [label for label, _ in size_classes()] == ["< 10", "10-10,000", "> 10,000"]
    assert [size_class(n) for n in (0, 9, 10, 10_000, 10_001)] == [
        "< 10",
        "< 10",
        "10-10,000",
        "10-10,000",
        "> 10,000",
    ]
    settings.REPORT_SIZE_CLASSES = [100, 1000, 5000]
    assert (
        size_class(150) == "100-1,000" and size_class(2000) == "1,000-5,000" and size_class(9000) == "> 5,000"
    )


def test_top_level_domains():
    assert [tld_of(name) for name in ("bnf.fr", "bbc.co.uk", "127.0.0.1", "[::1]", "EXAMPLE.ORG.")] == [
        "fr",
        "uk",
        "IP",
        "IP",
        "org",
    ]


def test_the_command_computes_again_and_refuses_bad_input(job_of_three):
    job, _ = job_of_three
    out = StringIO()
    call_command("compute_statistics", str(job.pk), stdout=out)
    assert "1 job(s)" in out.getvalue() and JobStatistics.objects.filter(job=job).exists()
    call_command("compute_statistics", "--all", stdout=out)
    call_command("compute_statistics", "--year", str(job.ended_at.year), stdout=out)
    assert JobStatistics.objects.filter(job=job).count() == 2

    open_job = job_for_sites([("delta.fr", "http://delta.fr/")])
    for args, message in [
        ((), "one of them"),
        (("--all", str(job.pk)), "one of them"),
        (("999999",), "No job with id 999999"),
        ((str(open_job.pk),), "has not ended"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("compute_statistics", *args, stdout=out)
    assert not JobStatistics.objects.filter(job=open_job).exists()
