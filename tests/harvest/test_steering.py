"""Steering a running job through its services, its page and the API: pause and resume, rules added,
budgets changed, the biggest queues shown; bad input refused and nothing changed."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from harvest.choices import SiteState, StopReason
from harvest.models import Job, JobConfiguration
from harvest.services.crawls import job_stop, site_crawl_progress
from harvest.services.jobs import job_resubmit
from harvest.services.planning import definition_configurations_change
from harvest.services.steering import (
    job_pause,
    job_resume,
    job_rule_add,
    site_budget_change,
    site_crawls_steering,
    site_pause,
    site_resume,
    site_rules,
)
from tests.factories import UserFactory
from tests.harvest.sitecrawls import DOMAINS, end, entry_of, launch, progress, run
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(make_domain, selective):
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in DOMAINS]
    )
    job = launch(selective)
    run(job, "alpha.fr", urls_done=10, urls_queued=90)
    return Job.objects.get(pk=job.pk)


@pytest.fixture
def engineer():
    return UserFactory(roles=[Role.ENGINEER])


@pytest.fixture
def curator():
    return UserFactory(roles=[Role.CURATOR])


def reasons(job) -> list[tuple[str, str]]:
    """The job's history rows that say why: (reason, who), oldest first."""
    rows = job.history.exclude(history_change_reason=None).order_by("history_date", "history_id")
    return [
        (row.history_change_reason, row.history_user.username if row.history_user else "") for row in rows
    ]


# Services ------------------------------------------------------------------------------------------


def test_a_job_is_paused_and_resumed_with_its_history(job, engineer):
    job = job_pause(job=job, user=engineer)
    assert job.paused_at is not None
    steering = site_crawls_steering([entry_of(job, "alpha.fr").pk])
    assert steering[entry_of(job, "alpha.fr").pk].paused
    job_pause(job=job, user=engineer)  # once: no second row
    job = job_resume(job=job, user=engineer)
    assert job.paused_at is None
    assert not site_crawls_steering([entry_of(job, "alpha.fr").pk])[entry_of(job, "alpha.fr").pk].paused
    assert reasons(job) == [("Paused", engineer.username), ("Resumed", engineer.username)]


def test_one_site_is_paused_and_resumed(job, engineer):
    entry = site_pause(entry=entry_of(job, "alpha.fr"), user=engineer)
    assert entry.paused_at is not None
    others = site_crawls_steering([entry.pk, entry_of(job, "beta.fr").pk])
    assert others[entry.pk].paused and not others[entry_of(job, "beta.fr").pk].paused
    site_resume(entry=entry, user=engineer)
    assert entry_of(job, "alpha.fr").paused_at is None
    assert [reason for reason, _who in reasons(job)] == ["Paused alpha.fr", "Resumed alpha.fr"]


def test_a_reject_rule_goes_into_the_frozen_settings_and_a_resubmission_keeps_it(job, engineer):
    job = job_rule_add(job=job, kind="reject", rule=r"/calendar/\d+", user=engineer)
    job = job_rule_add(job=job, kind="trap", rule=r"\?sort=", user=engineer)
    assert job.template_settings["reject_rules"][-1] == r"/calendar/\d+"
    assert job.crawler_traps[-1] == r"\?sort="
    assert job.rules_serial == 2
    steering = site_crawls_steering([entry_of(job, "alpha.fr").pk])
    assert steering[entry_of(job, "alpha.fr").pk].rules_serial == 2
    reject, traps = site_rules(entry_of(job, "alpha.fr").pk)
    assert r"/calendar/\d+" in reject and r"\?sort=" in traps
    assert reasons(job) == [
        (r"Reject rule added: /calendar/\d+", engineer.username),
        (r"Crawler trap added: \?sort=", engineer.username),
    ]
    job_stop(job=job, user=engineer)
    end(job, "alpha.fr", "operator")
    copy = job_resubmit(job=Job.objects.get(pk=job.pk), user=engineer)
    assert r"/calendar/\d+" in copy.template_settings["reject_rules"]
    assert r"\?sort=" in copy.crawler_traps


@pytest.mark.parametrize(
    ("kind", "rule", "field"),
    [
        ("reject", r"(a)\1", "rule"),  # a back-reference: RE2 cannot run it in linear time
        ("reject", "(?=x)", "rule"),  # look-ahead
        ("reject", "[", "rule"),
        ("reject", "", "rule"),
        ("reject", "a\nb", "rule"),
        ("reject", "a" * 1001, "rule"),
        ("reject", "# a comment", "rule"),
        ("accept", "x", "kind"),
    ],
)
def test_a_bad_rule_is_refused_and_changes_nothing(job, engineer, kind, rule, field):
    before = (dict(job.template_settings), list(job.crawler_traps), job.rules_serial)
    with pytest.raises(ValidationError) as refused:
        job_rule_add(job=job, kind=kind, rule=rule, user=engineer)
    assert field in refused.value.message_dict
    job.refresh_from_db()
    assert (job.template_settings, job.crawler_traps, job.rules_serial) == before
    assert reasons(job) == []


