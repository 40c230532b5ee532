"""News definitions: front pages crawled every few minutes, one click deep, new pages only, deduplicated,
whose new articles become seeds of a deeper definition's next run (docs/curation.md).

The crawls run in this process (the task's function, no broker) against a test website whose news front
page links to articles E to E+2 of edition E, which the test sets between runs.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator

from harvest.choices import HarvestKind, JobStatus, Unit
from harvest.models import HarvestDefinition, HarvestRun, JobConfiguration, NewsArticle, Schedule
from harvest.services.domains import configuration_save, domain_create, seed_list_save
from harvest.services.launcher import definition_launch, launch_due
from harvest.services.planning import definition_save, schedule_save, template_save
from harvest.worker import run_site_crawl
from storage.models import WarcFile
from tests.factories import UserFactory
from webarchive.permissions import Role
from webarchive.testsite import TestSite

pytestmark = pytest.mark.django_db

START = datetime(2030, 1, 1, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=5, pages=5) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


@pytest.fixture
def news_setup(site):
    """A daily deeper definition and a news definition every 15 minutes feeding it, on the test site."""
    from django.apps import apps

    from harvest.defaults import planning_defaults_ensure

    planning_defaults_ensure(apps)  # an earlier transactional test may have flushed them
    site.news_edition = 1
    template = template_save(
        name="news-test", depth_policy="host", min_delay=0.0, max_delay=0.0, delay_factor=0.0
    )
    domain = domain_create(name="127.0.0.1")
    front = seed_list_save(domain=domain, name="front page", seeds=site.url("/news/"))
    about = seed_list_save(domain=domain, name="about", seeds=site.url("/news/about"))
    news_configuration = configuration_save(domain=domain, name="news", template=template, seed_lists=[front])
    deep_configuration = configuration_save(domain=domain, name="deep", template=template, seed_lists=[about])
    daily = schedule_save(name="daily", start=START, unit=Unit.DAY, at_hour=3)
    every_15 = schedule_save(name="every 15 minutes", start=START, unit=Unit.MINUTE, every=15)
    deeper = definition_save(
        kind=HarvestKind.SELECTIVE, name="news, deeper", schedule=daily, configurations=[deep_configuration]
    )
    news = definition_save(
        kind=HarvestKind.SELECTIVE,
        name="news front pages",
        schedule=every_15,
        news=True,
        news_feeds=deeper,
        configurations=[news_configuration],
    )
    return news, deeper


def crawl(definition: HarvestDefinition, now) -> HarvestRun:
    """Launch a run of ``definition`` at ``now`` and crawl its sites here; the run."""
    HarvestDefinition.objects.filter(pk=definition.pk).update(next_date=now)
    run = definition_launch(definition_id=definition.pk, now=now)
    assert run is not None
    for entry in JobConfiguration.objects.filter(job__run=run).order_by("pk"):
        run_site_crawl(entry.pk)
    for job in run.jobs.all():
        assert job.status == JobStatus.DONE, job.errors
    return run


def captured(run: HarvestRun) -> dict[str, str]:
    """The URLs a run's WARC files hold a response or a revisit of: URL → record type."""
    found = {}
    for warc_file in WarcFile.objects.filter(job__run=run):
        with open(warc_file.path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    found[record.rec_headers.get_header("WARC-Target-URI")] = record.rec_type
    return found


def article(site, number: int) -> str:
    return site.url(f"/news/article/{number}")


def test_news_runs_fetch_the_front_page_and_only_new_articles_which_feed_the_deeper_run(site, news_setup):
    news, deeper = news_setup

    # Run 1: the front page, the pages it links to (one click), their requisites; not two clicks away.
    first = crawl(news, START + timedelta(minutes=15))
    job = first.jobs.get()
    assert job.template_settings["news"] is True
    assert (job.template_settings["depth_policy"], job.template_settings["clicks"]) == ("clicks", 1)
    assert job.template_settings["extract_sitemaps"] is False
    found = captured(first)
    assert found[site.url("/news/")] == "response"
    assert found[site.url("/news/style.css")] == "response"
    new_in_first = {article(site, 1), article(site, 2), article(site, 3), site.url("/news/about")}
    assert new_in_first <= set(found)
    assert not any(url.endswith("/comments") for url in found)
    assert set(NewsArticle.objects.filter(found_by=first).values_list("url", flat=True)) == new_in_first

    # Run 2, edition 2 (articles 2, 3 and 4): the front page again, only article 4 of the articles;
    # the style sheet has not changed: a revisit.
    site.news_edition = 2
    second = crawl(news, START + timedelta(minutes=30))
    found = captured(second)
    assert found[site.url("/news/")] == "response"  # its links changed
    assert found[site.url("/news/style.css")] == "revisit"
    assert article(site, 4) in found
    assert not ({article(site, 2), article(site, 3), site.url("/news/about")} & set(found))
    entry = JobConfiguration.objects.get(job__run=second)
    assert entry.report["new_pages"] == [article(site, 4)]
    assert entry.report["known_pages_skipped"] == 3
    assert list(NewsArticle.objects.filter(found_by=second).values_list("url", flat=True)) == [
        article(site, 4)
    ]

    # The deeper definition's next run gets every article found since (its first run: all), as seeds
    # of its site crawl of that domain, and each article says which run it went to.
    deep_run = definition_launch(definition_id=deeper.pk, now=START + timedelta(days=1))
    seeds = JobConfiguration.objects.get(job__run=deep_run).seed_urls
    assert seeds[0] == site.url("/news/about")
    assert set(seeds) == new_in_first | {article(site, 4)}
    assert set(NewsArticle.objects.values_list("fed_to", flat=True)) == {deep_run.pk}

    # Run 3 finds article 5; the deeper run after it gets that one only.
    site.news_edition = 3
    crawl(news, START + timedelta(days=1, minutes=15))
    next_deep = definition_launch(definition_id=deeper.pk, now=START + timedelta(days=2))
    assert JobConfiguration.objects.get(job__run=next_deep).seed_urls == [
        site.url("/news/about"),
        article(site, 5),
    ]
    found_by = NewsArticle.objects.get(url=article(site, 5)).found_by
    assert (found_by.harvest_definition, found_by.number) == (news, 3)


def test_the_launcher_launches_a_news_definition_every_n_minutes(news_setup):
    news, _deeper = news_setup
    HarvestDefinition.objects.filter(pk=news.pk).update(next_date=START + timedelta(minutes=15))
    assert [run.number for run in launch_due(now=START + timedelta(minutes=15))] == [1]
    assert launch_due(now=START + timedelta(minutes=20)) == []
    assert [run.number for run in launch_due(now=START + timedelta(minutes=30))] == [2]
    news.refresh_from_db()
    assert news.next_date == START + timedelta(minutes=45)
    assert HarvestRun.objects.filter(harvest_definition=news).count() == 2


def test_bad_news_settings_are_refused_and_change_nothing(news_setup, snapshot, settings):
    news, deeper = news_setup
    before = HarvestDefinition.objects.values_list("pk", "news", "news_feeds", "schedule", "version")
    before = set(before)
    too_often = schedule_save(name="every 2 minutes", start=START, unit=Unit.MINUTE, every=2)
    other_news = definition_save(
        kind=HarvestKind.SELECTIVE, name="other news", schedule=news.schedule, news=True
    )
    inactive = definition_save(
        kind=HarvestKind.SELECTIVE, name="inactive", schedule=deeper.schedule, is_active=False
    )
    refused = [
        ({"schedule": too_often}, "schedule", "A news definition runs at most every 5 minutes"),
        ({"news_feeds": snapshot}, "news_feeds", "Articles are fed to a selective definition only"),
        ({"news_feeds": news}, "news_feeds", "A news definition cannot feed its articles to itself."),
        ({"news_feeds": other_news}, "news_feeds", "crawls news front pages itself"),
        ({"news_feeds": inactive}, "news_feeds", "is not scheduled to run"),
        ({"news": False}, "news_feeds", "Only a news definition feeds articles to another definition."),
    ]
    for changes, field, message in refused:
        with pytest.raises(ValidationError) as error:
            definition_save(definition=news, **changes)
        assert message in " ".join(error.value.message_dict[field]), changes
    with pytest.raises(ValidationError) as error:
        definition_save(kind=HarvestKind.SNAPSHOT, name="broad news", news=True)
    # A schedule a news definition runs on cannot be made too frequent either.
    with pytest.raises(ValidationError) as error:
        schedule_save(schedule=news.schedule, every=1)
    assert "they run at most every 5 minutes" in error.value.message_dict["every"][0]
    assert Schedule.objects.get(pk=news.schedule_id).every == 15
    assert before <= set(
        HarvestDefinition.objects.values_list("pk", "news", "news_feeds", "schedule", "version")
    )
    assert not HarvestDefinition.objects.filter(name="broad news").exists()
    settings.HARVEST_NEWS_MIN_MINUTES = 1  # the deployment's minimum
    definition_save(definition=news, schedule=too_often)


def test_a_deeper_definition_stays_one_and_its_deactivation_does_not_lock_the_news_one(news_setup):
    news, deeper = news_setup
    with pytest.raises(ValidationError) as error:
        definition_save(definition=deeper, news=True)
    assert "News definitions feed their articles to this one" in error.value.message_dict["news"][0]
    definition_save(definition=deeper, is_active=False)
    news = definition_save(definition=news, is_active=False, news_feeds=deeper)  # unchanged: saved
    assert not news.is_active and news.news_feeds == deeper


def page_text(response) -> str:
    text = re.sub(r"<[^>]+>", " ", response.content.decode())
    return re.sub(r"\s+", " ", text).replace("&#x27;", "'").replace("&quot;", '"')


def test_the_definition_pages_show_the_articles_and_the_form_refuses_bad_input(
    client, site, news_setup, user_with_role
):
    news, deeper = news_setup
    crawl(news, START + timedelta(minutes=15))
    client.force_login(user_with_role(Role.CURATOR))
    page = page_text(client.get(news.get_absolute_url()))
    assert "New articles found by its runs" in page
    assert article(site, 1) in page and "4 waiting for the next run of “news, deeper”." in page
    assert "News front pages yes Feeds new articles to news, deeper" in page
    page = page_text(client.get(deeper.get_absolute_url()))
    assert "Articles fed by news definitions" in page and "news front pages" in page
    assert article(site, 2) in page

    # The edit form: a deeper definition that is not selective or is itself is refused, nothing changes.
    url = reverse("harvest:definition_edit", args=[news.pk])
    form = client.get(url).context["form"]
    assert news.pk not in {definition.pk for definition in form.fields["news_feeds"].queryset}
    data = {
        "name": news.name,
        "comments": "",
        "is_active": "on",
        "schedule": str(news.schedule_id),
        "channel": str(news.channel_id),
        "crawler_traps": "",
        "news": "on",
        "news_feeds": str(news.pk),
        "seen": form["seen"].value(),
    }
    response = client.post(url, data)
    assert response.status_code == 200 and response.context["form"].errors["news_feeds"]
    too_often = schedule_save(name="every 3 minutes", start=START, unit=Unit.MINUTE, every=3)
    response = client.post(url, {**data, "news_feeds": str(deeper.pk), "schedule": str(too_often.pk)})
    assert response.status_code == 200
    assert "A news definition runs at most every 5 minutes" in page_text(response)
    news.refresh_from_db()
    assert (news.news_feeds, news.schedule.every) == (deeper, 15)
    # A valid change goes through.
    response = client.post(url, {**data, "news_feeds": "", "comments": "Front pages."})
    assert response.status_code == 302
    news.refresh_from_db()
    assert news.news_feeds is None and news.comments == "Front pages."

    # A user without a planning role does not see the page.
    client.force_login(UserFactory(roles=[Role.READER]))
    assert client.get(news.get_absolute_url()).status_code in (302, 403)


def test_the_api_shows_and_checks_the_news_fields(client, news_setup, snapshot):
    news, deeper = news_setup
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    url = reverse("api:harvestdefinition-detail", kwargs={"pk": news.pk})
    body = client.get(url).json()
    assert (body["news"], body["news_feeds"], body["news_articles_waiting"]) == (True, deeper.pk, 0)
    response = client.patch(
        url, {"news_feeds": snapshot.pk, "version": body["version"]}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "selective definition only" in response.json()["news_feeds"][0]
    news.refresh_from_db()
    assert news.news_feeds == deeper
    created = client.post(
        reverse("api:harvestdefinition-list"),
        {"kind": "selective", "name": "api news", "schedule": news.schedule_id, "news": True},
        content_type="application/json",
    )
    assert created.status_code == 201, created.json()
    assert HarvestDefinition.objects.get(name="api news").news


def test_the_demo_has_a_news_definition_feeding_a_daily_one():
    from io import StringIO

    from django.core.management import call_command

    call_command("demo", stdout=StringIO())
    news = HarvestDefinition.objects.get(name="Test news front page every 15 minutes")
    assert news.news and news.news_feeds.name == "Test news articles daily"
    assert (news.schedule.unit, news.schedule.every) == (Unit.MINUTE, 15)
    (seed,) = news.configurations.get().seed_lists.get().seed_urls
    assert seed.startswith("http://127.0.0.1:") and seed.endswith("/news/")
    call_command("demo", stdout=StringIO())  # again: nothing doubled
    assert HarvestDefinition.objects.filter(news=True).count() == 1
