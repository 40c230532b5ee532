"""The librarian's path through the selection, in a real browser, against the local test website.

Log in, propose a URL that redirects, take the final URL, see the warning about
a similar record on the same host, fill in the record (the page greys out the
settings that cannot be combined), save, find the record under "My records",
export the list as CSV. And the refusals: a URL that answers 404 cannot be
selected by a librarian, and a URL already in the collection is flagged.

The URL check runs for real against the test website on 127.0.0.1: the
setting WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES lets it connect to a loopback
address (the live server runs in the test's process, so ``settings`` applies).
"""

import csv
import io
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from selection.choices import CheckStatus, RecordStatus
from selection.csvio import EXPORT_COLUMNS
from selection.models import Collection, CompatibilityRule, Record
from selection.services import record_propose
from selection.urlcheck import UrlCheckResult
from tests.browser.test_navigation import foreign_requests, log_in, path_of
from webarchive.management.commands.demo import demo_password
from webarchive.permissions import VIEW, restrict

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

NEWS = "News and press"
ELECTIONS = "Elections 2027"
STAGE2_SCREENSHOT = "/tmp/propose-stage2.png"


@pytest.fixture
def selection_site(transactional_db, settings):
    """The demo data, the URL check allowed to reach 127.0.0.1, and the default forbidden combination.

    The live server's tests flush the database after each test, which also
    empties the rows the migrations wrote: the rule "large + daily" of
    selection/migrations/0003 is put back here if it is gone.
    """
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.SELECTION_URL_CHECK_TIMEOUT = 5.0
    call_command("demo", stdout=io.StringIO())
    CompatibilityRule.objects.get_or_create(
        budget="large",
        frequency="daily",
        depth="",
        defaults={"reason": "A large site cannot be harvested every day."},
    )


def ok_checker(url: str) -> UrlCheckResult:
    return UrlCheckResult(
        url=url, status=CheckStatus.OK, message="The server answered 200 OK.", final_url=url
    )


def existing_record(*, username: str, collection: str, url: str, theme: str) -> Record:
    """A record made before the browser part, by the service (checked by a stand-in checker)."""
    user = get_user_model().objects.get(username=username)
    collection = Collection.objects.get(name=collection)
    return record_propose(
        user=user,
        collection=collection,
        url=url,
        theme=collection.themes.get(name=theme),
        responsible=user,
        checker=ok_checker,
    )


def open_proposal_page(page) -> None:
    """From the home page: Selection → Records → Propose a URL."""
    with page.expect_navigation():
        page.locator("#main-nav a[data-area='selection']").click()
    with page.expect_navigation():
        page.get_by_role("link", name="Records", exact=True).click()
    assert path_of(page.url) == "/selection/records/"
    with page.expect_navigation():
        page.get_by_role("link", name="Propose a URL").click()
    assert path_of(page.url) == "/selection/records/propose/"
    expect(page.get_by_role("heading", level=1)).to_have_text("Propose a URL")


def check_url_in_form(page, collection: str, url: str) -> None:
    """Stage 1: choose the collection, type the URL, click "Check"."""
    page.locator("#id_entry-collection").select_option(label=collection)
    page.locator("#id_entry-url").fill(url)
    with page.expect_navigation():
        page.get_by_role("button", name="Check", exact=True).click()


def field_value(page, label: str):
    """The <dd> after the <dt> ``label`` of a record page."""
    return page.locator("dl dt", has_text=re.compile(rf"^{re.escape(label)}$")).locator(
        "xpath=following-sibling::dd[1]"
    )


def log_in_as_librarian(page) -> None:
    page.goto("/login/")
    log_in(page, "librarian", demo_password("librarian"))
    assert path_of(page.url) == "/"


