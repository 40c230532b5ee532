"""CSV export and import of records: the file format, the preview's errors, the two ways to commit,
the rights, and hypothesis-generated bad files. The online check of URLs is faked here (it is tested
against the local test website elsewhere)."""

import csv
import io
import re

import factory
import pytest
from django.core.exceptions import PermissionDenied
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from selection import csvio, services
from selection.choices import CheckStatus, RecordStatus
from selection.csvio import EXPORT_COLUMNS, import_commit, import_preview
from selection.csvio import commit as csv_commit
from selection.csvio import preview as csv_preview
from selection.models import Keyword, Record, Theme
from selection.selectors import incompatibility
from selection.urlcheck import UrlCheckResult
from selection.views import csv as csv_views
from tests.factories import CollectionFactory, UserFactory
from webarchive.permissions import Role

pytestmark = [pytest.mark.django_db]

OK_MESSAGE = "The server answered 200 OK."


def answers_ok(url):
    return UrlCheckResult(url=url, status=CheckStatus.OK, message=OK_MESSAGE)


def answers_404_for_missing(url):
    """INVALID for URLs containing "missing", OK for the others."""
    if "missing" in url:
        return UrlCheckResult(
            url=url, status=CheckStatus.INVALID, message="The server answered 404 Not Found."
        )
    return answers_ok(url)


class ThemeFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Theme

    collection = factory.SubFactory(CollectionFactory)
    name = factory.Sequence(lambda n: f"Theme {n}")


class RecordFactory(factory.django.DjangoModelFactory):
    """A record proposed through the services (by a curator unless ``user`` is given)."""

    class Meta:
        model = Record

    collection = factory.SubFactory(CollectionFactory)
    theme = factory.LazyAttribute(lambda r: ThemeFactory(collection=r.collection))
    url = factory.Sequence(lambda n: f"https://site{n}.example.org/")
    user = factory.LazyFunction(lambda: UserFactory(roles=[Role.CURATOR]))

    @classmethod
    def _create(cls, model_class, *args, user, **kwargs):
        return services.record_propose(user=user, checker=answers_ok, **kwargs)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    """The pages check URLs with check_url (preview, and commit for a row without a check): no network."""
    monkeypatch.setattr(csv_preview, "check_url", answers_404_for_missing)
    monkeypatch.setattr(csv_commit, "check_url", answers_404_for_missing)


@pytest.fixture
def librarian():
    return UserFactory(username="louise", roles=[Role.LIBRARIAN])


@pytest.fixture
def collection(librarian):
    collection = CollectionFactory(
        name="News",
        members=[librarian],
        default_budget="small",
        default_frequency="annual",
        default_depth="host",
    )
    ThemeFactory(collection=collection, name="Politics")
    ThemeFactory(collection=collection, name="Society")
    ThemeFactory(collection=collection, name="Old", is_active=False)
    return collection


def preview_of(text, user, collection, checker=answers_ok):
    return import_preview(user=user, collection=collection, content=text, checker=checker)


def errors_by_line(preview):
    return {row.line: row.errors for row in preview.rows if row.errors}


def parse(content: bytes):
    text = content.decode("utf-8")
    assert text.startswith("\ufeff")
    return list(csv.reader(io.StringIO(text[1:], newline="")))


def importable(record):
    return (
        record.url,
        record.theme.name,
        record.budget,
        record.frequency,
        record.depth,
        record.needs_browser,
        record.responsible.username,
        sorted(k.name for k in record.keywords.all()),
        record.supplementary_urls,
        record.content_notes,
        record.technical_notes,
        record.is_active,
    )


# Export ----------------------------------------------------------------------------------------------


def test_export_is_a_streamed_utf8_csv_with_bom_header_and_one_row_per_record(client, librarian, collection):
    politics = collection.themes.get(name="Politics")
    first = RecordFactory(
        collection=collection,
        theme=politics,
        url="https://www.example.org/",
        keywords=["Élections", "Presse"],
        supplementary_urls="https://www.example.org/sitemap.xml\nhttps://www.example.org/feed",
        budget="medium",
        frequency="weekly",
        depth="page+1",
        needs_browser=True,
        is_active=False,
        responsible=librarian,
    )
    other = RecordFactory(collection=collection, theme=politics, url="https://other.example.org/")
    client.force_login(librarian)
    response = client.get(reverse("selection:record_export"))
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(r'attachment; filename="records-\d{8}-\d{4}\.csv"', response["Content-Disposition"])
    content = b"".join(response.streaming_content)
    assert content.startswith(b"\xef\xbb\xbf")
    rows = parse(content)
    assert rows[0] == list(EXPORT_COLUMNS)
    assert len(rows) == 3
    assert response["X-Record-Count"] == "2"  # what a reader of the file checks it against
    row = dict(zip(EXPORT_COLUMNS, next(r for r in rows[1:] if r[0] == str(first.pk)), strict=True))
    assert row["collection"] == "News"
    assert row["url"] == "https://www.example.org/"
    assert row["supplementary_urls"] == "https://www.example.org/sitemap.xml https://www.example.org/feed"
    assert row["responsible"] == "louise"
    assert (row["budget"], row["frequency"], row["depth"]) == ("medium", "weekly", "page+1")
    assert row["theme"] == "Politics"
    assert row["keywords"] == "Presse; Élections" or row["keywords"] == "Élections; Presse"
    assert row["active"] == "no"
    assert row["needs_browser"] == "yes"
    other_row = dict(zip(EXPORT_COLUMNS, next(r for r in rows[1:] if r[0] == str(other.pk)), strict=True))
    assert (other_row["active"], other_row["needs_browser"]) == ("yes", "no")
    assert row["status"] == "proposed"
    assert row["url_check"] == "ok"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["created_at"])
    assert row["created_by"] == first.created_by.username


