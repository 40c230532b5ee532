"""Full-text search of the archive: what is read from real crawl output, how the index is filled (in
bulk and as a crawl runs), how words match (accents, stemming, phrases), and the search page and API.

The access rules on hits, snippets and counts: tests/storage/test_fulltext_access.py; a real worker
filling the index while a job runs: tests/storage/test_fulltext_worker.py.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage import search
from storage.access import Viewer
from storage.models import Capture
from storage.models_search import SearchEntry, SearchText
from storage.selectors_search import SearchRequest, archive_search
from storage.tasks import index_texts
from storage.textextract import file_documents, link_anchors
from tests.crawler.sitecrawl import crawl
from webarchive.permissions import Role
from webarchive.testsite import TestSite, assets

STAFF = Viewer("staff")
POSTGRESQL_ONLY = pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="stemming is PostgreSQL's (SQLite folds accents only)"
)


@pytest.fixture(scope="module")
def document_crawl(tmp_path_factory):
    """A crawl of the test website with its PDF and its plain-text notes as extra seeds."""
    root = tmp_path_factory.mktemp("fulltext-crawl")
    with TestSite(port=0, seed=11, pages=12, hosts=1, large_file_bytes=20_000) as site:
        seeds = [site.url("/site/"), site.url("/site/files/rapport.pdf"), site.url("/site/files/notes.txt")]
        result = crawl(root, seeds)
        result.site = site
    return result


def documents_by_path(crawl_result) -> dict[str, object]:
    found = {}
    for info in crawl_result.files:
        for record in file_documents(info.path):
            path = "/" + record.url.split("/", 3)[3]
            found[path] = record
    return found


def search_as(text: str, viewer=STAFF, **filters):
    return archive_search(SearchRequest(query=search.parse_query(text), **filters), viewer)


def urls(results) -> list[str]:
    return [hit.url for hit in results.hits]


def write_pages(
    path: Path, pages: list[tuple[str, str, bytes]], when=datetime(2025, 5, 4, 10, 0, tzinfo=UTC)
):
    """A WARC file of responses: (URL, Content-Type, body) each, gzip per record."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for url, content_type, body in pages:
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", content_type), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": when.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
            writer.write_record(record)
    return path


def html(title: str, text: str, lang: str = "") -> bytes:
    attribute = f' lang="{lang}"' if lang else ""
    head = f"<!doctype html><html{attribute}><head><title>{title}</title></head>"
    return f"{head}<body><p>{text}</p></body></html>".encode()


# Extraction, from real crawl output ---------------------------------------------------------------


def test_each_kind_of_document_is_read_from_the_crawl_as_a_browser_would(document_crawl):
    documents = documents_by_path(document_crawl)

    latin1 = documents["/site/latin1.html"].document  # windows-1252 in the header only, chunked
    assert latin1.title == "Café crème à l\u2019été"
    assert "Ça coûte 5 € — « très » cher : naïve élève, œuvre, Straße" in latin1.text
    assert latin1.language == "fr"

    malformed = documents["/site/malformed.html"].document  # unclosed tags; sent gzip
    assert malformed.title == "Malformed page"
    assert "An unclosed paragraph with bold and italic text" in malformed.text
    assert "A link in a comment" not in malformed.text
    assert ("/site/news/", "an unquoted link") in malformed.links

    pdf = documents["/site/files/rapport.pdf"].document
    assert pdf.mime == "application/pdf"
    assert pdf.title == "Rapport annuel de la bibliothèque"
    assert "Le dépôt légal du web conserve les sites français depuis 2006." in pdf.text
    assert pdf.language == "fr"

    notes = documents["/site/files/notes.txt"].document  # ISO-8859-1, gzip on the wire
    assert notes.mime == "text/plain"
    assert notes.title == "Notes de lecture"
    assert "Les élèves ont consulté les archives électorales au château." in notes.text

    home = documents["/site/"].document
    assert home.title and home.headings
    assert "<script" not in home.text and "function" not in home.text  # the inline script is not text
    assert all(record.document is not None for record in documents.values())
    assert "/site/img/0.png" not in documents and "/site/css/site.css" not in documents


