"""The curators' quality view of a job: the flags of its sites, the previous harvest of each domain, the
notes written on a site, and who may open it.

Jobs are made by the launcher and their sites ended by the services the crawl workers call, so the view
reads the rows a real crawl writes.
"""

import re

import pytest
from django.urls import reverse

from harvest.models import DomainConfiguration
from harvest.selectors_quality import QualityFilter, job_quality, job_quality_counts, percent_change
from harvest.services.planning import definition_configurations_change
from selection.models import HarvestNote
from tests.access import assert_page_access, assert_sent_to_login, user_for
from tests.factories import CollectionFactory, RecordFactory
from tests.harvest.sitecrawls import end, entry_of, launch
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

SITES = ["budget.fr", "errors.fr", "few.fr", "fine.fr"]


@pytest.fixture
def attached(make_domain, selective):
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in SITES]
    )
    return selective


@pytest.fixture
def job(attached):
    """A job of four sites, each ended in the way its name says."""
    job = launch(attached)
    end(job, "budget.fr", "object-limit", urls_done=500, bytes=5_000_000, errors=3)
    end(job, "errors.fr", "completed", urls_done=100, bytes=1_000_000, errors=21)
    end(job, "few.fr", "completed", urls_done=9, bytes=9_000)
    end(job, "fine.fr", "completed", urls_done=100, bytes=1_000_000, errors=20)
    return job


def flags(job, flag=QualityFilter.ALL) -> dict[str, tuple[bool, bool, bool]]:
    return {
        site.domain.name: (site.budget_hit, site.many_errors, site.few_urls)
        for site in job_quality(job, flag=flag)
    }


def quality_url(job) -> str:
    return reverse("harvest:job_quality", kwargs={"pk": job.pk})


def note_url(job, domain) -> str:
    return reverse("harvest:job_quality_note", kwargs={"pk": job.pk, "entry_pk": entry_of(job, domain).pk})


# The flags -------------------------------------------------------------------------------------


def test_each_site_carries_the_flags_its_crawl_deserves(job):
    assert flags(job) == {
        "budget.fr": (True, False, False),  # stopped by its object limit; 3 errors in 500 is fine
        "errors.fr": (False, True, False),  # 21 errors in 100 URLs: more than 20 %
        "few.fr": (False, False, True),  # 9 URLs: fewer than 10
        "fine.fr": (False, False, False),  # 20 errors in 100 is not *more* than 20 %
    }
    assert job_quality_counts(job) == {"all": 4, "budget": 1, "errors": 1, "few": 1}


def test_each_filter_keeps_only_its_sites(job):
    assert list(flags(job, QualityFilter.BUDGET)) == ["budget.fr"]
    assert list(flags(job, QualityFilter.ERRORS)) == ["errors.fr"]
    assert list(flags(job, QualityFilter.FEW)) == ["few.fr"]
    assert set(flags(job, QualityFilter.ALL)) == set(SITES)


def test_the_thresholds_are_settings(job, settings):
    settings.REPORT_ERROR_SHARE = 0.1
    settings.REPORT_FEW_URLS = 200
    assert flags(job) == {
        "budget.fr": (True, False, False),
        "errors.fr": (False, True, True),
        "few.fr": (False, False, True),
        "fine.fr": (False, True, True),
    }


def test_a_site_that_answered_nothing_has_many_errors_and_a_byte_limit_is_a_budget_hit(attached):
    job = launch(attached)
    end(job, "errors.fr", "failed", urls_done=0, errors=4)
    end(job, "budget.fr", "byte-limit", urls_done=50, bytes=10_000_000)
    site = job_quality(job).get(domain__name="errors.fr")
    assert (site.many_errors, site.error_share) == (True, 1.0)
    assert job_quality(job).get(domain__name="budget.fr").budget_hit


def test_sites_still_crawling_are_not_flagged_for_few_urls(attached):
    job = launch(attached)  # every site queued, none ended
    assert not any(few for _budget, _errors, few in flags(job).values())


def test_each_site_is_compared_with_the_previous_harvest_of_its_domain(attached, job):
    later = launch(attached)
    end(later, "budget.fr", "completed", urls_done=750, bytes=2_500_000)
    sites = {site.domain.name: site for site in job_quality(later)}
    budget = sites["budget.fr"]
    assert (budget.previous_job_id, budget.previous_urls, budget.previous_bytes) == (job.pk, 500, 5_000_000)
    assert budget.previous_stop_reason == "config-object-limit"
    assert percent_change(budget.urls_done, budget.previous_urls) == 50.0
    assert percent_change(budget.bytes_done, budget.previous_bytes) == -50.0
    # And the first job has nothing before it.
    assert {site.previous_job_id for site in job_quality(job)} == {None}


