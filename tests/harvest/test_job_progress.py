"""A job's progress at volume: counters of its ended sites kept on its row (exact after ends, stops,
the watchdog, resubmissions and the data migration), the sites of a job paged by keyset, and the domain
search with its indexes and bounded count."""

from __future__ import annotations

import importlib
import re
from datetime import timedelta
from html import unescape
from urllib.parse import parse_qs

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import Count, Q, Sum
from django.urls import reverse
from django.utils import timezone

from harvest.choices import JobStatus, SiteState, StopReason
from harvest.filtersets import DomainFilterSet
from harvest.models import Domain, ExternalLink, HarvestInfo, Job, JobConfiguration
from harvest.models.jobs import ENDED_COUNTERS, SITE_PROGRESS_FIELDS
from harvest.selectors import job_sites, job_sites_page, job_totals
from harvest.services.crawls import job_stop, jobs_fail_stalled, site_crawl_begin, site_crawls_progress
from harvest.services.jobs import harvest_info_record, job_resubmit
from harvest.services.planning import definition_configurations_change
from tests.harvest.sitecrawls import end, launch, progress, run
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

NAMES = [
    "alpha.fr",
    "beta.fr",
    "delta.fr",
    "epsilon.fr",
    "eta.fr",
    "gamma.fr",
    "iota.fr",
    "kappa.fr",
    "zeta.fr",
]


@pytest.fixture
def job(make_domain, selective):
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in NAMES]
    )
    return launch(selective)


def summed(job: Job) -> dict:
    """The job's progress summed over every one of its site crawls, as the pages did before."""
    sites = JobConfiguration.objects.filter(job=job)
    ended, running = Q(state=SiteState.ENDED), Q(state=SiteState.RUNNING)
    totals = sites.aggregate(
        sites_total=Count("pk"),
        sites_queued=Count("pk", filter=Q(state=SiteState.QUEUED)),
        sites_running=Count("pk", filter=running),
        sites_ended=Count("pk", filter=ended),
        rate=Sum("rate", filter=running),
        **{field: Sum(field) for field in SITE_PROGRESS_FIELDS},
    )
    return {name: value or 0 for name, value in totals.items()}


def totals_of(job: Job) -> dict:
    return job_totals(Job.objects.get(pk=job.pk))


def test_the_counters_are_exact_as_sites_run_and_end(job):
    assert totals_of(job) == summed(job) and summed(job)["sites_queued"] == len(NAMES)
    run(job, "alpha.fr", urls_done=5, urls_queued=7, bytes=100, errors=1, rate=2.0)
    run(job, "beta.fr", urls_done=3, urls_queued=1, bytes=50, rate=0.5)
    assert totals_of(job) == summed(job)
    end(job, "alpha.fr", urls_done=11, bytes=300, errors=2)
    end(job, "gamma.fr", "object-limit", urls_done=4, bytes=40)  # queued, then started and ended
    end(job, "gamma.fr", urls_done=99)  # delivered twice: ended already, counted once
    totals = totals_of(job)
    assert totals == summed(job)
    assert (totals["sites_ended"], totals["sites_running"], totals["urls_done"]) == (2, 1, 18)
    for name in NAMES:
        end(job, name, urls_done=1, bytes=10)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert totals_of(job) == summed(job)
    assert totals_of(job)["sites_ended"] == len(NAMES)


def test_a_sites_end_records_its_harvest_info_and_links_once_and_corrects_one_recorded_by_hand(job):
    alpha, beta = (job.configurations.get(domain__name=name) for name in ("alpha.fr", "beta.fr"))
    harvest_info_record(
        job=job, configuration=beta.configuration, object_count=1, byte_count=1, stop_reason="failed"
    )
    end(job, "alpha.fr", "object-limit", links={"http://elsewhere.example/": 3}, urls_done=11, bytes=300)
    end(job, "beta.fr", urls_done=4, bytes=40)
    end(job, "alpha.fr", urls_done=99, links={"http://again.example/": 1})  # delivered twice: nothing
    infos = {info.domain.name: info for info in HarvestInfo.objects.filter(job=job).select_related("domain")}
    assert set(infos) == {"alpha.fr", "beta.fr"}
    assert (infos["alpha.fr"].object_count, infos["alpha.fr"].byte_count) == (11, 300)
    assert infos["alpha.fr"].stop_reason == JobConfiguration.objects.get(pk=alpha.pk).stop_reason
    assert (infos["beta.fr"].object_count, infos["beta.fr"].stop_reason) == (4, StopReason.COMPLETED)
    assert list(ExternalLink.objects.filter(entry__job=job).values_list("url", "count")) == [
        ("http://elsewhere.example/", 3)
    ]
    # The one recorded by hand was corrected in place, not doubled.
    assert HarvestInfo.objects.filter(job=job, configuration=beta.configuration).count() == 1


