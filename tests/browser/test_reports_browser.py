"""The manager's two clicks, in a real browser: Reports → Dashboard shows this year's charts with
their numbers, and the CSV of a chart and the year's export download with those numbers."""

import csv
import io
import zipfile

import pytest

from harvest.services.statistics import job_statistics_compute
from tests.browser.test_navigation import foreign_requests, log_in
from tests.factories import PASSWORD, UserFactory
from tests.harvest.statistics_jobs import three_site_job
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


def downloaded_rows(download) -> list[list[str]]:
    with open(download.path(), encoding="utf-8-sig", newline="") as stream:
        return list(csv.reader(io.StringIO(stream.read())))


def test_a_manager_reads_the_dashboard_and_takes_the_numbers_away(page, live_server, requested_urls):
    job, _collection = three_site_job()
    job_statistics_compute(job_id=job.pk)
    UserFactory(username="manager", roles=[Role.MANAGER])

    page.goto("/login/")
    log_in(page, "manager", PASSWORD)
    page.goto("/reports/")
    page.get_by_role("link", name="Dashboard", exact=True).first.click()
    expect(page.locator("h1")).to_contain_text(f"What we collected in {job.ended_at.year}")
    expect(page.locator('[data-figure="urls"]')).to_contain_text("25")

    # Every chart is drawn (an SVG with a real size) and its numbers are one click away.
    charts = page.locator("[data-chart]")
    expect(charts).to_have_count(8)
    for index in range(charts.count()):
        chart = charts.nth(index)
        box = chart.locator("svg.report-chart").bounding_box()
        assert box is not None and box["width"] > 200 and box["height"] > 80, chart.get_attribute(
            "data-chart"
        )
    mime = page.locator("#chart-mime-family")
    expect(mime.locator("svg")).to_contain_text("text")
    mime.get_by_text("Numbers").click()
    expect(mime.locator("table")).to_be_visible()
    expect(mime.locator("tbody tr").first).to_contain_text("20")

    with page.expect_download() as info:
        mime.locator("a.report-csv").click()
    rows = downloaded_rows(info.value)
    assert rows[0] == ["value", "urls", "url_share", "bytes", "domains"]
    assert {row[0]: row[1] for row in rows[1:]} == {"text": "20", "image": "5"}

    with page.expect_download() as info:
        page.locator("#year-export").click()
    download = info.value
    assert download.suggested_filename.endswith(".zip")
    with zipfile.ZipFile(download.path()) as archive:
        [mime_file] = [name for name in archive.namelist() if name.endswith("-mime.csv")]
        text = archive.read(mime_file).decode("utf-8-sig")
    year = list(csv.reader(io.StringIO(text, newline="")))
    assert year[0][:2] == ["value", "urls"]
    assert {row[0]: row[1] for row in year[1:]}["text/html"] == "20"

    assert not foreign_requests(requested_urls, live_server.url)