def test_export_writes_dates_in_the_sites_time_zone_to_the_second(client, librarian, collection):
    from datetime import UTC, datetime

    record = RecordFactory(collection=collection, url="https://dates.example.org/")
    type(record).objects.filter(pk=record.pk).update(
        created_at=datetime(2025, 1, 15, 11, 59, 59, 999_999, tzinfo=UTC),  # winter: UTC+1
        modified_at=datetime(2025, 7, 1, 22, 30, tzinfo=UTC),  # summer: UTC+2, the next day
        checked_at=None,
    )
    client.force_login(librarian)
    rows = parse(b"".join(client.get(reverse("selection:record_export")).streaming_content))
    row = dict(zip(EXPORT_COLUMNS, next(r for r in rows[1:] if r[0] == str(record.pk)), strict=True))
    assert (row["created_at"], row["modified_at"], row["checked_at"]) == (
        "2025-01-15 12:59:59",
        "2025-07-02 00:30:00",
        "",
    )


def test_export_applies_the_list_filters(client, librarian, collection):
    curator = UserFactory(roles=[Role.CURATOR])
    validated = RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    services.record_set_status(record=validated, user=curator, status=RecordStatus.VALIDATED)
    client.force_login(librarian)
    response = client.get(reverse("selection:record_export") + "?status=validated")
    rows = parse(b"".join(response.streaming_content))
    assert [row[0] for row in rows[1:]] == [str(validated.pk)]
    assert response["X-Record-Count"] == "1"  # the filtered records, not all of them


def test_export_refuses_bad_filters_instead_of_exporting_everything(client, librarian, collection):
    RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    client.force_login(librarian)
    response = client.get(reverse("selection:record_export") + "?status=lost")
    assert response.status_code == 400
    text = response.content.decode()
    assert text.startswith("The filters are not valid, nothing was exported: Status: Select a valid choice.")


def test_export_needs_a_role(client, collection):
    RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    url = reverse("selection:record_export")
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(UserFactory(roles=[]))
    assert client.get(url).status_code == 403
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    assert client.get(url).status_code == 200


def test_export_reads_records_a_chunk_at_a_time(collection, django_assert_max_num_queries):
    theme = collection.themes.get(name="Politics")
    for n in range(12):
        RecordFactory(collection=collection, theme=theme, url=f"https://s{n}.example.org/", keywords=["k"])
    with django_assert_max_num_queries(3):  # the records with their relations, then their keywords
        rows = list(csvio.records_csv_rows(Record.objects.all()))
    assert len(rows) == 13


def test_cells_a_spreadsheet_would_run_are_escaped_and_unescaped_on_import():
    for value in ["=SUM(A1)", "+33 1 23", "-x", "@cmd", "\tx", "'=x", "''+y"]:
        escaped = csvio.escape_cell(value)
        assert escaped == f"'{value}"
        assert csvio.unescape_cell(escaped) == value
    for value in ["https://example.org/", "'quoted'", "plain", ""]:
        assert csvio.escape_cell(value) == value
        assert csvio.unescape_cell(value) == value


def test_export_escapes_each_cell_a_spreadsheet_would_run_once(client, librarian, collection):
    RecordFactory(
        collection=collection,
        theme=collection.themes.get(name="Politics"),
        keywords=["@home"],
        content_notes='=HYPERLINK("http://x","y")',
        technical_notes="'=already quoted",
    )
    client.force_login(librarian)
    rows = parse(b"".join(client.get(reverse("selection:record_export")).streaming_content))
    row = dict(zip(EXPORT_COLUMNS, rows[1], strict=True))
    assert row["content_notes"] == '\'=HYPERLINK("http://x","y")'
    assert row["technical_notes"] == "''=already quoted"
    assert row["keywords"] == "'@home"
    assert row["url"].startswith("https://") and row["id"].isdigit()


# Round trip ------------------------------------------------------------------------------------------


def test_export_then_import_into_another_collection_gives_the_same_records(client, librarian, collection):
    other_librarian = UserFactory(username="marc", roles=[Role.LIBRARIAN])
    RecordFactory(
        collection=collection,
        theme=collection.themes.get(name="Politics"),
        url="https://www.example.org/news/",
        budget="medium",
        frequency="weekly",
        depth="path",
        needs_browser=True,
        keywords=["Elections", "Local news"],
        supplementary_urls="https://www.example.org/sitemap.xml\nhttps://www.example.org/feed",
        content_notes='Line one\nline two, with ; and "quotes"',
        technical_notes="=SUM(A1) -- not a formula",
        is_active=False,
        responsible=other_librarian,
    )
    RecordFactory(
        collection=collection, theme=collection.themes.get(name="Society"), url="http://b.example.org/"
    )
    client.force_login(librarian)
    exported = b"".join(client.get(reverse("selection:record_export")).streaming_content)
    # Copying records elsewhere: without their id and collection, the rows are new records.
    rows = [row[2:] for row in parse(exported)]
    assert parse(exported)[0][:2] == ["id", "collection"]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    exported = buffer.getvalue().encode()

    target = CollectionFactory(name="Archive", members=[librarian])
    ThemeFactory(collection=target, name="politics")  # names match whatever their case
    ThemeFactory(collection=target, name="Society")
    preview = preview_of(exported, librarian, target)
    assert preview.errors == []
    assert errors_by_line(preview) == {}
    assert set(preview.ignored_columns) == set(EXPORT_COLUMNS) - set(csvio.IMPORT_COLUMNS)
    assert [row.action for row in preview.rows] == ["new", "new"]
    result = import_commit(user=librarian, collection=target, preview=preview, all_or_nothing=True)
    assert len(result.created) == 2

    def without_theme_case(record):
        values = list(importable(record))
        values[1] = values[1].lower()
        return values

    assert sorted(without_theme_case(r) for r in target.records.all()) == sorted(
        without_theme_case(r) for r in collection.records.all()
    )
    assert dict(target.records.values_list("url", "needs_browser")) == {
        "https://www.example.org/news/": True,
        "http://b.example.org/": False,
    }