def test_the_previous_harvest_is_the_latest_earlier_one_not_a_later_one(attached, job):
    second = launch(attached)
    end(second, "few.fr", "completed", urls_done=30, bytes=3)
    third = launch(attached)
    end(third, "few.fr", "completed", urls_done=60, bytes=6)
    assert job_quality(third).get(domain__name="few.fr").previous_job_id == second.pk
    assert job_quality(second).get(domain__name="few.fr").previous_job_id == job.pk
    assert job_quality(job).get(domain__name="few.fr").previous_job_id is None


def test_no_change_is_computed_against_nothing():
    assert percent_change(10, None) is None
    assert percent_change(10, 0) is None


# The page --------------------------------------------------------------------------------------


def row(html: str, domain: str) -> str:
    match = re.search(rf'<tr data-domain="{re.escape(domain)}".*?</tr>', html, flags=re.S)
    assert match, f"no row for {domain}"
    return match.group(0)


def test_the_page_shows_flags_comparison_and_filters(client, attached, job):
    later = launch(attached)
    end(later, "budget.fr", "completed", urls_done=750, bytes=2_500_000)
    client.force_login(user_for(Role.CURATOR))
    html = client.get(quality_url(later)).content.decode()
    budget = row(html, "budget.fr")
    assert "URLs +50 %" in budget and "bytes -50 %" in budget
    assert f"Job {job.pk}" in budget and "Configuration object limit reached" in budget
    assert "No earlier harvest" not in budget
    # errors.fr is still queued in this job; its previous harvest is shown all the same.
    assert f"Job {job.pk}" in row(html, "errors.fr")

    first = client.get(quality_url(job)).content.decode()
    assert first.count("No earlier harvest") == 4
    assert "flag-budget" in row(first, "budget.fr") and "flag-errors" not in row(first, "budget.fr")
    assert "flag-errors" in row(first, "errors.fr") and "flag-few" in row(first, "few.fr")
    assert "more than 20 % of their URLs" in first and "fewer than 10 URLs" in first
    filtered = client.get(quality_url(job), {"flag": "errors"}).content.decode()
    assert re.findall(r'<tr data-domain="([^"]+)"', filtered) == ["errors.fr"]
    # An unknown filter is all sites, not an error.
    assert (
        len(re.findall(r"<tr data-domain=", client.get(quality_url(job), {"flag": "x"}).content.decode()))
        == 4
    )


def test_the_job_page_links_to_its_quality_view(client, job):
    client.force_login(user_for(Role.ENGINEER))
    html = client.get(job.get_absolute_url()).content.decode()
    assert f'href="{quality_url(job)}"' in html


def test_the_page_costs_the_same_queries_whatever_the_number_of_sites(
    client, make_domain, selective, django_assert_max_num_queries
):
    names = [f"site{n}.fr" for n in range(12)]
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in names]
    )
    earlier = launch(selective)
    job = launch(selective)
    for name in names:
        end(earlier, name, "completed", urls_done=5, bytes=10)
        end(job, name, "object-limit", urls_done=20, bytes=10)
        RecordFactory(url=f"http://www.{name}/")
    client.force_login(user_for(Role.CURATOR))
    client.post(note_url(job, "site0.fr"), {f"site-{entry_of(job, 'site0.fr').pk}-text": "Cut short."})
    client.get(quality_url(job))  # warm the session and the user's permissions
    with django_assert_max_num_queries(12):
        html = client.get(quality_url(job)).content.decode()
    assert len(re.findall(r"<tr data-domain=", html)) == 12
    assert "Cut short." in html


# Notes from the quality view -------------------------------------------------------------------


def test_a_note_on_a_site_goes_to_every_record_behind_it(client, job):
    behind = [RecordFactory(url="http://www.errors.fr/"), RecordFactory(url="http://blog.errors.fr/news")]
    RecordFactory(url="http://www.fine.fr/")  # another site's record
    client.force_login(user_for(Role.CURATOR))
    entry = entry_of(job, "errors.fr")
    response = client.post(
        note_url(job, "errors.fr"), {f"site-{entry.pk}-text": "  The server answered 503 to most pages.  "}
    )
    assert response.status_code == 302 and response["Location"] == quality_url(job)
    notes = HarvestNote.objects.order_by("record_id")
    assert [n.record_id for n in notes] == [r.pk for r in behind]
    assert {(n.job_id, n.domain_id, n.text) for n in notes} == {
        (job.pk, entry.domain_id, "The server answered 503 to most pages.")
    }
    html = client.get(quality_url(job)).content.decode()
    assert row(html, "errors.fr").count("The server answered 503 to most pages.") == 1  # shown once
    assert "503" not in row(html, "fine.fr")


