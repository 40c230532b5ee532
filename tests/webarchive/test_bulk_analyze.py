"""Bulk loads analyse the tables they filled: right after a broad-crawl preparation the planner
must know the domains are millions, not none (a snapshot launch over tables it believed empty
planned a scan per configuration and ran for minutes without a row).

What the planner believes a table holds is read from the database's own statistics: on PostgreSQL
``pg_class.reltuples``, on SQLite ``sqlite_stat1`` (both written by ANALYZE and by nothing a load
does). Each test first analyses the table as it is, then loads, then reads what the planner knows.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from harvest.choices import HarvestKind
from harvest.models import Domain, DomainConfiguration
from harvest.services.planning import collection_mapping_save, definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run
from harvest.services.transfer import transfer_collection
from selection.choices import Frequency, RecordStatus
from storage.models import Capture
from storage.models_search import SearchEntry
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from tests.storage.test_fulltext import html, write_pages
from webarchive import dbstats
from webarchive.dbstats import analyze
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def planned_rows(model) -> int | None:
    """How many rows the planner believes the model's table holds (None: it has no figure)."""
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [table])
            rows = cursor.fetchone()[0]
            return None if rows < 0 else int(rows)
        cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = %s", [table])
        figures = [int(stat.split()[0]) for (stat,) in cursor.fetchall() if stat]
        return max(figures) if figures else None


def known_now(*models) -> None:
    """The planner's figures brought up to date with the tables as they are before the load."""
    analyze(*models)
    for model in models:
        assert planned_rows(model) in (model.objects.count(), None)


def test_a_broad_crawl_preparation_analyses_the_domains_it_loaded(tmp_path):
    snapshot = definition_save(kind=HarvestKind.SNAPSHOT, name="broad-2026")
    known_now(Domain, DomainConfiguration)
    names = tmp_path / "registry.txt"
    names.write_text("".join(f"site-{number}.fr\n" for number in range(37)))
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("registry", str(names))],
        check_dns=False,
        find_redirects=False,
    )

    preload_run(run.pk)

    assert Domain.objects.count() == 37
    assert planned_rows(Domain) == 37 and planned_rows(DomainConfiguration) == 37


def test_index_warcs_analyses_the_capture_and_text_indexes_after_an_import(tmp_path, monkeypatch):
    monkeypatch.setattr(dbstats, "ANALYZE_AFTER_ROWS", 5)  # a small file stands for a large import
    pages = [
        (f"http://a.fr/{number}", "text/html", html(f"Page {number}", "Un texte.")) for number in range(6)
    ]
    path = write_pages(tmp_path / "six.warc.gz", pages)
    known_now(Capture, SearchEntry)

    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)

    assert planned_rows(Capture) == Capture.objects.count() >= 6
    assert planned_rows(SearchEntry) == SearchEntry.objects.count() == 6


def test_a_small_import_leaves_the_statistics_to_autovacuum(tmp_path):
    path = write_pages(
        tmp_path / "one.warc.gz", [("http://a.fr/", "text/html", html("Une page", "Un texte."))]
    )
    known_now(Capture)
    before = planned_rows(Capture)

    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)

    assert Capture.objects.count() >= 1 and planned_rows(Capture) == before


def test_a_large_transfer_analyses_the_planning_tables(monkeypatch, schedule):
    monkeypatch.setattr(dbstats, "ANALYZE_AFTER_ROWS", 3)
    curator = UserFactory(roles=[Role.CURATOR])
    collection = CollectionFactory()
    monthly = definition_save(kind="selective", name="monthly", schedule=schedule)
    collection_mapping_save(collection=collection, frequency=Frequency.MONTHLY, harvest_definition=monthly)
    for number in range(4):
        RecordFactory(
            collection=collection,
            url=f"https://site-{number}.fr/",
            status=RecordStatus.VALIDATED,
            frequency=Frequency.MONTHLY,
        )
    known_now(Domain, DomainConfiguration)

    report = transfer_collection(collection=collection, user=curator)

    assert report.created == 4
    assert planned_rows(Domain) == Domain.objects.count() >= 4
    assert planned_rows(DomainConfiguration) == DomainConfiguration.objects.count() >= 4
