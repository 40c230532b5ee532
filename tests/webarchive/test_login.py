"""Local login, logout, failed-login throttling and the account page."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from tests.factories import PASSWORD, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def log_in(client, username, password, next_url=""):
    return client.post(reverse("login"), {"username": username, "password": password, "next": next_url})


@pytest.mark.smoke
def test_good_password_logs_in_and_returns_to_the_page_asked_for(client):
    UserFactory(username="louise", roles=[Role.LIBRARIAN])
    response = log_in(client, "louise", PASSWORD, next_url="/selection/")
    assert response.status_code == 302
    assert response["Location"] == "/selection/"
    assert client.get("/selection/").status_code == 200


def test_wrong_password_is_refused_with_a_message(client):
    UserFactory(username="louise")
    response = log_in(client, "louise", "not the password")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert client.get(reverse("home")).status_code == 302  # still anonymous


def test_inactive_account_cannot_log_in(client):
    UserFactory(username="gone", is_active=False)
    assert log_in(client, "gone", PASSWORD).status_code == 200
    assert "_auth_user_id" not in client.session


def test_repeated_failures_lock_the_account_for_that_address(client, settings):
    settings.AXES_FAILURE_LIMIT = 3
    UserFactory(username="target")
    for _ in range(2):
        assert log_in(client, "target", "guess").status_code == 200
    locked = log_in(client, "target", "guess")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "Try again in 15\xa0minutes," in locked.content.decode()  # in words, not "PT15M"
    assert "PT15M" not in locked.content.decode()
    # Locked means locked: even the right password is refused now.
    assert log_in(client, "target", PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session
    # Another account from the same address is not affected.
    UserFactory(username="neighbour")
    assert log_in(client, "neighbour", PASSWORD).status_code == 302


def test_the_api_token_endpoint_is_throttled_too(client, settings):
    settings.AXES_FAILURE_LIMIT = 2
    UserFactory(username="script")
    url = reverse("api:token")
    for _ in range(2):
        client.post(url, {"username": "script", "password": "guess"})
    response = client.post(url, {"username": "script", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed logins" in response.json()["detail"]
    assert not Token.objects.filter(user__username="script").exists()


def test_logout_ends_the_session(client):
    client.force_login(UserFactory())
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response["Location"] == reverse("login")
    assert client.get(reverse("home")).status_code == 302


def test_home_page_says_when_a_user_has_no_role(client):
    client.force_login(UserFactory())
    page = client.get(reverse("home")).content.decode()
    assert "You have no role yet" in page


def test_home_page_names_the_roles(client):
    client.force_login(UserFactory(roles=[Role.CURATOR, Role.MANAGER]))
    page = client.get(reverse("home")).content.decode()
    assert "Digital curator" in page and "Manager" in page


def test_account_page_generates_and_replaces_the_api_token(client):
    user = UserFactory()
    client.force_login(user)
    client.post(reverse("account-token"))
    first = Token.objects.get(user=user).key
    assert first in client.get(reverse("account")).content.decode()
    client.post(reverse("account-token"))
    second = Token.objects.get(user=user).key
    assert second != first
    # The old token no longer opens the API; the new one does.
    client.logout()
    assert client.get("/api/", HTTP_AUTHORIZATION=f"Token {first}").status_code == 401
    assert client.get("/api/", HTTP_AUTHORIZATION=f"Token {second}").status_code == 200


def test_api_token_from_credentials(client):
    user = UserFactory(username="script", roles=[Role.CURATOR])
    response = client.post(reverse("api:token"), {"username": "script", "password": PASSWORD})
    assert response.status_code == 200
    token = response.json()["token"]
    assert token == Token.objects.get(user=user).key
    listing = client.get(reverse("api:collection-list"), HTTP_AUTHORIZATION=f"Token {token}")
    assert listing.status_code == 200
