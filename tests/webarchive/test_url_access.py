"""The role rules hold on every URL the project has.

``ACCESS`` says, for each named URL, who may open it. ``test_every_url_is_listed``
fails when a URL is added without an entry here, so no page or endpoint can
slip in without its access being tested.
"""

import pytest
from django.contrib import admin
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from selection.models import CompatibilityRule
from tests.access import assert_api_access, assert_page_access, assert_sent_to_login, user_for
from tests.factories import CollectionFactory, RecordFactory, SavedSearchFactory, ThemeFactory
from webarchive.permissions import AREA_ROLES, Area, Role

ANY_LOGGED_IN = frozenset({*Role, None})  # with or without a role
SELECTION = AREA_ROLES[Area.SELECTION]
WRITERS = frozenset({Role.LIBRARIAN, Role.CURATOR})  # may propose and edit records (in their collections)
CURATORS = frozenset({Role.CURATOR})
# A fresh user of each role is a member of no collection: on a record's own
# pages only curators (who write everywhere) may change it. Members are tested
# in tests/selection/test_pages.py.


def collection_url(name):
    return lambda: reverse(name, kwargs={"pk": CollectionFactory().pk})


def record_url(name):
    return lambda: reverse(name, kwargs={"pk": RecordFactory().pk})


def rule_url(name):
    return lambda: reverse(name, kwargs={"pk": CompatibilityRule.objects.first().pk})


def saved_search_url(name):
    return lambda: reverse(name, kwargs={"pk": SavedSearchFactory().pk})


def url(name):
    return lambda: reverse(name)


# name -> (kind, url builder, who may use it). Kinds: "page" (GET), "post" (a
# form's target), "api" (GET), "api-post", "public", "public-post", "own" (POST on
# the user's own object: anyone else gets 404).
ACCESS = {
    "home": ("page", url("home"), ANY_LOGGED_IN),
    "account": ("page", url("account"), ANY_LOGGED_IN),
    "account-token": ("post", url("account-token"), ANY_LOGGED_IN),
    "logout": ("post", url("logout"), ANY_LOGGED_IN),
    "set_language": ("post", url("set_language"), ANY_LOGGED_IN),
    "login": ("public", url("login"), None),
    "selection:collection_list": ("page", url("selection:collection_list"), SELECTION),
    "selection:collection_create": ("page", url("selection:collection_create"), CURATORS),
    "selection:collection_detail": ("page", collection_url("selection:collection_detail"), SELECTION),
    "selection:collection_edit": ("page", collection_url("selection:collection_edit"), CURATORS),
    "selection:theme_create": ("page", collection_url("selection:theme_create"), CURATORS),
    "selection:record_list": ("page", url("selection:record_list"), SELECTION),
    "selection:record_propose": ("page", url("selection:record_propose"), WRITERS),
    "selection:record_bulk_edit": ("post", url("selection:record_bulk_edit"), WRITERS),
    "selection:record_detail": ("page", record_url("selection:record_detail"), SELECTION),
    "selection:record_edit": ("page", record_url("selection:record_edit"), CURATORS),
    "selection:record_status": ("page", record_url("selection:record_status"), CURATORS),
    "selection:record_transfer": ("page", record_url("selection:record_transfer"), CURATORS),
    "selection:record_export": ("page", url("selection:record_export"), SELECTION),
    "selection:record_import": ("page", url("selection:record_import"), WRITERS),
    "selection:record_import_commit": ("post", url("selection:record_import_commit"), WRITERS),
    "selection:validation_queue": ("page", url("selection:validation_queue"), CURATORS),
    "selection:validation_decide": ("post", url("selection:validation_decide"), CURATORS),
    "selection:saved_search_create": ("post", url("selection:saved_search_create"), SELECTION),
    "selection:saved_search_delete": ("own", saved_search_url("selection:saved_search_delete"), SELECTION),
    "selection:compatibility": ("page", url("selection:compatibility"), SELECTION),
    "selection:compatibility_rule_delete": (
        "post",
        rule_url("selection:compatibility_rule_delete"),
        CURATORS,
    ),
    "api-docs": ("page", url("api-docs"), ANY_LOGGED_IN),
    "api-schema": ("api", url("api-schema"), ANY_LOGGED_IN),
    "api:api-root": ("api", url("api:api-root"), ANY_LOGGED_IN),
    "api:token": ("public-post", url("api:token"), None),
    "api:collection-list": ("api", url("api:collection-list"), SELECTION),
    "api:collection-detail": ("api", collection_url("api:collection-detail"), SELECTION),
    "api:record-list": ("api", url("api:record-list"), SELECTION),
    "api:record-detail": ("api", record_url("api:record-detail"), SELECTION),
    "api:record-check-url": ("api-post", url("api:record-check-url"), WRITERS),
    # Who may validate or transfer is the service's decision (tests/selection/test_api.py).
    "api:record-set-status": ("api-post", record_url("api:record-set-status"), WRITERS),
    "api:record-transfer": ("api-post", record_url("api:record-transfer"), WRITERS),
    "api:theme-list": ("api", url("api:theme-list"), SELECTION),
    "api:theme-detail": (
        "api",
        lambda: reverse("api:theme-detail", kwargs={"pk": ThemeFactory().pk}),
        SELECTION,
    ),
    "api:compatibilityrule-list": ("api", url("api:compatibilityrule-list"), SELECTION),
    "api:compatibilityrule-detail": ("api", rule_url("api:compatibilityrule-detail"), SELECTION),
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


ROLES_AND_NONE = [*Role, None, "admin"]


def expected_allowed(role, allowed) -> bool:
    return role == "admin" or role in allowed


def assert_posts_by_role(client, target, allowed, post, *, refused=(403, 500)):
    """POST as each role: those allowed are not refused (nor a 500), the others get 403."""
    for role in ROLES_AND_NONE:
        client.force_login(user_for(role))
        status = post(target).status_code
        if expected_allowed(role, allowed):
            assert status not in refused, f"{target} as {role or 'no role'}: {status}"
        else:
            assert status == 403, f"{target} as {role or 'no role'}: {status}, expected 403"
        client.logout()


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "post"])
def test_form_targets(client, name):
    """Anonymous → login; a role that may not → 403; one that may → the form is handled (no 403, no 500)."""
    _kind, build, allowed = ACCESS[name]
    target = build()
    assert_sent_to_login(client.post(target), target)
    assert_posts_by_role(client, target, allowed, client.post)


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "api-post"])
def test_api_actions(client, name):
    _kind, build, allowed = ACCESS[name]
    target = build()

    def post(url):
        return client.post(url, {}, content_type="application/json")

    assert post(target).status_code == 401
    assert_posts_by_role(client, target, allowed, post, refused=(401, 403, 500))


@pytest.mark.django_db
@pytest.mark.parametrize("name", [n for n, (kind, *_) in ACCESS.items() if kind == "own"])
def test_own_objects(client, name):
    """Only the owner may act on their object; others with a role get 404, no role 403."""
    _kind, build, allowed = ACCESS[name]
    target = build()
    assert_sent_to_login(client.post(target), target)
    for role in ROLES_AND_NONE:
        client.force_login(user_for(role))
        status = client.post(target).status_code
        assert status == (404 if expected_allowed(role, allowed) else 403), f"{target} as {role}: {status}"
        client.logout()


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