def test_a_redelivered_site_is_counted_once_with_its_last_attempt(job):
    entry = run(job, "alpha.fr", urls_done=50, urls_queued=5, bytes=5000)
    assert site_crawl_begin(entry_id=entry.pk, worker="worker-2", redelivered=True) is not None
    end(job, "alpha.fr", urls_done=7, bytes=70)
    totals = totals_of(job)
    assert totals == summed(job)
    assert (totals["urls_done"], totals["bytes_done"], totals["sites_ended"]) == (7, 70, 1)


def test_the_counters_are_exact_after_a_stop(job, user_with_role):
    engineer = user_with_role(Role.ENGINEER)
    run(job, "alpha.fr", urls_done=5, urls_queued=7, bytes=100)
    end(job, "beta.fr", urls_done=3, bytes=30)
    job = job_stop(job=job, user=engineer)  # the queued sites end at once
    assert totals_of(job) == summed(job)
    assert totals_of(job)["sites_ended"] == len(NAMES) - 1
    end(job, "alpha.fr", "operator", urls_done=6, urls_queued=4, bytes=120)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert totals_of(job) == summed(job)
    assert totals_of(job)["urls_queued"] == 4  # a stopped site keeps what it had left


def test_the_counters_are_exact_after_the_watchdog_and_a_resubmission(job, settings):
    settings.HARVEST_STALL_SECONDS = 600
    end(job, "alpha.fr", urls_done=5, bytes=50)
    run(job, "beta.fr", urls_done=2, urls_queued=3)
    assert [failed.pk for failed in jobs_fail_stalled(now=timezone.now() + timedelta(seconds=601))] == [
        job.pk
    ]
    assert totals_of(job) == summed(job)
    assert totals_of(job)["sites_ended"] == len(NAMES)

    copy = job_resubmit(job=Job.objects.get(pk=job.pk))
    assert totals_of(copy) == summed(copy)
    assert totals_of(copy)["sites_queued"] == len(NAMES) and totals_of(copy)["urls_done"] == 0
    end(copy, "alpha.fr", urls_done=8, bytes=80)
    assert totals_of(copy) == summed(copy)
    assert totals_of(job) == summed(job)  # the resubmitted job keeps its own


def test_the_data_migration_fills_the_counters_of_existing_jobs(job):
    run(job, "alpha.fr", urls_done=5, urls_queued=7)
    end(job, "beta.fr", urls_done=3, bytes=30, errors=2)
    end(job, "gamma.fr", "object-limit", urls_done=9, bytes=90)
    expected = {job.pk: summed(job)}
    Job.objects.update(**dict.fromkeys(ENDED_COUNTERS, 0))  # as the jobs were before the migration

    migration = importlib.import_module("harvest.migrations.0021_job_progress")
    migration.fill_counters(apps, connection.schema_editor())

    for pk, totals in expected.items():
        assert totals_of(Job.objects.get(pk=pk)) == totals


def test_the_running_jobs_page_and_monitoring_show_the_counted_totals(as_role, job):
    run(job, "alpha.fr", urls_done=40, urls_queued=60, bytes=2048, errors=2, rate=1.5)
    end(job, "beta.fr", urls_done=10, bytes=1024, errors=1)
    client = as_role(Role.ENGINEER)
    html = client.get(reverse("harvest:job_running")).content.decode()
    row = re.search(rf'<tr data-job="{job.pk}">.*?</tr>', html, re.S)[0]
    assert re.search(r'class="job-sites">\s*1 / 7 / 1\s*<', row)
    assert re.search(r'class="text-end job-errors">3<', row)
    html = client.get(reverse("harvest:monitoring"), HTTP_HX_REQUEST="true").content.decode()
    row = re.search(rf'<tr data-job="{job.pk}">.*?</tr>', html, re.S)[0]
    assert "1 / 7 / 1" in row