def test_a_broken_document_is_reported_and_skipped_never_fatal(tmp_path):
    path = write_pages(
        tmp_path / "broken.warc.gz",
        [
            ("http://broken.fr/a.pdf", "application/pdf", b"%PDF-1.4\nthis is no PDF at all"),
            ("http://broken.fr/", "text/html; charset=utf-8", html("Good", "A readable page")),
        ],
    )
    records = {record.url: record for record in file_documents(path)}
    assert records["http://broken.fr/a.pdf"].document is None
    assert "PDF" in records["http://broken.fr/a.pdf"].error
    assert records["http://broken.fr/"].document.title == "Good"


# Filling the index ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_index_warcs_fills_the_full_text_index_once_per_payload_and_again_harmlessly(tmp_path, capsys):
    same = html("Le même texte", "Ce texte est publié à deux adresses différentes", "fr")
    path = write_pages(
        tmp_path / "pages.warc.gz",
        [
            ("http://twice.fr/a", "text/html; charset=utf-8", same),
            ("http://twice.fr/b", "text/html; charset=utf-8", same),
            ("http://twice.fr/report.pdf", "application/pdf", assets.pdf_document()),
            ("http://twice.fr/broken.pdf", "application/pdf", b"%PDF-1.4 no"),
            ("http://twice.fr/logo.png", "image/png", assets.png(1)),
        ],
    )
    call_command("index_warcs", str(path), "--workers", "1")
    out, err = capsys.readouterr()
    assert "Full-text index: 2 documents read, 0 already indexed, 1 skipped, 3 entries" in out
    assert "skipped (full-text index): http://twice.fr/broken.pdf: unreadable PDF" in err
    assert SearchText.objects.filter(error="").count() == 2  # one text for the two addresses
    assert (
        SearchText.objects.exclude(error="").get().digest
        == Capture.objects.get(url__endswith="broken.pdf").digest
    )
    entries = sorted(SearchEntry.objects.values_list("url", "captures", "year"))
    assert entries == [
        ("http://twice.fr/a", 1, 2025),
        ("http://twice.fr/b", 1, 2025),
        ("http://twice.fr/report.pdf", 1, 2025),
    ]
    assert urls(search_as("publie adresses")) == ["http://twice.fr/a", "http://twice.fr/b"]

    call_command("index_warcs", str(path), "--workers", "1")  # again: nothing read twice, same entries
    out, _err = capsys.readouterr()
    assert "Full-text index: 0 documents read, 3 already indexed, 0 skipped, 3 entries" in out
    assert sorted(SearchEntry.objects.values_list("url", "captures", "year")) == entries
    assert SearchText.objects.count() == 3


@pytest.mark.django_db
def test_index_warcs_no_text_indexes_the_captures_only_and_a_later_run_fills_the_text(tmp_path, capsys):
    page = html("Bibliothèque", "Les collections de la bibliothèque municipale", "fr")
    path = write_pages(tmp_path / "pages.warc.gz", [("http://ville.fr/", "text/html", page)])
    call_command("index_warcs", str(path), "--workers", "1", "--no-text")
    out, _err = capsys.readouterr()
    assert "Full-text index: not asked (--no-text)" in out
    assert Capture.objects.filter(url="http://ville.fr/").count() == 1
    assert not SearchText.objects.exists() and not SearchEntry.objects.exists()
    call_command("index_warcs", str(path), "--workers", "1")
    out, _err = capsys.readouterr()
    assert "Full-text index: 1 documents read, 0 already indexed, 0 skipped, 1 entries" in out
    assert urls(search_as("collections")) == ["http://ville.fr/"]
    assert Capture.objects.count() == 1


