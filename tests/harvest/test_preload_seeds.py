"""The seeds a preparation loads, as NAS_preload does: a new domain gets http(s)://(www.)name/ and the
URLs its sources gave; a known domain's seed list gains the URLs it lacks, with a history row.

Run on SQLite and on PostgreSQL (``DATABASE_URL``): the load has an SQL path for each."""

from __future__ import annotations

import pytest
from django.urls import reverse

from harvest.choices import HarvestKind
from harvest.models import Domain, PreloadDomain, PreloadRun, PreloadStep, SeedList
from harvest.services.domains import configuration_save, domain_create, domain_update, seed_list_save
from harvest.services.planning import definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run, statistics_rows
from tests.factories import UserFactory
from webarchive.permissions import Role
from webarchive.versioning import ConcurrentEditError

DEFAULTS = "http://{0}/\nhttps://{0}/\nhttp://www.{0}/\nhttps://www.{0}/"


@pytest.fixture
def engineer(db):
    return UserFactory(roles=[Role.ENGINEER])


@pytest.fixture
def run_lists(db, tmp_path, engineer):
    """Run a preparation (no network, no librarians' records) over lists given as texts."""
    definition = definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026")

    def run(*texts: str, progress=None) -> PreloadRun:
        specs = []
        for index, text in enumerate(texts):
            path = tmp_path / f"list-{PreloadRun.objects.count()}-{index}.txt"
            path.write_text(text)
            specs.append(SourceSpec(f"list {index}", str(path)))
        created = preload_create(
            harvest_definition=definition,
            sources=specs,
            check_dns=False,
            find_redirects=False,
            include_selection=False,
            user=engineer,
        )
        done = preload_run(created.pk, progress=progress)
        assert done.state == PreloadRun.State.DONE, done.error
        return done

    return run


def seeds_of(name: str) -> str:
    domain = Domain.objects.get(name=name)
    return domain.default_configuration.seed_lists.get().seeds


def loaded(run: PreloadRun) -> dict:
    return run.steps.get(kind=PreloadStep.Kind.STAGE_DONE, stage=PreloadRun.Stage.LOAD).counts


def test_a_new_domain_gets_both_seeds_and_the_urls_its_sources_gave(run_lists):
    run = run_lists(
        "alpha.fr\nhttp://www.alpha.fr/news/\nhttps://alpha.fr/\nbeta.fr\n",
        "https://blog.alpha.fr/a?b=c\nhttp://www.alpha.fr/news/\n",
    )

    # The defaults first (one given again by a source is not repeated), then the sources' URLs.
    assert seeds_of("alpha.fr") == (
        DEFAULTS.format("alpha.fr") + "\nhttp://www.alpha.fr/news/\nhttps://blog.alpha.fr/a?b=c"
    )
    assert seeds_of("beta.fr") == DEFAULTS.format("beta.fr")  # a bare domain: the defaults only
    assert loaded(run)["created"] == 2 and loaded(run)["seeds_updated"] == 0


def test_a_known_domain_gains_the_new_urls_once_with_a_history_row(run_lists, engineer, client):
    gamma = domain_create(name="gamma.fr", seeds="https://gamma.fr/kept/\nhttp://www.gamma.fr/old/")
    delta = domain_create(name="delta.fr", seeds="https://delta.fr/all-there/")
    seed_list = gamma.default_configuration.seed_lists.get()
    version, histories = seed_list.version, seed_list.history.count()
    untouched = SeedList.objects.get(domain=delta)

    run = run_lists(
        "gamma.fr\nhttp://www.gamma.fr/old/\nhttps://gamma.fr/new/\ndelta.fr\nhttps://delta.fr/all-there/\n",
        "http://news.gamma.fr/b\nhttps://gamma.fr/new/\n",
    )

    seed_list.refresh_from_db()
    # Its own lines as they were, then the URLs it lacked, each once (no default added to a known list).
    assert seed_list.seeds == (
        "https://gamma.fr/kept/\nhttp://www.gamma.fr/old/\nhttp://news.gamma.fr/b\nhttps://gamma.fr/new/"
    )
    assert seed_list.version == version + 1
    assert seed_list.history.count() == histories + 1
    last = seed_list.history.order_by("-history_id").first()
    assert (last.history_type, last.history_user, last.history_change_reason) == (
        "~",
        engineer,
        f"Preload run {run.pk}",
    )
    assert last.seeds == seed_list.seeds and last.version == seed_list.version
    # A known list already holding every URL is not written, and has no history row.
    delta_list = SeedList.objects.get(domain=delta)
    assert (delta_list.seeds, delta_list.version) == (untouched.seeds, untouched.version)
    assert delta_list.history.count() == 1
    assert gamma.seed_lists.count() == 1 and Domain.objects.count() == 2
    assert loaded(run) == {"created": 0, "made_inactive": 0, "made_active": 0, "seeds_updated": 1}
    assert run.statistics["seeds_updated"] == 1
    assert ["run", "seeds_updated", 1, "", "", ""] in list(statistics_rows(run))
    client.force_login(engineer)
    page = client.get(reverse("harvest:preload_detail", args=[run.pk])).content.decode()
    assert "1 known domain given new seed URLs." in page and "seeds_updated: 1" in page

    # The same lists again: nothing to add, nothing written.
    again = run_lists(
        "gamma.fr\nhttp://www.gamma.fr/old/\nhttps://gamma.fr/new/\ndelta.fr\nhttps://delta.fr/all-there/\n",
        "http://news.gamma.fr/b\nhttps://gamma.fr/new/\n",
    )

    assert loaded(again)["seeds_updated"] == again.statistics["seeds_updated"] == 0
    seed_list.refresh_from_db()
    assert seed_list.version == version + 1 and seed_list.history.count() == histories + 1
    assert SeedList.history.count() == 3  # two created, one changed