# Keyset pages of a job's sites ---------------------------------------------------------------


def follow(client, job, params: dict, direction: str) -> tuple[list[list[str]], dict]:
    """The pages of sites met by following the ``direction`` links (next or previous) from ``params``,
    and the parameters of the last one."""
    pages = []
    while True:
        html = client.get(job.get_absolute_url(), params).content.decode()
        pages.append(re.findall(r'data-domain="([^"]+)"', html))
        link = re.search(rf'class="page-link site-page-{direction}" href="\?([^"#]+)', html)
        if link is None:
            return pages, params
        params = {key: values[0] for key, values in parse_qs(unescape(link[1])).items()}


@pytest.mark.parametrize("state", [None, SiteState.QUEUED])
def test_the_sites_are_paged_by_keyset_without_gaps_or_duplicates(as_role, job, monkeypatch, state):
    monkeypatch.setattr("harvest.views.jobs.SITES_PER_PAGE", 2)
    run(job, "kappa.fr", urls_done=1)
    run(job, "beta.fr", urls_done=1)
    end(job, "alpha.fr", urls_done=3)
    end(job, "zeta.fr", urls_done=3)
    client = as_role(Role.ENGINEER)
    params = {"state": state} if state else {}
    ordered = [entry.domain.name for entry in job_sites(job).filter(**params)]
    if state is None:
        assert ordered[:2] == ["beta.fr", "kappa.fr"] and ordered[-2:] == ["alpha.fr", "zeta.fr"]

    forward, last = follow(client, job, params, "next")
    assert [name for page in forward for name in page] == ordered
    assert len(forward) > 2 and all(len(page) == 2 for page in forward[:-1])
    # Back from the last page by the previous links: the same pages, in reverse.
    backward, _first = follow(client, job, last, "previous")
    assert backward == forward[::-1]


def test_a_key_that_cannot_be_read_gives_the_first_page(job):
    first = job_sites_page(job_sites(job), size=3)
    for key in ("", "x", "9.1.a.fr", "0.x.a.fr", "1.2."):
        assert job_sites_page(job_sites(job), after=key, size=3) == first
    assert first.previous is None and first.next is not None


# The domain search ---------------------------------------------------------------------------


@pytest.fixture
def domains(make_domain):
    for name in ("example.fr", "example.com", "my-example.fr", "exam.org", "sample.fr", "examples.net"):
        make_domain(name)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("exam*", ["exam.org", "example.com", "example.fr", "examples.net"]),
        ("example.fr", ["example.fr", "my-example.fr"]),  # part of the name, as before
        ("EXAMPLE.FR", ["example.fr", "my-example.fr"]),
        ("*.fr", ["example.fr", "my-example.fr", "sample.fr"]),
        ("ex%", []),  # % is plain text
        ("ample", ["example.com", "example.fr", "examples.net", "my-example.fr", "sample.fr"]),
    ],
)
def test_the_domain_search_finds_what_it_found_before(domains, as_role, query, expected):
    names = list(
        DomainFilterSet({"q": query}, queryset=Domain.objects.all()).qs.values_list("name", flat=True)
    )
    assert names == expected
    html = as_role(Role.CURATOR).get(reverse("harvest:domain_list"), {"q": query}).content.decode()
    for name in expected:
        assert f">{name}<" in html


def test_a_search_that_matches_very_many_domains_is_counted_up_to_a_limit(domains, as_role, monkeypatch):
    monkeypatch.setattr("harvest.views.domains.COUNT_LIMIT", 3)
    client = as_role(Role.CURATOR)
    html = client.get(reverse("harvest:domain_list"), {"q": "exam"}).content.decode()
    assert 'id="domain-count"' in html and "More than 3 results" in html
    html = client.get(reverse("harvest:domain_list"), {"q": "sample"}).content.decode()
    assert 'id="domain-count"' not in html and "1 result" in html