# Worker processes and, on PostgreSQL, a thread storing texts on its own connection: committed rows.
@pytest.mark.django_db(transaction=True)
def test_the_same_page_captured_in_two_years_is_one_hit_with_its_captures(tmp_path):
    body = html("Festival", "Le festival de la ville ouvre ses portes", "fr")
    first = write_pages(
        tmp_path / "a.warc.gz",
        [("http://ville.fr/", "text/html", body)],
        when=datetime(2023, 6, 1, tzinfo=UTC),
    )
    second = write_pages(
        tmp_path / "b.warc.gz",
        [("http://ville.fr/", "text/html", body)],
        when=datetime(2024, 6, 1, tzinfo=UTC),
    )
    call_command("index_warcs", str(first), str(second), "--workers", "2")
    results = search_as("festival")
    assert results.total == 1
    hit = results.hits[0]
    assert hit.capture_count == 2 and hit.years == {2023, 2024}
    assert hit.capture.timestamp.year == 2024  # the latest capture opens
    assert {item.value: item.count for item in results.facets["year"]} == {2023: 1, 2024: 1}
    assert search_as("festival", year=2023).hits[0].url == "http://ville.fr/"


@pytest.mark.django_db
def test_a_crawl_sends_its_documents_to_the_index_as_they_are_captured(settings, monkeypatch):
    """The real-time path without a worker: the recorder's batches are what the task is given."""
    from harvest.worker import run_site_crawl
    from tests.harvest.crawljobs import job_for_sites

    sent: list[tuple[str, tuple]] = []
    queues: set = set()

    def enqueue(task, *args, queue=None):
        sent.append((task, args))
        queues.add(queue)

    monkeypatch.setattr("storage.services.indexing.enqueue", enqueue)
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    with TestSite(port=0, seed=11, pages=12, hosts=1, large_file_bytes=20_000) as site:
        job = job_for_sites([("127.0.0.1", site.url("/site/"))])
        run_site_crawl(job.configurations.get().pk)
    batches = [args[0] for task, args in sent if task == "storage.index_texts"]
    assert batches, "the recorder sent no document to the full-text index"
    # To this machine's workers: the file they are read from may be in its spool only.
    assert queues == {f"spool.{settings.MACHINE_NAME}"}
    sent_ids = {capture_id for batch in batches for capture_id in batch}
    documents = Capture.objects.filter(job=job, record_type="response", status=200, mime="text/html")
    assert set(documents.values_list("pk", flat=True)) <= sent_ids
    assert not Capture.objects.filter(pk__in=sent_ids, mime__startswith="image/").exists()
    for batch in batches:
        index_texts(batch)  # what the worker runs
    assert SearchText.objects.filter(error="").count() == documents.values("digest").distinct().count()
    hit = search_as("creme ete").hits[0]
    assert hit.url == site.url("/site/latin1.html") and hit.capture.job_id == job.pk


# How words match ------------------------------------------------------------------------------------


@pytest.fixture
def language_pages(db, tmp_path):
    path = write_pages(
        tmp_path / "languages.warc.gz",
        [
            (
                "http://fr.example/cafe",
                "text/html; charset=utf-8",
                html(
                    "Le café du théâtre",
                    "Nous mangeons au café après les élections municipales de l'été, près des chevaux.",
                    "fr",
                ),
            ),
            (
                "http://en.example/gardens",
                "text/html; charset=utf-8",
                html(
                    "The gardens", "The museum gardens are opening early for the visitors this spring.", "en"
                ),
            ),
            (
                "http://en.example/naive",
                "text/html; charset=utf-8",
                html("A naïve reading", "A naïve reader reads the quiet harbour report twice.", "en"),
            ),
        ],
    )
    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("café", ["http://fr.example/cafe"]),
        ("cafe", ["http://fr.example/cafe"]),  # without its accent
        ("CAFÉ THEATRE", ["http://fr.example/cafe"]),
        ("ete", ["http://fr.example/cafe"]),
        ("naive", ["http://en.example/naive"]),
        ('"quiet harbour"', ["http://en.example/naive"]),  # a phrase
        ('"harbour quiet"', []),  # its words in another order are not the phrase
        ("museum OR harbour", ["http://en.example/gardens", "http://en.example/naive"]),
        ("reader -harbour", []),
        ("museum -naive", ["http://en.example/gardens"]),
    ],
)
def test_words_match_with_or_without_accents_phrases_and_operators(language_pages, query, found):
    assert sorted(urls(search_as(query))) == found


