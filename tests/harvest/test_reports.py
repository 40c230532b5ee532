"""The Reports area: dashboard, statistics tables and their CSV, comparisons, the year's export, the API."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from selectolax.parser import HTMLParser

from harvest import charts as report_charts
from harvest.choices import HarvestKind
from harvest.models import DomainConfiguration, Job, JobStatistics
from harvest.reports import TABLE_CHOICES
from harvest.services.planning import definition_save
from harvest.services.preload import SourceSpec, preload_create, preload_run
from harvest.services.statistics import job_statistics_compute
from tests.factories import CollectionFactory
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.statistics_jobs import end_site, three_site_job
from webarchive.permissions import Role

REPORT_ROLES = [Role.MANAGER, Role.CURATOR, Role.ENGINEER]


@pytest.fixture
def two_years(db):
    """This year's job (alpha.fr, beta.fr, gamma.co.uk) and last year's (delta.fr, epsilon.fr, zeta.org)."""
    now, collection = three_site_job()
    then, _ = three_site_job(names=("delta.fr", "epsilon.fr", "zeta.org"))
    Job.objects.filter(pk=then.pk).update(ended_at=now.ended_at - timedelta(days=366))
    then.refresh_from_db()
    for job in (now, then):
        job_statistics_compute(job_id=job.pk)
    return now, then, collection


def read_csv(response) -> list[list[str]]:
    text = b"".join(response.streaming_content).decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text)))


def screen_table(response, name: str) -> list[list[str]]:
    """The header and the raw values (data-value) of a report table on a page."""
    table = HTMLParser(response.content.decode()).css_first(f"#table-{name}")
    assert table is not None, f"no table {name} on the page"
    header = [cell.attributes["data-column"] for cell in table.css("thead th")]
    rows = [[cell.attributes["data-value"] for cell in row.css("th, td")] for row in table.css("tbody tr")]
    return [header, *(row for row in rows if len(row) == len(header))]


PAGES = [
    reverse("reports:dashboard"),
    reverse("reports:statistics"),
    reverse("reports:compare"),
    reverse("reports:statistics") + "?table=mime&export=csv",
    reverse("reports:year_export", kwargs={"year": 2026}),
    reverse("api:jobstatistics-list"),
    reverse("api:jobstatistics-totals"),
    reverse("api:jobstatistics-table") + "?table=tld",
]


@pytest.mark.django_db
@pytest.mark.parametrize("url", PAGES)
def test_reports_are_for_managers_curators_and_engineers(client, as_role, url):
    anonymous = client.get(url)
    assert anonymous.status_code in (302, 401, 403)
    if anonymous.status_code == 302:
        assert reverse("login") in anonymous["Location"]
    assert as_role(Role.LIBRARIAN).get(url).status_code == 403
    for role in REPORT_ROLES:
        assert as_role(role).get(url).status_code == 200, role


@pytest.mark.parametrize(
    "table",
    [
        *("by-year", "by-definition", "by-job", "by-kind", "by-collection"),
        *("mime", "mime-family", "status", "tld", "size-class", "stop-reason", "seed-source"),
        *("top-domains-urls", "top-domains-bytes"),
    ],
)
def test_the_csv_is_the_table_on_screen(two_years, as_role, table):
    client = as_role(Role.MANAGER)
    url = reverse("reports:statistics")
    page = client.get(url, {"table": table})
    exported = client.get(url, {"table": table, "export": "csv"})
    assert exported["Content-Type"].startswith("text/csv")
    rows = read_csv(exported)
    assert len(rows) > 1 and rows == screen_table(page, table)


def test_the_numbers_of_the_tables(two_years, as_role):
    now, _then, collection = two_years
    client = as_role(Role.MANAGER)
    url = reverse("reports:statistics")

    def table(**query):
        rows = read_csv(client.get(url, {**query, "export": "csv"}))
        return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]

    years = table(table="by-year")
    assert [(row["group"], row["urls"], row["domains"], row["jobs"]) for row in years] == [
        (str(now.ended_at.year - 1), "25", "2", "1"),
        (str(now.ended_at.year), "25", "2", "1"),
    ]
    both = {row["value"]: row for row in table(table="tld")}
    assert (both["fr"]["urls"], both["fr"]["domains"]) == ("50", "4")
    assert both["uk"]["urls"] == both["org"]["urls"] == "0"
    totals = client.get(reverse("api:jobstatistics-totals")).json()
    assert (totals["urls"], totals["domains"], totals["jobs"]) == (50, 4, 2)
    top = table(table="top-domains-urls")
    assert [row["domain"] for row in top] == ["beta.fr", "epsilon.fr", "alpha.fr", "delta.fr"]
    assert top[2]["urls"] == "5" and top[2]["jobs"] == "1"

    this_year = table(table="mime", year=now.ended_at.year)
    assert {row["value"]: row["urls"] for row in this_year} == {"text/html": "20", "image/png": "5"}
    share = {row["value"]: row["url_share"] for row in this_year}
    assert share == {"text/html": "0.8000", "image/png": "0.2000"}
    # A collection's share: only its sites (the first two of each job).
    mine = table(table="tld", collection=collection.pk)
    assert {row["value"]: row["urls"] for row in mine} == {"fr": "25"}
    shares = table(table="by-collection")
    assert len(shares) == 2 and (collection.name, "25") in [(row["group"], row["urls"]) for row in shares]
    assert table(table="by-year", kind="snapshot") == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"year": "soon"}, "Year"),
        ({"ended_after": "2026-13-45"}, "Ended from"),
        ({"harvest_definition": "999999"}, "Harvest definition"),
        ({"kind": "deep"}, "Kind of crawl"),
    ],
)
def test_bad_filters_are_refused_with_their_field_and_nothing_is_exported(two_years, as_role, query, message):
    client = as_role(Role.MANAGER)
    url = reverse("reports:statistics")
    page = client.get(url, {"table": "mime", **query})
    assert page.status_code == 200
    errors = HTMLParser(page.content.decode()).css_first("#filter-errors")
    assert errors is not None and message in errors.text()
    assert HTMLParser(page.content.decode()).css_first("#table-mime") is None
    exported = client.get(url, {"table": "mime", "export": "csv", **query})
    assert exported.status_code == 400 and message in exported.content.decode()
    assert client.get(url, {"table": "nonsense", "export": "csv"}).status_code == 400
    api = client.get(reverse("api:jobstatistics-table"), {"table": "mime", **query})
    assert api.status_code == 400


def test_the_dashboard_shows_the_year_against_the_last_with_charts(two_years, as_role):
    now, then, _ = two_years
    page = as_role(Role.MANAGER).get(reverse("reports:dashboard"), {"year": now.ended_at.year})
    html = HTMLParser(page.content.decode())
    figures = {node.attributes["data-figure"]: node for node in html.css("[data-figure]")}
    assert figures["urls"].attributes["data-value"] == "25"
    assert figures["bytes"].attributes["data-value"] == "4500"
    assert "+0 %" in figures["urls"].text()
    charts = html.css("[data-chart]")
    assert len(charts) == 8
    for chart in charts:
        svg = chart.css_first("svg.report-chart")
        assert svg is not None and svg.attributes["aria-label"], chart.attributes["data-chart"]
        assert chart.css_first("table.report-table") is not None
        assert chart.css_first("a.report-csv").attributes["href"].endswith("export=csv")
    assert html.css_first("#chart-trend-years svg") is not None
    # The year before the first has nothing to compare with.
    earlier = as_role(Role.MANAGER).get(reverse("reports:dashboard"), {"year": then.ended_at.year})
    assert "nothing the year before" in earlier.content.decode()


def test_a_year_without_statistics_says_so(db, as_role):
    page = as_role(Role.MANAGER).get(reverse("reports:dashboard"))
    assert page.status_code == 200
    assert "No statistics for this year yet." in page.content.decode()


def test_the_year_export_holds_every_table_of_the_year(two_years, as_role):
    now, _, collection = two_years
    year = now.ended_at.year
    response = as_role(Role.MANAGER).get(reverse("reports:year_export", kwargs={"year": year}))
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == f'attachment; filename="statistics-{year}.zip"'
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    files = {
        name.removeprefix(f"statistics-{year}-").removesuffix(".csv"): name for name in archive.namelist()
    }
    assert {"mime", "status", "tld", "size-class", "seed-source", "by-kind", "by-collection"} <= set(files)

    def table(name):
        text = archive.read(files[name]).decode("utf-8")
        assert text.startswith("\ufeff")  # Excel reads it as UTF-8
        return list(csv.reader(io.StringIO(text[1:], newline="")))

    mime = table("mime")  # one table per file, with its own columns: no sparse columns of the others
    assert mime[0][:2] == ["value", "urls"]
    assert {row[0]: row[1] for row in mime[1:]} == {"text/html": "20", "image/png": "5"}
    by_collection = table("by-collection")
    assert by_collection[0][:3] == ["group", "jobs", "urls"]
    assert [row[0] for row in by_collection[1:]] == [collection.name]


def test_two_runs_side_by_side_and_the_form_refuses_half_a_comparison(db, as_role):
    first, _ = three_site_job()
    job_statistics_compute(job_id=first.pk)
    definition = first.harvest_definition
    client = as_role(Role.CURATOR)
    page = client.get(
        reverse("reports:compare"), {"harvest_definition": definition.pk, "run_a": 1, "run_b": 2}
    )
    html = HTMLParser(page.content.decode())
    # Run 2 does not exist: said so, and nothing is compared (no "new" values against nothing).
    assert html.css_first("#compare-runs-missing").text().strip() == (
        f"{definition} has no run 2.Nothing is compared."
    )
    assert html.css_first("#compare-run-totals") is None
    same = client.get(
        reverse("reports:compare"), {"harvest_definition": definition.pk, "run_a": 1, "run_b": 1}
    )
    totals = HTMLParser(same.content.decode()).css_first("#compare-run-totals")
    assert [cell.attributes["data-value"] for cell in totals.css("tbody tr")[0].css("td")] == ["25", "25"]

    half = client.get(reverse("reports:compare"), {"run_a": 1})
    assert "Choose the harvest definition whose runs to compare." in half.content.decode()
    assert "Give both runs." in half.content.decode()
    assert HTMLParser(half.content.decode()).css_first("#compare-run-totals") is None


def test_the_api_lists_statistics_with_their_lines_and_tables(two_years, as_role):
    now, _, collection = two_years
    client = as_role(Role.ENGINEER)
    listing = client.get(reverse("api:jobstatistics-list"), {"year": now.ended_at.year}).json()
    assert [row["job"] for row in listing["results"]] == [now.pk]
    lines = {(line["dimension"], line["key"]): line["urls"] for line in listing["results"][0]["lines"]}
    assert lines[("mime", "text/html")] == 20
    shares = client.get(reverse("api:jobstatistics-list"), {"collection": collection.pk}).json()
    assert {row["collection"] for row in shares["results"]} == {collection.pk}
    table = client.get(reverse("api:jobstatistics-table"), {"table": "tld"}).json()
    assert table["columns"] == ["value", "urls", "url_share", "bytes", "domains"]
    csv_rows = read_csv(client.get(reverse("reports:statistics"), {"table": "tld", "export": "csv"}))
    assert [[str(row[column]) for column in table["columns"]] for row in table["rows"]] == csv_rows[1:]
    refused = client.get(reverse("api:jobstatistics-table"), {"table": "nonsense"})
    assert refused.status_code == 400 and "Choose one of" in refused.content.decode()
    assert client.post(reverse("api:jobstatistics-list"), {}).status_code == 405


def test_statistics_are_sent_for_computing_when_a_job_ends(
    db, django_capture_on_commit_callbacks, monkeypatch
):
    sent = []
    monkeypatch.setattr("harvest.tasks.compute_statistics.delay", sent.append)
    with django_capture_on_commit_callbacks(execute=True):
        job, _ = three_site_job()
    assert sent == [job.pk]
    assert not JobStatistics.objects.filter(job=job).exists()  # the worker computes them
    assert timezone.now() - job.ended_at < timedelta(minutes=5)


# Hostile crawled text and names --------------------------------------------------------------------------

MATH_MIME = "$\\foo$/html"  # matplotlib's mathtext would parse it (and fail: an unknown symbol)
MARKUP_MIME = "<script>alert(1)</script>/html"
FORMULA_MIME = "=cmd|' /C calc'!A0"  # as crawled; the statistics keep MIME types in lower case
FORMULA_NAME = '=HYPERLINK("http://x","y")'
FORMULA_COLLECTION = "@SUM(1+1)"
FORMULA_START = re.compile(r"^[=+\-@\t\r]")


@pytest.fixture
def hostile_job(db):
    """A definition and a collection named like formulas; MIME types like mathtext, markup, formulas."""
    job = job_for_sites([("hostile.fr", "http://hostile.fr/")])
    definition_save(definition=job.harvest_definition, name=FORMULA_NAME)
    collection = CollectionFactory(name=FORMULA_COLLECTION)
    DomainConfiguration.objects.filter(domain__name="hostile.fr").update(source_collection=collection)
    mimes = {MATH_MIME: [3, 300], MARKUP_MIME: [4, 400], FORMULA_MIME: [2, 200], "text/html": [1, 100]}
    end_site(job, "hostile.fr", urls=10, size=1000, mimes=mimes)
    job_statistics_compute(job_id=job.pk)
    job.refresh_from_db()
    return job


def test_crawled_text_is_drawn_as_plain_text_in_the_dashboard_charts(hostile_job, as_role):
    client = as_role(Role.MANAGER)
    page = client.get(reverse("reports:dashboard"), {"year": hostile_job.ended_at.year})
    assert page.status_code == 200
    html = HTMLParser(page.content.decode())
    charts = html.css("[data-chart]")
    assert len(charts) == 8 and all(chart.css_first("svg.report-chart") for chart in charts)
    mime_family = html.css_first("#chart-mime-family svg.report-chart")
    shown = [text.text() for text in mime_family.css("text")]
    assert "$\\foo$" in shown  # literally, dollars and backslash
    assert "<script>alert(1)<" in shown  # the family: what comes before the first "/"
    # The markup of crawled text is escaped in the SVG: no element comes out of it.
    assert html.css("svg script") == [] and html.css("svg [onload]") == []
    assert "&lt;script&gt;alert(1)&lt;" in mime_family.html
    for table in ("mime", "mime-family"):
        listed = client.get(reverse("reports:statistics"), {"table": table})
        assert listed.status_code == 200 and "$\\foo$" in listed.content.decode()
    compare = client.get(reverse("reports:compare"), {"dimension": "mime"})
    assert compare.status_code == 200 and "$\\foo$/html" in compare.content.decode()


@pytest.mark.parametrize("kind", ["bar", "pie", "line"])
def test_every_kind_of_chart_draws_its_text_as_plain_text(kind):
    labels = ["$\\foo$", "<script>x</script>", "a & b", "$x^2$"]
    values = [4, 3, 2, 1]
    if kind == "line":
        svg = report_charts.line_chart(
            labels, {"$\\sum$ <b>": values, "other $": values}, title="$\\alpha$ <i>", unit="B"
        )
    else:
        draw = report_charts.bar_chart if kind == "bar" else report_charts.pie_chart
        svg = draw(labels, values, title="$\\alpha$ <i>")
    texts = [node.text() for node in HTMLParser(svg).css("text")]
    for label in [*labels, "$\\alpha$ <i>"]:
        assert label in texts, (label, texts)
    if kind == "line":
        assert {"$\\sum$ <b>", "other $"} <= set(texts)  # the legend
    assert "<script" not in svg and "<b>" not in svg and "<i>" not in svg
    assert "&lt;script&gt;x&lt;/script&gt;" in svg and "a &amp; b" in svg


@pytest.mark.parametrize("kind", ["bar", "pie", "line"])
def test_charts_carry_no_css_the_pages_policy_would_refuse(kind):
    """style-src 'self': a <style> element or a style="" attribute in an inline chart is not applied."""
    values = [3, 2, 1]
    if kind == "line":
        svg = report_charts.line_chart(["2024", "2025", "2026"], {"URLs": values}, title="Trend")
    else:
        draw = report_charts.bar_chart if kind == "bar" else report_charts.pie_chart
        svg = draw(['a style="fill: red"', "b", "c"], values, title="Shares")
    chart = HTMLParser(svg)
    assert chart.css("style") == [] and chart.css("[style]") == []
    root = chart.css_first("svg.report-chart")
    assert root.attributes["stroke-linejoin"] == "round"  # matplotlib's rule for every element
    colours = {node.attributes.get("fill") for node in chart.css("path")} | {
        node.attributes.get("stroke") for node in chart.css("path")
    }
    assert report_charts.COLOURS[0].lower() in colours  # the data drawn in the first colour
    assert any(node.attributes.get("font-size") for node in chart.css("text"))
    if kind != "line":
        assert 'a style="fill: red"' in [node.text() for node in chart.css("text")]  # text stays text


def exported_tables(client, year: int) -> dict[str, list[list[str]]]:
    url = reverse("reports:statistics")
    tables = {
        name: read_csv(client.get(url, {"table": name, "year": year, "export": "csv"}))
        for name, _title in TABLE_CHOICES
    }
    archive = zipfile.ZipFile(
        io.BytesIO(client.get(reverse("reports:year_export", kwargs={"year": year})).content)
    )
    for member in archive.namelist():
        name = member.removeprefix(f"statistics-{year}-").removesuffix(".csv")
        text = archive.read(member).decode("utf-8").removeprefix("\ufeff")
        tables[f"year:{name}"] = list(csv.reader(io.StringIO(text, newline="")))
    return tables


def assert_nothing_a_spreadsheet_would_run(rows: list[list[str]]):
    for row in rows:
        for cell in row:
            assert not FORMULA_START.match(cell), (cell, row)


def test_every_reports_csv_export_escapes_formulas_and_keeps_numbers(hostile_job, as_role):
    tables = exported_tables(as_role(Role.MANAGER), hostile_job.ended_at.year)
    for name, rows in tables.items():
        assert len(rows) > 1, name
        assert_nothing_a_spreadsheet_would_run(rows)
    escaped_name, escaped_mime = f"'{FORMULA_NAME}", f"'{FORMULA_MIME.lower()}"
    assert [row[0] for row in tables["by-definition"][1:]] == [escaped_name]
    assert [row[0] for row in tables["by-run"][1:]] == [f"{escaped_name} #1"]
    assert [row[0] for row in tables["by-collection"][1:]] == [f"'{FORMULA_COLLECTION}"]
    mime = {row[0]: row for row in tables["mime"][1:]}
    assert set(mime) == {escaped_mime, MATH_MIME, MARKUP_MIME.lower(), "text/html"}
    assert mime[escaped_mime][1:] == ["2", "0.2000", "200", "1"]  # numbers as they were
    assert "'=cmd|' " in {row[0] for row in tables["mime-family"][1:]}
    # The year's zip: each table as its own download gives it, escaped the same way.
    for name in ("mime", "by-definition", "by-run", "by-collection"):
        assert tables[f"year:{name}"] == tables[name], name


def test_the_statistics_csv_writes_numbers_as_numbers_unquoted(hostile_job, as_role):
    response = as_role(Role.MANAGER).get(
        reverse("reports:statistics"), {"table": "by-definition", "export": "csv"}
    )
    text = b"".join(response.streaming_content).decode("utf-8")
    assert text.startswith("\ufeffgroup,jobs,urls,bytes,")
    assert text.endswith("\r\n")
    # The name is one quoted cell with its apostrophe; the numbers follow bare.
    assert '"\'=HYPERLINK(""http://x"",""y"")",1,10,1000,1000,0,0,1,1,0,0,' in text


def test_the_preload_statistics_csv_escapes_a_source_name_a_spreadsheet_would_run(db, as_role, tmp_path):
    snapshot = definition_save(kind=HarvestKind.SNAPSHOT, name="broad-hostile")
    domains = tmp_path / "list.txt"
    domains.write_text("alpha.fr\nbeta.fr\n")
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("-A1", str(domains))],
        check_dns=False,
        find_redirects=False,
    )
    preload_run(run.pk)
    rows = read_csv(as_role(Role.ENGINEER).get(reverse("harvest:preload_statistics", args=[run.pk])))
    assert ["source", "'-A1", "2", "2", "2", "0"] in rows
    assert_nothing_a_spreadsheet_would_run(rows)


def test_a_pie_sums_its_thin_slices_and_lists_its_labels_beside_it():
    labels = [f"type-{n}" for n in range(12)]
    values = [500, 300, 100, 50, 20, 10, 8, 5, 3, 2, 1, 1]  # the last six are under 3 % each
    svg = report_charts.pie_chart(labels, values, title="Shares", other="other")
    texts = [node.text() for node in HTMLParser(svg).css("text")]
    assert [text for text in texts if text.startswith("type-") or text == "other"] == [
        "type-0",
        "type-1",
        "type-2",
        "type-3",
        "other",
    ]  # one legend line each, in order: labels on thin slices would overlap
    assert "50 %" in texts and "5 %" not in texts  # only the slices large enough say their share
    # Two slices: both shown, no "other".
    svg = report_charts.pie_chart(["a", "b"], [97, 3], title="Two", other="other")
    assert "other" not in [node.text() for node in HTMLParser(svg).css("text")]


def test_figures_are_written_one_way_on_tiles_tables_and_charts_and_in_the_page_s_language():
    from django.template.defaultfilters import filesizeformat
    from django.utils import translation

    from harvest.reports import COUNT, Column, shown

    assert report_charts.human(1_500_000, "B") == filesizeformat(1_500_000)  # the axis as the tiles
    count = Column("urls", "URLs", "urls", COUNT)
    with translation.override("en"):
        assert shown(count, 1234567) == "1,234,567"
    with translation.override("fr"):
        assert shown(count, 1234567).replace("\u202f", " ").replace("\xa0", " ") == "1 234 567"


def test_domains_harvested_is_what_the_size_classes_add_up_to(db, settings):
    """A domain crawled by two jobs of a year is one domain, in the class of all its URLs; a domain
    that yielded nothing is in no class (nor in the tile)."""
    from harvest import selectors_statistics as statistics_of
    from harvest.models import Dimension, JobStatistics

    settings.REPORT_SIZE_CLASSES = [10, 10000]
    first, _ = three_site_job()  # alpha 5 URLs, beta 20, gamma none
    second, _ = three_site_job()  # the same three domains again
    for job in (first, second):
        job_statistics_compute(job_id=job.pk)
    whole = JobStatistics.objects.filter(collection__isnull=True)
    totals = statistics_of.totals(whole)
    classes = statistics_of.distribution(whole, Dimension.SIZE_CLASS)
    assert totals["domains"] == 2 == sum(row["domains"] for row in classes)
    # alpha: 5 + 5 = 10 URLs over the year (< 10 is not it: 10-10,000); beta 40.
    assert [(row["key"], row["domains"], row["urls"]) for row in classes] == [("10-10,000", 2, 50)]