def test_librarian_proposes_a_redirecting_url_and_exports_it(
    page, live_server, testsite, selection_site, requested_urls, tmp_path
):
    librarian = get_user_model().objects.get(username="librarian")
    # On the host of the test site, in another collection, the curator's: "similar", not "the same".
    similar = existing_record(
        username="curator", collection=ELECTIONS, url=testsite.url("/"), theme="Candidates"
    )
    assert similar.host == "127.0.0.1"
    start, middle, final = testsite.url("/redirect/2"), testsite.url("/redirect/1"), testsite.url("/ok")

    log_in_as_librarian(page)
    open_proposal_page(page)
    check_url_in_form(page, NEWS, start)

    # The check followed the redirects: every hop with its status, and an offer to use the final URL.
    check = page.locator("#check-result")
    expect(check).to_contain_text(f"It redirects to {final}, which answers 200 OK (2 redirects).")
    expect(check).to_have_class(re.compile(r"\balert-warning\b"))
    hops = page.locator("#check-hops li")
    expect(hops).to_have_count(3)
    expect(hops.nth(0)).to_contain_text(f"{start} — 301 → {middle}")
    expect(hops.nth(1)).to_contain_text(f"{middle} — 301 → {final}")
    expect(hops.nth(2)).to_contain_text(f"{final} — 200")
    expect(page.locator("#id_record-url")).to_have_value(start)
    use_final = page.get_by_role("button", name=f"Use the final URL instead: {final}")
    expect(use_final).to_be_visible()

    with page.expect_navigation():
        use_final.click()
    expect(check).to_contain_text("URL check: The server answered 200 OK.")
    expect(check).to_have_class(re.compile(r"\balert-success\b"))
    expect(page.locator("#check-hops li")).to_have_count(1)
    expect(page.locator("#check-hops li")).to_contain_text(f"{final} — 200")
    expect(page.locator("#use-final-url")).to_have_count(0)
    expect(page.locator("#id_entry-url")).to_have_value(final)
    expect(page.locator("#id_record-url")).to_have_value(final)
    expect(page.get_by_role("heading", name=f"2. Describe the record in “{NEWS}”")).to_be_visible()

    # The same host already has a record, in another collection: a warning, not a refusal.
    duplicates = page.locator("#duplicates")
    expect(duplicates).to_have_class(re.compile(r"\balert-warning\b"))
    expect(duplicates.locator("strong")).to_have_text("Similar URLs are already selected.")
    expect(duplicates).to_contain_text("On the same host:")
    expect(duplicates).not_to_contain_text("The same URL:")
    link = duplicates.get_by_role("link", name=similar.url, exact=True)
    expect(link).to_have_attribute("href", f"/selection/records/{similar.pk}/")
    # (The demo's own record of the test website, on the same host, is listed too.)
    expect(duplicates.locator("li").filter(has_text=similar.url)).to_have_text(
        [f"{similar.url} — {ELECTIONS}"]
    )
    page.screenshot(path=STAGE2_SCREENSHOT, full_page=True)

    # Stage 2: the collection's defaults are filled in, the librarian is the responsible.
    form = page.locator("#record-form")
    expect(form.locator("#id_record-responsible")).to_have_value(str(librarian.pk))
    expect(form.locator("#id_record-budget")).to_have_value("small")
    expect(form.locator("#id_record-frequency")).to_have_value("annual")
    expect(form.locator("#id_record-depth")).to_have_value("host")
    daily = form.locator("#id_record-frequency option[value='daily']")
    expect(daily).to_be_enabled()
    form.locator("#id_record-theme").select_option(label="National news")
    form.locator("#id_record-keywords").fill("elections; test")
    form.locator("#id_record-content_notes").fill("The test website's page that answers 200.")
    # A large budget cannot be harvested daily: the page greys "Daily" out at once.
    form.locator("#id_record-budget").select_option("large")
    expect(daily).to_be_disabled()
    expect(daily).to_have_class(re.compile(r"\btext-body-tertiary\b"))
    expect(form.locator("#id_record-frequency option[value='weekly']")).to_be_enabled()
    expect(form.locator("#compatibility-note")).to_contain_text("Large + Daily + any")
    expect(form.locator("#id_record-frequency")).not_to_have_class(re.compile(r"\bis-invalid\b"))
    with page.expect_navigation():
        form.get_by_role("button", name="Save the record").click()

    record = Record.objects.get(collection__name=NEWS, url=final)
    assert path_of(page.url) == f"/selection/records/{record.pk}/"
    expect(page.get_by_role("alert").filter(has_text="was saved")).to_contain_text(
        f"The record for {final} was saved."
    )
    expect(page.get_by_role("heading", level=1)).to_have_text(final)
    expect(field_value(page, "Status")).to_have_text("Proposed")
    expect(field_value(page, "URL check")).to_have_text("Answers")
    expect(field_value(page, "Responsible librarian")).to_contain_text("librarian")
    expect(field_value(page, "Budget")).to_have_text("Large")
    expect(field_value(page, "Frequency")).to_have_text("Annual")
    # The history, newest first, starts with the creation; everything in it is the librarian's.
    # (Today the keywords, set after the first save, add a "changed" entry of their own.)
    history = page.locator("#history tbody tr")
    expect(history.last.locator("td").nth(2)).to_have_text("created")
    expect(history.locator("td:nth-child(2)")).to_have_text(["librarian"] * history.count())
    expect(history.locator("td:nth-child(3)", has_text="created")).to_have_count(1)

    assert record.responsible == librarian
    assert record.created_by == librarian
    assert record.status == RecordStatus.PROPOSED
    assert record.check_status == CheckStatus.OK
    assert record.check_result["url"] == final
    assert (record.budget, record.frequency, record.depth) == ("large", "annual", "host")
    assert record.theme.name == "National news"
    assert sorted(k.name for k in record.keywords.all()) == ["elections", "test"]
    assert record.content_notes == "The test website's page that answers 200."

    # Records → "My records": the librarian's records, the new one among them, not the curator's.
    with page.expect_navigation():
        page.locator("#main-nav a[data-area='selection']").click()
    with page.expect_navigation():
        page.get_by_role("link", name="Records", exact=True).click()
    with page.expect_navigation():
        page.get_by_role("link", name="My records").click()
    assert page.url.endswith("/selection/records/?responsible=me")
    mine = restrict(Record.objects.filter(responsible=librarian), librarian, VIEW)
    assert mine.count() >= 2  # the demo's records are the librarian's too
    expect(page.locator("#records tbody tr")).to_have_count(mine.count())
    expect(page.locator("#records tbody a", has_text=final)).to_have_attribute(
        "href", f"/selection/records/{record.pk}/"
    )
    expect(page.locator("#records tbody").get_by_role("link", name=similar.url, exact=True)).to_have_count(0)

    # "Export CSV" exports what the list shows: BOM, the columns, the librarian's records.
    export = page.locator("#export-csv")
    expect(export).to_have_attribute("href", "/selection/records/export/?responsible=me")
    with page.expect_download() as download_info:
        export.click()
    download = download_info.value
    assert download.failure() is None
    assert re.fullmatch(r"records-\d{8}-\d{4}\.csv", download.suggested_filename)
    path = tmp_path / download.suggested_filename
    download.save_as(path)
    content = path.read_bytes()
    assert content.startswith(b"\xef\xbb\xbf"), content[:20]
    text = content.decode("utf-8")[1:]
    table = list(csv.reader(io.StringIO(text, newline="")))
    assert table[0] == list(EXPORT_COLUMNS)
    rows_by_url = {
        row[EXPORT_COLUMNS.index("url")]: dict(zip(EXPORT_COLUMNS, row, strict=True)) for row in table[1:]
    }
    assert set(rows_by_url) == set(mine.values_list("url", flat=True))
    assert similar.url not in rows_by_url
    exported = rows_by_url[final]
    assert exported["id"] == str(record.pk)
    assert exported["collection"] == NEWS
    assert exported["keywords"] == "elections; test"
    assert exported["responsible"] == "librarian"
    assert exported["theme"] == "National news"
    assert (exported["budget"], exported["frequency"], exported["depth"]) == ("large", "annual", "host")
    assert exported["status"] == "proposed"
    assert exported["url_check"] == "ok"
    assert exported["content_notes"] == "The test website's page that answers 200."
    assert exported["created_by"] == "librarian"

    # The browser only ever spoke to the live server: the URL check is the server's.
    assert foreign_requests(requested_urls, live_server.url) == []