@POSTGRESQL_ONLY
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("garden", ["http://en.example/gardens"]),  # English stemming: gardens
        ("open", ["http://en.example/gardens"]),  # opening
        ("visitor", ["http://en.example/gardens"]),
        ("mangeons", ["http://fr.example/cafe"]),
        ("cheval", ["http://fr.example/cafe"]),  # French stemming: chevaux
        ("election municipale", ["http://fr.example/cafe"]),  # élections municipales, accents and plural
        ("read", ["http://en.example/naive"]),  # reads, reader, reading
    ],
)
def test_words_are_stemmed_in_the_language_of_the_page(language_pages, query, found):
    assert sorted(urls(search_as(query))) == found


def test_sqlite_folds_accents_without_stemming(language_pages):
    if connection.vendor != "sqlite":
        pytest.skip("the embedded default's behaviour")
    assert urls(search_as("elections")) == ["http://fr.example/cafe"]
    assert urls(search_as("election")) == []  # no stemming: docs/access.md says so


def test_a_hit_has_its_title_and_a_snippet_with_the_words_marked_and_the_page_escaped(
    language_pages, tmp_path
):
    path = write_pages(
        tmp_path / "hostile.warc.gz",
        [
            (
                "http://bad.example/",
                "text/html",
                html("<b>Bold</b> title", "Fish &amp; chips &lt;b&gt;x&lt;/b&gt; meteor"),
            )
        ],
    )
    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)
    hit = search_as("cafe").hits[0]
    assert hit.title == "Le café du théâtre"
    assert "<mark>café</mark>" in str(hit.snippet_html).lower() or "<mark>Café</mark>" in str(
        hit.snippet_html
    )
    assert "café" in hit.snippet_text.lower() and "\x02" not in hit.snippet_text
    bad = search_as("meteor").hits[0]
    assert bad.title == "<b>Bold</b> title"  # a title holds text only, as a browser reads it
    # The page's own markup is text, escaped (PostgreSQL's snippets leave tags out; SQLite's keep them).
    assert "Fish &amp; chips" in str(bad.snippet_html) and "<b>" not in str(bad.snippet_html)
    assert "<mark>meteor</mark>" in str(bad.snippet_html)


def test_a_page_is_found_by_the_words_other_pages_link_to_it_with(db, tmp_path):
    linking = (
        '<html><body><p>Voir <a href="/musee/rapport.html">le rapport annuel du musée</a>, '
        '<a href="http://ailleurs.fr/x#haut">ailleurs</a>, <a href="javascript:void(0)">rien</a>, '
        '<a href="#top">haut de page</a>, <a href="http://[bad">cassé</a></p></body></html>'
    ).encode()
    path = write_pages(
        tmp_path / "links.warc.gz",
        [
            ("http://musee.fr/", "text/html", linking),
            (
                "http://musee.fr/musee/rapport.html",
                "text/html",
                html("Exercice 2024", "Chiffres et tableaux"),
            ),
        ],
    )
    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)
    results = search_as("rapport annuel musee", sort="newest")
    by_url = {hit.url: hit for hit in results.hits}
    assert set(by_url) == {"http://musee.fr/", "http://musee.fr/musee/rapport.html"}
    target = by_url["http://musee.fr/musee/rapport.html"]
    assert target.anchored and target.anchors == ["le rapport annuel du musée"]
    assert not by_url["http://musee.fr/"].anchored  # found by its own text
    assert urls(search_as("ailleurs")) == ["http://musee.fr/"]  # a page not in the archive is no hit
    assert urls(search_as("haut de page")) == ["http://musee.fr/"]  # a link to the page itself is not kept


def test_links_are_resolved_against_the_page_as_a_browser_resolves_them():
    links = [
        ("/a/../b?q=1#top", "root relative"),
        ("c.html", "relative"),
        ("../d/", "up"),
        ("//other.org/e", "protocol relative"),
        ("HTTPS://Other.org/F#x", "absolute"),
        ("http:g", "scheme only"),
        ("mailto:x@y.fr", "mail"),
        ("  /a/b/page.html ", "the page itself"),
        ("/b?q=1", "root relative"),  # the same pair as the first: kept once
    ]
    assert link_anchors("http://www.site.fr/a/b/page.html", links) == [
        ("fr,site)/b?q=1", "root relative"),
        ("fr,site)/a/b/c.html", "relative"),
        ("fr,site)/a/d", "up"),
        ("org,other)/e", "protocol relative"),
        ("org,other)/f", "absolute"),
        ("fr,site)/a/b/g", "scheme only"),
    ]
    # What a link points to depends on the page it is in, not on the pages read before it.
    assert link_anchors("http://autre.fr/x/y.html", [("c.html", "relative"), ("/b", "root")]) == [
        ("fr,autre)/x/c.html", "relative"),
        ("fr,autre)/b", "root"),
    ]


