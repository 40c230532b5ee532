"""The role rules hold on every URL the project has.

``ACCESS`` says, for each named URL, who may open it. ``test_every_url_is_listed``
fails when a URL is added without an entry here, so no page or endpoint can
slip in without its access being tested.
"""

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.access import assert_api_access, assert_page_access, assert_sent_to_login, user_for
from tests.factories import CollectionFactory
from webarchive.permissions import AREA_ROLES, Area, Role

ANY_LOGGED_IN = frozenset({*Role, None})  # with or without a role
SELECTION = AREA_ROLES[Area.SELECTION]


def collection_url(name):
    return lambda: reverse(name, kwargs={"pk": CollectionFactory().pk})


# name -> (kind, url builder, who may open it)
ACCESS = {
    "home": ("page", lambda: reverse("home"), ANY_LOGGED_IN),
    "account": ("page", lambda: reverse("account"), ANY_LOGGED_IN),
    "account-token": ("post", lambda: reverse("account-token"), ANY_LOGGED_IN),
    "logout": ("post", lambda: reverse("logout"), ANY_LOGGED_IN),
    "set_language": ("post", lambda: reverse("set_language"), ANY_LOGGED_IN),
    "login": ("public", lambda: reverse("login"), None),
    "selection:collection_list": ("page", lambda: reverse("selection:collection_list"), SELECTION),
    "selection:collection_detail": ("page", collection_url("selection:collection_detail"), SELECTION),
    "api-docs": ("page", lambda: reverse("api-docs"), ANY_LOGGED_IN),
    "api-schema": ("api", lambda: reverse("api-schema"), ANY_LOGGED_IN),
    "api:api-root": ("api", lambda: reverse("api:api-root"), ANY_LOGGED_IN),
    "api:token": ("public-post", lambda: reverse("api:token"), None),
    "api:collection-list": ("api", lambda: reverse("api:collection-list"), SELECTION),
    "api:collection-detail": ("api", collection_url("api:collection-detail"), SELECTION),
}
ACCESS.update(
    {f"area[{area.value}]": ("page", lambda a=area: f"/{a.value}/", AREA_ROLES[area]) for area in Area}
)
del ACCESS["area[admin]"]  # /admin/ is the Django admin, tested below


def url_names(patterns=None, namespace=""):
    """Every named URL of the project, ``namespace:name``."""
    if patterns is None:
        patterns = get_resolver().url_patterns
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from url_names(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}"


def test_every_url_is_listed():
    names = {name for name in url_names() if not name.startswith("admin:")}
    names = {"area[…]" if name == "area" else name for name in names}
    listed = {name for name in ACCESS if not name.startswith("area[")} | {"area[…]"}
    assert names - listed == set(), "URLs without an access rule in ACCESS"
    assert listed - names == set(), "ACCESS lists URLs that no longer exist"


def test_every_area_is_listed():
    assert {f"area[{area.value}]" for area in Area if area != Area.ADMIN} <= ACCESS.keys()


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "page"])
def test_page_access(client, name):
    _kind, build, allowed = ACCESS[name]
    assert_page_access(client, build(), allowed)


@pytest.mark.smoke
@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "api"])
def test_api_access(client, name):
    _kind, build, allowed = ACCESS[name]
    assert_api_access(client, build(), allowed)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "post"])
def test_post_only_urls_need_login(client, name):
    _kind, build, _rule = ACCESS[name]
    url = build()
    assert_sent_to_login(client.post(url), url)
    client.force_login(user_for(None))
    assert client.post(url).status_code == 302  # each redirects after doing its work


@pytest.mark.django_db
def test_login_page_is_public(client):
    assert client.get(reverse("login")).status_code == 200


@pytest.mark.django_db
def test_token_endpoint_needs_credentials_not_a_session(client):
    response = client.post(reverse("api:token"), {"username": "nobody", "password": "wrong"})
    assert response.status_code == 400


def admin_urls():
    """The admin index and, for every registered model, its list, add and one change page."""
    urls = [reverse("admin:index")]
    collection = CollectionFactory()
    for model in admin.site._registry:
        info = (model._meta.app_label, model._meta.model_name)
        urls.append(reverse("admin:{}_{}_changelist".format(*info)))
        if model is type(collection):
            urls.append(reverse("admin:{}_{}_change".format(*info), args=[collection.pk]))
            urls.append(reverse("admin:{}_{}_history".format(*info), args=[collection.pk]))
    return urls


@pytest.mark.smoke
@pytest.mark.django_db
def test_admin_is_for_administrators_only(client):
    for url in admin_urls():
        assert_page_access(client, url, frozenset())
