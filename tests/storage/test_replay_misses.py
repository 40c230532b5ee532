"""URLs missed in replay: recorded from the replay gate's signed reports, grouped on the quality pages,
added by curators to the next run of the definition, and given by the launcher to its jobs as seeds.

The real pywb process and a browser are in tests/browser/test_replay_misses.py; here the reports are
posted as the gate posts them (same signature), and jobs are made by the launcher.
"""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvest.models import Job, NextRunAddition
from harvest.services.planning import definition_configurations_change, definition_run_now
from storage.models import Capture, ReplayMiss
from storage.replay import gate_ticket_key
from storage.replay_ticket import miss_signature
from storage.services.indexing import warc_file_index
from storage.services.replay_misses import REPLAY_MISSES_PER_PAGE, miss_kind, replay_miss_record
from tests.access import assert_sent_to_login, user_for
from tests.harvest.sitecrawls import launch
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

PAGE = "http://www.alpha.fr/news/"
REFERER = "http://127.0.0.1:8090/archive-staff/20260301120000mp_/" + PAGE


def capture_page(
    job, url: str = PAGE, stamp: str = "20260301120000", body: bytes = b"<img src=/logo.png>"
) -> Capture:
    """A response record of ``url`` in a WARC file, indexed as the job's capture."""
    directory = Path(settings.HARVEST_WARC_DIR)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"misses-{uuid.uuid4().hex[:10]}.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        headers = StatusAndHeaders(
            "200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(body)))], protocol="HTTP/1.1"
        )
        record = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers)
        record.rec_headers.replace_header(
            "WARC-Date", f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:]}Z"
        )
        writer.write_record(record)
    warc_file_index(path=path, job_id=job.pk)
    return Capture.objects.get(url=url, record_type="response", job=job)


@pytest.fixture
def definition(make_domain, selective):
    definition_configurations_change(
        definition=selective,
        add=[make_domain(name).default_configuration for name in ("alpha.fr", "beta.fr")],
    )
    return selective


@pytest.fixture
def job(definition):
    job = launch(definition)
    capture_page(job)
    return job


def report(client, **fields):
    body = json.dumps(fields).encode()
    return client.post(
        reverse("replay_misses"),
        body,
        content_type="application/json",
        headers={"X-Replay-Signature": miss_signature(gate_ticket_key(), body)},
    )


def miss(url="http://www.alpha.fr/logo.png", destination="image", referer=REFERER, **options):
    return replay_miss_record(
        url=url, stamp="20260301120000", modifier="im_", referer=referer, destination=destination, **options
    )


# Recording ------------------------------------------------------------------------------------------


def test_a_signed_report_records_the_miss_against_the_browsed_capture_and_its_job(client, job):
    answer = report(
        client,
        url="http://www.alpha.fr/logo.png",
        stamp="20260301120000",
        modifier="im_",
        referer=REFERER,
        destination="image",
    )
    assert answer.status_code == 204
    row = ReplayMiss.objects.get()
    assert (row.page_url, row.page_stamp, row.url, row.host, row.kind, row.count) == (
        PAGE,
        "20260301120000",
        "http://www.alpha.fr/logo.png",
        "www.alpha.fr",
        "image",
        1,
    )
    assert row.job == job


def test_an_unsigned_or_wrongly_signed_report_is_refused_and_records_nothing(client, job):
    body = json.dumps({"url": "http://www.alpha.fr/x.js", "stamp": "2026", "referer": REFERER}).encode()
    assert client.post(reverse("replay_misses"), body, content_type="application/json").status_code == 403
    forged = client.post(
        reverse("replay_misses"),
        body,
        content_type="application/json",
        headers={"X-Replay-Signature": miss_signature("another key", body)},
    )
    assert forged.status_code == 403
    assert client.get(reverse("replay_misses")).status_code == 405
    assert not ReplayMiss.objects.exists()


def test_a_repeated_miss_is_one_row_counted(job):
    first = miss()
    miss()
    again = miss()
    assert again.pk == first.pk
    assert ReplayMiss.objects.get().count == 3
    assert again.last_seen >= first.last_seen


@pytest.mark.parametrize(
    ("destination", "modifier", "kind"),
    [
        ("image", "", "image"),
        ("script", "", "script"),
        ("style", "", "stylesheet"),
        ("font", "", "font"),
        ("video", "", "media"),
        ("iframe", "", "page"),
        ("document", "", "page"),
        ("", "js_", "script"),
        ("", "cs_", "stylesheet"),
        ("", "im_", "image"),
        ("empty", "oe_", "other"),
        ("", "", "page"),
    ],
)
def test_the_kind_comes_from_the_browser_or_pywbs_modifier(destination, modifier, kind):
    assert miss_kind(destination, modifier) == kind