def test_a_search_reads_its_matches_once_and_pages_them_in_name_order(make_domain, as_role, monkeypatch):
    """The matches are read once for the count and the page (the trigram index is costly at volume);
    every page is in name order, whether the matches are counted whole or beyond the limit."""
    from django.test.utils import CaptureQueriesContext

    names = [f"paged-{n:03d}.fr" for n in range(120, 0, -1)]  # made in reverse order
    for name in names:
        make_domain(name)
    client = as_role(Role.CURATOR)

    def page(number: int) -> list[str]:
        html = client.get(reverse("harvest:domain_list"), {"q": "paged", "page": number}).content.decode()
        return re.findall(r">(paged-\d{3}\.fr)<", html)

    with CaptureQueriesContext(connection) as queries:
        first = page(1)
    searches = [q["sql"] for q in queries.captured_queries if "paged" in q["sql"]]
    assert len(searches) == 1, searches
    assert first == sorted(names)[:50]
    assert page(3) == sorted(names)[100:]
    monkeypatch.setattr("harvest.views.domains.COUNT_LIMIT", 100)  # beyond the limit: "more than"
    assert page(2) == sorted(names)[50:100]
    html = client.get(reverse("harvest:domain_list"), {"q": "paged"}).content.decode()
    assert "More than 100 results" in html


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's indexes and plans")
def test_on_postgresql_the_searches_and_the_failed_sites_have_their_indexes(domains):
    def plan(sql: str, params=()) -> str:
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask which index serves it
            cursor.execute("EXPLAIN " + sql, params)
            return "\n".join(row[0] for row in cursor.fetchall())

    def search(query: str) -> str:
        return plan(*DomainFilterSet({"q": query}, queryset=Domain.objects.all()).qs.query.sql_with_params())

    assert "harvest_domain_name_trgm" in search("example.fr")  # part of a name
    assert "harvest_domain_name_trgm" in search("*.fr")
    prefix = search("exam*")  # the name's own (pattern) index, never the trigram one
    assert "Index" in prefix and "harvest_domain_name_trgm" not in prefix
    failed = JobConfiguration.objects.filter(
        Q(state=SiteState.ENDED) & (Q(stop_reason=StopReason.FAILED) | ~Q(error="")),
        ended_at__gte=timezone.now(),
    ).order_by("-ended_at")
    assert "harvest_jobconf_failed_ended" in plan(*failed.query.sql_with_params())


def test_the_progress_of_many_sites_is_written_in_batches_and_an_ended_site_is_left_as_it_ended(
    job, monkeypatch
):
    """A crawl worker reports every site it holds at once: each running site gets its own numbers,
    whatever the batch it falls in; a site that ended meanwhile keeps what its end wrote."""
    monkeypatch.setattr("harvest.services.crawls.PROGRESS_BATCH", 2)
    names = NAMES[:5]
    entries = [run(job, name) for name in names]
    end(job, "delta.fr", urls_done=3, bytes=30)
    reports = [
        (
            entry.pk,
            job.pk,
            progress(
                urls_done=n + 10, urls_queued=n, bytes=n * 100, rate=n / 2, current_url=f"https://{name}/{n}"
            ),
        )
        for n, (entry, name) in enumerate(zip(entries, names, strict=True))
    ]
    assert site_crawls_progress(reversed(reports)) == set()
    for n, (entry, name) in enumerate(zip(entries, names, strict=True)):
        entry.refresh_from_db()
        if name == "delta.fr":
            assert (entry.state, entry.urls_done, entry.bytes_done, entry.current_url) == (
                SiteState.ENDED,
                3,
                30,
                "",
            )
            continue
        assert (entry.urls_done, entry.urls_queued, entry.bytes_done, entry.rate, entry.current_url) == (
            n + 10,
            n,
            n * 100,
            n / 2,
            f"https://{name}/{n}",
        )
        assert entry.progress_at is not None and abs(entry.progress_at - timezone.now()) < timedelta(
            minutes=1
        )
    job_stop(job=Job.objects.get(pk=job.pk))
    assert site_crawls_progress(reports) == {entry.pk for entry in entries}
