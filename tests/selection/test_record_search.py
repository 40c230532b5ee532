"""The records' text search: the URL, the supplementary URLs and the notes, as librarians type it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from selection.filtersets import RecordFilterSet
from selection.models import Record
from tests.factories import CollectionFactory, RecordFactory
from webarchive.permissions import Role


@pytest.fixture
def records(db):
    collection = CollectionFactory()

    def make(url, **fields):
        return RecordFactory(collection=collection, url=url, **fields).pk

    return {
        "url": make("https://www.Atelier-Bois.fr/"),
        "supplementary": make(
            "https://a.fr/", supplementary_urls="https://shop.a.fr/catalogue\nhttps://b.fr/"
        ),
        "content": make("https://c.fr/", content_notes="La revue régionale de poésie."),
        "technical": make("https://d.fr/", technical_notes="Calendar trap under /agenda; 100% JavaScript"),
        "none": make("https://e.fr/", content_notes="Rien à voir."),
    }


def search(value: str) -> set[int]:
    return set(RecordFilterSet({"q": value}, queryset=Record.objects.all()).qs.values_list("pk", flat=True))


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("atelier-bois", {"url"}),  # whatever the case typed or stored
        ("ATELIER", {"url"}),
        ("catalogue", {"supplementary"}),
        ("REVUE", {"content"}),
        ("régionale", {"content"}),
        ("/agenda", {"technical"}),
        ("100%", {"technical"}),  # % and _ are plain text
        ("10_%", set()),
        (".fr/", {"url", "supplementary", "content", "technical", "none"}),
        ("introuvable", set()),
    ],
)
def test_the_search_looks_in_the_url_the_supplementary_urls_and_the_notes(records, value, found):
    assert search(value) == {records[name] for name in found}


def test_a_match_never_spans_two_fields(records):
    # The URL of "content" ends with "c.fr/", its notes start with "La revue": joined, they would read
    # "c.fr/La revue" were the fields not kept apart.
    assert search("c.fr/La") == set()
    assert search("c.fr/\nLa") == set()


def test_the_records_page_searches_the_same(records, as_role):
    html = as_role(Role.LIBRARIAN).get(reverse("selection:record_list"), {"q": "catalogue"}).content.decode()
    assert "https://a.fr/" in html and "https://e.fr/" not in html


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's trigram index")
def test_on_postgresql_the_search_reads_its_trigram_index(records):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask which index serves it
        found = RecordFilterSet({"q": "atelier"}, queryset=Record.objects.all()).qs
        sql, params = found.order_by().values("pk").query.sql_with_params()  # what the page counts
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "selection_record_text_trgm" in plan, plan