def test_hostile_reports_are_bounded(job):
    assert miss(url="javascript:alert(1)") is None
    assert miss(url="data:image/png;base64,AAAA") is None
    long = miss(url="http://www.alpha.fr/" + "a" * 5000, referer=REFERER + "?" + "b" * 5000)
    assert len(long.url) == 2000 and len(long.page_url) <= 2000
    # A page that asks for too many missing URLs records the first ones only.
    for number in range(REPLAY_MISSES_PER_PAGE + 5):
        miss(url=f"http://www.alpha.fr/{number}.png", referer="http://r/c/20260101mp_/http://www.beta.fr/")
    assert ReplayMiss.objects.filter(page_url="http://www.beta.fr/").count() == REPLAY_MISSES_PER_PAGE


def test_a_page_missed_itself_is_its_own_page(job):
    row = miss(url="http://www.alpha.fr/gone/", destination="document", referer="")
    assert (row.page_url, row.kind, row.job) == ("http://www.alpha.fr/gone/", "page", None)


# The quality pages ------------------------------------------------------------------------------------


@pytest.fixture
def misses(job):
    made = [
        miss(url="http://www.alpha.fr/logo.png"),
        miss(url="http://www.alpha.fr/logo.png"),
        miss(url="http://www.alpha.fr/banner.png"),
        miss(url="http://www.alpha.fr/app.js", destination="script"),
        miss(url="http://cdn.beta.fr/font.woff2", destination="font"),
        miss(url="http://www.alpha.fr/<script>alert(1)</script>.png"),
    ]
    return {row.url: row for row in made}


def test_the_job_and_definition_quality_pages_group_misses_by_host_and_kind(client, job, misses):
    client.force_login(user_for(Role.CURATOR))
    for url in (
        reverse("quality:job_quality", kwargs={"pk": job.pk}),
        reverse("quality:definition_misses", kwargs={"pk": job.harvest_definition_id}),
    ):
        html = client.get(url).content.decode()
        assert 'data-host="www.alpha.fr" data-kind="image"' in html
        group = html.split('data-host="www.alpha.fr" data-kind="image"')[1].split("</tr>")[0]
        assert '<td class="text-end miss-urls">3</td>' in group  # three URLs
        assert '<td class="text-end miss-requests">4</td>' in group  # four requests
        assert 'data-host="www.alpha.fr" data-kind="script"' in html
        assert 'data-host="cdn.beta.fr" data-kind="font"' in html
        assert "<script>alert(1)</script>" not in html  # crawled text is escaped
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert 'id="misses-add-all"' in html


def curator_adds(client, definition, data, curator=None):
    client.force_login(curator or user_for(Role.CURATOR))
    return client.post(reverse("quality:definition_misses_add", kwargs={"pk": definition.pk}), data)


def test_a_curator_adds_selected_misses_and_the_next_run_crawls_them(client, job, misses):
    definition = job.harvest_definition
    chosen = [misses["http://www.alpha.fr/logo.png"].pk, misses["http://cdn.beta.fr/font.woff2"].pk]
    curator = user_for(Role.CURATOR)
    answer = curator_adds(client, definition, {"miss": chosen, "job": job.pk}, curator)
    assert answer.status_code == 302
    assert answer.url == reverse("quality:job_quality", kwargs={"pk": job.pk})
    added = {addition.url: addition for addition in NextRunAddition.objects.all()}
    assert set(added) == {"http://www.alpha.fr/logo.png", "http://cdn.beta.fr/font.woff2"}
    assert added["http://www.alpha.fr/logo.png"].domain.name == "alpha.fr"
    assert added["http://cdn.beta.fr/font.woff2"].domain.name == "beta.fr"  # its own domain is planned
    assert {addition.added_by for addition in added.values()} == {curator}
    page = client.get(reverse("quality:definition_misses", kwargs={"pk": definition.pk})).content.decode()
    assert "waiting for the next run" in page and curator.username in page

    # Adding the same again adds nothing more.
    curator_adds(client, definition, {"miss": chosen})
    assert NextRunAddition.objects.count() == 2

    definition_run_now(definition=definition)
    from harvest.services.launcher import launch_due

    (run,) = launch_due()
    (next_job,) = Job.objects.filter(run=run)
    seeds = {entry.domain.name: entry.seed_urls for entry in next_job.configurations.select_related("domain")}
    assert "http://www.alpha.fr/logo.png" in seeds["alpha.fr"]
    assert "http://cdn.beta.fr/font.woff2" in seeds["beta.fr"]
    assert set(NextRunAddition.objects.values_list("consumed_by", flat=True)) == {run.pk}
    page = client.get(reverse("quality:definition_misses", kwargs={"pk": definition.pk})).content.decode()
    assert f"run #{run.number}" in page and "waiting for the next run" not in page
    # The run after it does not get them again.
    definition_run_now(definition=definition)
    (later,) = launch_due()
    later_seeds = [
        url for entry in Job.objects.get(run=later).configurations.all() for url in entry.seed_urls
    ]
    assert "http://www.alpha.fr/logo.png" not in later_seeds


