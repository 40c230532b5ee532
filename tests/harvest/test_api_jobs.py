"""The jobs API through HTTP: a job's progress, its sites, its WARC files, and stopping it.

Sites are moved through their states by the services the crawl workers call, so the API reads what a
real crawl would have written.
"""

import hashlib
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.pagination import PageNumberPagination

from harvest.choices import JobStatus
from harvest.models import Job
from harvest.services.crawls import site_crawl_progress
from harvest.services.planning import definition_configurations_change
from tests.harvest.sitecrawls import DOMAINS, end, launch, progress, run
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def job(make_domain, selective):
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in DOMAINS]
    )
    return launch(selective)


def url(name, job, **query):
    path = reverse(f"api:job-{name}", kwargs={"pk": job.pk if isinstance(job, Job) else job})
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def post(client, target):
    return client.post(target, {}, content_type="application/json")


# Progress ---------------------------------------------------------------------------------------


def test_the_progress_of_a_job_is_summed_over_its_sites(as_role, job):
    client = as_role(Role.CURATOR)
    body = client.get(url("progress", job)).json()
    assert body["status"] == "submitted" and body["started_at"] is None
    assert body["sites"] == {"total": 3, "queued": 3, "running": 0, "ended": 0}
    assert (body["urls_done"], body["urls_queued"], body["bytes_done"], body["rate"]) == (0, 0, 0, 0.0)

    run(job, "alpha.fr", urls_done=40, urls_queued=60, bytes=2048, errors=2, rate=1.5)
    run(job, "beta.fr", urls_done=10, urls_queued=5, bytes=100, errors=0, rate=0.25)
    end(job, "gamma.fr", urls_done=7, bytes=700, errors=1, rate=9.0)
    body = client.get(url("progress", job)).json()
    assert body["id"] == job.pk and body["status"] == "started" and body["started_at"] is not None
    assert body["sites"] == {"total": 3, "queued": 0, "running": 2, "ended": 1}
    assert body["urls_done"] == 57 and body["urls_queued"] == 65
    assert body["bytes_done"] == 2848 and body["error_count"] == 3
    assert body["rate"] == 1.75  # the running sites only
    assert body["ended_at"] is None and body["stop_requested_at"] is None


def test_a_job_links_to_its_progress_sites_and_files(as_role, job):
    body = as_role(Role.ENGINEER).get(reverse("api:job-detail", kwargs={"pk": job.pk})).json()
    for name in ("progress", "sites", "files"):
        assert body[f"{name}_url"].endswith(url(name, job))
    assert body["stop_requested_at"] is None


# Sites ------------------------------------------------------------------------------------------


def test_sites_are_listed_running_first_and_filtered_by_state(as_role, job):
    client = as_role(Role.ENGINEER)
    end(job, "alpha.fr", "failed", urls_done=1, error="DNS lookup failed")
    run(job, "gamma.fr", urls_done=5, urls_queued=9, current_url="http://gamma.fr/page")

    body = client.get(url("sites", job)).json()
    assert body["count"] == 3
    assert [(s["domain"], s["state"]) for s in body["results"]] == [
        ("gamma.fr", "running"),
        ("beta.fr", "queued"),
        ("alpha.fr", "ended"),
    ]
    gamma, _beta, alpha = body["results"]
    assert gamma["current_url"] == "http://gamma.fr/page" and gamma["attempts"] == 1
    assert (gamma["urls_done"], gamma["urls_queued"], gamma["worker"]) == (5, 9, "worker-1")
    assert alpha["stop_reason"] == "failed" and alpha["error"] == "DNS lookup failed"

    ended = client.get(url("sites", job, state="ended")).json()["results"]
    assert [s["domain"] for s in ended] == ["alpha.fr"]
    both = client.get(url("sites", job) + "?state=queued&state=running").json()["results"]
    assert [s["domain"] for s in both] == ["gamma.fr", "beta.fr"]
    assert [s["domain"] for s in client.get(url("sites", job, domain="BET")).json()["results"]] == ["beta.fr"]
    assert client.get(url("sites", job, stop_reason="failed")).json()["count"] == 1


def test_a_bad_site_filter_is_a_400_naming_it(as_role, job):
    response = as_role(Role.ENGINEER).get(url("sites", job, state="sleeping"))
    assert response.status_code == 400
    assert response.json() == {
        "state": ["Select a valid choice. sleeping is not one of the available choices."]
    }


