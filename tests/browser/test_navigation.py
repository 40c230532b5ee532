"""Each demo role, in a real browser: login, the navigation bar its roles allow, an area, 403, logout.

The expected areas are written out per role here *and* computed from
webarchive.permissions, so that a change to the rule table (AREA_ROLES) that
nobody meant shows up as a failing test rather than as a new navigation bar.
"""

import io
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from webarchive.management.commands.demo import DEMO_USERS, demo_password
from webarchive.permissions import Area, areas_for

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser

# The navigation bar of each demo user, as people read it.
EXPECTED_AREAS = {
    "librarian": ["Selection", "Access"],
    "curator": ["Selection", "Planning", "Reports", "Access"],
    "engineer": ["Selection", "Planning", "Operations", "Reports", "Access"],
    "manager": ["Selection", "Reports", "Access"],
    "admin": ["Selection", "Planning", "Operations", "Reports", "Access", "Admin"],
}

# The area link each role follows, and the heading of the page it opens.
CLICKED_AREA = {
    "librarian": (Area.SELECTION, "Selection"),
    "curator": (Area.PLANNING, "Planning"),
    "engineer": (Area.OPERATIONS, "Operations"),
    "manager": (Area.REPORTS, "Reports"),
    "admin": (Area.ADMIN, "Site administration"),
}

FULL_NAMES = {username: f"{first} {last}" for username, _roles, _su, first, last in DEMO_USERS}

LOGIN_PATH = "/login/"


@pytest.fixture
def demo_data(transactional_db):
    """The demo users (one per role, and the administrator) with their demo passwords."""
    output = io.StringIO()
    call_command("demo", stdout=output)
    assert "librarian-demo" in output.getvalue()  # the command prints the logins


def path_of(url: str) -> str:
    return urlsplit(url).path


def foreign_requests(urls: list[str], live_server_url: str) -> list[str]:
    """The requested URLs that do not go to the live server (data:, blob:, about: stay in the page)."""
    server = urlsplit(live_server_url)
    foreign = []
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            continue
        if (parts.scheme, parts.netloc) != (server.scheme, server.netloc):
            foreign.append(url)
    return foreign


def assert_on_login_page(page) -> None:
    assert path_of(page.url) == LOGIN_PATH, f"expected the login page, got {page.url}"
    expect(page.get_by_role("heading", level=1, name="Log in")).to_be_visible()
    expect(page.locator("input[name=username]")).to_be_visible()
    expect(page.locator("input[name=password]")).to_be_visible()
    expect(page.locator("#main-nav")).to_have_count(0)


def log_in(page, username: str, password: str) -> None:
    page.locator("input[name=username]").fill(username)
    page.locator("input[name=password]").fill(password)
    with page.expect_navigation():
        page.get_by_role("button", name="Log in").click()


def nav_links(page) -> list[tuple[str, str]]:
    """(data-area, visible label) of each link of the navigation bar, in order."""
    links = page.locator("#main-nav a[data-area]").evaluate_all(
        "links => links.map(a => [a.dataset.area ?? null, a.textContent.trim()])"
    )
    return [tuple(link) for link in links]


@pytest.mark.parametrize("username", list(EXPECTED_AREAS))
def test_role_journey(page, live_server, demo_data, requested_urls, results_dir, username):
    user = get_user_model().objects.get(username=username)
    allowed = areas_for(user)
    assert [str(area.label) for area in allowed] == EXPECTED_AREAS[username], (
        f"webarchive.permissions gives {username} other areas than this test expects"
    )

    # Anonymous: the root sends to the login page, which comes back to the root.
    page.goto("/")
    assert_on_login_page(page)
    assert parse_qs(urlsplit(page.url).query).get("next") == ["/"]

    log_in(page, username, demo_password(username))
    assert path_of(page.url) == "/", f"{username} landed on {page.url}, not the home page"
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Welcome, {FULL_NAMES[username]}")
    page.screenshot(path=str(results_dir / f"home-{username}.png"), full_page=True)

    # The navigation bar: exactly the role's areas, in order, each with its data-area.
    assert nav_links(page) == [(area.value, str(area.label)) for area in allowed]
    assert [label for _area, label in nav_links(page)] == EXPECTED_AREAS[username]

    # One area the role has: the link opens its page.
    area, heading = CLICKED_AREA[username]
    assert area in allowed
    with page.expect_navigation() as navigation:
        page.locator(f"#main-nav a[data-area='{area.value}']").click()
    assert navigation.value.ok, f"{username} → {area.label}: HTTP {navigation.value.status}"
    expect(page.get_by_role("heading", level=1, name=heading)).to_be_visible()
    if area != Area.ADMIN:  # the admin has its own page layout, without the navigation bar
        assert path_of(page.url) == f"/{area.value}/"
        expect(page.locator(f"#main-nav a[data-area='{area.value}']")).to_have_class(
            re.compile(r"\bactive\b")
        )

    # An area the role lacks, typed in the address bar: 403, and the page says so.
    if Area.OPERATIONS not in allowed:
        response = page.goto("/operations/")
        assert response.status == 403, f"{username} on /operations/: HTTP {response.status}"
        expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")
        expect(page.locator("main")).to_contain_text("Your role does not give access to Operations.")
        # The 403 page keeps the navigation of the user, still without Operations.
        assert [label for _area, label in nav_links(page)] == EXPECTED_AREAS[username]

    # Log out (a POST form in the navigation bar): back to the login page, session gone.
    page.goto("/")
    with page.expect_navigation():
        page.get_by_role("button", name="Log out").click()
    assert_on_login_page(page)
    page.goto("/")
    assert_on_login_page(page)

    assert foreign_requests(requested_urls, live_server.url) == []