def test_add_all_takes_every_miss_of_the_job(client, job, misses):
    curator_adds(client, job.harvest_definition, {"all": "1", "job": job.pk})
    assert NextRunAddition.objects.count() == len(misses)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "Choose at least one missed URL"),  # empty selection
        ({"miss": ["999999"]}, "were not missed in a replay of this definition"),  # unknown
        ({"miss": ["abc"]}, "Unknown missed URL"),  # not an id
    ],
)
def test_bad_choices_are_refused_and_change_nothing(client, job, misses, data, message):
    answer = curator_adds(client, job.harvest_definition, data)
    assert answer.status_code == 302
    assert not NextRunAddition.objects.exists()
    assert any(message in str(note) for note in answer.wsgi_request._messages)


def test_another_definitions_misses_are_refused(client, job, misses, schedule, make_domain):
    from harvest.services.planning import definition_save

    other = definition_save(kind="selective", name="other-definition", schedule=schedule)
    definition_configurations_change(definition=other, add=[make_domain("gamma.fr").default_configuration])
    mixed = [misses["http://www.alpha.fr/logo.png"].pk]
    answer = curator_adds(client, other, {"miss": mixed})
    assert answer.status_code == 302
    assert any("not missed in a replay of this" in str(note) for note in answer.wsgi_request._messages)
    assert not NextRunAddition.objects.exists()
    # "All" of a job of another definition is refused too.
    curator_adds(client, other, {"all": "1", "job": job.pk})
    assert not NextRunAddition.objects.exists()


def test_unknown_definition_or_job_is_not_found(client, job, misses):
    client.force_login(user_for(Role.CURATOR))
    assert (
        client.post(reverse("quality:definition_misses_add", kwargs={"pk": 999999}), {"all": "1"}).status_code
        == 404
    )
    answer = curator_adds(client, job.harvest_definition, {"all": "1", "job": "999999"})
    assert answer.status_code == 404
    assert not NextRunAddition.objects.exists()


def test_only_curators_add_and_only_they_see_the_buttons(client, job, misses):
    url = reverse("quality:definition_misses_add", kwargs={"pk": job.harvest_definition_id})
    assert_sent_to_login(client.post(url, {"all": "1"}), url)
    for role in (Role.ENGINEER, Role.MANAGER, Role.LIBRARIAN, Role.READER):
        client.force_login(user_for(role))
        assert client.post(url, {"all": "1"}).status_code == 403, role
    assert not NextRunAddition.objects.exists()
    for role, buttons in ((Role.CURATOR, True), (Role.ENGINEER, False), (Role.MANAGER, False)):
        client.force_login(user_for(role))
        html = client.get(reverse("quality:job_quality", kwargs={"pk": job.pk})).content.decode()
        assert ('id="misses-add-all"' in html) is buttons, role
        assert "www.alpha.fr/logo.png" in html


def test_misses_added_as_rules_bring_their_folders_into_the_next_run_s_scope(client, job, misses):
    import re2

    from harvest.crawler.scope import Scope
    from harvest.services.launcher import launch_due

    definition = job.harvest_definition
    chosen = [misses["http://cdn.beta.fr/font.woff2"].pk, misses["http://www.alpha.fr/logo.png"].pk]
    answer = curator_adds(client, definition, {"miss": chosen, "as": "rule"})
    assert any("2 accept rule(s)" in str(note) for note in answer.wsgi_request._messages)
    rules = dict(NextRunAddition.objects.values_list("url", "kind"))
    assert rules == {r"^https?://cdn\.beta\.fr/": "rule", r"^https?://www\.alpha\.fr/": "rule"}
    page = client.get(reverse("quality:definition_misses", kwargs={"pk": definition.pk})).content.decode()
    assert "accept rule" in page and "waiting for the next run" in page

    definition_run_now(definition=definition)
    (run,) = launch_due()
    (next_job,) = Job.objects.filter(run=run)
    accept = next_job.template_settings["accept_rules"]
    assert set(rules) <= set(accept)
    assert not any("font.woff2" in url for entry in next_job.configurations.all() for url in entry.seed_urls)
    # The job's crawler takes the missed font in, though the CDN is outside the site's host.
    scope = Scope(seeds=["http://www.alpha.fr/news/"], policy="host", accept=accept)
    assert scope.decide("http://cdn.beta.fr/font.woff2", "L") is None
    assert scope.decide("http://cdn.gamma.fr/font.woff2", "L") == "out-of-scope"
    assert all(re2.compile(rule) for rule in accept)


def test_a_rule_is_the_escaped_folder_of_the_url_never_a_pattern_of_its_own():
    import re

    from harvest.services.additions import folder_rule

    rule = folder_rule("http://Evil.fr/a(b*|.*/x[1].png?q=(.*)")
    assert rule == r"^https?://evil\.fr/a\(b\*\|\.\*/"
    assert re.search(rule, "http://evil.fr/a(b*|.*/other.png")
    assert not re.search(rule, "http://evil.fr/aab/other.png")
    assert folder_rule("https://cdn.example.org") == r"^https?://cdn\.example\.org/"
