"""Broad-crawl preparation: normalisation, sources and merge, load, resuming, the command, the pages.

The DNS check and redirect discovery against real servers are in test_preload_dns.py,
test_preload_redirects.py and test_preload_checks.py.
"""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import Domain, Job, PreloadDomain, PreloadRun, SeedList
from harvest.preload.sources import normalise_entry
from harvest.services.domains import domain_create
from harvest.services.launcher import launch_due
from harvest.services.planning import definition_run_now, definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run
from harvest.services.preload import load as preload_load
from harvest.services.preload import progress as preload_progress
from selection.choices import RecordStatus
from tests.factories import RecordFactory, UserFactory
from webarchive.permissions import Role


class Killed(BaseException):
    """A worker killed in the middle of a stage (not an error the run could record)."""


def kill_in_stage(monkeypatch, stage: str, after: int):
    """Make the run die as a killed worker would, at the ``after``-th progress report of ``stage``;
    returns the real progress function (to put back before resuming)."""
    real_advance, calls = preload_progress.advance, []

    def advance(run, done, progress, **kwargs):
        real_advance(run, done, progress, **kwargs)
        if run.stage == stage:
            calls.append(done)
            if len(calls) == after:
                raise Killed

    monkeypatch.setattr(preload_progress, "advance", advance)
    return real_advance


@pytest.fixture
def snapshot(db):
    return definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026")


@pytest.fixture
def lists(tmp_path):
    """Three overlapping lists: a registry's, a publishers' CSV, and one with URLs and bad lines."""
    registry = tmp_path / "registry.txt"
    registry.write_text("# the registry\nalpha.fr\nBETA.fr\n\ngamma.fr\nbücher.fr\n")
    publishers = tmp_path / "publishers.csv"
    publishers.write_text("publisher;site\nLe Monde;beta.fr\nLa Croix;www.delta.fr\nNobody;\n")
    urls = tmp_path / "urls.txt"
    urls.write_text("http://www.alpha.fr/news/\nhttps://epsilon.fr/a?b=c\nnot a domain\nfr\n127.0.0.1\nfoo\n")
    return registry, publishers, urls


def specs(lists):
    registry, publishers, urls = lists
    return [
        SourceSpec("registry", str(registry)),
        SourceSpec("publishers", str(publishers), column="site"),
        SourceSpec("catalogue", str(urls)),
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Example.FR", ("example.fr", "")),
        ("www.example.fr", ("example.fr", "")),
        ("example.fr.", ("example.fr", "")),
        ("news.bbc.co.uk", ("bbc.co.uk", "")),
        ("bücher.de", ("xn--bcher-kva.de", "")),
        ("http://www.Example.fr/a/b?c=d", ("example.fr", "http://www.example.fr/a/b?c=d")),
        ("https://blog.example.co.uk", ("example.co.uk", "https://blog.example.co.uk/")),
    ],
)
def test_lines_are_normalised_to_registered_domains(line, expected):
    assert normalise_entry(line) == expected


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("fr", "a public suffix, not a domain"),
        ("intranet.corp-internal", "no public suffix"),
        ("exa mple.fr", "not a valid domain name"),
        ("-bad-.fr", "not a valid domain name"),
        ("127.0.0.1", "an address, not a domain name"),
        ("http://", "no host"),
        ("xn--a.fr", "not a valid"),
    ],
)
def test_bad_lines_say_why(line, reason):
    with pytest.raises(ValueError, match=reason):
        normalise_entry(line)


def all_loaded(run: PreloadRun) -> bool:
    """Whether the run's load marked the ranges of all its domains loaded."""
    ranges = {
        pk // preload_load.LOAD_BATCH
        for pk in PreloadDomain.objects.filter(run=run).values_list("pk", flat=True)
    }
    return bool(ranges) and ranges <= set(run.loaded_batches)


