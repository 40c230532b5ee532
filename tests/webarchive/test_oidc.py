"""Single sign-on with OpenID Connect against a real provider started on 127.0.0.1 (django-oidc-provider,
tests/oidc_server.py): the whole authorization-code flow over HTTP, roles from the groups claim, and
what is refused."""

import re

import pytest
import requests
from django.contrib.auth import get_user_model

from tests.factories import UserFactory
from tests.oidc_server import PASSWORD, oidc_provider_for
from webarchive.permissions import Role, user_roles


@pytest.fixture
def provider(live_server, settings, tmp_path):
    provider = oidc_provider_for(f"{live_server.url}/oidc/callback/", tmp_path)
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.OIDC_ROLE_GROUPS = {"curator": "archive-curators", "librarian": "archive-librarians"}
    settings.OIDC_ADMIN_GROUP = ""
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "webarchive.oidc.RoleMappingOIDCBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    yield provider
    provider.stop()


def sign_in(live_server, username: str) -> requests.Response:
    """A browser's way through: the application sends it to the provider, which asks for the
    password, then back to the application with a code."""
    browser = requests.Session()
    form = browser.get(f"{live_server.url}/oidc/authenticate/?next=/", timeout=30)
    assert "Sign in" in form.text, form.text[:500]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    following = re.search(r'name="next" value="([^"]+)"', form.text).group(1).replace("&amp;", "&")
    return browser.post(
        form.url,
        {"csrfmiddlewaretoken": token, "username": username, "password": PASSWORD, "next": following},
        headers={"Referer": form.url},
        timeout=30,
    )


@pytest.mark.django_db(transaction=True)
def test_a_person_signs_in_through_the_provider_with_the_roles_of_their_groups(live_server, provider):
    login_page = requests.get(f"{live_server.url}/login/", timeout=30).text
    assert 'id="single-sign-on"' in login_page and "Log in with single sign-on" in login_page

    home = sign_in(live_server, "sso-curator")
    assert home.url == f"{live_server.url}/", home.url
    assert "Your roles: Digital curator" in home.text
    user = get_user_model().objects.get(username="sso-curator")
    assert user_roles(user) == {Role.CURATOR}
    assert (user.email, user.first_name, user.has_usable_password()) == (
        "sso-curator@provider.test",
        "Sso-Curator",
        False,
    )

    # In no mapped group: logged in, with no role.
    sign_in(live_server, "sso-nobody")
    assert user_roles(get_user_model().objects.get(username="sso-nobody")) == set()


@pytest.mark.django_db(transaction=True)
def test_a_local_account_is_never_taken_over_by_the_provider(live_server, provider):
    local = UserFactory(username="librarian", roles=[Role.MANAGER])
    answer = sign_in(live_server, "librarian")
    assert answer.url.startswith(f"{live_server.url}/login/"), answer.url  # refused: back to the login
    local.refresh_from_db()
    assert local.has_usable_password() and user_roles(local) == {Role.MANAGER}


@pytest.mark.django_db
def test_without_configuration_there_is_no_single_sign_on(client, settings):
    settings.OIDC_RP_CLIENT_ID = ""
    assert 'id="single-sign-on"' not in client.get("/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