@POSTGRESQL_ONLY
def test_a_text_is_stored_with_its_vector_and_summary_and_its_entries_copy_the_summary(db, tmp_path):
    body = " ".join(["Les archives municipales conservent les délibérations du conseil."] * 20)
    body += " Une tempête a tout détruit."  # far past the summary's characters
    path = write_pages(
        tmp_path / "one.warc.gz", [("http://a.fr/p", "text/html", html("Herbier", body, "fr"))]
    )
    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)
    with connection.cursor() as cursor:
        vector, summary = search.vector_sql("text."), search.summary_sql("text.")
        cursor.execute(
            f"SELECT text.vector = {vector}, text.summary = {summary},"
            " entry.summary = text.summary, length(text.summary) < length(text.vector)"
            " FROM storage_searchtext AS text JOIN storage_searchentry AS entry ON entry.digest = text.digest"
        )
        assert cursor.fetchall() == [(True, True, True, True)]


def test_words_deep_in_a_text_are_found_after_those_of_titles_and_exclusions_read_the_whole_text(
    db, tmp_path, monkeypatch
):
    """On PostgreSQL a search reads the entries' summaries (title, headings, the first
    characters) before the whole texts: what it finds must not depend on where a word is."""
    filler = " ".join(["Le conseil se réunit chaque mois pour examiner les affaires courantes."] * 12)
    path = write_pages(
        tmp_path / "deep.warc.gz",
        [
            ("http://a.fr/titre", "text/html", html("Herbier communal", f"{filler} Fin.", "fr")),
            ("http://a.fr/fond", "text/html", html("Compte rendu", f"{filler} Un herbier fut donné.", "fr")),
            (
                "http://a.fr/exclu",
                "text/html",
                html("Herbier et fougères", f"{filler} Une tempête a tout détruit.", "fr"),
            ),
        ],
    )
    assert len(filler) > search.LEAD_CHARS
    call_command("index_warcs", str(path), "--workers", "1", verbosity=0)
    found = urls(search_as("herbier"))
    assert set(found) == {"http://a.fr/titre", "http://a.fr/fond", "http://a.fr/exclu"}
    assert found[-1] == "http://a.fr/fond"  # in the title ranks above deep in the text
    assert urls(search_as("donné")) == ["http://a.fr/fond"]  # only deep in the text
    # The excluded word is far past the summary: the page is still excluded.
    assert set(urls(search_as("herbier -tempête"))) == {"http://a.fr/titre", "http://a.fr/fond"}
    assert urls(search_as('"tout détruit"')) == ["http://a.fr/exclu"]
    # With room for two candidates only, the two title matches are the ones read.
    monkeypatch.setattr(search, "CANDIDATES", 2)
    capped = search_as("herbier")
    assert capped.capped and set(urls(capped)) == {"http://a.fr/titre", "http://a.fr/exclu"}


@pytest.mark.parametrize("query", ["", "   ", '""', "-word", "OR", "- -", "« »", "x" * 501])
def test_a_query_that_asks_for_nothing_or_too_much_is_refused(query):
    with pytest.raises(search.QueryError):
        search.parse_query(query)


# The page and the API --------------------------------------------------------------------------------