def fingerprint(run: PreloadRun) -> dict:
    """What a run leaves: its domains, the domains created with their seeds, its statistics."""
    run.refresh_from_db()
    return {
        "state": run.state,
        "domains": sorted(
            PreloadDomain.objects.filter(run=run).values_list("name", "sources", "seeds", "is_new", "dns")
        ),
        "loaded": all_loaded(run),
        "created": sorted(
            SeedList.objects.filter(
                domain__name__in=PreloadDomain.objects.filter(run=run).values("name")
            ).values_list("domain__name", "seeds", "domain__is_active")
        ),
        "statistics": run.statistics,
    }


def test_a_run_merges_its_sources_and_loads_the_new_domains(snapshot, lists):
    known = domain_create(name="gamma.fr")
    RecordFactory(url="https://www.zeta.fr/", status=RecordStatus.VALIDATED)
    RecordFactory(url="https://proposed-only.fr/", status=RecordStatus.PROPOSED)
    run = preload_create(
        harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
    )

    run = preload_run(run.pk)

    assert run.state == PreloadRun.State.DONE and run.stage == PreloadRun.Stage.DONE
    merged = {d.name: d for d in PreloadDomain.objects.filter(run=run)}
    assert set(merged) == {
        "alpha.fr",
        "beta.fr",
        "gamma.fr",
        "xn--bcher-kva.fr",
        "delta.fr",
        "epsilon.fr",
        "zeta.fr",
    }
    assert merged["beta.fr"].sources == "publishers,registry"
    assert merged["alpha.fr"].sources == "catalogue,registry"
    assert merged["alpha.fr"].seeds == "http://www.alpha.fr/news/"
    assert merged["zeta.fr"].sources == "selection"
    assert not merged["gamma.fr"].is_new
    assert all(d.is_new for name, d in merged.items() if name != "gamma.fr")
    assert all(d.dns == PreloadDomain.Dns.SKIPPED for d in merged.values()) and all_loaded(run)
    # The known domain is left as it was (one seed list, its own), the new ones are created once.
    assert known.seed_lists.count() == 1

    # New domains have their seeds (the defaults, then the URLs a source gave) and default configuration.
    alpha = Domain.objects.get(name="alpha.fr")
    assert alpha.default_configuration.seed_lists.get().seeds == (
        "http://alpha.fr/\nhttps://alpha.fr/\nhttp://www.alpha.fr/\nhttps://www.alpha.fr/\n"
        "http://www.alpha.fr/news/"
    )
    assert (
        "http://www.delta.fr/"
        in Domain.objects.get(name="delta.fr").default_configuration.seed_lists.get().seeds
    )
    assert Domain.objects.filter(name__in=merged).count() == 7

    catalogue = run.sources.get(name="catalogue")
    assert (catalogue.lines, catalogue.accepted, catalogue.invalid) == (6, 2, 4)
    reasons = {line.line: line.reason for line in catalogue.invalid_lines.all()}
    assert set(reasons) == {3, 4, 5, 6} and "public suffix" in reasons[4]
    publishers = run.sources.get(name="publishers")
    assert (publishers.lines, publishers.accepted) == (2, 2)  # the empty cell is not a line

    stats = run.statistics
    assert (stats["total"], stats["new"], stats["dns_failed"], stats["redirects"]) == (7, 6, 0, 0)
    assert stats["sources"]["registry"] == {"lines": 4, "invalid": 0, "domains": 4, "new": 3}
    assert stats["sources"]["selection"]["domains"] == 1
    assert stats["tlds"] == {"fr": 7}


def test_the_snapshot_takes_the_loaded_domains(snapshot, lists):
    run = preload_run(
        preload_create(
            harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
        ).pk
    )
    assert run.state == PreloadRun.State.DONE
    definition_run_now(definition=snapshot)
    launch_due(now=timezone.now() + timedelta(minutes=1))
    crawled = set(
        Job.objects.filter(harvest_definition=snapshot).values_list("configurations__domain__name", flat=True)
    )
    assert set(PreloadDomain.objects.filter(run=run).values_list("name", flat=True)) <= crawled


