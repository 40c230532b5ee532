"""The curators' quality view of a job: the flags of its sites, the previous harvest of each domain, the
notes written on a site, the screenshots and render figures of rendered sites, and who may open it.

Jobs are made by the launcher and their sites ended by the services the crawl workers call, so the view
reads the rows a real crawl writes; screenshots are resource records written by the crawler's WARC
writer and indexed by the indexing service.
"""

import re
from html import escape
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from harvest.models import DomainConfiguration
from harvest.services.planning import definition_configurations_change
from storage.models import Capture, HarvestNote
from storage.replay import replay_url
from storage.selectors_quality import (
    QualityFilter,
    job_quality,
    job_quality_counts,
    percent_change,
    site_renders,
)
from storage.services import replication
from tests.access import EVERYONE, assert_page_access, assert_sent_to_login, user_for
from tests.factories import CollectionFactory, RecordFactory
from tests.harvest.screenshots import page_text, png, screenshot, write_renders
from tests.harvest.sitecrawls import end, entry_of, launch
from tests.storage.storage_files import make_nodes
from webarchive.permissions import Role, restrict

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
    return reverse("quality:job_quality", kwargs={"pk": job.pk})


def note_url(job, domain) -> str:
    return reverse("quality:job_quality_note", kwargs={"pk": job.pk, "entry_pk": entry_of(job, domain).pk})


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
    with django_assert_max_num_queries(13):  # 12, and one for the URLs missed in replay
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
        "quality:job_quality_note", kwargs={"pk": job.pk, "entry_pk": entry_of(other, "fine.fr").pk}
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


# Rendering: screenshots and render figures -----------------------------------------------------

SHOTS_SEEDS = "http://shots.fr/\nhttp://shots.fr/contact\nhttp://shots.fr/gone"
HOME_IMAGE = png(12, 7, (10, 120, 200))
RENDER_ERRORS = [
    {"url": f"http://broken.fr/<b>{n}</b>", "error": f"<script>alert('render {n}')</script> timed out"}
    for n in range(6)
]


@pytest.fixture
def rendered(make_domain, selective):
    """A job whose crawl rendered two sites and not a third, and its WARC file of screenshots and texts.

    shots.fr: its home page redirected to https://www.shots.fr/, its contact page was rendered at its
    own address, /gone was not rendered, and a page reached by a redirect was; broken.fr: every render
    failed; plain.fr: rendering was off.
    """
    definition_configurations_change(
        definition=selective,
        add=[
            make_domain("shots.fr", seeds=SHOTS_SEEDS).default_configuration,
            make_domain("broken.fr").default_configuration,
            make_domain("plain.fr").default_configuration,
        ],
    )
    job = launch(selective)
    end(
        job, "shots.fr", urls_done=40, report={"pages_rendered": 4, "render_failures": 0, "render_errors": []}
    )
    end(
        job,
        "broken.fr",
        urls_done=12,
        report={"pages_rendered": 7, "render_failures": 7, "render_errors": RENDER_ERRORS},
    )
    end(job, "plain.fr", urls_done=30, report={"urls": 30})
    write_renders(
        job,
        [
            screenshot("https://www.shots.fr/", HOME_IMAGE),
            page_text("https://www.shots.fr/"),
            screenshot("http://shots.fr/contact"),
            page_text("http://shots.fr/contact", "<script>alert(1)</script>"),
            screenshot("https://shots.fr/fr/accueil"),
            screenshot("http://shots.fr.example.com/"),  # not a host of shots.fr
        ],
    )
    other = launch(selective)  # the same site in another job: not this job's screenshot
    write_renders(other, [screenshot("http://shots.fr/gone")])
    return job


def capture_of(job, url: str) -> Capture:
    return Capture.objects.get(job=job, url=url)


def image_url(capture) -> str:
    return reverse("storage:capture_image", kwargs={"pk": capture.pk})


