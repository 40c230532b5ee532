"""Collections through the pages and the REST API, with their audit trail."""

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from selection.models import Collection
from selection.services import collection_update
from tests.factories import CollectionFactory, UserFactory
from tests.harvest.test_pages_versions import browser_data, hidden_inputs
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator_client(client):
    client.force_login(UserFactory(username="camille", roles=[Role.CURATOR]))
    return client


@pytest.mark.smoke
def test_curator_creates_a_collection_through_the_api(curator_client):
    UserFactory(username="louise", roles=[Role.LIBRARIAN])
    response = curator_client.post(
        reverse("api:collection-list"),
        {"name": "Elections", "kind": "event", "members": ["louise"]},
        content_type="application/json",
    )
    assert response.status_code == 201, response.json()
    collection = Collection.objects.get(name="Elections")
    assert [m.username for m in collection.members.all()] == ["louise"]
    # Created, then its members set: both changes are the curator's.
    assert {h.history_user.username for h in collection.history.all()} == {"camille"}


def test_librarian_may_read_but_not_create_collections(client):
    CollectionFactory(name="News")
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    assert [c["name"] for c in client.get(reverse("api:collection-list")).json()["results"]] == ["News"]
    response = client.post(reverse("api:collection-list"), {"name": "Mine"}, content_type="application/json")
    assert response.status_code == 403
    assert not Collection.objects.filter(name="Mine").exists()


@pytest.mark.parametrize(
    ("payload", "field", "message"),
    [
        ({"name": ""}, "name", "This field may not be blank."),
        ({"name": "X", "kind": "party"}, "kind", '"party" is not a valid choice.'),
        ({"name": "X", "members": ["nobody"]}, "members", "Object with username=nobody does not exist."),
        ({"name": "news"}, "non_field_errors", "A collection with this name already exists."),
    ],
)
def test_bad_input_is_refused_field_by_field_and_changes_nothing(curator_client, payload, field, message):
    CollectionFactory(name="News")
    response = curator_client.post(reverse("api:collection-list"), payload, content_type="application/json")
    assert response.status_code == 400
    errors = response.json()
    assert message in " ".join(errors.get(field, errors.get("non_field_errors", [])))
    assert Collection.objects.count() == 1


def test_collections_cannot_be_deleted_through_the_api(curator_client):
    collection = CollectionFactory()
    response = curator_client.delete(reverse("api:collection-detail", kwargs={"pk": collection.pk}))
    assert response.status_code == 405
    assert Collection.objects.filter(pk=collection.pk).exists()


def test_update_records_who_changed_what_and_shows_it_on_the_page(curator_client):
    collection = CollectionFactory(name="News", description="Old text")
    response = curator_client.patch(
        reverse("api:collection-detail", kwargs={"pk": collection.pk}),
        {"description": "New text", "is_active": False, "version": 1},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["version"] == 2
    page = curator_client.get(reverse("selection:collection_detail", kwargs={"pk": collection.pk}))
    history = page.content.decode().split('id="history"')[1]
    assert "camille" in history
    assert "Old text → New text" in history
    assert "True → False" in history


def test_member_changes_are_in_the_history(curator_client):
    collection = CollectionFactory(name="News")
    louise = UserFactory(username="louise")
    collection_update(collection=collection, members=[louise])
    page = curator_client.get(reverse("selection:collection_detail", kwargs={"pk": collection.pk}))
    history = page.content.decode().split('id="history"')[1]
    assert "— → louise" in history


def test_list_filters_by_member_and_search(client):
    me = UserFactory(roles=[Role.LIBRARIAN])
    CollectionFactory(name="Mine", description="about history", members=[me])
    CollectionFactory(name="Theirs", description="about science")
    client.force_login(me)
    url = reverse("selection:collection_list")
    assert_names = lambda query, names: (  # noqa: E731
        [obj.name for obj in client.get(url + query).context["object_list"]] == names
    )
    assert assert_names("", ["Mine", "Theirs"])
    assert assert_names("?member=me", ["Mine"])
    assert assert_names("?q=science", ["Theirs"])
    api = client.get(reverse("api:collection-list") + "?q=science").json()
    assert [c["name"] for c in api["results"]] == ["Theirs"]


def test_bad_filter_value_is_reported_not_ignored(client):
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    response = client.get(reverse("api:collection-list") + "?kind=party")
    assert response.status_code == 400
    assert "kind" in response.json()


def test_the_active_filter_reads_any_yes_no(client):
    CollectionFactory(name="Open", is_active=True)
    CollectionFactory(name="Closed", is_active=False)
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    page = client.get(reverse("selection:collection_list") + "?is_active=false")
    assert [obj.name for obj in page.context["object_list"]] == ["Closed"]
    assert '<option value="">any</option>' in page.content.decode()


def test_the_edit_page_saves_over_the_version_it_showed(curator_client):
    """The page sends back the version written in its HTML; a collection saved since is not overwritten."""
    collection = CollectionFactory(name="News", description="Old text")
    url = reverse("selection:collection_edit", kwargs={"pk": collection.pk})
    page = curator_client.get(url)
    data = browser_data(page)
    assert hidden_inputs(page) == {"seen": "1"}

    response = curator_client.post(url, {**data, "description": "Mine"})
    assert response.status_code == 302, response.context["form"].errors
    collection.refresh_from_db()
    assert (collection.description, collection.version) == ("Mine", 2)

    # Another curator saves in the meantime: the page shown before is refused, nothing is written.
    page = curator_client.get(url)
    collection_update(
        collection=collection,
        user=UserFactory(username="claire", roles=[Role.CURATOR]),
        expected_version=2,
        description="Theirs",
    )
    response = curator_client.post(url, {**browser_data(page), "description": "Mine again"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "Someone else changed this collection while you were editing it: description changed to "
        "“Theirs” by claire. Your changes were not saved; reload the collection and make them again."
    ]
    collection.refresh_from_db()
    assert (collection.description, collection.version) == ("Theirs", 3)


def test_a_collection_is_changed_only_by_curators_whatever_the_caller():
    librarian = UserFactory(roles=[Role.LIBRARIAN])
    collection = CollectionFactory(name="News", description="Old text", members=[librarian])
    with pytest.raises(PermissionDenied):
        collection_update(collection=collection, user=librarian, expected_version=1, description="Mine")
    collection.refresh_from_db()
    assert (collection.description, collection.version) == ("Old text", 1)
