"""The curator's path through Planning, in a real browser: from validated records to jobs.

Starting from validated records in a collection, a curator creates a schedule
(after the form refuses an incomplete one), a selective harvest definition on
it, maps the collection and its frequency to that definition, runs the
transfer and reads the report, finds the configurations attached on the
definition's page and clicks "Run now". The launcher (the beat task, called
here directly) then makes the jobs, which the curator sees on the same page.

The live server's tests flush the database after each test, which also
empties the rows harvest/migrations/0002_defaults.py wrote (channels,
templates, budget mappings): the fixture writes them again with the
migration's own function.
"""

import re

import pytest
from django.apps import apps

from harvest.choices import JobStatus
from harvest.defaults import planning_defaults_ensure
from harvest.models import HarvestDefinition, Job, Schedule, TransferReport
from harvest.services.launcher import launch_due
from selection.choices import Budget, Depth, Frequency, RecordStatus
from selection.services import records_set_status
from tests.browser.test_navigation import foreign_requests, log_in, path_of
from tests.factories import PASSWORD, CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

COLLECTION = "Elections 2030"
SITES = ["https://www.mairie-lille.fr/", "https://www.mairie-lyon.fr/", "https://www.mairie-paris.fr/"]
CONFIGURATION = "elections-2030_monthly_small_host"
SCHEDULE = "Monthly, 1st at 03:00"
DEFINITION = "Elections 2030, monthly"


@pytest.fixture
def planning_defaults(transactional_db):
    """The channels, templates and budget mappings a fresh installation has (harvest migration 0002)."""
    planning_defaults_ensure(apps)


@pytest.fixture
def validated_records(transactional_db):
    """A curator, and a collection whose records are validated (one is still only proposed)."""
    curator = UserFactory(username="curator", first_name="Claire", last_name="Curator", roles=[Role.CURATOR])
    collection = CollectionFactory(name=COLLECTION)
    settings = {"budget": Budget.SMALL, "frequency": Frequency.MONTHLY, "depth": Depth.HOST}
    records = [RecordFactory(collection=collection, url=url, **settings) for url in SITES]
    RecordFactory(collection=collection, url="https://www.mairie-nice.fr/", **settings)  # proposed
    records_set_status(records=records, user=curator, status=RecordStatus.VALIDATED)
    return collection


def open_planning_page(page, label: str) -> None:
    """Planning (the area link of the navigation bar), then one of its pages."""
    with page.expect_navigation():
        page.locator("#main-nav a[data-area='planning']").click()
    with page.expect_navigation():
        page.locator("main").get_by_role("link", name=label, exact=True).click()


def field(page, name: str):
    """The block of a form field: its input, help and errors (``#field-<name>``)."""
    return page.locator(f"#field-{name}")


def cells(rows) -> list[list[str]]:
    """The text of each cell of some table rows, as the browser renders it."""
    return rows.evaluate_all("rows => rows.map(row => Array.from(row.cells, cell => cell.innerText.trim()))")