def test_the_needs_browser_column_reads_yes_or_no_and_refuses_anything_else_at_its_row(librarian, collection):
    text = "\n".join(
        [
            "url;theme;The site needs a browser",  # the field's name in the interface is read too
            "https://a.example.org/;Politics;yes",  # 2
            "https://b.example.org/;Politics;NON",  # 3
            "https://c.example.org/;Politics;true",  # 4
            "https://d.example.org/;Politics;0",  # 5
            "https://e.example.org/;Politics;oui",  # 6
            "https://f.example.org/;Politics;",  # 7: empty is no
            "https://g.example.org/;Politics;sometimes",  # 8
            "https://h.example.org/;Politics;1",  # 9
            "https://i.example.org/;Politics;False",  # 10
        ]
    )
    preview = preview_of(text, librarian, collection)
    assert preview.columns == ["url", "theme", "needs_browser"]
    assert errors_by_line(preview) == {
        8: {"needs_browser": ["“sometimes” is not yes or no (the site needs a browser)."]}
    }
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=False)
    assert [(row.line, row.messages) for row in result.skipped] == [
        (8, ["“sometimes” is not yes or no (the site needs a browser)."])
    ]
    assert dict(collection.records.values_list("url", "needs_browser")) == {
        "https://a.example.org/": True,
        "https://b.example.org/": False,
        "https://c.example.org/": True,
        "https://d.example.org/": False,
        "https://e.example.org/": True,
        "https://f.example.org/": False,
        "https://h.example.org/": True,
        "https://i.example.org/": False,
    }


# Reading the file ------------------------------------------------------------------------------------


def test_semicolons_bom_and_header_case_are_accepted(librarian, collection):
    text = (
        "\ufeffURL;Theme;Supplementary URLs;Keywords;Is_Active\r\n"
        'https://a.example.org/;politics;https://a.example.org/feed;"one; two";oui\r\n'
        '"https://b.example.org/";Society;;;no\r\n'
    )
    preview = preview_of(text.encode("utf-8"), librarian, collection)
    assert preview.delimiter == ";"
    assert preview.errors == []
    assert errors_by_line(preview) == {}
    first, second = preview.rows
    assert first.line == 2 and second.line == 3
    assert first.cleaned["keywords"] == ["one", "two"]
    assert first.cleaned["supplementary_urls"] == "https://a.example.org/feed"
    assert first.cleaned["is_active"] is True and second.cleaned["is_active"] is False
    assert (first.cleaned["budget"], first.cleaned["frequency"], first.cleaned["depth"]) == (
        "small",
        "annual",
        "host",
    )
    assert first.check.status == CheckStatus.OK


def test_tabs_and_quoted_line_breaks_keep_line_numbers(librarian, collection):
    text = 'url\ttheme\tcontent notes\nhttps://a.example.org/\tPolitics\t"two\nlines"\n\nhttps://b.example.org/\tSociety\t\n'
    preview = preview_of(text, librarian, collection)
    assert preview.delimiter == "\t"
    assert [row.line for row in preview.rows] == [2, 5]
    assert preview.rows[0].cleaned["content_notes"] == "two\nlines"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "The file is empty."),
        (b"\xef\xbb\xbf\r\n  \n", "The file is empty."),
        (b"url,theme\n", "The file has a header line but no records under it."),
        (
            b"link,theme\nhttps://a.example.org/,Politics\n",
            "The file has no “url” column. Its first line must name the columns, "
            "for example: url,theme,budget,frequency,depth,responsible",
        ),
        (
            b"url;budget\nhttps://a.example.org/;small\n",
            "The file has no “theme” column. Its first line must name the columns, "
            "for example: url;theme;budget;frequency;depth;responsible",
        ),
        (b"url,theme,URL\nx,y,z\n", "The column “URL” appears twice in the header."),
        (b"%PDF-1.4\x00\x01\x02", "This is not a CSV file: it contains binary data."),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_with_a_clear_message(librarian, collection, content, message):
    preview = preview_of(content, librarian, collection)
    assert preview.errors == [message]
    assert preview.rows == []


def test_a_file_whose_encoding_cannot_be_decided_says_where(librarian, collection):
    # 0xE9 is not UTF-8 there; 0x81 is not Windows-1252 at all.
    content = b"url,theme\nhttps://caf\xe9.example.org/,Politics\nhttps://a.example.org/,Pol\x81tics\n"
    preview = preview_of(content, librarian, collection)
    assert preview.errors == [
        "The file's encoding cannot be decided: it is not UTF-8 (line 2 has the byte 0xE9, which UTF-8 "
        "does not allow there), nor Windows-1252 (line 3 has the byte 0x81, which Windows-1252 does not "
        "use). Save the file as “CSV UTF-8” and upload it again."
    ]
    assert preview.rows == []


def test_too_many_rows_are_refused(librarian, collection, monkeypatch):
    monkeypatch.setattr(csv_preview, "MAX_ROWS", 3)
    text = "url,theme\n" + "".join(f"https://s{n}.example.org/,Politics\n" for n in range(4))
    preview = preview_of(text, librarian, collection)
    assert preview.errors == ["The file has more than 3 records; split it into files of 3 at most."]


# The preview's errors, row by row ----------------------------------------------------------------------


