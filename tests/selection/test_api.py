"""The records API: the same rules as the pages, the same filters, clear errors."""

import pytest
from django.urls import reverse

from selection.choices import CheckStatus, RecordStatus
from selection.models import Record
from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def librarian():
    return UserFactory(username="louise", roles=[Role.LIBRARIAN])


@pytest.fixture
def collection(librarian):
    return CollectionFactory(name="News", members=[librarian])


@pytest.fixture
def theme(collection):
    return ThemeFactory(collection=collection, name="Press")


def api(client, user):
    client.force_login(user)
    return client


def test_records_are_filtered_like_the_list_page(client, librarian, collection, theme):
    mine = RecordFactory(
        collection=collection, theme=theme, responsible=librarian, url="http://mine.example.org/"
    )
    RecordFactory(url="http://other.example.org/", status=RecordStatus.VALIDATED)
    response = api(client, librarian).get(reverse("api:record-list") + "?responsible=me")
    assert [r["id"] for r in response.json()["results"]] == [mine.pk]
    response = client.get(reverse("api:record-list") + "?status=validated&ordering=url")
    assert [r["url"] for r in response.json()["results"]] == ["http://other.example.org/"]


def test_a_bad_filter_is_a_400_naming_it(client, librarian):
    response = api(client, librarian).get(reverse("api:record-list") + "?budget=huge&created_after=yesterday")
    assert response.status_code == 400
    assert set(response.json()) == {"budget", "created_after"}


def test_an_update_needs_the_version_and_refuses_a_stale_one(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme)
    url = reverse("api:record-detail", kwargs={"pk": record.pk})
    api(client, librarian)
    response = client.patch(url, {"content_notes": "x"}, content_type="application/json")
    assert response.status_code == 400 and "version" in response.json()
    response = client.patch(url, {"content_notes": "first", "version": 1}, content_type="application/json")
    assert response.status_code == 200, response.json()
    assert response.json()["version"] == 2
    response = client.patch(url, {"content_notes": "second", "version": 1}, content_type="application/json")
    assert response.status_code == 409
    body = response.json()
    assert "Someone else changed this record" in body["detail"]
    assert body["version"] == 2
    assert [(c["field"], c["new"], c["user"]) for c in body["changes"]] == [
        ("content_notes", "first", librarian.username)
    ]
    assert Record.objects.get(pk=record.pk).content_notes == "first"


def test_the_site_needs_a_browser_is_read_written_and_filtered(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme, url="http://spa.example.org/")
    plain = RecordFactory(collection=collection, theme=theme, url="http://plain.example.org/")
    url = reverse("api:record-detail", kwargs={"pk": record.pk})
    api(client, librarian)
    assert client.get(url).json()["needs_browser"] is False
    response = client.patch(url, {"needs_browser": True, "version": 1}, content_type="application/json")
    assert response.status_code == 200, response.json()
    assert (response.json()["needs_browser"], response.json()["version"]) == (True, 2)
    listed = client.get(reverse("api:record-list") + "?needs_browser=true").json()["results"]
    assert [r["id"] for r in listed] == [record.pk]
    listed = client.get(reverse("api:record-list") + "?needs_browser=false").json()["results"]
    assert [r["id"] for r in listed] == [plain.pk]
    response = client.patch(
        url, {"needs_browser": "sometimes", "version": 2}, content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json() == {"needs_browser": ["Must be a valid boolean."]}
    assert Record.objects.get(pk=record.pk).version == 2


def test_a_librarian_outside_the_collection_gets_403_with_the_reason(client, theme):
    outsider = UserFactory(roles=[Role.LIBRARIAN])
    record = RecordFactory(collection=theme.collection, theme=theme)
    response = api(client, outsider).patch(
        reverse("api:record-detail", kwargs={"pk": record.pk}),
        {"content_notes": "x", "version": 1},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert "not a member of the collection “News”" in response.json()["detail"]


def test_a_manager_cannot_write_at_all(client, collection, theme):
    manager = UserFactory(roles=[Role.MANAGER])
    collection.members.add(manager)
    record = RecordFactory(collection=collection, theme=theme)
    api(client, manager)
    assert client.get(reverse("api:record-detail", kwargs={"pk": record.pk})).status_code == 200
    response = client.patch(
        reverse("api:record-detail", kwargs={"pk": record.pk}),
        {"is_active": False, "version": 1},
        content_type="application/json",
    )
    assert response.status_code == 403
    response = client.post(
        reverse("api:record-list"),
        {"collection": collection.pk, "url": "http://x.example.org/", "theme": theme.pk},
        content_type="application/json",
    )
    assert response.status_code == 403
    assert Record.objects.count() == 1


def test_creating_a_record_refuses_bad_input_field_by_field(client, librarian, collection, theme):
    api(client, librarian)
    response = client.post(
        reverse("api:record-list"),
        {"collection": collection.pk, "url": "ftp://example.org/", "theme": theme.pk, "budget": "huge"},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"budget"}  # the serializer first; the URL would be next
    response = client.post(
        reverse("api:record-list"),
        {"collection": collection.pk, "url": "ftp://example.org/", "theme": theme.pk},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json() == {"url": ["Only http and https URLs can be harvested, not “ftp”."]}
    response = client.post(
        reverse("api:record-list"),
        {"collection": collection.pk, "url": "http://a.example.org/"},
        content_type="application/json",
    )
    assert response.json() == {"theme": ["This field is required."]}
    assert not Record.objects.exists()


def test_status_and_transfer_follow_the_service_rules(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme)
    api(client, librarian)
    status_url = reverse("api:record-set-status", kwargs={"pk": record.pk})
    response = client.post(status_url, {"status": "validated", "version": 1}, content_type="application/json")
    assert response.status_code == 403
    curator = UserFactory(roles=[Role.CURATOR])
    api(client, curator)
    response = client.post(status_url, {"status": "rejected", "version": 1}, content_type="application/json")
    assert response.json() == {"status_reason": ["Say why the record is rejected."]}
    response = client.post(
        status_url,
        {"status": "rejected", "reason": "Off topic", "version": 1},
        content_type="application/json",
    )
    assert response.json()["status"] == RecordStatus.REJECTED
    target = CollectionFactory(name="Target")
    target_theme = ThemeFactory(collection=target)
    response = client.post(
        reverse("api:record-transfer", kwargs={"pk": record.pk}),
        {"collection": target.pk, "theme": target_theme.pk, "version": 2},
        content_type="application/json",
    )
    assert response.status_code == 200, response.json()
    assert Record.objects.get(pk=record.pk).collection == target


def test_check_url_reports_normalisation_and_duplicates(
    client, librarian, collection, theme, testsite, settings
):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    existing = RecordFactory(collection=collection, theme=theme, url=testsite.url("/ok"))
    api(client, librarian)
    response = client.post(
        reverse("api:record-check-url"),
        {"url": testsite.url("/redirect/1"), "collection": collection.pk},
        content_type="application/json",
    )
    body = response.json()
    assert response.status_code == 200, body
    assert body["check"]["status"] == CheckStatus.REDIRECT
    assert body["check"]["final_url"] == testsite.url("/ok")
    assert body["selectable"] is True
    response = client.post(
        reverse("api:record-check-url"),
        {"url": testsite.url("/ok"), "collection": collection.pk},
        content_type="application/json",
    )
    duplicates = response.json()["duplicates"]
    assert [d["id"] for d in duplicates["same"]] == [existing.pk]
    assert duplicates["in_this_collection"] is True
    response = client.post(
        reverse("api:record-check-url"), {"url": "javascript:alert(1)"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "Only http and https" in response.json()["url"][0]
