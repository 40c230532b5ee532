"""A preparation's audit trail as engineers read it: on the run's page, and resumed from the command line."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.urls import reverse
from selectolax.parser import HTMLParser

from harvest.choices import HarvestKind
from harvest.models import PreloadRun, PreloadStep
from harvest.services.planning import definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run, preload_stop
from tests.factories import UserFactory
from webarchive.permissions import Role

Kind, Stage = PreloadStep.Kind, PreloadRun.Stage


@pytest.fixture
def run(db, tmp_path):
    listing = tmp_path / "registry.txt"
    listing.write_text("alpha.fr\nbeta.fr\n")
    starter = UserFactory(username="starter", roles=[Role.ENGINEER])
    return preload_create(
        harvest_definition=definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026"),
        sources=[SourceSpec("registry", str(listing))],
        check_dns=False,
        find_redirects=False,
        include_selection=False,
        user=starter,
    )


def steps_shown(client, run) -> list[list[str]]:
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    response = client.get(reverse("harvest:preload_detail", args=[run.pk]))
    assert response.status_code == 200
    rows = HTMLParser(response.content.decode()).css("#preload-steps tbody tr")
    return [[cell.text(strip=True) for cell in row.css("td")][1:] for row in rows]


def test_the_run_page_shows_who_had_each_step_done_and_what_it_wrote(client, run):
    preload_run(run.pk)
    shown = steps_shown(client, run)
    assert shown[0] == ["created", "—", "starter", "—"]
    assert shown[1][:3] == ["stage done", "reading the lists", "starter"]
    loaded = [row for row in shown if row[0] == "domains loaded"]
    assert loaded and all(row[2] == "starter" for row in loaded)
    assert "created: 2" in " ".join(row[3] for row in loaded)


def test_a_run_resumed_from_the_command_line_says_so_in_its_trail(client, run):
    def stop_in_merge(current):
        if current.stage == Stage.MERGE:
            preload_stop(run=current, user=None)

    assert preload_run(run.pk, progress=stop_in_merge).state == PreloadRun.State.STOPPED
    call_command("preload_domains", resume=run.pk, stdout=open("/dev/null", "w"))  # noqa: SIM115
    kinds = [row[0] for row in steps_shown(client, run)]
    assert kinds.index("resumed") > kinds.index("stop asked")
    run.refresh_from_db()
    assert run.state == PreloadRun.State.DONE
    # Resuming a run that is done records nothing more.
    call_command("preload_domains", resume=run.pk, stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert [row[0] for row in steps_shown(client, run)].count("resumed") == 1