def test_each_kind_of_error_is_reported_on_its_line_and_field(librarian, collection):
    existing = RecordFactory(
        collection=collection, theme=collection.themes.get(name="Politics"), url="https://dup.example.org/"
    )
    UserFactory(username="Marc", roles=[Role.LIBRARIAN])
    UserFactory(username="replay")  # a service account: never responsible for a record
    text = "\n".join(
        [
            "url,theme,budget,frequency,depth,responsible,keywords,supplementary urls,active",
            "ftp://files.example.org/,Politics,,,,,,,",  # 2
            ",Politics,,,,,,,",  # 3
            "https://a.example.org/,Sport,,,,,,,",  # 4
            "https://b.example.org/,Old,,,,,,,",  # 5
            "https://c.example.org/,Politics,,,,nobody,,,",  # 6
            "https://d.example.org/,Politics,huge,,,,,,",  # 7
            "https://e.example.org/,Politics,large,daily,,,,,",  # 8
            "http://www.dup.example.org,Politics,,,,,,,",  # 9
            "https://f.example.org/,Politics,,,,,,,",  # 10
            "http://F.example.org,Politics,,,,,,,",  # 11
            "https://missing.example.org/,Politics,,,,,,,",  # 12
            "https://g.example.org/,Politics,,,,,,,maybe",  # 13
            "https://h.example.org/,Politics,,,,,,ftp://x.example.org/,",  # 14
            f"https://i.example.org/,Politics,,,,,{'k' * 101},,",  # 15
            "https://j.example.org/,Politics,,,,,,,,extra",  # 16
            "https://exa%mple.org/,Politics,,,,,,,",  # 17
            "https://k.example.org/,,,,,,,,",  # 18
            "https://l.example.org/,politics,MEDIUM,Weekly,page+1,marc,a;b,,yes",  # 19: valid
            "https://m.example.org/,Politics,,,,replay,,,",  # 20
        ]
    )
    preview = preview_of(text, librarian, collection, checker=answers_404_for_missing)
    rule = (
        "These settings cannot be combined: Large + Daily + any. A large site cannot be harvested every day."
    )
    themes = "Politics, Society"
    assert errors_by_line(preview) == {
        2: {"url": ["Only http and https URLs can be harvested, not “ftp”."]},
        3: {"url": ["Enter a URL."]},
        4: {"theme": [f"“Sport” is not a theme of the collection “News”; its themes are: {themes}."]},
        5: {"theme": ["The theme “Old” is no longer in use."]},
        6: {"responsible": ["There is no librarian or curator “nobody”."]},
        20: {"responsible": ["There is no librarian or curator “replay”."]},
        7: {"budget": ["“huge” is not a valid budget; the allowed values are: small, medium, large."]},
        8: {"budget": [rule], "frequency": [rule]},
        11: {"url": ["This URL is already on line 10 of the file."]},
        12: {"url_check": ["This URL cannot be selected: The server answered 404 Not Found."]},
        13: {"active": ["“maybe” is not yes or no (active)."]},
        14: {
            "supplementary_urls": [
                "“ftp://x.example.org/”: Only http and https URLs can be harvested, not “ftp”."
            ]
        },
        15: {"keywords": ["A keyword cannot be longer than 100 characters."]},
        16: {"row": ["This line has more cells than the header has columns."]},
        17: {"url": ["“exa%mple.org” is not a valid host name."]},
        18: {"theme": [f"Enter a theme; the themes of this collection are: {themes}."]},
    }
    valid = preview.rows[-2]
    assert valid.valid
    assert valid.cleaned["theme"] == collection.themes.get(name="Politics").pk
    assert (valid.cleaned["budget"], valid.cleaned["frequency"], valid.cleaned["depth"]) == (
        "medium",
        "weekly",
        "page+1",
    )
    assert valid.cleaned["responsible"] == UserFactory(username="Marc").pk  # the only one, whatever the case
    assert len(preview.valid_rows) == 3  # lines 9, 10 and 19
    # Line 9 names the existing record by its URL (the same site page): it would leave it as it is.
    assert (preview.rows[7].line, preview.rows[7].action, preview.rows[7].cleaned["record"]) == (
        9,
        "unchanged",
        existing.pk,
    )
    assert preview.rows[10].check.status == CheckStatus.INVALID


def test_a_checker_that_fails_is_an_error_of_the_row_not_of_the_page(librarian, collection):
    def broken(url):
        raise RuntimeError("resolver exploded")

    preview = preview_of(
        "url,theme\nhttps://a.example.org/,Politics\n", librarian, collection, checker=broken
    )
    assert errors_by_line(preview) == {2: {"url_check": ["The URL could not be checked: resolver exploded"]}}


def test_previewing_writes_nothing(librarian, collection):
    before = (Record.objects.count(), Keyword.objects.count(), Theme.objects.count())
    preview = preview_of(
        "url,theme,keywords\nhttps://a.example.org/,Politics,brand new\n", librarian, collection
    )
    assert preview.rows[0].valid
    assert (Record.objects.count(), Keyword.objects.count(), Theme.objects.count()) == before


# Rights ----------------------------------------------------------------------------------------------


def test_only_those_who_write_in_the_collection_may_import(client, collection):
    outsider = UserFactory(roles=[Role.LIBRARIAN])
    with pytest.raises(PermissionDenied, match=re.escape("You are not a member of the collection “News”.")):
        preview_of("url,theme\nhttps://a.example.org/,Politics\n", outsider, collection)
    engineer = UserFactory(roles=[Role.ENGINEER])
    with pytest.raises(PermissionDenied, match=re.escape("Your role does not allow you to change records.")):
        preview_of("url,theme\nhttps://a.example.org/,Politics\n", engineer, collection)
    curator = UserFactory(roles=[Role.CURATOR])
    assert preview_of("url,theme\nhttps://a.example.org/,Politics\n", curator, collection).rows[0].valid

    client.force_login(outsider)
    upload = SimpleUploadedFile("r.csv", b"url,theme\nhttps://a.example.org/,Politics\n")
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    assert response.status_code == 403
    page = client.get(reverse("selection:record_import"))
    assert page.status_code == 200
    assert "You are not a member of any collection" in page.content.decode()
    client.force_login(engineer)
    assert client.get(reverse("selection:record_import")).status_code == 403


def test_commit_checks_the_rights_again(librarian, collection):
    preview = preview_of("url,theme\nhttps://a.example.org/,Politics\n", librarian, collection)
    collection.members.clear()
    with pytest.raises(PermissionDenied):
        import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=False)
    assert not Record.objects.exists()


# Committing ------------------------------------------------------------------------------------------


MIXED = "url,theme\nhttps://a.example.org/,Politics\nhttps://b.example.org/,Sport\nhttps://c.example.org/,Society\n"


def test_all_or_nothing_writes_nothing_when_a_row_has_an_error(librarian, collection):
    preview = preview_of(MIXED, librarian, collection)
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=True)
    assert result.created == []
    assert result.errors == ["Nothing was imported: 1 row has an error."]
    assert [row.line for row in result.skipped] == [3]
    assert not Record.objects.exists()