def test_librarian_cannot_select_a_broken_url_nor_the_same_url_twice(
    page, live_server, testsite, selection_site
):
    already = existing_record(
        username="librarian", collection=NEWS, url=testsite.url("/ok"), theme="Magazines"
    )
    count = Record.objects.count()

    log_in_as_librarian(page)
    open_proposal_page(page)

    # A URL that answers 404: the check says so, and a librarian gets no form to save it.
    missing = testsite.url("/not-found")
    check_url_in_form(page, NEWS, missing)
    check = page.locator("#check-result")
    expect(check).to_contain_text("URL check: The server answered 404 Not Found.")
    expect(check).to_have_class(re.compile(r"\balert-danger\b"))
    expect(page.locator("#check-hops li")).to_have_text([re.compile(rf"^{re.escape(missing)} — 404")])
    expect(page.locator("main")).to_contain_text(
        "This URL failed its check and cannot be selected. Correct it above, or ask a curator."
    )
    expect(page.locator("#record-form")).to_have_count(0)
    expect(page.locator("#use-final-url")).to_have_count(0)

    # The URL already in this collection: flagged in red, with a link to the record.
    check_url_in_form(page, NEWS, testsite.url("/ok"))
    expect(check).to_contain_text("URL check: The server answered 200 OK.")
    duplicates = page.locator("#duplicates")
    expect(duplicates).to_have_class(re.compile(r"\balert-danger\b"))
    expect(duplicates.locator("strong")).to_have_text("This URL is already in this collection.")
    expect(duplicates).to_contain_text("The same URL:")
    expect(duplicates.locator("li").filter(has_text=already.url)).to_have_text(
        [f"{already.url} — {NEWS} (Proposed)"]
    )

    # Saving it anyway is refused by the server.
    form = page.locator("#record-form")
    form.locator("#id_record-theme").select_option(label="Magazines")
    with page.expect_navigation():
        form.get_by_role("button", name="Save the record").click()
    expect(page.locator("#field-url")).to_contain_text(
        f"This URL is already in this collection (record #{already.pk})."
    )
    assert Record.objects.count() == count

    with page.expect_navigation():
        page.locator("#duplicates").get_by_role("link", name=already.url, exact=True).click()
    assert path_of(page.url) == f"/selection/records/{already.pk}/"
    expect(page.get_by_role("heading", level=1)).to_have_text(already.url)