def test_a_rule_added_twice_is_refused(job, engineer):
    job_rule_add(job=job, kind="trap", rule="/loop/", user=engineer)
    with pytest.raises(ValidationError, match="already"):
        job_rule_add(job=job, kind="trap", rule="/loop/", user=engineer)


def test_a_job_that_is_not_running_is_not_steered(job, engineer):
    job_stop(job=job, user=engineer)
    for act in (
        lambda: job_pause(job=job, user=engineer),
        lambda: job_rule_add(job=job, kind="reject", rule="x", user=engineer),
        lambda: site_budget_change(
            entry=entry_of(job, "alpha.fr"), max_objects=5, max_bytes=-1, user=engineer
        ),
    ):
        with pytest.raises(ValidationError) as refused:
            act()
        assert "not_running" in str(refused.value.error_list[0].code)
    assert Job.objects.get(pk=job.pk).paused_at is None


def test_an_ended_site_is_not_steered(job, engineer):
    end(job, "beta.fr", urls_done=3)
    with pytest.raises(ValidationError, match="ended"):
        site_pause(entry=entry_of(job, "beta.fr"), user=engineer)


def test_only_engineers_steer(job, curator):
    for act in (
        lambda: job_pause(job=job, user=curator),
        lambda: site_pause(entry=entry_of(job, "alpha.fr"), user=curator),
        lambda: job_rule_add(job=job, kind="reject", rule="x", user=curator),
        lambda: site_budget_change(
            entry=entry_of(job, "alpha.fr"), max_objects=5, max_bytes=-1, user=curator
        ),
    ):
        with pytest.raises(PermissionDenied):
            act()
    job.refresh_from_db()
    assert job.paused_at is None and job.rules_serial == 0


def test_a_budget_is_changed_with_its_history(job, engineer):
    entry = site_budget_change(entry=entry_of(job, "alpha.fr"), max_objects=5, max_bytes=1000, user=engineer)
    assert (entry.max_objects, entry.max_bytes) == (5, 1000)
    steering = site_crawls_steering([entry.pk])[entry.pk]
    assert (steering.max_objects, steering.max_bytes) == (5, 1000)
    assert reasons(job)[-1][0].startswith("Budget of alpha.fr: objects ")
    for objects, nbytes in (("many", 5), (-2, 5), (5, "1e3"), (None, 5)):
        with pytest.raises(ValidationError):
            site_budget_change(entry=entry, max_objects=objects, max_bytes=nbytes, user=engineer)
    assert (entry_of(job, "alpha.fr").max_objects, entry_of(job, "alpha.fr").max_bytes) == (5, 1000)


def test_a_lowered_budget_ends_the_site_with_the_limit_as_its_reason(job, engineer):
    site_budget_change(entry=entry_of(job, "alpha.fr"), max_objects=5, max_bytes=-1, user=engineer)
    end(job, "alpha.fr", "object-limit", urls_done=10)  # what the worker reports (harvest.steering)
    assert entry_of(job, "alpha.fr").stop_reason in (StopReason.CONFIG_OBJECT_LIMIT, StopReason.OBJECT_LIMIT)


def test_the_biggest_queues_are_written_with_the_progress(job):
    entry = entry_of(job, "alpha.fr")
    numbers = progress(urls_done=11, urls_queued=80)
    numbers.biggest_queues = {"hosts": [["alpha.fr", 80]], "paths": [["alpha.fr/calendar/", 70]]}
    site_crawl_progress(entry_id=entry.pk, job_id=job.pk, progress=numbers)
    entry.refresh_from_db()
    assert entry.biggest_queues["paths"] == [["alpha.fr/calendar/", 70]]
    end(job, "alpha.fr", urls_done=12)
    assert entry_of(job, "alpha.fr").biggest_queues == {}


# Pages -----------------------------------------------------------------------------------------------


def test_engineers_steer_from_the_job_page(client, job, engineer):
    client.force_login(engineer)
    url = reverse("harvest:job_detail", kwargs={"pk": job.pk})
    page = client.get(url).content.decode()
    assert 'id="job-pause"' in page and 'id="steering"' in page and "site-pause" in page
    response = client.post(reverse("harvest:job_pause", kwargs={"pk": job.pk}))
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.paused_at is not None
    page = client.get(url).content.decode()
    assert 'id="job-resume"' in page and 'id="job-paused"' in page and "site-paused" in page
    client.post(reverse("harvest:job_site_pause", kwargs={"pk": job.pk}), {"domain": "beta.fr"})
    assert entry_of(job, "beta.fr").paused_at is not None
    client.post(reverse("harvest:job_rule_add", kwargs={"pk": job.pk}), {"kind": "reject", "rule": "/tag/"})
    assert Job.objects.get(pk=job.pk).template_settings["reject_rules"][-1] == "/tag/"
    client.post(
        reverse("harvest:job_site_budget", kwargs={"pk": job.pk}),
        {"domain": "alpha.fr", "max_objects": "50", "max_bytes": "-1"},
    )
    assert entry_of(job, "alpha.fr").max_objects == 50
    history = client.get(url).content.decode()
    assert "Reject rule added: /tag/" in history and "Budget of alpha.fr" in history