def test_valid_rows_mode_writes_the_valid_rows_and_reports_the_others(librarian, collection):
    preview = preview_of(MIXED, librarian, collection)
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=False)
    assert sorted(r.url for r in result.created) == ["https://a.example.org/", "https://c.example.org/"]
    assert [(row.line, row.messages) for row in result.skipped] == [
        (3, ["“Sport” is not a theme of the collection “News”; its themes are: Politics, Society."])
    ]
    record = Record.objects.get(url="https://a.example.org/")
    assert record.check_status == CheckStatus.OK
    assert record.check_result["message"] == OK_MESSAGE
    assert record.created_by == librarian and record.responsible == librarian
    assert record.status == RecordStatus.PROPOSED


def test_commit_does_not_check_the_urls_again(librarian, collection, monkeypatch):
    preview = preview_of("url,theme\nhttps://a.example.org/,Politics\n", librarian, collection)

    def must_not_be_called(url):
        raise AssertionError("checked twice")

    monkeypatch.setattr(csv_commit, "check_url", must_not_be_called)
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=True)
    assert len(result.created) == 1


@pytest.mark.parametrize("all_or_nothing", [True, False])
def test_a_url_added_between_preview_and_commit(librarian, collection, all_or_nothing):
    text = "url,theme\nhttps://a.example.org/,Politics\nhttps://b.example.org/,Society\n"
    preview = preview_of(text, librarian, collection)
    assert len(preview.valid_rows) == 2
    meanwhile = RecordFactory(
        collection=collection, theme=collection.themes.get(name="Politics"), url="https://b.example.org"
    )
    result = import_commit(
        user=librarian, collection=collection, preview=preview, all_or_nothing=all_or_nothing
    )
    assert [(row.line, row.errors) for row in result.skipped] == [
        (3, {"url": [f"This URL is already in this collection (record #{meanwhile.pk})."]})
    ]
    urls = set(Record.objects.values_list("url", flat=True))
    if all_or_nothing:
        assert result.created == []
        assert result.errors == ["Nothing was imported: 1 row has an error."]
        assert urls == {"https://b.example.org/"}
    else:
        assert [r.url for r in result.created] == ["https://a.example.org/"]
        assert urls == {"https://a.example.org/", "https://b.example.org/"}


def test_a_preview_for_another_collection_is_refused(librarian, collection):
    preview = preview_of("url,theme\nhttps://a.example.org/,Politics\n", librarian, collection)
    other = CollectionFactory(members=[librarian])
    result = import_commit(user=librarian, collection=other, preview=preview, all_or_nothing=False)
    assert result.errors == ["This preview was made for another collection; upload the file again."]
    assert not Record.objects.exists()


def test_a_preview_survives_the_session(librarian, collection):
    preview = preview_of(MIXED, librarian, collection)
    assert csvio.ImportPreview.from_dict(preview.as_dict()) == preview
    compact = csvio.ImportPreview.from_dict(preview.as_dict(compact=True))
    assert [(row.line, row.valid, row.values) for row in compact.rows] == [
        (2, True, {"url": "https://a.example.org/"}),
        (3, False, {"url": "https://b.example.org/"}),
        (4, True, {"url": "https://c.example.org/"}),
    ]
    assert [row.check for row in compact.valid_rows] == [row.check for row in preview.valid_rows]
    assert [row.cleaned for row in compact.valid_rows] == [row.cleaned for row in preview.valid_rows]
    result = import_commit(user=librarian, collection=collection, preview=compact, all_or_nothing=False)
    assert len(result.created) == 2
    assert [(row.line, row.values["url"]) for row in result.skipped] == [(3, "https://b.example.org/")]


def test_a_preview_too_large_for_the_session_is_shown_but_not_kept(
    client, librarian, collection, monkeypatch
):
    monkeypatch.setattr(csv_views, "MAX_STORED_BYTES", 100)
    client.force_login(librarian)
    upload = SimpleUploadedFile("r.csv", MIXED.encode())
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    page = response.content.decode()
    assert "This file is too large to be kept until you import it" in page
    assert 'name="mode"' not in page
    assert csv_views.SESSION_KEY not in client.session


def test_the_session_keeps_a_few_previews_only(client, librarian, collection):
    client.force_login(librarian)
    tokens = []
    for _ in range(csv_views.MAX_STORED_PREVIEWS + 2):
        upload = SimpleUploadedFile("r.csv", MIXED.encode())
        response = client.post(
            reverse("selection:record_import"), {"collection": collection.pk, "file": upload}
        )
        tokens.append(response.context["token"])
    assert set(client.session[csv_views.SESSION_KEY]) == set(tokens[-csv_views.MAX_STORED_PREVIEWS :])


# The pages -------------------------------------------------------------------------------------------


def test_upload_preview_and_commit_through_the_pages(client, librarian, collection):
    client.force_login(librarian)
    form = client.get(reverse("selection:record_import") + f"?collection={collection.pk}")
    assert form.status_code == 200
    assert f'<option value="{collection.pk}" selected>News</option>' in form.content.decode()

    text = MIXED + "https://missing.example.org/,Politics\n"
    upload = SimpleUploadedFile("records.csv", text.encode("utf-8-sig"), content_type="text/csv")
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    assert response.status_code == 200
    page = response.content.decode()
    assert "Import the 2 valid rows" in page
    assert re.search(r'value="all"[^>]*disabled', page)
    assert "“Sport” is not a theme of the collection “News”" in page
    assert "This URL cannot be selected: The server answered 404 Not Found." in page
    assert not Record.objects.exists()
    token = response.context["token"]

    result = client.post(reverse("selection:record_import_commit"), {"preview": token, "mode": "valid"})
    assert result.status_code == 200
    assert Record.objects.count() == 2
    content = result.content.decode()
    assert "2 records created." in content
    for record in Record.objects.all():
        assert f'<a href="{record.get_absolute_url()}">{record.url}</a>' in content
    assert "2 rows not imported" in content

    again = client.post(reverse("selection:record_import_commit"), {"preview": token, "mode": "valid"})
    assert again.status_code == 302
    assert Record.objects.count() == 2
    follow = client.get(again["Location"])
    assert "This import has expired or was already done; upload the file again." in follow.content.decode()


