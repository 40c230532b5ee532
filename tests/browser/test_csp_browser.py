"""The Content-Security-Policy in a real browser: no page of any role makes chromium refuse anything,
and what the pages' scripts do (htmx, Bootstrap's menus, the forms' JavaScript, charts) still works.

Chromium reports each refusal twice: a ``securitypolicyviolation`` event in the page (listened to by
a script Playwright adds to every page, outside the page's policy) and a console error "Refused to …".
Either one fails the test.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.urls import reverse

from selection.models import CompatibilityRule, Record
from storage.models import StorageNode
from tests.browser.test_navigation import EXPECTED_AREAS, foreign_requests, log_in
from webarchive.management.commands.demo import demo_password

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || document.location.href}:${event.lineNumber}`);
});
"""

# Beyond home and the areas of its navigation bar, the main pages of each role (URL names).
ROLE_PAGES = {
    "librarian": [
        "selection:record_list",
        "selection:record_propose",
        "selection:collection_list",
        "storage:search",
    ],
    "curator": [
        "selection:validation_queue",
        "selection:compatibility",
        "harvest:domain_list",
        "harvest:definition_list",
        "harvest:schedule_list",
        "harvest:job_list",
    ],
    "engineer": [
        "harvest:monitoring",
        "harvest:job_running",
        "harvest:preload_list",
        "storage:node_list",
        "storage:storage_statistics",
        "storage:dedup_list",
    ],
    "manager": ["reports:dashboard", "reports:statistics", "reports:compare"],
    "admin": ["admin:index", "admin:selection_record_changelist", "account", "api-docs"],
}


@pytest.fixture
def demo_data(transactional_db):
    call_command("demo", stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.fixture
def violations(browser_context) -> list[str]:
    """Every CSP refusal the browser reports, on any page of the test."""
    found: list[str] = []
    browser_context.add_init_script(REPORT_VIOLATIONS)

    def on_console(message):
        text = message.text
        if "Content Security Policy" in text or text.startswith(("Refused to", "CSP violation")):
            found.append(f"{message.page.url if message.page else '?'}: {text}")

    browser_context.on("console", on_console)
    return found


def visit(page, path: str) -> None:
    response = page.goto(path)
    assert response is not None and response.ok, f"{path}: HTTP {response.status if response else '—'}"
    assert response.headers.get("content-security-policy"), f"{path}: no Content-Security-Policy"
    page.wait_for_load_state("networkidle")


@pytest.mark.parametrize(
    "username",
    list(EXPECTED_AREAS),
)
def test_no_page_of_a_role_breaks_the_policy(
    page, live_server, demo_data, violations, requested_urls, username
):
    page.goto("/login/")
    log_in(page, username, demo_password(username))
    assert page.url.endswith("/"), page.url
    areas = page.locator("#main-nav a[data-area]").evaluate_all("links => links.map(a => a.pathname)")
    for path in ["/", *areas, *(reverse(name) for name in ROLE_PAGES[username])]:
        visit(page, path)
        if path.startswith(("/admin/", "/api/")):
            continue
        # Bootstrap's and htmx's scripts ran; htmx injected no <style> (its indicator rules are ours).
        assert page.evaluate("() => typeof window.bootstrap === 'object' && typeof window.htmx === 'object'")
        assert page.evaluate("() => document.querySelectorAll('style, [style]').length") == 0, path
    assert violations == []
    assert foreign_requests(requested_urls, live_server.url) == []


def test_the_pages_scripts_work_under_the_policy(page, live_server, demo_data, violations):
    """A Bootstrap menu, a form's JavaScript, a confirmation, an htmx request and swap, the API docs."""
    # The curator: the area menu (Bootstrap), the record form greying out what cannot be combined.
    page.goto("/login/")
    log_in(page, "curator", demo_password("curator"))
    page.get_by_role("button", name="Selection menu").click()
    expect(page.locator("#main-nav .dropdown-menu.show")).to_be_visible()
    # The migrations' rule (a flush by an earlier browser test may have removed it).
    CompatibilityRule.objects.get_or_create(budget="large", frequency="daily", depth="")
    record = Record.objects.order_by("pk").first()
    visit(page, reverse("selection:record_edit", kwargs={"pk": record.pk}))
    form = page.locator("#record-form")
    form.locator("select[name$='frequency']").select_option("weekly")
    form.locator("select[name$='budget']").select_option("large")
    expect(form.locator("select[name$='frequency'] option[value='daily']")).to_be_disabled()
    page.goto("/")
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()

    # The engineer: a form that asks first (data-confirm, no onsubmit=""), and htmx's polling request.
    log_in(page, "engineer", demo_password("engineer"))
    node = StorageNode.objects.order_by("pk").first()
    visit(page, reverse("storage:node_detail", kwargs={"pk": node.pk}))
    questions: list[str] = []
    page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.dismiss()))
    page.locator("#node-drain").click()
    expect(page.locator("#node-drain")).to_be_visible()
    assert questions and questions[0].startswith(f"Drain {node.name}?")
    node.refresh_from_db()
    assert node.state == StorageNode.State.ONLINE  # dismissed: nothing sent

    visit(page, reverse("harvest:monitoring"))
    with page.expect_response(
        lambda response: (
            "/harvest/monitoring/" in response.url and response.request.headers.get("hx-request") == "true"
        )
    ) as polled:
        page.evaluate(
            "() => htmx.ajax('GET', '/harvest/monitoring/', {target: '#monitoring-live', swap: 'outerHTML'})"
        )
    assert polled.value.ok
    expect(page.locator("#monitoring-live")).to_be_visible()
    page.goto("/")
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()

    # The administrator: the Swagger UI draws the API (its script is a file; its styles may be inline).
    log_in(page, "admin", demo_password("admin"))
    visit(page, reverse("api-docs"))
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Web archive API")
    expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    assert violations == []


def test_a_violation_is_seen(page, live_server, demo_data, violations):
    """The check itself works: an inline script added to a page is refused, and reported."""
    page.goto("/login/")
    page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.ran = 1";
                   document.body.appendChild(s); }"""
    )
    page.wait_for_timeout(200)
    assert page.evaluate("() => window.ran") is None
    assert any(re.search(r"script-src", violation) for violation in violations), violations