@pytest.mark.parametrize(
    ("stage", "after"),
    [
        (PreloadRun.Stage.INGEST, 1),
        (PreloadRun.Stage.INGEST, 2),
        (PreloadRun.Stage.MERGE, 1),
        (PreloadRun.Stage.LOAD, 1),
        (PreloadRun.Stage.LOAD, 3),
    ],
)
def test_a_run_killed_in_a_stage_resumes_to_the_same_result(snapshot, lists, monkeypatch, stage, after):
    monkeypatch.setattr(preload_progress, "BATCH", 2)
    monkeypatch.setattr(preload_load, "LOAD_BATCH", 2)
    domain_create(name="gamma.fr")
    options = {"sources": specs(lists), "check_dns": False, "find_redirects": False}

    # The same run without interruption, rolled back: what the interrupted one must end with.
    savepoint = transaction.savepoint()
    expected = fingerprint(preload_run(preload_create(harvest_definition=snapshot, **options).pk))
    transaction.savepoint_rollback(savepoint)
    assert expected["state"] == PreloadRun.State.DONE

    run = preload_create(harvest_definition=snapshot, **options)
    real_advance = kill_in_stage(monkeypatch, stage, after)
    with pytest.raises(Killed):
        preload_run(run.pk)
    run.refresh_from_db()
    assert run.state == PreloadRun.State.RUNNING and run.stage == stage  # as a killed worker leaves it

    monkeypatch.setattr(preload_progress, "advance", real_advance)
    run = preload_run(run.pk)
    got = fingerprint(run)
    assert got == expected


def test_creating_a_run_refuses_bad_input_and_creates_nothing(snapshot, lists, tmp_path, schedule_daily):
    selective = definition_save(kind=HarvestKind.SELECTIVE, name="selective", schedule=schedule_daily)
    registry, publishers, _urls = lists
    cases = [
        ({"harvest_definition": selective, "sources": [SourceSpec("r", str(registry))]}, "selective harvest"),
        ({"sources": [SourceSpec("r", str(tmp_path / "missing.txt"))]}, "is not a readable file"),
        ({"sources": [SourceSpec("a,b", str(registry))]}, "is not a source name"),
        ({"sources": [SourceSpec("selection", str(registry))]}, "librarians' records"),
        ({"sources": [SourceSpec("p", str(publishers), column="url")]}, "has no column “url”"),
        ({"sources": [SourceSpec("r", str(registry)), SourceSpec("s", str(registry))]}, "given twice"),
        ({"sources": [], "include_selection": False}, "at least one list"),
        ({"sources": [SourceSpec("r", str(registry))], "dns_timeout": 0}, "more than 0 seconds"),
    ]
    for options, message in cases:
        with pytest.raises(ValidationError, match=message):
            preload_create(**{"harvest_definition": snapshot, **options})
    assert not PreloadRun.objects.exists()


@pytest.fixture
def schedule_daily(db):
    from harvest.services.planning import schedule_save

    return schedule_save(name="daily", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3)


def test_the_command_prepares_a_snapshot_and_refuses_bad_input(snapshot, lists, tmp_path):
    registry, _publishers, urls = lists
    out = StringIO()
    call_command(
        "preload_domains",
        str(registry),
        str(urls),
        "--source",
        "registry",
        "--no-dns",
        "--no-redirects",
        stdout=out,
    )
    run = PreloadRun.objects.get()
    assert f"Preload run {run.pk} done." in out.getvalue()
    assert "source registry 5 5 10 4" in out.getvalue()  # domains, new, lines, invalid
    # The invalid lines, each with its number, text and reason, and where all of them are.
    printed = out.getvalue()
    assert "4 invalid line(s); the first 20:" in printed
    assert "registry line 3: 'not a domain' — " in printed
    assert f"/harvest/preload/{run.pk}/invalid-lines.csv" in printed
    assert set(run.sources.values_list("name", flat=True)) == {"registry", "selection"}
    assert Domain.objects.filter(name="epsilon.fr").exists()

    for args, message in [
        ((str(registry),), "--source NAME"),
        ((str(registry), str(urls), "--source", "a", "--source", "b", "--source", "c"), "once per file"),
        ((str(tmp_path / "none.txt"), "--source", "x"), "is not a readable file"),
        ((str(registry), "--source", "x", "--definition", "nope"), "No snapshot harvest definition"),
        (("--resume", "999"), "No preload run 999"),
        (("--no-selection",), "at least one FILE"),
    ]:
        with pytest.raises(CommandError, match=message):
            call_command("preload_domains", *args, "--no-dns", stdout=out)
    assert PreloadRun.objects.count() == 1