def test_all_or_nothing_through_the_pages(client, librarian, collection):
    client.force_login(librarian)
    upload = SimpleUploadedFile("r.csv", b"url;theme\nhttps://a.example.org/;Politics\n")
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    assert not re.search(r'value="all"[^>]*disabled', response.content.decode())
    result = client.post(
        reverse("selection:record_import_commit"), {"preview": response.context["token"], "mode": "all"}
    )
    assert "1 record created." in result.content.decode()
    assert Record.objects.get().url == "https://a.example.org/"


def test_a_bad_file_is_shown_on_the_form(client, librarian, collection):
    client.force_login(librarian)
    upload = SimpleUploadedFile("r.csv", b"url,theme\nhttps://\x81.example.org/,x\n")
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    assert response.status_code == 200
    assert "The file&#x27;s encoding cannot be decided: it is not UTF-8 (line 2" in response.content.decode()
    empty = SimpleUploadedFile("r.csv", b"")
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": empty})
    assert "The submitted file is empty." in response.content.decode()
    response = client.post(reverse("selection:record_import"), {"collection": "9999"})
    assert "Select a valid choice." in response.content.decode()


def test_commit_without_a_mode_or_preview_changes_nothing(client, librarian, collection):
    client.force_login(librarian)
    assert (
        client.post(reverse("selection:record_import_commit"), {"preview": "x", "mode": "all"}).status_code
        == 302
    )
    assert client.post(reverse("selection:record_import_commit"), {}).status_code == 302
    assert client.get(reverse("selection:record_import_commit")).status_code == 405
    assert not Record.objects.exists()


# Hypothesis: bad files never break anything ----------------------------------------------------------

HEADERS = [
    "url",
    "theme",
    "budget",
    "frequency",
    "depth",
    "responsible",
    "keywords",
    "active",
    "URL",
    "x",
    "",
]
CELLS = st.one_of(
    st.sampled_from(
        [
            "",
            "https://a.example.org/",
            "http://www.a.example.org",
            "https://missing.example.org/",
            "ftp://x.org",
            "javascript:alert(1)",
            "http://[::1]/",
            "http://a b",
            "Politics",
            "politics",
            "Old",
            "Sport",
            "large",
            "daily",
            "domain",
            "page+1",
            "louise",
            "nobody",
            "yes",
            "no",
            "=cmd|' /C calc'!A0",
            "'",
            '"',
            "a;b;" + "k" * 120,
        ]
    ),
    st.text(max_size=30),
)
FAST = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def csv_text(draw_headers, draw_rows, delimiter):
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)
    writer.writerow(draw_headers)
    writer.writerows(draw_rows)
    return buffer.getvalue()


def encoded(headers, rows, delimiter, bom):
    return (("\ufeff" if bom else "") + csv_text(headers, rows, delimiter)).encode("utf-8")


DELIMITER = st.sampled_from([",", ";", "\t"])
csv_files = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8")),
    # Any header: mostly refused, for a missing column or a duplicate one.
    st.builds(
        encoded,
        st.lists(st.sampled_from(HEADERS), min_size=1, max_size=6),
        st.lists(st.lists(CELLS, max_size=7), max_size=6),
        DELIMITER,
        st.booleans(),
    ),
    # A header the import reads, with broken rows: a preview.
    st.builds(
        encoded,
        st.lists(st.sampled_from(HEADERS[2:8]), max_size=4, unique=True).map(lambda h: ["url", "theme", *h]),
        st.lists(st.lists(CELLS, max_size=7), min_size=1, max_size=6),
        DELIMITER,
        st.booleans(),
    ),
)


@FAST
@given(content=csv_files)
def test_any_upload_is_answered_without_error_and_writes_nothing(client, librarian, collection, content):
    client.force_login(librarian)
    upload = SimpleUploadedFile("r.csv", content)
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    assert response.status_code == 200
    event("preview shown" if "import-preview" in response.content.decode() else "file refused")
    assert not Record.objects.exists()
    assert not Keyword.objects.exists()


random_row = st.fixed_dictionaries(
    {
        "url": st.one_of(
            st.sampled_from(
                ["https://a.example.org/", "http://a.example.org", "https://missing.example.org/"]
            ),
            st.from_regex(r"https?://[a-c]\.example\.org/[a-z]{0,2}", fullmatch=True),
            st.text(max_size=20),
        ),
        "theme": st.sampled_from(["Politics", "society", "Old", "Sport", ""]),
        "budget": st.sampled_from(["", "small", "medium", "large", "huge"]),
        "frequency": st.sampled_from(["", "daily", "weekly", "once", "never"]),
        "depth": st.sampled_from(["", "page", "domain", "host"]),
        "responsible": st.sampled_from(["", "louise", "nobody"]),
        "keywords": CELLS,
        "active": st.sampled_from(["", "yes", "no", "maybe"]),
        "needs browser": st.sampled_from(["", "oui", "0", "sometimes"]),
        "supplementary urls": st.sampled_from(["", "https://a.example.org/feed", "ftp://x", "a b"]),
    }
)
# Rows that are mostly right, so that commits do write records (and duplicates, between them).
plausible_row = st.fixed_dictionaries(
    {
        "url": st.from_regex(r"https?://(www\.)?[a-c]\.example\.org/[a-b]?", fullmatch=True),
        "theme": st.sampled_from(["Politics", "society"]),
        "budget": st.sampled_from(["", "small", "medium", "large"]),
        "frequency": st.sampled_from(["", "weekly", "once", "daily"]),
        "depth": st.sampled_from(["", "page", "domain", "host"]),
        "responsible": st.sampled_from(["", "louise"]),
        "keywords": st.sampled_from(["", "a", "a; B", "=x"]),
        "active": st.sampled_from(["", "yes", "no"]),
        "needs browser": st.sampled_from(["", "yes", "no"]),
        "supplementary urls": st.sampled_from(["", "https://a.example.org/feed"]),
    }
)
rows = st.lists(st.one_of(plausible_row, random_row), min_size=1, max_size=8)