def test_curator_goes_from_validated_records_to_jobs(
    page, live_server, planning_defaults, validated_records, requested_urls, results_dir
):
    page.goto("/login/")
    log_in(page, "curator", PASSWORD)
    assert path_of(page.url) == "/"

    # A schedule: monthly, on the 1st at 03:00, from 2030, twelve runs.
    open_planning_page(page, "Schedules")
    assert path_of(page.url) == "/harvest/schedules/"
    with page.expect_navigation():
        page.get_by_role("link", name="New schedule").click()
    page.locator("#id_name").fill(SCHEDULE)
    page.locator("#id_every").fill("1")
    page.locator("#id_unit").select_option(label="months")
    page.locator("#id_at_hour").fill("3")
    page.locator("#id_at_day").fill("1")
    page.locator("#id_start").fill("2030-01-01T00:00")
    page.get_by_label("After a number of runs").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    # The number of runs was forgotten: said at its field, nothing saved.
    expect(field(page, "max_runs").get_by_role("alert")).to_have_text("Give the number of runs.")
    expect(page.locator("#id_max_runs")).to_have_class(re.compile(r"\bis-invalid\b"))
    assert not Schedule.objects.exists()
    expect(page.locator("#id_at_day")).to_have_value("1")  # what was typed is kept
    page.screenshot(path=str(results_dir / "curator-schedule-form.png"), full_page=True)
    page.locator("#id_max_runs").fill("12")
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    schedule = Schedule.objects.get(name=SCHEDULE)
    assert path_of(page.url) == f"/harvest/schedules/{schedule.pk}/"
    expect(page.get_by_role("heading", level=1)).to_have_text(SCHEDULE)
    runs = page.locator("#next-runs li")
    expect(runs).to_have_count(5)
    expect(runs).to_have_text([re.compile(rf"^2030-0{month}-01 03:00 ") for month in range(1, 6)])
    expect(page.locator("#next-runs")).to_contain_text("In the site's time zone (Europe/Paris).")
    page.screenshot(path=str(results_dir / "curator-schedule.png"), full_page=True)

    # A selective harvest definition on that schedule.
    open_planning_page(page, "Harvest definitions")
    with page.expect_navigation():
        page.get_by_role("link", name="New selective harvest").click()
    page.locator("#id_name").fill(DEFINITION)
    page.locator("#id_schedule").select_option(label=SCHEDULE)
    expect(page.locator("#id_channel option:checked")).to_have_text("Selective")  # the default channel
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    definition = HarvestDefinition.objects.get(name=DEFINITION)
    assert path_of(page.url) == f"/harvest/definitions/{definition.pk}/"
    expect(page.get_by_role("alert").filter(has_text="was created")).to_have_text(
        f"The harvest definition “{DEFINITION}” was created."
    )
    expect(page.locator("#next-runs li").first).to_have_text(re.compile(r"^2030-01-01 03:00 "))
    expect(page.locator("#configuration-table tbody")).to_contain_text("No configuration attached.")

    # The collection's monthly records go to that definition.
    open_planning_page(page, "Mappings from selection")
    with page.expect_navigation():
        page.get_by_role("link", name="Map a collection").click()
    page.locator("#id_collection").select_option(label=COLLECTION)
    page.locator("#id_frequency").select_option(label="Monthly")
    page.locator("#id_harvest_definition").select_option(label=DEFINITION)
    with page.expect_navigation():
        page.get_by_role("button", name="Save").click()
    assert path_of(page.url) == "/harvest/mappings/"
    assert cells(page.locator("#collection-mappings tbody tr")) == [
        [COLLECTION, "Monthly", DEFINITION, "withdraw"]
    ]

    # The transfer, and its report: a configuration per site, the proposed record left out.
    open_planning_page(page, "Transfer")
    page.locator("#id_collection").select_option(label=COLLECTION)
    with page.expect_navigation():
        page.get_by_role("button", name="Run the transfer now").click()
    report = TransferReport.objects.get()
    assert path_of(page.url) == f"/harvest/transfer/{report.pk}/"
    expect(page.locator("#counts")).to_contain_text("3 created")
    created = page.locator("#created tbody tr")
    expect(created).to_have_count(3)
    domains = [url.split("www.")[1].rstrip("/") for url in SITES]
    assert cells(created) == [[domain, CONFIGURATION, DEFINITION] for domain in domains]
    expect(page.locator("#domains-created")).to_contain_text(", ".join(domains))
    expect(page.locator("main")).not_to_contain_text("mairie-nice.fr")
    page.screenshot(path=str(results_dir / "curator-transfer-report.png"), full_page=True)

    # The definition's page lists the configurations now attached.
    open_planning_page(page, "Harvest definitions")
    with page.expect_navigation():
        page.locator("#definitions").get_by_role("link", name=DEFINITION).click()
    rows = page.locator("#configuration-table tbody tr")
    expect(rows).to_have_count(3)
    assert cells(rows) == [
        [domain, CONFIGURATION, "selective-host", "10000", "unlimited"] for domain in domains
    ]
    expect(page.locator("#configurations h2")).to_have_text("3 domain configurations")
    expect(page.locator("#runs tbody")).to_contain_text("Not run yet.")

    # "Run now": due at once; the launcher makes the jobs within a minute.
    with page.expect_navigation():
        page.get_by_role("button", name="Run now").click()
    expect(page.get_by_role("alert").filter(has_text="is due now")).to_have_text(
        f"“{DEFINITION}” is due now: the launcher makes its jobs within a minute."
    )
    runs = launch_due()
    assert [run.harvest_definition_id for run in runs] == [definition.pk]
    jobs = list(Job.objects.filter(harvest_definition=definition).order_by("pk"))
    assert jobs
    assert sum(job.domain_count for job in jobs) == 3
    assert {job.status for job in jobs} == {JobStatus.SUBMITTED}

    page.reload()
    run_row = page.locator("#runs tbody tr")
    expect(run_row).to_have_count(1)
    expect(run_row.locator("td").first).to_have_text("#1")
    expect(run_row.locator(".jobs li")).to_have_text(
        [f"{job} — Submitted, {job.domain_count} domains" for job in jobs]
    )
    page.screenshot(path=str(results_dir / "curator-definition-with-jobs.png"), full_page=True)

    assert foreign_requests(requested_urls, live_server.url) == []