def test_an_editor_who_read_the_list_before_the_preload_does_not_save_over_it(run_lists):
    gamma = domain_create(name="gamma.fr", seeds="https://gamma.fr/kept/")
    seed_list = gamma.default_configuration.seed_lists.get()
    read = seed_list.version  # an edit page opened before the run

    run_lists("https://gamma.fr/new/\n")

    with pytest.raises(ConcurrentEditError) as refused:
        seed_list_save(seed_list=seed_list, seeds="https://gamma.fr/other/", expected_version=read)
    assert any(change["name"] == "seeds" for change in refused.value.changes)
    seed_list.refresh_from_db()
    assert seed_list.seeds == "https://gamma.fr/kept/\nhttps://gamma.fr/new/"


def test_the_list_of_the_default_configuration_is_the_one_updated(run_lists):
    """A domain whose default configuration takes another list: that list gains the URLs."""
    gamma = domain_create(name="gamma.fr", seeds="https://gamma.fr/")
    own = seed_list_save(domain=gamma, name="curated", seeds="https://gamma.fr/shop/\n")
    configuration_save(configuration=gamma.default_configuration, seed_lists=[own])
    defaults = SeedList.objects.get(domain=gamma, name="defaultseeds")

    run_lists("https://gamma.fr/new/\n")

    own.refresh_from_db()
    assert own.seeds == "https://gamma.fr/shop/\nhttps://gamma.fr/new/"
    assert SeedList.objects.get(pk=defaults.pk).seeds == "https://gamma.fr/"


def test_bad_lines_are_refused_each_with_its_reason_and_change_nothing(run_lists):
    gamma = domain_create(name="gamma.fr", seeds="https://gamma.fr/kept/")
    seed_list = gamma.default_configuration.seed_lists.get()
    before = (seed_list.seeds, seed_list.version, seed_list.history.count())

    run = run_lists(
        "javascript:alert(document.domain)//gamma.fr\n"
        "ftp://gamma.fr/file\n"
        "http://gamma.fr/" + "a" * 2100 + "\n"
        "http://gam ma.fr/x\n"
        "http://[gamma.fr/\n"
        "data:text/html,<script>alert(1)</script>\n"
        "http://other.fr/about-gamma.fr/\n"
    )

    source = run.sources.get()
    assert (source.lines, source.accepted, source.invalid) == (7, 1, 6)
    reasons = dict(source.invalid_lines.values_list("line", "reason"))
    assert set(reasons) == {1, 2, 3, 4, 5, 6}
    assert "javascript" in reasons[1] and "ftp" in reasons[2] and "data" in reasons[6]
    assert "longer than" in reasons[3]
    seed_list.refresh_from_db()
    assert (seed_list.seeds, seed_list.version, seed_list.history.count()) == before
    # The URL of another domain is that domain's seed, never gamma.fr's.
    assert "http://other.fr/about-gamma.fr/" in seeds_of("other.fr")
    assert loaded(run)["seeds_updated"] == 0


def test_a_known_domain_without_a_dns_answer_is_made_inactive_and_gains_no_seeds(run_lists):
    gamma = domain_create(name="gamma.fr", seeds="https://gamma.fr/kept/")
    seed_list = gamma.default_configuration.seed_lists.get()
    before = (seed_list.seeds, seed_list.version, seed_list.history.count())
    read = gamma.version  # an edit page opened before the run

    def gamma_does_not_answer(run):  # what a DNS check would find
        if run.stage == PreloadRun.Stage.MERGE:
            PreloadDomain.objects.filter(run=run, name="gamma.fr").update(dns=PreloadDomain.Dns.FAILED)

    run = run_lists("https://gamma.fr/new/\n", progress=gamma_does_not_answer)

    gamma.refresh_from_db()
    assert not gamma.is_active and gamma.version == read + 1
    seed_list.refresh_from_db()
    assert (seed_list.seeds, seed_list.version, seed_list.history.count()) == before
    assert loaded(run)["made_inactive"] == 1 and loaded(run)["seeds_updated"] == 0
    # The form read before the load does not make the domain active again behind the run's back.
    with pytest.raises(ConcurrentEditError):
        domain_update(domain=Domain.objects.get(pk=gamma.pk), comments="seen", expected_version=read)
    assert not Domain.objects.get(pk=gamma.pk).is_active