@FAST
@given(rows=rows, all_or_nothing=st.booleans())
def test_committing_random_rows_never_writes_an_invalid_record(librarian, collection, rows, all_or_nothing):
    text = csv_text(list(rows[0]), [list(row.values()) for row in rows], ",")
    with transaction.atomic():
        preview = preview_of(text, librarian, collection, checker=answers_404_for_missing)
        assert not Record.objects.exists()
        result = import_commit(
            user=librarian, collection=collection, preview=preview, all_or_nothing=all_or_nothing
        )
        written = list(Record.objects.all())
        event("records written" if written else "nothing written")
        assert {r.pk for r in result.created} == {r.pk for r in written}
        if all_or_nothing and preview.invalid_rows:
            assert written == []
        assert len(written) + len(result.skipped) == len(preview.rows) or (all_or_nothing and not written)
        for record in written:
            record.full_clean()
            assert record.collection == collection
            assert record.theme.collection == collection and record.theme.is_active
            assert incompatibility(record.budget, record.frequency, record.depth) is None
            assert record.check_status in CheckStatus.selectable()
            assert "missing" not in record.url
        assert len({r.url_key for r in written}) == len(written)
        transaction.set_rollback(True)


# Round trip: export, edit in a spreadsheet, import ------------------------------------------------


def spreadsheet(content: bytes, edit, *, delimiter=";", encoding="cp1252") -> bytes:
    """What a spreadsheet saves after ``edit(rows)`` changed the rows of an export separated by
    semicolons (French Excel: ``;`` and Windows-1252, no BOM)."""
    rows = list(csv.reader(io.StringIO(content.decode("utf-8-sig"), newline=""), delimiter=";"))
    edit(rows)
    buffer = io.StringIO(newline="")
    csv.writer(buffer, delimiter=delimiter, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode(encoding)


def column(rows, name):
    return rows[0].index(name)


def test_an_exported_file_edited_in_french_excel_updates_the_records_it_names(client, librarian, collection):
    politics = collection.themes.get(name="Politics")
    elsewhere = CollectionFactory(name="Régions", members=[librarian])
    ThemeFactory(collection=elsewhere, name="Économie")
    first = RecordFactory(
        collection=collection, theme=politics, url="https://a.example.org/", keywords=["Vote"]
    )
    second = RecordFactory(collection=elsewhere, theme=elsewhere.themes.get(), url="https://b.example.org/")
    untouched = RecordFactory(collection=collection, theme=politics, url="https://c.example.org/")
    client.force_login(librarian)
    exported = b"".join(
        client.get(reverse("selection:record_export"), {"separator": "semicolon"}).streaming_content
    )
    assert exported.decode("utf-8-sig").splitlines()[0].startswith("id;collection;url;")

    def edit(rows):
        by_url = {row[column(rows, "url")]: row for row in rows[1:]}
        by_url["https://a.example.org/"][column(rows, "content_notes")] = "Élections régionales"
        by_url["https://a.example.org/"][column(rows, "budget")] = "medium"
        by_url["https://a.example.org/"][column(rows, "keywords")] = "Vote; Région"
        # A theme typed in capitals: the same theme.
        by_url["https://b.example.org/"][column(rows, "theme")] = "ÉCONOMIE"
        by_url["https://b.example.org/"][column(rows, "technical_notes")] = "Pages en cache"
        # A new row in the other collection, named by the collection column.
        new = [""] * len(rows[0])
        new[column(rows, "collection")] = "régions"
        new[column(rows, "url")] = "https://d.example.org/"
        new[column(rows, "theme")] = "économie"
        rows.append(new)

    edited = spreadsheet(exported, edit)
    preview = preview_of(edited, librarian, collection)
    assert (preview.encoding, preview.delimiter, preview.errors) == ("Windows-1252", ";", [])
    assert errors_by_line(preview) == {}
    actions = {row.values["url"]: (row.action, row.changes) for row in preview.rows}
    assert actions == {
        "https://a.example.org/": (
            "update",
            [
                ["budget", "Small", "Medium"],
                ["keywords", "Vote", "Région; Vote"],
                ["content_notes", "", "Élections régionales"],
            ],
        ),
        "https://b.example.org/": ("update", [["technical_notes", "", "Pages en cache"]]),
        "https://c.example.org/": ("unchanged", []),
        "https://d.example.org/": ("new", []),
    }
    versions = {record.pk: Record.objects.get(pk=record.pk).version for record in (first, second, untouched)}
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=True)
    assert (len(result.created), len(result.updated), result.unchanged, result.skipped) == (1, 2, 1, [])
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.budget, first.content_notes) == ("medium", "Élections régionales")
    assert sorted(first.keywords.values_list("name", flat=True)) == ["Région", "Vote"]
    assert first.version == versions[first.pk] + 1 and first.modified_by == librarian
    assert (second.collection, second.technical_notes) == (elsewhere, "Pages en cache")
    assert Record.objects.get(pk=untouched.pk).version == versions[untouched.pk]
    created = Record.objects.get(url="https://d.example.org/")
    assert (created.collection, created.theme.name) == (elsewhere, "Économie")


def test_the_preview_page_says_how_the_file_was_read_and_what_each_row_changes(client, librarian, collection):
    record = RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    text = f"id;url;theme;content_notes\r\n{record.pk};{record.url};Politics;Révisé\r\n"
    client.force_login(librarian)
    upload = SimpleUploadedFile("r.csv", text.encode("cp1252"))
    response = client.post(reverse("selection:record_import"), {"collection": collection.pk, "file": upload})
    page = response.content.decode()
    assert "Read as Windows-1252, separator ;." in page
    assert "Among the valid rows: 0 new, 1 to update, 0 unchanged." in page
    assert re.search(r"<strong>Content notes</strong>: <del>—</del> → <ins>Révisé</ins>", page)
    token = re.search(r'name="preview" value="([^"]+)"', page).group(1)
    done = client.post(reverse("selection:record_import_commit"), {"preview": token, "mode": "all"})
    assert "1 record updated." in done.content.decode()
    assert Record.objects.get(pk=record.pk).content_notes == "Révisé"


