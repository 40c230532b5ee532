"""Period statistics: the reports' domain figures, kept per year and month as jobs end, and the
dashboard rendered once per state of the statistics."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from selectolax.parser import HTMLParser

from harvest.choices import HarvestKind
from harvest.models import HarvestRun, Job, JobStatistics, PeriodStatistics
from harvest.reports import TABLE_CHOICES, report_table
from harvest.services.period_statistics import Period, period_statistics_current
from harvest.services.statistics import job_statistics_compute
from harvest.tasks import refresh_period_statistics
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.statistics_jobs import end_site, three_site_job
from webarchive.csvfiles import csv_stream
from webarchive.permissions import Role

SITE_CRAWLS = "harvest_jobconfiguration"
FIGURES = "[data-figure]"


@pytest.fixture
def year_of_jobs(db, settings):
    """Three jobs of one year over overlapping domains, in two months, and one of the year before."""
    settings.REPORT_SIZE_CLASSES = [10, 30]
    first, _ = three_site_job()  # alpha 5 URLs, beta 20, gamma none
    second, _ = three_site_job()  # the same three domains: alpha 10, beta 40 over the year
    third = job_for_sites([("delta.org", "http://delta.org/")])
    end_site(third, "delta.org", urls=50, size=9000)
    before, _ = three_site_job(names=("epsilon.fr", "zeta.fr", "eta.org"))
    ended = first.ended_at.replace(month=6, day=15, hour=12)  # the same month in any time zone
    Job.objects.filter(pk__in=[first.pk, second.pk]).update(ended_at=ended)
    Job.objects.filter(pk=third.pk).update(ended_at=ended.replace(month=7))
    Job.objects.filter(pk=before.pk).update(ended_at=ended.replace(year=ended.year - 1))
    for job in (first, second, third, before):
        job_statistics_compute(job_id=job.pk)
    return ended.year


def site_crawl_queries(queries) -> list[str]:
    return [query["sql"] for query in queries if SITE_CRAWLS in query["sql"]]


@pytest.mark.parametrize("name", [name for name, _title in TABLE_CHOICES if name != "by-collection"])
def test_every_table_reads_the_same_from_the_period_as_from_the_site_crawls(year_of_jobs, name):
    year = year_of_jobs
    for period, statistics in (
        (Period(year), JobStatistics.objects.filter(collection__isnull=True, year=year)),
        (Period(), JobStatistics.objects.filter(collection__isnull=True)),
    ):
        stored = report_table(name, statistics, limit=100, period=period).rows
        counted = report_table(name, statistics, limit=100).rows
        assert stored == counted, (name, period)


def test_the_period_figures_count_a_domain_once_in_the_class_of_all_its_urls(year_of_jobs):
    year = year_of_jobs
    figures = period_statistics_current(Period(year), Period(year, 6), Period(year, 7))
    # alpha.fr: 5 + 5 URLs; beta.fr: 20 + 20; delta.org: 50 (in July); gamma.co.uk none.
    assert figures[Period(year)].domains == 3
    assert [(row["key"], row["domains"], row["urls"]) for row in figures[Period(year)].size_classes] == [
        ("10-30", 1, 10),
        ("> 30", 2, 90),
    ]
    assert [row["label"] for row in figures[Period(year)].top_domains["urls"]] == [
        "delta.org",
        "beta.fr",
        "alpha.fr",
    ]
    assert figures[Period(year)].kind_domains == {HarvestKind.SELECTIVE.value: 3}
    assert (figures[Period(year, 6)].domains, figures[Period(year, 7)].domains) == (2, 1)


def test_computing_a_job_s_statistics_sends_its_year_and_month_for_refreshing(
    db, django_capture_on_commit_callbacks, monkeypatch
):
    job, _ = three_site_job()
    sent = []
    monkeypatch.setattr("harvest.tasks.refresh_period_statistics.delay", lambda *args: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        job_statistics_compute(job_id=job.pk)
    local = timezone.localtime(job.ended_at)
    definition = job.harvest_definition_id
    assert sent == [(local.year, 0), (local.year, local.month), (local.year, 0, definition)]
    for args in sent:  # what the worker then does
        refresh_period_statistics(*args)
    whole = PeriodStatistics.objects.filter(harvest_definition=None)
    assert whole.get(year=local.year, month=0).domains == 2
    assert whole.get(year=local.year, month=local.month).domains == 2
    assert PeriodStatistics.objects.get(year=local.year, harvest_definition=definition).domains == 2


def test_the_dashboard_reads_no_site_crawl_once_the_periods_are_computed(year_of_jobs, as_role):
    client = as_role(Role.MANAGER)
    for year, month in ((year_of_jobs, 0), (year_of_jobs - 1, 0), (0, 0)):
        refresh_period_statistics(year, month)
    for month in range(1, 13):
        refresh_period_statistics(year_of_jobs, month)
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("reports:dashboard"), {"year": year_of_jobs})
    assert page.status_code == 200
    assert site_crawl_queries(queries) == []
    figures = {node.attributes["data-figure"]: node for node in HTMLParser(page.text).css("[data-figure]")}
    assert figures["domains"].attributes["data-value"] == "3"


def test_new_statistics_show_at_once_with_the_domains_as_of_their_last_count_until_the_worker_adds_them(
    year_of_jobs, as_role, django_capture_on_commit_callbacks, monkeypatch
):
    """The sums move with new statistics at once (neither they nor the rendered page are served stale); the
    domains, whose count takes the worker seconds at volume, say as of when they are counted, and one
    refresh is sent however many pages see them stale; once it has run, they are up to date."""
    client = as_role(Role.MANAGER)
    year = year_of_jobs
    sent = []
    monkeypatch.setattr("harvest.tasks.refresh_period_statistics.delay", lambda *args: sent.append(args))

    def dashboard() -> dict[str, str]:
        with django_capture_on_commit_callbacks(execute=True):
            page = client.get(reverse("reports:dashboard"), {"year": year})
        html = HTMLParser(page.text)
        figures = {
            node.attributes["data-figure"]: node.attributes["data-value"]
            for node in html.css("[data-figure]")
        }
        figures["as of"] = html.css_first("#dashboard-domains-as-of") is not None
        return figures

    first = dashboard()  # computes the periods it reads, which is a change: rendered again once
    assert (first["domains"], first["urls"], first["jobs"], first["as of"]) == ("3", "100", "3", False)
    assert dashboard() == first
    with CaptureQueriesContext(connection) as queries:
        dashboard()
    assert site_crawl_queries(queries) == []  # rendered once, read from the cache since
    assert not any("harvest_statisticline" in query["sql"] for query in queries)
    assert sent == []

    newer = job_for_sites([("theta.fr", "http://theta.fr/")])
    end_site(newer, "theta.fr", urls=3, size=30)
    Job.objects.filter(pk=newer.pk).update(ended_at=Job.objects.get(pk=newer.pk).ended_at.replace(year=year))
    job_statistics_compute(job_id=newer.pk)  # its own refresh tasks are not run here
    stale = dashboard()
    assert (stale["urls"], stale["jobs"], stale["domains"], stale["as of"]) == ("103", "4", "3", True)
    assert dashboard() == stale
    assert sent == [(year, 0)]  # once, for both views
    for args in sent:
        refresh_period_statistics(*args)
    assert dashboard() == {**stale, "domains": "4", "as of": False}

    # Computed again: the same figures (each job is counted once, not once per computation).
    job_statistics_compute(job_id=newer.pk)
    refresh_period_statistics(year, 0)
    assert dashboard() == {**stale, "domains": "4", "as of": False}
    JobStatistics.objects.filter(job=newer).delete()
    refresh_period_statistics(year, 0)
    assert dashboard()["domains"] == "3"


def test_the_refresh_task_computes_only_a_period_that_has_changed(year_of_jobs):
    year = year_of_jobs
    first = period_statistics_current(Period(year))[Period(year)].computed_at
    refresh_period_statistics(year, 0)  # nothing changed: kept as it is
    assert PeriodStatistics.objects.get(year=year, month=0).computed_at == first
    newer = job_for_sites([("theta.fr", "http://theta.fr/")])
    end_site(newer, "theta.fr", urls=3, size=30)
    Job.objects.filter(pk=newer.pk).update(ended_at=Job.objects.get(pk=newer.pk).ended_at.replace(year=year))
    job_statistics_compute(job_id=newer.pk)
    refresh_period_statistics(year, 0)
    assert PeriodStatistics.objects.get(year=year, month=0).domains == 4


def test_a_change_of_size_classes_makes_the_periods_stale(year_of_jobs, settings):
    year = year_of_jobs
    before = period_statistics_current(Period(year))[Period(year)]
    settings.REPORT_SIZE_CLASSES = [100]
    assert period_statistics_current(Period(year))[Period(year)].stale
    refresh_period_statistics(year, 0)
    after = period_statistics_current(Period(year))[Period(year)]
    assert [row["key"] for row in before.size_classes] == ["10-30", "> 30"]
    assert [(row["key"], row["domains"]) for row in after.size_classes] == [("< 100", 3)]
    assert not after.stale


def test_compute_statistics_refreshes_each_period_once(year_of_jobs, capsys):
    PeriodStatistics.objects.all().delete()
    call_command("compute_statistics", "--all")
    year = year_of_jobs
    assert set(PeriodStatistics.objects.filter(harvest_definition=None).values_list("year", "month")) == {
        (year, 0),
        (year, 6),
        (year, 7),
        (year - 1, 0),
        (year - 1, 6),
    }
    definitions = set(Job.objects.values_list("harvest_definition", "ended_at__year"))  # one job each
    assert (
        set(
            PeriodStatistics.objects.exclude(harvest_definition=None).values_list(
                "harvest_definition", "year"
            )
        )
        == definitions
    )
    assert (
        "Statistics computed for 4 job(s), 5 period(s) and 4 harvest definition period(s) refreshed."
        in capsys.readouterr().out
    )


def test_compute_statistics_periods_refreshes_every_year_and_month_with_statistics(year_of_jobs, capsys):
    year = year_of_jobs
    PeriodStatistics.objects.all().delete()
    call_command("compute_statistics", "--periods")
    assert set(PeriodStatistics.objects.filter(harvest_definition=None).values_list("year", "month")) == {
        (0, 0),
        (year, 0),
        (year, 6),
        (year, 7),
        (year - 1, 0),
        (year - 1, 6),
    }
    definitions = set(Job.objects.values_list("harvest_definition", flat=True))  # a job and year each
    assert PeriodStatistics.objects.exclude(harvest_definition=None).count() == 2 * len(definitions)
    assert (
        set(
            PeriodStatistics.objects.exclude(harvest_definition=None).values_list(
                "harvest_definition", flat=True
            )
        )
        == definitions
    )
    assert (
        capsys.readouterr().out.strip()
        == f"6 period(s) and {2 * len(definitions)} harvest definition period(s) refreshed."
    )
    with pytest.raises(CommandError, match="one of them"):
        call_command("compute_statistics", "--periods", "--all")


def test_only_a_year_selects_a_period_on_the_statistics_page(year_of_jobs, as_role):
    """Filtered by anything but the year, the tables count from the site crawls (no period describes them)."""
    client = as_role(Role.MANAGER)
    year = year_of_jobs
    period_statistics_current(Period(year), Period())
    with CaptureQueriesContext(connection) as by_year:
        client.get(reverse("reports:statistics"), {"table": "by-kind", "year": year})
    with CaptureQueriesContext(connection) as by_kind:
        client.get(reverse("reports:statistics"), {"table": "by-kind", "kind": HarvestKind.SELECTIVE})
    assert site_crawl_queries(by_year) == []
    assert site_crawl_queries(by_kind) != []


def test_a_period_is_a_year_or_a_month_of_a_year():
    with pytest.raises(ValueError, match="not a period"):
        Period(0, 3)
    with pytest.raises(ValueError, match="not a period"):
        Period(2026, 13)


@pytest.fixture
def one_definition(year_of_jobs):
    """The first three jobs of ``year_of_jobs`` and the one of the year before made one harvest
    definition's runs 1 (June), 2 (June and July: alpha.fr, beta.fr and delta.org) and 3 (the year
    before), beside a second definition whose job of June harvests alpha.fr again."""
    year = year_of_jobs
    first, second, third, before = Job.objects.order_by("pk")
    definition = first.harvest_definition
    HarvestRun.objects.filter(pk=second.run_id).update(harvest_definition=definition, number=2)
    HarvestRun.objects.filter(pk=before.run_id).update(harvest_definition=definition, number=3)
    Job.objects.filter(pk__in=[second.pk, before.pk]).update(harvest_definition=definition)
    Job.objects.filter(pk=third.pk).update(harvest_definition=definition, run=second.run_id)
    other = job_for_sites([("alpha.fr", "http://alpha.fr/")])
    end_site(other, "alpha.fr", urls=7, size=700)
    Job.objects.filter(pk=other.pk).update(ended_at=first.ended_at)
    for job in (second, third, before, other):
        job_statistics_compute(job_id=job.pk)
    return year, definition.pk, other.harvest_definition_id


def filtered(**filters):
    """The statistics the page selects with these filters (whole jobs, or the collections' shares)."""
    shares = filters.pop("shares", False)
    return JobStatistics.objects.filter(collection__isnull=not shares, **filters)


def refresh_every_period():
    call_command("compute_statistics", "--periods", stdout=io.StringIO())


# (table, the page's filters, the statistics they select) for the tables the stored groups serve.
def stored_tables(year, definition):
    tables = [(name, {"harvest_definition": definition}) for name, _title in TABLE_CHOICES]
    tables += [(name, {"harvest_definition": definition, "year": year}) for name, _title in TABLE_CHOICES]
    tables += [
        (f"by-{group}", query)
        for group in ("definition", "run", "collection")
        for query in ({}, {"year": year})
    ]
    return tables


def selected(name, query):
    selection = {"shares": name == "by-collection"}
    if "year" in query:
        selection["year"] = query["year"]
    if "harvest_definition" in query:
        selection["harvest_definition"] = query["harvest_definition"]
    return filtered(**selection)


def test_the_groups_and_a_definition_s_periods_count_the_domains_as_the_site_crawls_do(one_definition):
    year, definition, other = one_definition
    refresh_every_period()
    stored = PeriodStatistics.objects.get(year=year, month=0, harvest_definition=None)
    first_run, second_run = HarvestRun.objects.filter(harvest_definition=definition).order_by("number")[:2]
    # alpha.fr and beta.fr in run 1; alpha.fr, beta.fr, delta.org in run 2; alpha.fr in the other definition.
    assert stored.definition_domains == {str(definition): 3, str(other): 1}
    assert stored.run_domains == {str(first_run.pk): 2, str(second_run.pk): 3, str(other_run(other)): 1}
    assert stored.month_domains == {f"{year}-6": 2, f"{year}-7": 1}
    mine = PeriodStatistics.objects.get(year=year, harvest_definition=definition)
    assert (mine.domains, mine.month_domains) == (3, {f"{year}-6": 2, f"{year}-7": 1})
    assert PeriodStatistics.objects.get(year=0, harvest_definition=definition).domains == 5
    for name, query in stored_tables(year, definition):
        period = Period(
            query.get("year", 0), 0, query.get("harvest_definition", 0), shares=name == "by-collection"
        )
        from_period = report_table(name, selected(name, query), limit=100, period=period).rows
        from_sites = report_table(name, selected(name, query), limit=100).rows
        assert from_period == from_sites, (name, query)


def other_run(definition: int) -> int:
    return HarvestRun.objects.get(harvest_definition=definition).pk


def test_once_stored_the_tables_by_group_or_of_a_definition_read_no_site_crawl(one_definition, as_role):
    """The page, its CSV and the API's table of each: the same rows as the site crawls give, none read."""
    year, definition, _other = one_definition
    client = as_role(Role.MANAGER)
    refresh_every_period()
    for name, query in stored_tables(year, definition):
        counted = "".join(csv_stream(report_table(name, selected(name, query), limit=20).csv_rows()))
        with CaptureQueriesContext(connection) as queries:
            page = client.get(reverse("reports:statistics"), {"table": name, **query})
            exported = client.get(reverse("reports:statistics"), {"table": name, "export": "csv", **query})
            csv_text = b"".join(exported.streaming_content).decode()
            api = client.get(reverse("api:jobstatistics-table"), {"table": name, **query})
            totals = client.get(reverse("api:jobstatistics-totals"), query)
        assert (page.status_code, exported.status_code, api.status_code, totals.status_code) == (200,) * 4
        assert site_crawl_queries(queries) == [], (name, query)
        assert csv_text == counted, (name, query)
        assert HTMLParser(page.text).css_first("#statistics-domains-as-of") is None
    shares = client.get(reverse("reports:statistics"), {"table": "by-collection", "year": year})
    # The collections' shares together: alpha.fr and beta.fr (delta.org and alpha.fr of the other
    # definition were selected in no collection).
    assert "2 distinct domains" in HTMLParser(shares.text).css_first("#statistics-totals").text()


def test_anything_else_still_counts_from_the_site_crawls(one_definition, as_role):
    _year, definition, _other = one_definition
    client = as_role(Role.MANAGER)
    refresh_every_period()
    for query in ({"harvest_definition": definition, "kind": HarvestKind.SELECTIVE}, {"run": 2}):
        with CaptureQueriesContext(connection) as queries:
            client.get(reverse("reports:statistics"), {"table": "by-run", **query})
        assert site_crawl_queries(queries) != [], query


def test_a_definition_s_period_is_stale_and_sent_for_refreshing_once_when_its_jobs_change(
    one_definition, as_role, django_capture_on_commit_callbacks, monkeypatch
):
    """As the periods: the sums move at once, the domains say as of when they were counted and one
    refresh per period is sent however many pages see them stale; once it has run, they are right."""
    year, definition, _other = one_definition
    client = as_role(Role.MANAGER)
    refresh_every_period()
    sent = []
    monkeypatch.setattr("harvest.tasks.refresh_period_statistics.delay", lambda *args: sent.append(args))

    def page(**query) -> tuple[dict[str, tuple[str, str]], bool]:
        """Per run: (its URLs, its domains) as the page shows them; and whether it says "as of"."""
        with django_capture_on_commit_callbacks(execute=True):
            response = client.get(reverse("reports:statistics"), {"table": "by-run", **query})
        html = HTMLParser(response.text)
        columns = [node.attributes["data-column"] for node in html.css("#table-by-run thead th")]
        rows = {}
        for row in html.css("#table-by-run tbody tr"):
            values = dict(
                zip(columns, (cell.attributes["data-value"] for cell in row.css("th, td")), strict=True)
            )
            rows[row.css_first("th").text()] = (values["urls"], values["domains"])
        return rows, html.css_first("#statistics-domains-as-of") is not None

    first = Job.objects.filter(harvest_definition=definition).order_by("pk").first()
    run_one = f"{first.harvest_definition.name} #1"
    of_year = {"harvest_definition": definition, "year": year}
    assert page(**of_year) == (
        {run_one: ("25", "2"), f"{first.harvest_definition.name} #2": ("75", "3")},
        False,
    )
    newer = job_for_sites([("theta.fr", "http://theta.fr/")])
    end_site(newer, "theta.fr", urls=3, size=30)
    Job.objects.filter(pk=newer.pk).update(
        ended_at=first.ended_at, harvest_definition=definition, run=first.run_id
    )
    with django_capture_on_commit_callbacks(execute=True):
        job_statistics_compute(job_id=newer.pk)
    assert (year, 0, definition) in sent  # its definition's year is sent with its year and month
    sent.clear()
    for query in (of_year, {"harvest_definition": definition}):
        with CaptureQueriesContext(connection) as queries:
            rows, as_of = page(**query)
        assert site_crawl_queries(queries) == []  # stale: the stored figures are shown, as of then
        assert as_of and rows[run_one] == ("28", "2"), query
        assert page(**query)[1]
    # One refresh per period however many pages saw it stale: the definition's year and all its years.
    assert sorted(sent) == sorted([(year, 0, definition), (0, 0, definition)])
    for args in sent:
        refresh_period_statistics(*args)
    for query in (of_year, {"harvest_definition": definition}):
        rows, as_of = page(**query)
        assert not as_of and rows[run_one] == ("28", "3"), query  # alpha.fr, beta.fr, theta.fr


def test_a_row_computed_before_the_groups_were_kept_is_stale_and_read_from_the_site_crawls(one_definition):
    year, _definition, _other = one_definition
    refresh_every_period()
    PeriodStatistics.objects.filter(year=year, month=0, harvest_definition=None).update(run_domains=None)
    statistics = filtered(year=year)
    assert period_statistics_current(Period(year))[Period(year)].stale
    with CaptureQueriesContext(connection) as queries:
        rows = report_table("by-run", statistics, period=Period(year)).rows
    assert site_crawl_queries(queries) != []
    assert rows == report_table("by-run", statistics).rows
    refresh_period_statistics(year, 0)
    assert PeriodStatistics.objects.get(year=year, month=0, harvest_definition=None).run_domains is not None


def test_a_definition_s_period_has_no_month():
    with pytest.raises(ValueError, match="not a period"):
        Period(2026, 3, definition=1)
