"""Shared checks of the role rules: anonymous → login, wrong role → 403, right role → 200.

``assert_page_access`` and ``assert_api_access`` check one URL for every role;
the base classes ``PageAccessTests`` and ``ApiAccessTests`` turn one URL into a
set of parametrised tests. ``tests/webarchive/test_url_access.py`` applies them
to every URL the project has.
"""

from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.urls import reverse

from tests.factories import UserFactory
from webarchive.permissions import Role

EVERYONE = frozenset(Role)
# Roles are Role members; ``None`` in an allowed set means "a user with no role" too.


def login_url() -> str:
    return reverse(settings.LOGIN_URL)


def assert_sent_to_login(response, url: str) -> None:
    assert response.status_code == 302, f"{url}: anonymous got {response.status_code}, expected a redirect"
    location = urlsplit(response["Location"])
    assert location.path == login_url(), (
        f"{url}: anonymous sent to {response['Location']}, not the login page"
    )


def user_for(role: Role | None):
    """A fresh user with one role (or none, or the administrator for ``"admin"``)."""
    if role == "admin":
        return UserFactory(is_superuser=True, is_staff=True)
    return UserFactory(roles=[role] if role else [])


def assert_page_access(
    client, url: str, allowed: frozenset, *, admin_allowed: bool = True, redirects: dict | None = None
) -> None:
    """Check a page for anonymous users, every role, no role and the administrator; ``redirects``: the
    roles sent elsewhere (role → where)."""
    client.logout()
    assert_sent_to_login(client.get(url), url)
    for role in [*Role, None, "admin"]:
        client.force_login(user_for(role))
        response = client.get(url)
        client.logout()
        if redirects and role in redirects:
            assert response.status_code == 302 and response["Location"] == redirects[role], f"{url} as {role}"
            continue
        expected = 200 if (role in allowed or (role == "admin" and admin_allowed)) else 403
        status = response.status_code
        assert status == expected, f"{url} as {role or 'no role'}: got {status}, expected {expected}"


def assert_api_access(client, url: str, allowed: frozenset, *, admin_allowed: bool = True) -> None:
    """Check a read endpoint of the REST API: anonymous → 401, wrong role → 403, right role → 200."""
    client.logout()
    response = client.get(url, HTTP_ACCEPT="application/json")
    assert response.status_code == 401, f"{url}: anonymous got {response.status_code}, expected 401"
    for role in [*Role, None, "admin"]:
        client.force_login(user_for(role))
        expected = 200 if (role in allowed or (role == "admin" and admin_allowed)) else 403
        status = client.get(url, HTTP_ACCEPT="application/json").status_code
        assert status == expected, f"{url} as {role or 'no role'}: got {status}, expected {expected}"
        client.logout()


class PageAccessTests:
    """Base class: set ``allowed`` and implement ``url()``; each case is a test of its own."""

    allowed: frozenset[Role] = frozenset()
    admin_allowed = True

    def url(self) -> str:
        raise NotImplementedError

    @pytest.mark.django_db
    def test_anonymous_is_sent_to_login(self, client):
        url = self.url()
        assert_sent_to_login(client.get(url), url)

    @pytest.mark.django_db
    @pytest.mark.parametrize("role", [*Role, None, "admin"], ids=lambda r: str(r or "no-role"))
    def test_role(self, client, role):
        url = self.url()
        client.force_login(user_for(role))
        expected = 200 if (role in self.allowed or (role == "admin" and self.admin_allowed)) else 403
        assert client.get(url).status_code == expected


class ApiAccessTests(PageAccessTests):
    """The same for a REST endpoint: anonymous clients get 401, not a redirect."""

    @pytest.mark.django_db
    def test_anonymous_is_sent_to_login(self, client):
        assert client.get(self.url(), HTTP_ACCEPT="application/json").status_code == 401