def test_a_configuration_from_a_collection_notes_only_that_collections_records(client, job):
    news, sport = CollectionFactory(name="News"), CollectionFactory(name="Sport")
    ours = RecordFactory(collection=news, url="http://www.few.fr/")
    RecordFactory(collection=sport, url="http://few.fr/sport")
    DomainConfiguration.objects.filter(pk=entry_of(job, "few.fr").configuration_id).update(
        source_collection=news
    )
    client.force_login(user_for(Role.CURATOR))
    client.post(note_url(job, "few.fr"), {f"site-{entry_of(job, 'few.fr').pk}-text": "Only the home page."})
    assert list(HarvestNote.objects.values_list("record_id", flat=True)) == [ours.pk]


def test_the_htmx_form_answers_with_the_sites_notes(client, job):
    RecordFactory(url="http://www.budget.fr/")
    client.force_login(user_for(Role.CURATOR))
    entry = entry_of(job, "budget.fr")
    response = client.post(
        note_url(job, "budget.fr"), {f"site-{entry.pk}-text": "Raise the budget."}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith(f'<div id="site-notes-{entry.pk}"')
    assert "Raise the budget." in html and "attached to 1 record(s) of budget.fr" in html
    assert "<html" not in html


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Write the note: an empty note is not saved."),
        ("   \n ", "Write the note: an empty note is not saved."),
        ("x" * 2001, "Ensure this value has at most 2000 characters (it has 2001)."),
    ],
)
def test_an_empty_or_too_long_note_is_refused_at_its_field(client, job, text, message):
    RecordFactory(url="http://www.budget.fr/")
    client.force_login(user_for(Role.CURATOR))
    entry = entry_of(job, "budget.fr")
    for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
        response = client.post(note_url(job, "budget.fr"), {f"site-{entry.pk}-text": text}, **headers)
        html = response.content.decode()
        assert response.status_code == 200
        field = re.search(
            r"<textarea[^>]*>.*?</textarea>\s*<div class=\"invalid-feedback[^>]*>([^<]*)<", html, re.S
        )
        assert field and field.group(1) == message
    assert not HarvestNote.objects.exists()


def test_a_note_on_a_site_no_record_is_behind_is_refused(client, job):
    client.force_login(user_for(Role.CURATOR))
    entry = entry_of(job, "fine.fr")
    response = client.post(note_url(job, "fine.fr"), {f"site-{entry.pk}-text": "Nobody will read this."})
    assert "No selection record is behind the site fine.fr" in response.content.decode()
    assert not HarvestNote.objects.exists()


def test_a_site_of_another_job_is_not_found(client, attached, job):
    other = launch(attached)
    client.force_login(user_for(Role.CURATOR))
    url = reverse(
        "harvest:job_quality_note", kwargs={"pk": job.pk, "entry_pk": entry_of(other, "fine.fr").pk}
    )
    assert client.post(url, {"text": "x"}).status_code == 404


# Who may --------------------------------------------------------------------------------------


def test_curators_engineers_and_managers_open_the_quality_view(client, job):
    assert_page_access(client, quality_url(job), frozenset({Role.CURATOR, Role.ENGINEER, Role.MANAGER}))


def test_only_curators_get_the_note_form(client, job):
    for role, has_form in ((Role.CURATOR, True), (Role.ENGINEER, False), (Role.MANAGER, False)):
        client.force_login(user_for(role))
        html = client.get(quality_url(job)).content.decode()
        assert ("Add the note" in html) is has_form, role
        assert (f'href="{job.get_absolute_url()}"' in html) is (role != Role.MANAGER), role


def test_only_curators_write_notes(client, job):
    RecordFactory(url="http://www.budget.fr/")
    url = note_url(job, "budget.fr")
    field = f"site-{entry_of(job, 'budget.fr').pk}-text"
    assert_sent_to_login(client.post(url, {field: "anonymous"}), url)
    for role in (Role.LIBRARIAN, Role.ENGINEER, Role.MANAGER, None):
        client.force_login(user_for(role))
        assert client.post(url, {field: f"by {role}"}).status_code == 403, role
    assert not HarvestNote.objects.exists()
    client.force_login(user_for(Role.CURATOR))
    assert client.post(url, {field: "by a curator"}).status_code == 302
    assert HarvestNote.objects.get().text == "by a curator"