def test_sites_are_paginated(as_role, job, monkeypatch):
    monkeypatch.setattr(PageNumberPagination, "page_size", 2)
    client = as_role(Role.ENGINEER)
    first = client.get(url("sites", job)).json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    second = client.get(first["next"]).json()
    assert len(second["results"]) == 1 and second["next"] is None
    names = [s["domain"] for s in first["results"] + second["results"]]
    assert sorted(names) == DOMAINS


# Files ------------------------------------------------------------------------------------------


def test_the_files_of_a_job_are_its_closed_warc_files(as_role, job):
    client = as_role(Role.CURATOR)
    assert client.get(url("files", job)).json() == {"count": 0, "next": None, "previous": None, "results": []}
    for domain in DOMAINS:
        end(job, domain, urls_done=1)  # the last one writes the job's metadata WARC file

    body = client.get(url("files", job)).json()
    assert body["count"] == 1
    [warc] = body["results"]
    data = Path(warc["path"]).read_bytes()
    assert warc["size"] == len(data) and warc["sha256"] == hashlib.sha256(data).hexdigest()
    assert warc["name"].endswith(".warc.gz") and f"-{job.pk}-" in warc["name"]
    assert warc["records"] >= 3 and warc["recovered"] is False


def test_an_unknown_parameter_of_a_jobs_files_or_configurations_is_a_400_naming_those_that_exist(
    as_role, job
):
    client = as_role(Role.CURATOR)
    for name in ("files", "configurations"):
        response = client.get(url(name, job, search="alpha.fr"))  # a filter these lists do not have
        assert response.status_code == 400, name
        assert response.json() == {
            "detail": "Unknown query parameter(s): search. This endpoint takes: format, page."
        }
        assert client.get(url(name, job, page=1)).status_code == 200


# Stop -------------------------------------------------------------------------------------------


def test_an_engineer_stops_a_running_job(as_role, job):
    client = as_role(Role.ENGINEER)
    running = run(job, "alpha.fr", urls_done=3)
    response = post(client, url("stop", job))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["id"] == job.pk and body["status"] == "started" and body["stop_requested_at"]
    states = dict(job.configurations.values_list("domain__name", "state"))
    assert states == {"alpha.fr": "running", "beta.fr": "ended", "gamma.fr": "ended"}
    assert site_crawl_progress(entry_id=running.pk, job_id=job.pk, progress=progress(urls_done=4)) is True
    # Asking again while it stops changes nothing.
    again = post(client, url("stop", job))
    assert again.status_code == 200 and again.json()["stop_requested_at"] == body["stop_requested_at"]
    end(job, "alpha.fr", "operator", urls_done=4)
    assert client.get(url("progress", job)).json()["status"] == JobStatus.STOPPED


def test_a_done_job_cannot_be_stopped(as_role, job):
    for domain in DOMAINS:
        end(job, domain)
    response = post(as_role(Role.ENGINEER), url("stop", job))
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["Only a submitted or running job can be stopped; this one is done."]
    }


def test_curators_read_progress_but_may_not_stop(as_role, job):
    client = as_role(Role.CURATOR)
    for name in ("progress", "sites", "files"):
        assert client.get(url(name, job)).status_code == 200
    assert post(client, url("stop", job)).status_code == 403
    job.refresh_from_db()
    assert job.stop_requested_at is None and job.status == JobStatus.SUBMITTED


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER])
def test_librarians_and_managers_get_nothing(as_role, role, job):
    client = as_role(role)
    for name in ("progress", "sites", "files"):
        assert client.get(url(name, job)).status_code == 403
    assert post(client, url("stop", job)).status_code == 403


def test_anonymous_clients_get_401_and_an_unknown_job_404(client, as_role, job):
    for name in ("progress", "sites", "files"):
        assert client.get(url(name, job)).status_code == 401
    assert post(client, url("stop", job)).status_code == 401
    engineer = as_role(Role.ENGINEER)
    for name in ("progress", "sites", "files"):
        assert engineer.get(url(name, 999999)).status_code == 404
    assert post(engineer, url("stop", 999999)).status_code == 404


def test_a_page_that_is_not_a_page_number_is_a_400_not_the_first_page(as_role, job):
    client = as_role(Role.CURATOR)
    for page in ("", "x", "0", "-1", "²"):
        response = client.get(reverse("api:budgetmapping-list") + f"?page={page}")
        assert response.status_code == 400, page
        assert response.json() == {"page": ["A page is a whole number from 1."]}
    assert client.get(reverse("api:budgetmapping-list") + "?page=1").status_code == 200
    assert client.get(reverse("api:budgetmapping-list") + "?page=99").status_code == 404  # past the end