def render_row(html: str, domain: str) -> str:
    match = re.search(
        rf'<tr class="quality-render" data-render-domain="{re.escape(domain)}".*?</tr>', html, re.S
    )
    assert match, f"no render row for {domain}"
    return match.group(0)


def figures(html: str) -> list[tuple[str, str]]:
    """(image address, alt text) of each screenshot of a row, in order."""
    return re.findall(r'<img src="([^"]+)" loading="lazy"[^>]*\s+alt="([^"]*)"', html)


def test_each_screenshot_of_a_site_stands_for_the_seeds_that_led_to_it(rendered):
    captures = restrict(Capture.objects.all(), user_for(Role.CURATOR))
    renders = site_renders(rendered, job_quality(rendered), captures)
    shots = renders[entry_of(rendered, "shots.fr").pk]
    assert [(shot.page_url, shot.seeds) for shot in shots.screenshots] == [
        ("https://www.shots.fr/", ["http://shots.fr/"]),  # redirected to https and www.
        ("http://shots.fr/contact", ["http://shots.fr/contact"]),
        ("https://shots.fr/fr/accueil", []),  # reached from a seed by a redirect elsewhere
    ]
    assert shots.unrendered_seeds == ["http://shots.fr/gone"]  # rendered only by another job
    assert (shots.pages_rendered, shots.render_failures, shots.errors) == (4, 0, [])
    broken = renders[entry_of(rendered, "broken.fr").pk]
    assert (broken.pages_rendered, broken.render_failures, broken.more_errors) == (7, 7, 2)
    assert [error.url for error in broken.errors] == [f"http://broken.fr/<b>{n}</b>" for n in range(5)]
    assert not broken.screenshots and broken.shown
    assert not renders[entry_of(rendered, "plain.fr").pk].shown
    # Who may not see captures sees no screenshot.
    hidden = site_renders(rendered, job_quality(rendered), restrict(Capture.objects.all(), user_for(None)))
    assert not hidden[entry_of(rendered, "shots.fr").pk].screenshots


def test_the_page_shows_each_screenshot_beside_its_replay_and_capture(client, rendered):
    client.force_login(user_for(Role.CURATOR))
    html = client.get(quality_url(rendered)).content.decode()
    row = render_row(html, "shots.fr")
    home = capture_of(rendered, "urn:screenshot:https://www.shots.fr/")
    contact = capture_of(rendered, "urn:screenshot:http://shots.fr/contact")
    other = capture_of(rendered, "urn:screenshot:https://shots.fr/fr/accueil")
    when = timezone.localtime(home.timestamp).strftime("%Y-%m-%d %H:%M")  # the site's time zone
    assert figures(row) == [
        (image_url(home), f"Screenshot of https://www.shots.fr/ as rendered at {when}"),
        (image_url(contact), f"Screenshot of http://shots.fr/contact as rendered at {when}"),
        (image_url(other), f"Screenshot of https://shots.fr/fr/accueil as rendered at {when}"),
    ]
    replay = replay_url("https://www.shots.fr/", home.timestamp14)
    assert f'<a class="replay-link" href="{replay}" target="_blank" rel="noopener">replay</a>' in row
    assert f'<a class="capture-link" href="{home.get_absolute_url()}">capture</a>' in row
    assert f'href="{replay_url("http://shots.fr/contact", contact.timestamp14)}"' in row
    assert "seeds: http://shots.fr/" in row and "reached from a seed by a redirect" in row
    assert (
        "No screenshot of the seed http://shots.fr/gone: it was not rendered, or its rendering failed." in row
    )
    assert "shots.fr.example.com" not in html  # another host, whatever its name looks like
    assert "4 pages rendered in a browser, " in row and ">0 failed<" in row
    # Texts are not screenshots; a site crawled without a browser has no render row.
    assert "urn:text:" not in html and 'data-render-domain="plain.fr"' not in html