def test_the_sites_fragment_shows_a_running_sites_biggest_queues(client, job, engineer):
    entry = entry_of(job, "alpha.fr")
    numbers = progress(urls_done=11, urls_queued=80)
    numbers.biggest_queues = {"hosts": [["alpha.fr", 80]], "paths": [["alpha.fr/<b>calendar/", 70]]}
    site_crawl_progress(entry_id=entry.pk, job_id=job.pk, progress=numbers)
    client.force_login(engineer)
    html = client.get(
        reverse("harvest:job_detail", kwargs={"pk": job.pk}), HTTP_HX_REQUEST="true"
    ).content.decode()
    assert "site-queues" in html and "alpha.fr/&lt;b&gt;calendar/" in html  # crawled text, escaped


def test_bad_input_on_the_page_is_refused_with_a_message(client, job, engineer):
    client.force_login(engineer)
    response = client.post(
        reverse("harvest:job_rule_add", kwargs={"pk": job.pk}),
        {"kind": "reject", "rule": r"(a)\1"},
        follow=True,
    )
    assert "Line 1" in response.content.decode()
    assert Job.objects.get(pk=job.pk).rules_serial == 0
    response = client.post(
        reverse("harvest:job_site_budget", kwargs={"pk": job.pk}),
        {"domain": "nowhere.fr", "max_objects": "5", "max_bytes": "5"},
        follow=True,
    )
    assert "nowhere.fr" in response.content.decode()
    response = client.post(
        reverse("harvest:job_site_budget", kwargs={"pk": job.pk}),
        {"domain": "alpha.fr", "max_objects": "lots", "max_bytes": "5"},
        follow=True,
    )
    assert "whole number" in response.content.decode()
    assert entry_of(job, "alpha.fr").max_objects != 5


def test_curators_get_no_steering(client, job, curator):
    client.force_login(curator)
    page = client.get(reverse("harvest:job_detail", kwargs={"pk": job.pk})).content.decode()
    assert 'id="steering"' not in page and 'id="job-pause"' not in page and "site-pause" not in page
    assert client.post(reverse("harvest:job_pause", kwargs={"pk": job.pk})).status_code == 403
    rule = {"kind": "reject", "rule": "x"}
    assert client.post(reverse("harvest:job_rule_add", kwargs={"pk": job.pk}), rule).status_code == 403
    assert Job.objects.get(pk=job.pk).paused_at is None


# API -------------------------------------------------------------------------------------------------


def api_post(client, name, job, data=None):
    return client.post(
        reverse(f"api:job-{name}", kwargs={"pk": job.pk}), data or {}, content_type="application/json"
    )


def test_engineers_steer_through_the_api(client, job, engineer):
    client.force_login(engineer)
    assert api_post(client, "pause", job).json()["paused_at"]
    assert api_post(client, "resume", job).json()["paused_at"] is None
    body = api_post(client, "rules", job, {"kind": "trap", "rule": "/loop/"}).json()
    assert body["crawler_traps"][-1] == "/loop/"
    assert api_post(client, "site-pause", job, {"domain": "alpha.fr"}).json()["paused_at"]
    assert api_post(client, "site-resume", job, {"domain": "alpha.fr"}).json()["paused_at"] is None
    body = api_post(client, "budget", job, {"domain": "alpha.fr", "max_objects": 7}).json()
    assert body["max_objects"] == 7
    refused = api_post(client, "rules", job, {"kind": "reject", "rule": r"(a)\1"})
    assert refused.status_code == 400 and "rule" in refused.json()
    refused = api_post(client, "budget", job, {"domain": "alpha.fr", "max_objects": -5})
    assert refused.status_code == 400
    refused = api_post(client, "site-pause", job, {"domain": "nowhere.fr"})
    assert refused.status_code == 400
    assert entry_of(job, "alpha.fr").max_objects == 7


def test_curators_cannot_steer_through_the_api(client, job, curator):
    client.force_login(curator)
    assert api_post(client, "pause", job).status_code == 403
    assert api_post(client, "rules", job, {"kind": "trap", "rule": "/loop/"}).status_code == 403
    assert Job.objects.get(pk=job.pk).paused_at is None


def test_running_site_state_stays_running_while_paused(job, engineer):
    job_pause(job=job, user=engineer)
    assert entry_of(job, "alpha.fr").state == SiteState.RUNNING
    assert JobConfiguration.objects.filter(job=job, paused_at__isnull=False).count() == 0
