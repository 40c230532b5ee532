"""The interface in French, as a browser set to French gets it: the login, a librarian's day, the
switch to English remembered for the person, and numbers and dates written the French way."""

import io

import pytest
from django.core.management import call_command

from tests.browser.test_navigation import path_of
from webarchive.management.commands.demo import demo_password
from webarchive.models import UserPreference

try:
    from playwright.sync_api import expect
except ImportError:  # the playwright_browser fixture skips (or fails in CI) and says why
    expect = None

pytestmark = pytest.mark.browser


@pytest.fixture
def french(playwright_browser, live_server, transactional_db):
    """A browser whose language is French (Accept-Language: fr-FR), on the demo's data."""
    call_command("demo", stdout=io.StringIO())
    context = playwright_browser.new_context(base_url=live_server.url, locale="fr-FR")
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    context.close()


def test_a_librarian_works_in_french_and_switches_to_english_for_good(french):
    page = french
    page.goto("/login/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.get_by_role("heading", level=1)).to_have_text("Se connecter")
    page.locator("input[name=username]").fill("librarian")
    page.locator("input[name=password]").fill(demo_password("librarian"))
    with page.expect_navigation():
        page.get_by_role("button", name="Se connecter").click()
    expect(page.locator("body")).to_contain_text("Vos rôles : Bibliothécaire")
    expect(page.locator("#time-zone")).to_have_text("Les heures sont dans le fuseau horaire Europe/Paris.")
    with page.expect_navigation():
        page.locator("#main-nav a[data-area='selection']").click()
    with page.expect_navigation():
        page.get_by_role("link", name="Fiches", exact=True).click()
    assert path_of(page.url) == "/selection/records/"
    expect(page.get_by_role("link", name="Proposer une URL")).to_be_visible()
    expect(page.locator("#records thead")).to_contain_text("Budget")
    # A form's errors are in French too.
    with page.expect_navigation():
        page.get_by_role("link", name="Proposer une URL").click()
    page.locator("#id_entry-url").fill("ftp://files.example.org/")
    page.locator("#id_entry-collection").select_option(index=1)
    with page.expect_navigation():
        page.get_by_role("button", name="Vérifier").click()
    expect(page.locator("#entry-form")).to_contain_text("Seules les URL http et https")

    # The switch: English, for this person, in every session from now on.
    with page.expect_navigation():
        page.locator("#language-switch button[value='en']").click()
    assert path_of(page.url) == "/selection/records/propose/"
    expect(page.get_by_role("heading", level=1)).to_have_text("Propose a URL")
    assert UserPreference.objects.get(user__username="librarian").language == "en"
    page.context.clear_cookies()  # logged out, and the language cookie gone: the browser says French
    page.goto("/login/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Se connecter")
    page.locator("input[name=username]").fill("librarian")
    page.locator("input[name=password]").fill(demo_password("librarian"))
    with page.expect_navigation():
        page.get_by_role("button", name="Se connecter").click()
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("body")).to_contain_text("Your roles: Librarian")
