"""The deduplication pages: engineers only, the start form, a run's page and its live part, retiring."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from storage.dedup.pipeline import STAGES
from storage.models import DedupRun, WarcFile
from storage.services.dedup_runs import dedup_run_advance, dedup_run_start, dedup_run_unit
from storage.services.indexing import warc_file_index
from tests.storage.dedup_files import drive, duplicate_warcs
from tests.storage.test_dedup_convert import heritrix_arc, rewrite_members
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(settings, tmp_path) -> Path:
    root = tmp_path / "warcs"
    settings.HARVEST_WARC_DIR = root
    duplicate_warcs(root / "in")
    return root


def field_html(html: str, name: str) -> str:
    """The form group of one field (includes/form_fields.html gives each an id)."""
    match = re.search(rf'<div class="mb-3" id="field-{name}">(.*?)\n</div>', html, re.S)
    assert match, f"no field {name}"
    return match.group(1)


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.CURATOR, Role.MANAGER])
def test_only_engineers_see_and_open_deduplication(as_role, role):
    client = as_role(role)
    assert client.get(reverse("storage:dedup_list")).status_code == 403
    assert "Deduplication" not in client.get(reverse("home")).content.decode()


def test_engineers_find_it_under_operations(as_role):
    client = as_role(Role.ENGINEER)
    page = client.get(reverse("area", kwargs={"area": "operations"})).content.decode()
    assert reverse("storage:dedup_list") in page
    listing = client.get(reverse("storage:dedup_list")).content.decode()
    assert "0 runs" in listing and "No run yet." in listing
    assert f'id="dedup-start" href="{reverse("storage:dedup_start")}"' in listing


def test_the_start_form_refuses_paths_outside_the_allowed_directories_at_the_field(as_role, root, tmp_path):
    client = as_role(Role.ENGINEER)
    response = client.post(
        reverse("storage:dedup_start"),
        {"inputs": f"{root}/in/first.warc.gz\n/etc/passwd\n", "out_dir": str(tmp_path / "out")},
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "/etc/passwd: not under an allowed directory" in field_html(html, "inputs")
    assert "not under an allowed directory" in field_html(html, "out_dir")
    assert str(root) in html  # the allowed directories are named
    assert not DedupRun.objects.exists()


def test_starting_a_run_queues_it_and_shows_its_page(as_role, root, django_capture_on_commit_callbacks):
    client = as_role(Role.ENGINEER)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            reverse("storage:dedup_start"),
            {"inputs": f"{root}/in\n", "out_dir": f"{root}/out", "dry_run": "on"},
        )
    run = DedupRun.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert len(callbacks) == 1  # the run is sent to the workers once committed
    assert run.dry_run and run.state == DedupRun.State.QUEUED
    page = client.get(run.get_absolute_url()).content.decode()
    assert "queued" in page and 'id="dedup-stop"' in page
    assert 'hx-trigger="every 3s"' in page


def test_a_run_on_a_harvest_definitions_files_from_the_form(as_role, root):
    from tests.harvest.crawljobs import job_for_sites

    job = job_for_sites([("example.com", "http://example.com/")])
    for name in ("first.warc.gz", "second.warc.gz"):
        warc_file_index(path=root / "in" / name, job_id=job.pk)
    client = as_role(Role.ENGINEER)
    form = client.get(reverse("storage:dedup_start")).content.decode()
    assert 'name="harvest_definition"' in form and 'name="job"' in form and 'name="since"' in form
    bad = client.post(
        reverse("storage:dedup_start"),
        {"job": "999999", "since": "2026-02-01", "until": "2026-01-01", "out_dir": f"{root}/out"},
    )
    html = bad.content.decode()
    assert "Select a valid choice" in field_html(html, "job")
    assert "The period ends before it begins." in field_html(html, "until")
    assert not DedupRun.objects.exists()
    response = client.post(
        reverse("storage:dedup_start"),
        {"harvest_definition": job.harvest_definition_id, "out_dir": f"{root}/out", "dry_run": "on"},
    )
    run = DedupRun.objects.get()
    assert response.status_code == 302
    assert sorted(Path(path).name for path in run.inputs) == ["first.warc.gz", "second.warc.gz"]


def test_a_running_run_shows_its_stage_and_units_live(as_role, root):
    client = as_role(Role.ENGINEER)
    run = dedup_run_start(inputs=[str(root / "in")], out_dir=str(root / "out"), enqueue=False)
    run = dedup_run_advance(run_id=run.pk)
    fragment = client.get(run.get_absolute_url(), HTTP_HX_REQUEST="true")
    html = fragment.content.decode()
    assert "<html" not in html and 'id="dedup-live"' in html
    assert f"0 of {run.total} units done" in html
    assert f"Stage {STAGES.index(run.stage) + 1} of 6: {run.stage}" in html
    assert "HX-Request" in fragment["Vary"]


def test_a_finished_run_shows_its_savings_and_validation_and_stops_polling(as_role, root):
    client = as_role(Role.ENGINEER)
    warc_file_index(path=root / "in" / "first.warc.gz")
    run = drive(dedup_run_start(inputs=[str(root / "in")], out_dir=str(root / "out"), enqueue=False))
    html = client.get(run.get_absolute_url()).content.decode()
    assert "validated and registered" in html
    assert "hx-trigger" not in html
    assert 'id="dedup-by-mime"' in html and "image/png" in html
    assert 'id="dedup-by-harvest"' in html and "(not from a harvest)" in html
    assert 'id="dedup-validation"' in html and "passed" in html
    assert "first-dedup.warc.gz" in html  # the registered files
    listing = client.get(reverse("storage:dedup_list")).content.decode()
    assert run.get_absolute_url() in listing and "40%" in listing  # 2 duplicates of 5 records
    row = listing[listing.index('<table class="table table-sm table-hover align-middle" id="dedup-runs">') :]
    row = row[row.index("<tbody>") :].split("</tr>")[0]
    assert "dedup-state-validated" in row and "command line" in row  # started without a user
    assert f">{root / 'out'}<" in row and "1 run" in listing


def test_stop_and_resume_buttons(as_role, root):
    client = as_role(Role.ENGINEER)
    run = dedup_run_start(inputs=[str(root / "in")], out_dir=str(root / "out"), enqueue=False)
    client.post(reverse("storage:dedup_stop", kwargs={"pk": run.pk}))
    run.refresh_from_db()
    assert run.state == DedupRun.State.STOPPED
    page = client.get(run.get_absolute_url()).content.decode()
    assert 'id="dedup-resume"' in page and 'id="dedup-stop"' not in page
    response = client.post(reverse("storage:dedup_stop", kwargs={"pk": run.pk}), follow=True)
    assert "cannot become" in response.content.decode()  # refused, as the service words it
    client.post(reverse("storage:dedup_resume", kwargs={"pk": run.pk}))
    run.refresh_from_db()
    assert run.state == DedupRun.State.QUEUED


def test_retiring_an_original_from_its_page(as_role, root, user_with_role):
    source = warc_file_index(path=root / "in" / "first.warc.gz").warc_file
    drive(dedup_run_start(inputs=[str(root / "in")], out_dir=str(root / "out"), enqueue=False))
    curator = as_role(Role.CURATOR)
    page = curator.get(source.get_absolute_url()).content.decode()
    assert "first-dedup.warc.gz" in page and 'id="warcfile-retire"' not in page
    assert curator.post(reverse("storage:warcfile_retire", kwargs={"pk": source.pk})).status_code == 403
    client = as_role(Role.ENGINEER)
    page = client.get(source.get_absolute_url()).content.decode()
    assert 'id="warcfile-retire"' in page
    response = client.post(reverse("storage:warcfile_retire", kwargs={"pk": source.pk}), follow=True)
    html = response.content.decode()
    assert "was retired" in html and "its bytes were removed from disk" in html
    assert not Path(source.path).exists()
    assert WarcFile.objects.get(pk=source.pk).retired_at is not None
    replacement = WarcFile.objects.get(name="first-dedup.warc.gz")
    assert "first.warc.gz" in client.get(replacement.get_absolute_url()).content.decode()


def test_a_conversion_that_did_not_validate_shows_on_the_run_and_blocks_retiring(as_role, settings, tmp_path):
    root = tmp_path / "warcs"
    settings.HARVEST_WARC_DIR = root
    (root / "in").mkdir(parents=True)
    arc = warc_file_index(path=heritrix_arc(root / "in" / "old.arc.gz")).warc_file
    run = dedup_run_advance(
        run_id=dedup_run_start(inputs=[str(root / "in")], out_dir=str(root / "out"), enqueue=False).pk
    )
    dedup_run_unit(run_id=run.pk, stage="convert", unit="old.arc.gz")
    rewrite_members(
        root / "out" / ".dedup" / "convert" / "000000.warc.gz",
        lambda record, raw: None if record.target_uri() == "http://a.test/y" else raw,
    )
    run = drive(run)
    client = as_role(Role.ENGINEER)
    html = client.get(run.get_absolute_url()).content.decode()
    conversions = html[html.index('id="dedup-conversions"') :].split("</ul>")[0]
    assert "1 mismatch" in conversions and "Conversion of the ARC file old.arc.gz" in conversions
    assert "5 captures in it, 4 in the converted file" in conversions
    problems = html[html.index('id="dedup-problems"') :].split("</ul>")[0]
    assert "http://a.test/y (20190101000002) is missing from the converted file" in problems

    response = client.post(reverse("storage:warcfile_retire", kwargs={"pk": arc.pk}), follow=True)
    assert "did not validate in deduplication run" in response.content.decode()
    assert Path(arc.path).exists() and WarcFile.objects.get(pk=arc.pk).retired_at is None