def test_rights_are_checked_per_row(librarian, collection):
    closed = CollectionFactory(name="Fermée")  # the librarian is not a member
    ThemeFactory(collection=closed, name="Politics")
    theirs = RecordFactory(collection=closed, theme=closed.themes.get(), url="https://theirs.example.org/")
    text = "\n".join(
        [
            "id,collection,url,theme,content_notes",
            f"{theirs.pk},,https://theirs.example.org/,Politics,mine now",  # 2: by id
            ",Fermée,https://theirs.example.org/,Politics,mine now",  # 3: by collection and URL
            ",Fermée,https://new.example.org/,Politics,",  # 4: a new record there
            ",Nowhere,https://new.example.org/,Politics,",  # 5
            "12abc,,https://x.example.org/,Politics,",  # 6
            "999999,,https://y.example.org/,Politics,",  # 7
        ]
    )
    preview = preview_of(text, librarian, collection)
    assert errors_by_line(preview) == {
        2: {"id": [f"There is no record #{theirs.pk} that you may change."]},
        3: {"collection": ["You are not a member of the collection “Fermée”."]},
        4: {"collection": ["You are not a member of the collection “Fermée”."]},
        5: {"collection": ["There is no collection “Nowhere”."]},
        6: {"id": ["“12abc” is not a record number."]},
        7: {"id": ["There is no record #999999 that you may change."]},
    }
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=False)
    assert (result.created, result.updated, len(result.skipped)) == ([], [], 6)
    assert Record.objects.get(pk=theirs.pk).content_notes == ""


def test_a_record_saved_after_the_preview_is_not_overwritten(librarian, collection):
    record = RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    text = f"id,url,theme,content_notes\n{record.pk},{record.url},Politics,from the file\n"
    preview = preview_of(text, librarian, collection)
    services.record_update(
        record=Record.objects.get(pk=record.pk),
        user=librarian,
        expected_version=record.version,
        content_notes="saved meanwhile",
    )
    result = import_commit(user=librarian, collection=collection, preview=preview, all_or_nothing=True)
    assert result.updated == [] and result.errors == ["Nothing was imported: 1 row has an error."]
    assert result.skipped[0].messages == [
        "Someone else changed this record while you were editing it: content notes changed to "
        "“saved meanwhile” by louise. Your changes were not saved; reload the record and make them again."
    ]
    assert Record.objects.get(pk=record.pk).content_notes == "saved meanwhile"


def test_a_rule_made_after_a_record_does_not_block_edits_that_leave_its_settings_alone(
    client, librarian, collection
):
    record = RecordFactory(
        collection=collection,
        theme=collection.themes.get(name="Politics"),
        budget="large",
        frequency="weekly",
        depth="host",
    )
    services.compatibility_rule_create(
        user=UserFactory(roles=[Role.CURATOR]), budget="large", frequency="weekly", reason="Too heavy."
    )
    # Notes, keywords: saved, through the service, the import and the page.
    record = services.record_update(
        record=record, user=librarian, expected_version=record.version, content_notes="Still here"
    )
    text = f"id,url,theme,keywords\n{record.pk},{record.url},Politics,Suivi\n"
    preview = preview_of(text, librarian, collection)
    assert errors_by_line(preview) == {} and preview.rows[0].action == "update"
    # Changing a setting (here, only the depth) meets the rule.
    text = f"id,url,theme,depth\n{record.pk},{record.url},Politics,page\n"
    preview = preview_of(text, librarian, collection)
    assert "depth" not in errors_by_line(preview).get(2, {})
    assert errors_by_line(preview)[2]["budget"][0].startswith("These settings cannot be combined")


def test_the_export_offers_semicolons_and_refuses_an_unknown_separator(client, librarian, collection):
    RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    client.force_login(librarian)
    list_page = client.get(reverse("selection:record_list")).content.decode()
    assert 'id="export-csv-semicolon"' in list_page
    response = client.get(reverse("selection:record_export"), {"separator": "semicolon"})
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    assert text.splitlines()[0] == ";".join(EXPORT_COLUMNS)
    refused = client.get(reverse("selection:record_export"), {"separator": "pipe"})
    assert refused.status_code == 400
    assert "Unknown separator “pipe”: choose comma or semicolon." in refused.content.decode()


def test_a_utf16_file_is_read(librarian, collection):
    text = "url\ttheme\nhttps://café.example.org/\tPolitics\n"
    preview = preview_of(text.encode("utf-16"), librarian, collection)
    assert (preview.encoding, preview.delimiter, errors_by_line(preview)) == ("UTF-16", "\t", {})
    assert preview.rows[0].cleaned["url"] == "https://xn--caf-dma.example.org/"


def test_names_typed_with_decomposed_accents_match(librarian, collection):
    ThemeFactory(collection=collection, name="Économie")
    # As a Mac saves it: "E" then the combining acute accent, in UTF-8.
    text = "URL,Theme\nhttps://a.example.org/,E\u0301conomie\n"
    preview = preview_of(text.encode("utf-8"), librarian, collection)
    assert errors_by_line(preview) == {}
    assert preview.rows[0].cleaned["theme"] == collection.themes.get(name="Économie").pk


def test_an_export_with_named_columns_in_french_imports_back(client, librarian, collection):
    from django.utils import translation

    record = RecordFactory(collection=collection, theme=collection.themes.get(name="Politics"))
    client.force_login(librarian)
    response = client.get(
        reverse("selection:record_export"),
        {"separator": "semicolon", "headers": "labels"},
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    header = text.splitlines()[0].split(";")
    with translation.override("fr"):
        assert header == [csvio.column_label(key) for key in EXPORT_COLUMNS]
        assert "URL supplémentaires" in header and "bibliothécaire responsable" in header
        preview = preview_of(text, librarian, collection)
    assert preview.errors == [] and errors_by_line(preview) == {}
    assert [(row.action, row.cleaned["record"]) for row in preview.rows] == [("unchanged", record.pk)]
    refused = client.get(reverse("selection:record_export"), {"headers": "fancy"})
    assert refused.status_code == 400