def test_wrong_password_is_refused(page, live_server, demo_data):
    page.goto("/login/")
    log_in(page, "librarian", "not-the-password")

    assert_on_login_page(page)
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username and password")
    expect(page.locator("input[name=username]")).to_have_value("librarian")
    expect(page.locator("input[name=password]")).to_have_value("")
    # Not logged in: the home page still sends to the login page.
    page.goto("/")
    assert_on_login_page(page)
    assert get_user_model().objects.get(username="librarian").last_login is None


def test_pages_work_without_the_internet(page, live_server, demo_data, requested_urls, browser_context):
    """CSS, JS and the API docs all come from the live server: the app works in a closed reading room."""
    failed: list[str] = []
    bad_status: list[str] = []
    # ERR_ABORTED is the browser cancelling a load when the page navigates away
    # (the favicon, typically); a request that left the machine would fail
    # differently, and the host of every request is checked below anyway.
    browser_context.on(
        "requestfailed",
        lambda request: (
            failed.append(f"{request.url}: {request.failure}")
            if request.failure != "net::ERR_ABORTED"
            else None
        ),
    )
    browser_context.on(
        "response",
        lambda response: (
            bad_status.append(f"{response.url}: HTTP {response.status}") if response.status >= 400 else None
        ),
    )

    page.goto("/login/")
    assert_styles_and_scripts_loaded(page)
    log_in(page, "admin", demo_password("admin"))
    assert path_of(page.url) == "/"
    assert_styles_and_scripts_loaded(page)

    # Every area of the administrator, then the Swagger UI of the API (its own JS and CSS).
    areas = [area for area, _label in nav_links(page)]
    assert areas == [area.value for area in Area]
    for area in areas:
        with page.expect_navigation() as navigation:
            page.locator(f"#main-nav a[data-area='{area}']").click()
        assert navigation.value.ok, f"{area}: HTTP {navigation.value.status}"
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.goto("/")
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Web archive API")
    page.wait_for_load_state("networkidle")

    urls = [url for url in requested_urls if urlsplit(url).scheme in ("http", "https")]
    assert any(path_of(url).endswith(".css") for url in urls)
    assert any(path_of(url).endswith(".js") for url in urls)
    assert foreign_requests(requested_urls, live_server.url) == []
    assert failed == []
    assert bad_status == []


def assert_styles_and_scripts_loaded(page) -> None:
    """Bootstrap's CSS applies, and Bootstrap's and htmx's scripts have run."""
    sheets = page.evaluate("() => Array.from(document.styleSheets, s => [s.href, s.cssRules.length])")
    assert sheets, "the page has no stylesheet"
    for href, rules in sheets:
        assert rules > 0, f"stylesheet {href} is empty or did not load"
    # .bg-dark is Bootstrap's: the navigation bar is dark only if bootstrap.min.css loaded.
    background = page.locator("nav.navbar").evaluate("nav => getComputedStyle(nav).backgroundColor")
    assert background == "rgb(33, 37, 41)", f"navigation bar background {background}: Bootstrap CSS missing?"
    assert page.evaluate("() => typeof window.bootstrap === 'object' && typeof window.htmx === 'object'")


def test_the_area_menu_lists_its_pages_and_saved_searches(page, live_server, demo_data):
    """With JavaScript on, the toggle beside Selection opens its pages and the user's saved searches."""
    from selection.services import saved_search_create

    saved_search_create(
        user=get_user_model().objects.get(username="librarian"), name="Mine", query="responsible=me"
    )
    page.goto("/login/")
    log_in(page, "librarian", demo_password("librarian"))
    page.get_by_role("button", name="Selection menu").click()
    menu = page.locator("#main-nav .dropdown-menu.show")
    assert menu.get_by_role("link", name="Records").is_visible()
    menu.get_by_role("link", name="Mine").click()
    assert path_of(page.url) == "/selection/records/"
    assert "responsible=me" in page.url