def test_a_preparation_needs_no_snapshot_definition(db, lists, client):
    """The domains are loaded before any snapshot definition exists; one is chosen later."""
    registry, _publishers, _urls = lists
    out = StringIO()
    call_command(
        "preload_domains", str(registry), "--source", "registry", "--no-dns", "--no-redirects", stdout=out
    )
    run = PreloadRun.objects.get()
    assert run.harvest_definition is None and run.state == PreloadRun.State.DONE
    assert out.getvalue().startswith(f"Preload {run.pk}\n")
    assert Domain.objects.filter(name="gamma.fr").exists()
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    page = client.get(run.get_absolute_url()).content.decode()
    assert "For the next snapshot (no definition chosen)" in page
    form = client.get(reverse("harvest:preload_start")).content.decode()
    assert "Source 1: CSV column" in form and "%(n)d" not in form
    assert re.search(r'<input type="text" name="column_1" maxlength="200" class="form-control"', form)


def test_a_stopped_run_resumes_from_its_stage(snapshot, lists):
    run = preload_create(
        harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
    )
    PreloadRun.objects.filter(pk=run.pk).update(stop_requested=True)
    run = preload_run(run.pk)  # the flag set before it started is cleared: it runs
    assert run.state == PreloadRun.State.DONE

    second = preload_create(
        harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
    )
    calls = []

    def stop_after_first_source(run):
        calls.append(run.stage)
        if len(calls) == 1:
            PreloadRun.objects.filter(pk=run.pk).update(stop_requested=True)

    second = preload_run(second.pk, progress=stop_after_first_source)
    assert second.state == PreloadRun.State.STOPPED and second.stage == PreloadRun.Stage.INGEST
    assert second.sources.filter(ingested=True).count() == 1
    assert preload_run(second.pk).state == PreloadRun.State.DONE
    assert second.sources.filter(ingested=False).count() == 0


def test_a_domain_created_between_the_merge_and_the_load_is_taken_as_known(snapshot, lists):
    run = preload_create(
        harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
    )

    def stop_after_merge(run):
        if run.stage == PreloadRun.Stage.MERGE:
            PreloadRun.objects.filter(pk=run.pk).update(stop_requested=True)

    run = preload_run(run.pk, progress=stop_after_merge)
    assert run.state == PreloadRun.State.STOPPED
    assert PreloadDomain.objects.get(run=run, name="delta.fr").is_new
    created = domain_create(name="delta.fr", seeds="https://delta.fr/by-hand/")  # someone, meanwhile
    # …and epsilon.fr, which a source gave with a URL: the load adds it to the list, as to a known one.
    epsilon = domain_create(name="epsilon.fr", seeds="https://epsilon.fr/by-hand/")

    run = preload_run(run.pk)

    assert run.state == PreloadRun.State.DONE
    assert not PreloadDomain.objects.get(run=run, name="delta.fr").is_new
    assert PreloadDomain.objects.get(run=run, name="delta.fr").known_id == created.pk
    delta = Domain.objects.get(name="delta.fr")
    assert delta == created and delta.seed_lists.get().seeds == "https://delta.fr/by-hand/"
    assert epsilon.seed_lists.get().seeds == "https://epsilon.fr/by-hand/\nhttps://epsilon.fr/a?b=c"
    assert Domain.objects.filter(name="alpha.fr").exists()  # the rest of its range is created
    assert (run.statistics["total"], run.statistics["new"]) == (6, 4)  # delta.fr, epsilon.fr no longer new
    assert run.statistics["seeds_updated"] == 1