def test_the_record_list_says_how_many_records_it_shows(page, live_server, selection_site):
    log_in_as_librarian(page)
    page.goto("/selection/records/?responsible=me")
    rows = page.locator("#records tbody tr")
    expect(rows.first).to_be_visible()
    count = rows.count()
    assert count == Record.objects.filter(responsible__username="librarian").count()
    expect(page.locator("#bulk-form p").first).to_have_text(f"{count} records", timeout=1000)
    expect(page.locator("#bulk-form button[value='all']")).to_have_text(
        f"Edit all {count} records found", timeout=1000
    )
    # The bulk edit greys out what cannot be combined, as the single edit does; "—" keeps a value.
    with page.expect_navigation():
        page.locator("#bulk-form button[value='all']").click()
    daily = page.locator("#id_frequency option[value='daily']")
    expect(daily).to_be_enabled()
    page.locator("#id_budget").select_option("large")
    expect(daily).to_be_disabled()
    expect(page.locator("#id_frequency option[value='weekly']")).to_be_enabled()
    page.locator("#id_budget").select_option("")
    expect(daily).to_be_enabled()


def test_librarian_edits_an_export_in_french_excel_and_imports_it_back(
    page, live_server, selection_site, requested_urls, tmp_path
):
    """Export with semicolons, edit as French Excel saves (Windows-1252, ``;``), import: the preview
    says how the file was read and what changes, row by row; the records it names are updated."""
    mine = existing_record(
        username="librarian", collection=NEWS, url="https://excel.example.org/", theme="National news"
    )
    log_in_as_librarian(page)
    page.goto("/selection/records/?responsible=me")
    with page.expect_download() as download_info:
        page.locator("#export-csv-semicolon").click()
    exported = download_info.value
    assert exported.failure() is None
    path = tmp_path / "records.csv"
    exported.save_as(path)
    rows = list(csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig"), newline=""), delimiter=";"))
    header = rows[0]
    assert header[:3] == ["id", "collection", "url"]
    edited_row = next(row for row in rows[1:] if row[header.index("url")] == mine.url)
    edited_row[header.index("content_notes")] = "Révisé à la main"
    edited_row[header.index("budget")] = "medium"
    bad = [""] * len(header)
    bad[header.index("url")] = "https://nouveau.example.org/"
    bad[header.index("theme")] = "Thème inconnu"
    rows.append(bad)
    buffer = io.StringIO(newline="")
    csv.writer(buffer, delimiter=";", lineterminator="\r\n").writerows(rows)
    excel = tmp_path / "records-excel.csv"
    excel.write_bytes(buffer.getvalue().encode("cp1252"))

    page.goto("/selection/records/import/")
    page.locator("#id_collection").select_option(label=NEWS)
    page.locator("#id_file").set_input_files(str(excel))
    with page.expect_navigation():
        page.get_by_role("button", name="Check the file").click()
    expect(page.locator("#import-reading")).to_contain_text("Read as Windows-1252, separator ;.")
    updated = page.locator(f"#import-preview tr[data-line='{rows.index(edited_row) + 1}']")
    expect(updated.locator(".import-action")).to_have_attribute("data-action", "update")
    expect(updated.locator(".import-changes li")).to_have_text(
        ["Budget: Small → Medium", "Content notes: — → Révisé à la main"]
    )
    refused = page.locator(f"#import-preview tr[data-line='{len(rows)}']")
    expect(refused.locator(".import-action")).to_have_attribute("data-action", "refused")
    expect(refused).to_contain_text("“Thème inconnu” is not a theme of the collection")
    expect(page.get_by_role("button", name="Import all or nothing").first).to_be_disabled()
    with page.expect_navigation():
        page.get_by_role("button", name=re.compile(r"^Import the \d+ valid rows?$")).first.click()
    expect(page.locator("#updated-count")).to_have_text("1 record updated.")
    mine.refresh_from_db()
    assert (mine.budget, mine.content_notes) == ("medium", "Révisé à la main")
    assert not Record.objects.filter(url="https://nouveau.example.org/").exists()
    assert foreign_requests(requested_urls, live_server.url) == []