def test_the_search_page_lists_hits_with_facets_captures_and_replay(client, language_pages, user_with_role):
    client.force_login(user_with_role(Role.CURATOR))
    page = client.get(reverse("storage:text_search"), {"q": "cafe"})
    assert page.status_code == 200
    content = page.content.decode()
    assert "Le café du théâtre" in content and "<mark>" in content
    hit = page.context["results"].hits[0]
    assert hit.capture_count == 1 and hit.replay
    assert reverse("storage:capture_detail", args=[hit.capture.pk]) in content
    assert f'href="{hit.replay}"' in content
    assert 'data-facet="domain"' in content and 'data-facet="language"' in content

    filtered = client.get(
        reverse("storage:text_search"), {"q": "reader OR museum OR cafe", "domain": "en.example"}
    )
    assert sorted(hit.url for hit in filtered.context["results"].hits) == [
        "http://en.example/gardens",
        "http://en.example/naive",
    ]
    bad = client.get(reverse("storage:text_search"), {"q": "-only"})
    assert bad.status_code == 200 and "Type at least one word to find." in bad.content.decode()
    assert "results" not in bad.context


def test_the_api_answers_json_hits_and_refuses_bad_input(client, language_pages, user_with_role):
    client.force_login(user_with_role(Role.READER))
    # A reader reads what the rules open: nothing here (no rule covers an imported file).
    answer = client.get("/api/search/", {"q": "cafe"})
    assert answer.status_code == 200 and answer.json()["count"] == 0 and answer.json()["results"] == []
    client.force_login(user_with_role(Role.ENGINEER))
    answer = client.get("/api/search/", {"q": "cafe", "language": "fr"})
    assert answer.status_code == 200
    body = answer.json()
    assert body["count"] == 1 and body["count_is_exact"] is True
    hit = body["results"][0]
    assert hit["url"] == "http://fr.example/cafe"
    assert hit["timestamp"] == "20250504100000"
    assert hit["title"] == "Le café du théâtre"
    assert "<mark>" in hit["snippet_html"] and "<mark>" not in hit["snippet"]
    assert hit["mime"] == "text/html" and hit["domain"] == "fr.example" and hit["language"] == "fr"
    assert hit["captures"] == 1 and hit["capture"].endswith(
        f"/captures/{Capture.objects.get(url=hit['url']).pk}/"
    )
    assert {facet["value"] for facet in body["facets"]["language"]} == {"fr"}

    for params, field in [
        ({}, "q"),
        ({"q": "-x"}, "q"),
        ({"q": "cafe", "year": "soon"}, "year"),
        ({"q": "cafe", "page": "0"}, "page"),
        ({"q": "cafe", "sort": "random"}, "sort"),
        ({"q": "cafe", "language": "french!"}, "language"),
        ({"q": "cafe", "page_size": "1000"}, "page_size"),
    ]:
        refused = client.get("/api/search/", params)
        assert refused.status_code == 400, params
        assert field in refused.json(), (params, refused.json())
    unknown = client.get("/api/search/", {"q": "cafe", "search": "x"})
    assert unknown.status_code == 400 and "search" in unknown.json()["detail"]


def test_the_api_answers_no_anonymous_caller_even_when_the_site_opens_reading(
    client, language_pages, settings
):
    settings.ACCESS_ANONYMOUS = True  # the page answers them; the API, as /cdx, does not
    assert client.get("/api/search/", {"q": "cafe"}).status_code == 401


TOKENS = [
    "cafe",
    "été",
    "OR",
    "or",
    "-",
    '"',
    "-cafe",
    '"quiet',
    'harbour"',
    "*",
    "(",
    ")",
    ":",
    "^",
    "NEAR",
    "NOT",
]
QUERY_TEXT = st.lists(
    st.sampled_from(TOKENS) | st.text(alphabet="abé\"-*():^~+|&!'\\«»€\x00\x02\x03\n\t", max_size=6),
    max_size=12,
).map(" ".join)


@hypothesis_settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(text=QUERY_TEXT)
def test_no_query_makes_the_search_fail(client, language_pages, user_with_role, text):
    """Whatever is typed, the answer is hits or a 400 saying what is wrong: never a 500."""
    client.force_login(user_with_role(Role.ENGINEER))
    answer = client.get("/api/search/", {"q": text})
    assert answer.status_code in (200, 400), (text, answer.content[:300])
    if answer.status_code == 400:
        assert answer.json()["q"]
    page = client.get(reverse("storage:text_search"), {"q": text})
    assert page.status_code == 200
