"""Browser tests: Debian's chromium driven by Playwright against pytest-django's live server.

Playwright cannot download its own browsers here, so the tests launch the
system chromium; without it (or without the ``playwright`` package) they skip,
or fail under CI (tests.components). The browser never needs the network: the
flags below keep chromium from calling home, and the tests check that every
request the pages make goes to the live server.

Playwright's sync API keeps an asyncio loop running in the main thread for as
long as it is started, and Django refuses ORM calls from a thread with a
running loop unless ``DJANGO_ALLOW_ASYNC_UNSAFE`` is set. Playwright is
therefore started once per *package* (all of tests/browser share one browser,
stopped after the last of them) rather than once per session: kept for the
whole session, its loop would stay "running" during every test collected after
tests/browser, whose ORM calls would then need the variable too, turning off
Django's async-safety check for the rest of the suite. The variable is set only
while Playwright runs.
"""

import os
import re
from pathlib import Path

import pytest

from harvest.crawler.browser import QUIET_SWITCHES, chromium_executable
from tests.components import require_component

CHROMIUM_ARGS = ["--no-sandbox", *QUIET_SWITCHES]
TIMEOUT_MS = 10_000  # a page of this app loads in well under a second; fail fast


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item, so that fixtures can tell a failed test."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="package")
def playwright_browser():
    """One headless chromium for all the browser tests."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        require_component("chromium", False, f"the playwright package cannot be imported ({error})")
    executable = chromium_executable()
    require_component("chromium", executable is not None, "no /usr/bin/chromium nor chromium on PATH")

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def results_dir(request) -> Path:
    """test-results/ at the project root (gitignored): screenshots of the browser tests."""
    path = request.config.rootpath / "test-results"
    path.mkdir(exist_ok=True)
    return path


def screenshot_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid.split("::", 1)[-1]).strip("_") + ".png"


@pytest.fixture
def browser_context(playwright_browser, live_server, transactional_db):
    """A fresh context (no cookies, no session) whose relative URLs go to the live server."""
    context = playwright_browser.new_context(base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    context.set_default_navigation_timeout(TIMEOUT_MS)
    yield context
    context.close()


@pytest.fixture
def requested_urls(browser_context) -> list[str]:
    """Every URL the browser requests during the test (pages, CSS, JS, images, XHR)."""
    urls: list[str] = []
    browser_context.on("request", lambda request: urls.append(request.url))
    return urls


@pytest.fixture
def page(request, browser_context, requested_urls, results_dir):
    """A page in a fresh context; on failure its screenshot goes to test-results/."""
    page = browser_context.new_page()
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed and not page.is_closed():
        path = results_dir / screenshot_name(request.node.nodeid)
        try:
            page.screenshot(path=str(path), full_page=True)
        except Exception as error:  # a screenshot must not hide the test's own failure
            print(f"screenshot of the failed test not saved: {error}")
        else:
            print(f"screenshot of the failed test: {path}")