# Pages


def test_an_engineer_starts_a_run_from_uploaded_lists(
    snapshot, as_role, django_capture_on_commit_callbacks, monkeypatch, settings, tmp_path
):
    settings.PRELOAD_UPLOAD_DIR = tmp_path / "uploads"
    sent = []
    monkeypatch.setattr("harvest.tasks.preload.delay", sent.append)
    client = as_role(Role.ENGINEER)
    data = {
        "harvest_definition": snapshot.pk,
        "dns_timeout": "2",
        "dns_retries": "1",
        "source_1": "registry",
        "files_1": [SimpleUploadedFile("a.txt", b"alpha.fr\n"), SimpleUploadedFile("b.txt", b"beta.fr\n")],
        "source_2": "publishers",
        "files_2": SimpleUploadedFile("p.csv", b"name,site\nX,gamma.fr\n"),
        "column_2": "site",
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("harvest:preload_start"), data)
    run = PreloadRun.objects.get()
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert sent == [run.pk]
    assert sorted(run.sources.values_list("name", "column")) == [
        ("publishers", "site"),
        ("registry", ""),
        ("registry", ""),
    ]
    assert all(source.path.startswith(str(tmp_path)) for source in run.sources.exclude(name="publishers"))
    assert not run.include_selection and not run.find_redirects and not run.check_dns

    preload_run(run.pk)  # what the worker does
    page = client.get(run.get_absolute_url())
    assert "3 domains, 3 new" in page.content.decode()
    csv_text = b"".join(
        client.get(reverse("harvest:preload_statistics", args=[run.pk])).streaming_content
    ).decode()
    assert "source,registry,2,2,2,0" in csv_text and "tld,fr,3" in csv_text


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"source_1": "registry"}, "files_1", "Give the files of this source."),
        (
            {"files_1": SimpleUploadedFile("a.txt", b"alpha.fr\n")},
            "source_1",
            "Name the source of these files.",
        ),
        (
            {"source_1": "a,b", "files_1": SimpleUploadedFile("a.txt", b"x.fr\n")},
            None,
            "is not a source name",
        ),
        ({"nameservers": "not a server:port:x", "include_selection": "on"}, None, ""),
    ],
)
def test_the_form_refuses_bad_input_and_starts_nothing(
    snapshot, as_role, data, field, message, settings, tmp_path
):
    settings.PRELOAD_UPLOAD_DIR = tmp_path / "uploads"
    response = as_role(Role.ENGINEER).post(
        reverse("harvest:preload_start"),
        {"harvest_definition": snapshot.pk, "dns_timeout": "2", "dns_retries": "1", **data},
    )
    assert response.status_code == 200
    form = response.context["form"]
    assert form.errors
    if field:
        assert message in " ".join(form.errors[field])
    elif message:
        assert message in str(form.errors)
    assert not PreloadRun.objects.exists()


def test_preparation_pages_are_for_crawl_engineers(snapshot, lists, as_role, client):
    run = preload_create(
        harvest_definition=snapshot, sources=specs(lists), check_dns=False, find_redirects=False
    )
    urls = [
        reverse("harvest:preload_list"),
        reverse("harvest:preload_start"),
        run.get_absolute_url(),
        reverse("harvest:preload_statistics", args=[run.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 302
    for url in urls:
        for role in (Role.LIBRARIAN, Role.CURATOR, Role.MANAGER):
            assert as_role(role).get(url).status_code == 403, (url, role)
        assert as_role(Role.ENGINEER).get(url).status_code == 200, url
    assert as_role(Role.CURATOR).post(reverse("harvest:preload_stop", args=[run.pk])).status_code == 403
    run.refresh_from_db()
    assert not run.stop_requested