def test_a_site_whose_renders_failed_says_so_and_its_errors_stay_text(client, rendered):
    client.force_login(user_for(Role.ENGINEER))
    html = client.get(quality_url(rendered)).content.decode()
    row = render_row(html, "broken.fr")
    assert "<script>alert" not in html and "<b>" not in html
    assert escape("<script>alert('render 0')</script> timed out") in row
    assert escape("http://broken.fr/<b>4</b>") in row and escape("<b>5</b>") not in row
    assert "7 pages rendered in a browser" in row and ">7 failed<" in row
    assert "and 2 more failures<" in row
    assert not figures(row)
    assert row.count('class="small no-screenshot"') == 4  # the four default seeds of broken.fr


def test_the_screenshots_cost_one_query_whatever_the_number_of_sites(client, make_domain, selective):
    names = [f"site{n}.fr" for n in range(6)]
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in names]
    )
    job = launch(selective)
    for name in names:
        end(job, name, report={"pages_rendered": 1, "render_failures": 0, "render_errors": []})
    write_renders(job, [screenshot(f"https://www.{name}/") for name in names])
    client.force_login(user_for(Role.CURATOR))
    client.get(quality_url(job))  # warm the session and the user's permissions
    with CaptureQueriesContext(connection) as queries:
        html = client.get(quality_url(job)).content.decode()
    assert len(figures(html)) == 6
    assert sum("storage_capture" in query["sql"] for query in queries.captured_queries) == 1


# The image of a screenshot -----------------------------------------------------------------------


def test_the_image_is_the_png_the_crawler_wrote_with_headers_that_keep_it_an_image(client, rendered):
    home = capture_of(rendered, "urn:screenshot:https://www.shots.fr/")
    client.force_login(user_for(Role.LIBRARIAN))  # whoever may see captures
    response = client.get(image_url(home))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == HOME_IMAGE
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert response["Content-Disposition"].startswith('inline; filename="render-')
    assert response["Content-Disposition"].endswith(f'-{home.offset}.png"')


def test_the_image_is_read_from_a_replica_when_the_spool_copy_is_gone(client, rendered, tmp_path):
    home = capture_of(rendered, "urn:screenshot:https://www.shots.fr/")
    make_nodes(tmp_path / "nodes", "room-1")
    warc = home.warc_file
    warc.replicas_wanted = 1
    warc.save(update_fields=["replicas_wanted"])
    assert replication.file_replicate(warc.pk) == 1
    Path(warc.path).unlink()
    client.force_login(user_for(Role.CURATOR))
    response = client.get(image_url(home))
    assert response.status_code == 200 and b"".join(response.streaming_content) == HOME_IMAGE


def test_only_screenshots_are_served_as_images(client, rendered):
    client.force_login(user_for(Role.CURATOR))
    text = capture_of(rendered, "urn:text:http://shots.fr/contact")
    assert client.get(image_url(text)).status_code == 404
    assert client.get(reverse("storage:capture_image", kwargs={"pk": 999_999})).status_code == 404
    # An index row saying image/png over a record that says otherwise is not trusted.
    Capture.objects.filter(pk=text.pk).update(mime="image/png")
    assert client.get(image_url(text)).status_code == 404


def test_a_crawled_png_is_not_served_as_a_screenshot(client, rendered, tmp_path):
    """What a site sent (a response record) never comes from the application's origin."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from storage.services.indexing import warc_file_index

    path = tmp_path / "crawled.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "http://shots.fr/logo.png", "response", payload=io.BytesIO(png()), http_headers=http
            )
        )
    crawled = warc_file_index(path=path, job_id=rendered.pk).warc_file.captures.get()
    assert (crawled.record_type, crawled.mime) == ("response", "image/png")
    client.force_login(user_for(Role.CURATOR))
    assert client.get(image_url(crawled)).status_code == 404


def test_the_image_is_for_those_who_may_see_captures(client, rendered):
    assert_page_access(
        client,
        image_url(capture_of(rendered, "urn:screenshot:http://shots.fr/contact")),
        EVERYONE - {Role.READER},
    )
