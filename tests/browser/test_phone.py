"""Phone-width screens: the record and job lists stay readable (secondary columns left out, URLs
wrapped), with nothing to scroll sideways, as curators check crawls from anywhere."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection

from harvest.models import HarvestDefinition
from harvest.services.launcher import definition_launch
from harvest.services.planning import definition_run_now
from selection.models import Record
from tests.browser.test_navigation import log_in
from webarchive.management.commands.demo import demo_password

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}  # a common phone, in CSS pixels


@pytest.fixture
def phone(playwright_browser, live_server, transactional_db):
    call_command("demo", stdout=io.StringIO())
    context = playwright_browser.new_context(base_url=live_server.url, viewport=PHONE, is_mobile=True)
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def sideways_overflow(page) -> int:
    """How many CSS pixels the page is wider than the screen (0: nothing to scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def table_overflow(page, selector: str) -> int:
    return page.evaluate(
        "s => { const t = document.querySelector(s); return t.scrollWidth - t.parentElement.clientWidth; }",
        selector,
    )


def test_the_record_and_job_lists_fit_a_phone(phone):
    page = phone
    long_url = "https://a-very-long-host-name-of-a-regional-newspaper.example.org/" + "section/" * 8
    from tests.browser.test_librarian import existing_record

    existing_record(username="curator", collection="News and press", url=long_url, theme="National news")
    # An archive that has crawled for years numbers its jobs in the hundreds of thousands.
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT setval(pg_get_serial_sequence('harvest_job', 'id'), 987654)")
        else:
            cursor.execute("DELETE FROM sqlite_sequence WHERE name = 'harvest_job'")
            cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('harvest_job', 987654)")
    definition = HarvestDefinition.objects.get(name="Test website weekly")
    definition_run_now(definition=definition, user=get_user_model().objects.get(username="curator"))
    definition_launch(definition_id=definition.pk)

    page.goto("/login/")
    log_in(page, "curator", demo_password("curator"))
    page.goto("/selection/records/")
    expect(page.locator("#records tbody tr")).to_have_count(Record.objects.count())
    assert sideways_overflow(page) == 0
    assert table_overflow(page, "#records") <= 0
    expect(page.locator("#records thead th", has_text="Budget")).to_be_hidden()
    expect(page.locator("#records thead th", has_text="Status")).to_be_visible()
    link = page.locator("#records tbody a", has_text="a-very-long-host-name")
    expect(link).to_be_visible()
    assert link.bounding_box()["width"] <= PHONE["width"]  # the URL wraps

    page.goto("/harvest/jobs/")
    expect(page.locator("#jobs tbody tr").first).to_be_visible()
    assert sideways_overflow(page) == 0
    assert table_overflow(page, "#jobs") <= 0
    expect(page.locator("#jobs thead th", has_text="Expected objects")).to_be_hidden()
    expect(page.locator("#jobs thead th", has_text="Status")).to_be_visible()

    # A tablet's width shows every column again.
    page.set_viewport_size({"width": 1024, "height": 768})
    page.reload()
    expect(page.locator("#jobs thead th", has_text="Expected objects")).to_be_visible()
