"""Broad-crawl preparation on several processes and connections: a list read in parts by
separate processes gives what one reader gives, and ranges of domains loaded side by side on
several PostgreSQL connections give what one connection gives, interrupted or not."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection, transaction

from harvest.choices import HarvestKind
from harvest.defaults import planning_defaults_ensure
from harvest.models import Domain, DomainConfiguration, PreloadDomain, PreloadRun, SeedList
from harvest.preload.normaliser import PartsReader, copy_text, cut, rows_from_copy_text
from harvest.preload.sources import Tally, file_lines, normalised
from harvest.services.planning import definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run
from harvest.services.preload import ingest as preload_ingest
from harvest.services.preload import load as preload_load
from harvest.services.preload import progress as preload_progress
from tests.harvest.test_preload import Killed, fingerprint, kill_in_stage, specs

# A list with what real lists hold: a byte-order mark, comments, blank lines, Windows line ends,
# names with multi-byte characters (a cut may fall inside one), URLs, and lines that are not domains.
LIST = (
    "\ufeff# registry export\r\n"
    "alpha.fr\r\n"
    "\r\n"
    "Bücher.fr\n"
    "http://www.gamma.fr/a/b?c=d\n"
    "not a domain\n"
    "# a comment\n"
    "www.delta.co.uk\n"
    "müller.de\n"
    "fr\n"
    "epsilon.fr\n"
    "127.0.0.1\n"
    "https://zeta.fr/ünïcode\n"
    "last-line-without-end.fr"
)


def read_whole(path, keep=1000):
    tally = Tally()
    rows = list(normalised(file_lines(str(path)), tally, keep=keep))
    return rows, tally


def test_parts_cut_at_any_byte_share_no_line_and_miss_none(tmp_path):
    path = tmp_path / "list.txt"
    path.write_bytes(LIST.encode())
    whole = [(line.number, line.text) for line in file_lines(str(path))]
    assert whole[0] == (2, "alpha.fr") and whole[1] == (4, "Bücher.fr")  # the mark and line ends gone
    for offset in range(len(path.read_bytes()) + 1):
        first_tally = Tally()
        first = [(line.number, line.text) for line in file_lines(str(path), end=offset, tally=first_tally)]
        second = [
            (line.number + first_tally.physical, line.text) for line in file_lines(str(path), start=offset)
        ]
        assert first + second == whole, f"cut at byte {offset}"


@pytest.mark.parametrize("processes", [1, 2, 3, 7])
def test_a_list_read_by_several_processes_gives_what_one_reader_gives(tmp_path, processes):
    path = tmp_path / "list.txt"
    path.write_bytes(LIST.encode())
    rows, tally = read_whole(path)
    assert tally.invalid == 3 and {reason for _n, _t, reason in tally.kept} >= {
        "a public suffix, not a domain"
    }

    reader = PartsReader(str(path), run_id=7, source_id=9, processes=processes, keep=1000, language="en")
    got = [row for block in reader for row in rows_from_copy_text(block)]

    assert sorted(got) == sorted((7, 9, name, seed) for name, seed in rows)
    assert (reader.tally.lines, reader.tally.accepted, reader.tally.invalid) == (
        tally.lines,
        tally.accepted,
        tally.invalid,
    )
    assert reader.tally.kept == tally.kept  # the same line numbers, texts and reasons


def test_the_parts_keep_the_first_invalid_lines_of_the_whole_list(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("".join(f"bad line {number}\n" for number in range(1, 41)))
    reader = PartsReader(str(path), run_id=1, source_id=1, processes=4, keep=5, language="en")
    assert list(reader) == []
    assert reader.tally.invalid == 40
    assert [line for line, _text, _reason in reader.tally.kept] == [1, 2, 3, 4, 5]


def test_a_reader_process_that_fails_fails_the_reading_with_its_error(tmp_path):
    folder = tmp_path / "not-a-file"
    folder.mkdir()
    reader = PartsReader(str(folder), run_id=1, source_id=1, processes=2, keep=10, language="en")
    with pytest.raises(RuntimeError, match="IsADirectoryError"):
        list(reader)


def test_rows_survive_the_copy_text_format():
    seed = "http://example.fr/a\\b?c=%5C"
    block = (copy_text(1, 2, "example.fr", seed) + copy_text(1, 2, "other.fr", "")).encode()
    assert rows_from_copy_text(block) == [(1, 2, "example.fr", seed), (1, 2, "other.fr", "")]
    assert cut(10, 3) == [(0, 3), (3, 6), (6, 10)]


def test_a_run_reading_its_lists_in_parts_ends_as_one_reading_them_whole(db, tmp_path, settings):
    snapshot = definition_save(kind=HarvestKind.SNAPSHOT, name="broad")
    registry, publishers, urls = tmp_path / "registry.txt", tmp_path / "publishers.csv", tmp_path / "urls.txt"
    registry.write_bytes(LIST.encode())
    publishers.write_text("publisher;site\nLe Monde;beta.fr\nLa Croix;www.delta.co.uk\n")
    urls.write_text("http://www.alpha.fr/news/\nhttps://epsilon.fr/a?b=c\nnot a domain\nfr\n")
    options = {
        "sources": specs((registry, publishers, urls)),
        "check_dns": False,
        "find_redirects": False,
    }
    savepoint = transaction.savepoint()
    expected = fingerprint(preload_run(preload_create(harvest_definition=snapshot, **options).pk))
    transaction.savepoint_rollback(savepoint)
    assert expected["state"] == PreloadRun.State.DONE

    settings.PRELOAD_PROCESSES, settings.PRELOAD_PARALLEL_BYTES = 3, 0
    run = preload_create(harvest_definition=snapshot, **options)
    assert [preload_ingest._read_in_parts(source) for source in run.sources.order_by("pk")] == [
        True,
        False,  # a CSV column is read whole
        True,
        False,  # the librarians' records
    ]
    got = fingerprint(preload_run(run.pk))
    assert got == expected
    registry_source = run.sources.get(name="registry")
    assert sorted(registry_source.invalid_lines.values_list("line", "text")) == [
        (6, "not a domain"),
        (10, "fr"),
        (12, "127.0.0.1"),
    ]


# Several connections ------------------------------------------------------------------------


def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("ranges are loaded side by side on PostgreSQL only (SQLite has one writer)")


def _check_created(names: list[str]) -> None:
    """Every name created once, with one seed list and one default configuration using it, and
    one history row."""
    domains = Domain.objects.filter(name__in=names)
    assert domains.count() == len(names)
    assert SeedList.objects.filter(domain__name__in=names).count() == len(names)
    assert DomainConfiguration.objects.filter(domain__name__in=names).count() == len(names)
    for domain in domains.select_related("default_configuration"):
        assert domain.default_configuration.domain_id == domain.pk
        assert list(domain.default_configuration.seed_lists.values_list("domain_id", flat=True)) == [
            domain.pk
        ]
    assert Domain.history.filter(name__in=names, history_type="+").count() == len(names)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("killed_after", [None, 2])
def test_ranges_loaded_on_several_connections_give_every_domain_once(
    tmp_path, settings, monkeypatch, killed_after
):
    _postgresql_only()
    planning_defaults_ensure(apps)  # an earlier transactional test may have flushed them
    settings.PRELOAD_CONNECTIONS = 3
    monkeypatch.setattr(preload_load, "LOAD_BATCH", 4)
    names = [f"site-{number:02d}.fr" for number in range(30)]
    path = tmp_path / "list.txt"
    path.write_text("\n".join(names) + "\n")
    snapshot = definition_save(kind=HarvestKind.SNAPSHOT, name="broad")
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("registry", str(path))],
        check_dns=False,
        find_redirects=False,
        include_selection=False,
    )
    if killed_after:
        real_advance = kill_in_stage(monkeypatch, PreloadRun.Stage.LOAD, killed_after)
        with pytest.raises(Killed):
            preload_run(run.pk)
        run.refresh_from_db()
        assert run.stage == PreloadRun.Stage.LOAD
        # The ranges under way when the run was killed ended whole: some loaded, the rest not begun.
        loaded = len(run.loaded_batches)
        assert 2 <= loaded < 8
        assert Domain.objects.filter(name__in=names).count() == sum(
            1
            for pk in PreloadDomain.objects.filter(run=run).values_list("pk", flat=True)
            if pk // 4 in run.loaded_batches
        )
        monkeypatch.setattr(preload_progress, "advance", real_advance)

    run = preload_run(run.pk)

    assert run.state == PreloadRun.State.DONE
    assert len(run.loaded_batches) == len(
        {pk // 4 for pk in PreloadDomain.objects.filter(run=run).values_list("pk", flat=True)}
    )
    _check_created(names)
    assert (run.statistics["total"], run.statistics["new"]) == (30, 30)
