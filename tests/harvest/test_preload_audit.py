"""A preparation's audit trail: who created, stopped and resumed a run, each stage it finished and
each range of domains it loaded, with what it wrote; the domains it created name who and which run."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from harvest.choices import HarvestKind
from harvest.models import Domain, PreloadDomain, PreloadRun, PreloadStep
from harvest.services.domains import domain_create
from harvest.services.planning import definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_resume, preload_run, preload_stop
from tests.factories import UserFactory
from webarchive.permissions import Role

Kind, Stage = PreloadStep.Kind, PreloadRun.Stage


@pytest.fixture
def options(db, tmp_path):
    """A run's options: one list of four domains and a bad line, no network, no librarians' records."""
    listing = tmp_path / "registry.txt"
    listing.write_text("alpha.fr\nbeta.fr\ngamma.fr\nwww.delta.fr\nnot a domain\n")
    return {
        "harvest_definition": definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026"),
        "sources": [SourceSpec("registry", str(listing))],
        "check_dns": False,
        "find_redirects": False,
        "include_selection": False,
    }


def trail(run: PreloadRun) -> list[tuple[str, str, str | None]]:
    return [
        (step.kind, step.stage, step.user.username if step.user else None)
        for step in run.steps.select_related("user").order_by("pk")
    ]


@pytest.fixture
def sent(monkeypatch):
    """The runs handed to the workers (``harvest.preload``)."""
    calls: list[int] = []
    monkeypatch.setattr("harvest.tasks.preload.delay", calls.append)
    return calls


def test_each_step_of_a_run_names_who_started_stopped_or_resumed_it(
    options, client, sent, django_capture_on_commit_callbacks
):
    starter, resumer = UserFactory(roles=[Role.ENGINEER]), UserFactory(roles=[Role.ENGINEER])
    gamma = domain_create(name="gamma.fr")  # known: the run does not create it
    run = preload_create(**options, user=starter)

    def stop_in_merge(run):
        if run.stage == Stage.MERGE:
            preload_stop(run=run, user=starter)

    run = preload_run(run.pk, progress=stop_in_merge)
    assert run.state == PreloadRun.State.STOPPED and run.stage == Stage.MERGE

    client.force_login(resumer)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("harvest:preload_resume", args=[run.pk]))
    assert response.status_code == 302 and sent == [run.pk]
    run.refresh_from_db()
    assert run.state == PreloadRun.State.QUEUED and not run.stop_requested

    def gamma_does_not_answer(run):  # what a DNS check would find: the known domain is gone
        if run.stage == Stage.MERGE:
            PreloadDomain.objects.filter(run=run, name="gamma.fr").update(dns=PreloadDomain.Dns.FAILED)

    run = preload_run(run.pk, progress=gamma_does_not_answer)  # what the worker does

    assert run.state == PreloadRun.State.DONE
    loaded = list(run.steps.filter(kind=Kind.LOADED))
    assert trail(run) == [
        (Kind.CREATED, "", starter.username),
        (Kind.STAGE_DONE, Stage.INGEST, starter.username),
        (Kind.STOP_ASKED, Stage.MERGE, starter.username),
        (Kind.RESUMED, Stage.MERGE, resumer.username),
        (Kind.STAGE_DONE, Stage.MERGE, resumer.username),
        (Kind.STAGE_DONE, Stage.DNS, resumer.username),
        (Kind.STAGE_DONE, Stage.REDIRECTS, resumer.username),
        *[(Kind.LOADED, Stage.LOAD, resumer.username)] * len(loaded),
        (Kind.STAGE_DONE, Stage.LOAD, resumer.username),
    ]
    counts = {step.stage: step.counts for step in run.steps.filter(kind=Kind.STAGE_DONE)}
    assert counts[Stage.INGEST] == {"lines": 5, "accepted": 4, "invalid": 1}
    assert counts[Stage.MERGE] == {"domains": 4, "new": 3}
    assert counts[Stage.DNS] == {"skipped": 3, "failed": 1}
    assert counts[Stage.REDIRECTS] == {"added": 0}
    assert counts[Stage.LOAD] == {"created": 3, "made_inactive": 1, "made_active": 0, "seeds_updated": 0}
    assert sum(step.counts["created"] for step in loaded) == 3

    gamma.refresh_from_db()
    assert not gamma.is_active
    created = Domain.history.filter(name="alpha.fr", history_type="+").get()
    assert created.history_user == resumer and created.history_change_reason == f"Preload run {run.pk}"


def test_stopping_and_resuming_through_the_pages_are_steps_and_refusals_change_nothing(
    options, as_role, sent, django_capture_on_commit_callbacks
):
    run = preload_create(**options)
    engineer = as_role(Role.ENGINEER)
    username = engineer.get(reverse("account")).context["user"].username
    stop, resume = (reverse(f"harvest:preload_{action}", args=[run.pk]) for action in ("stop", "resume"))

    for _ in range(2):  # asking twice is one request to stop
        assert engineer.post(stop).status_code == 302
    with django_capture_on_commit_callbacks(execute=True):
        page = engineer.post(resume, follow=True).content.decode()
    assert "A preload run that is queued cannot become queued." in page and sent == []
    assert trail(run) == [(Kind.CREATED, "", None), (Kind.STOP_ASKED, Stage.INGEST, username)]

    PreloadRun.objects.filter(pk=run.pk).update(state=PreloadRun.State.FAILED)
    with django_capture_on_commit_callbacks(execute=True):
        page = engineer.post(resume, follow=True).content.decode()
    assert "The preparation resumes at stage: reading the lists." in page and sent == [run.pk]
    assert trail(run)[-1] == (Kind.RESUMED, Stage.INGEST, username)
    run.refresh_from_db()
    assert run.state == PreloadRun.State.QUEUED and not run.stop_requested


def test_a_running_or_done_run_is_not_resumed_and_the_refusal_is_no_step(
    options, sent, django_capture_on_commit_callbacks
):
    engineer = UserFactory(roles=[Role.ENGINEER])
    run = preload_create(**options, user=engineer)
    refusals = []

    def resume_while_running(run):
        if not refusals:
            try:
                preload_resume(run=run, user=engineer)
            except ValidationError as error:
                refusals.append((error.code, error.messages))

    with django_capture_on_commit_callbacks(execute=True):
        run = preload_run(run.pk, progress=resume_while_running)  # what the worker does
    assert refusals == [("illegal_transition", ["A preload run that is running cannot become queued."])]
    assert run.state == PreloadRun.State.DONE and sent == []

    with django_capture_on_commit_callbacks(execute=True), pytest.raises(ValidationError) as excinfo:
        preload_resume(run=run, user=engineer)
    assert excinfo.value.messages == ["A preload run that is done cannot become queued."]
    run.refresh_from_db()
    assert run.state == PreloadRun.State.DONE and sent == []
    assert Kind.RESUMED not in [kind for kind, _stage, _user in trail(run)]
