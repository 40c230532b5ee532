"""Every archival object the API changes is changed over the ``version`` its client read.

For each endpoint that takes PUT and PATCH: a change made over a version someone
has saved since is a 409 that says what they changed, and writes nothing; a
change over the current version is saved and raises the version; a version that
is not one (not a whole number, below 1, missing, one the object never had) is
a 400 at ``version``. The other writer is another curator, through the API too.
"""

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.services.domains import configuration_save, domain_create, seed_list_save
from harvest.services.planning import (
    channel_save,
    definition_save,
    schedule_save,
    template_save,
    trap_list_save,
)
from selection.models import Record
from selection.services import collection_create
from tests.factories import RecordFactory, ThemeFactory, UserFactory
from webarchive.permissions import Role
from webarchive.versioning import current_version

pytestmark = pytest.mark.django_db


def _configuration():
    domain = domain_create(name="example.fr")
    template = template_save(name="deep", depth_policy="host")
    return configuration_save(
        domain=domain, name="deep", template=template, seed_lists=list(domain.seed_lists.all())
    )


# Route name → (the object, made as the application makes it; a text field both writers change).
ARCHIVAL = {
    "collection": (lambda: collection_create(name="Press"), "description"),
    "record": (lambda: RecordFactory(), "content_notes"),
    "domain": (lambda: domain_create(name="example.fr"), "comments"),
    "seedlist": (
        lambda: seed_list_save(
            domain=domain_create(name="example.fr"), name="sport", seeds="http://example.fr/sport/"
        ),
        "comments",
    ),
    "domainconfiguration": (_configuration, "comments"),
    "harvesttemplate": (lambda: template_save(name="deep", depth_policy="host"), "description"),
    "schedule": (
        lambda: schedule_save(name="daily", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3),
        "comments",
    ),
    "harvestchannel": (lambda: channel_save(name="urgent", queue="crawl-high"), "comments"),
    "harvestdefinition": (
        lambda: definition_save(kind=HarvestKind.SNAPSHOT, name="yearly snapshot"),
        "comments",
    ),
    "globalcrawlertraplist": (
        lambda: trap_list_save(name="calendars", traps=".*/calendar/.*"),
        "description",
    ),
}
METHODS = ["patch", "put"]


@pytest.fixture(params=list(ARCHIVAL))
def archival(request):
    """(the object, its API address, the field to change)."""
    make, field = ARCHIVAL[request.param]
    obj = make()
    return obj, reverse(f"api:{request.param}-detail", kwargs={"pk": obj.pk}), field


def writer(username: str) -> Client:
    client = Client()
    client.force_login(UserFactory(username=username, roles=[Role.CURATOR]))
    return client


@pytest.fixture
def claire():
    return writer("claire")


@pytest.fixture
def camille():
    return writer("camille")


def send(client, method: str, url: str, read: dict, changes: dict):
    """A change as a client sends it: PATCH the fields changed, or PUT back all it read, changed."""
    body = changes if method == "patch" else {**read, **changes}
    return getattr(client, method)(url, body, content_type="application/json")


def stored(obj, field: str):
    fresh = type(obj).objects.get(pk=obj.pk)
    return getattr(fresh, field), current_version(fresh)


@pytest.mark.parametrize("method", METHODS)
def test_a_change_over_a_version_saved_since_is_a_409_saying_what_changed(method, archival, claire, camille):
    obj, url, field = archival
    read = claire.get(url).json()
    version = read["version"]
    # Camille saves in the meantime, over the version she read (the same).
    response = camille.patch(url, {field: "theirs", "version": version}, content_type="application/json")
    assert response.status_code == 200, response.json()

    response = send(claire, method, url, read, {field: "mine", "version": version})
    assert response.status_code == 409, response.json()
    body = response.json()
    assert body["detail"].startswith(f"Someone else changed this {obj._meta.verbose_name} ")
    assert "changed to “theirs” by camille" in body["detail"]
    assert body["version"] == version + 1
    [change] = body["changes"]
    old = read[field] or "—"  # as people read it
    assert (change["field"], change["old"], change["new"]) == (field, old, "theirs")
    assert change["user"] == "camille"
    assert stored(obj, field) == ("theirs", version + 1)

    # Read again, the change goes through.
    read = claire.get(url).json()
    response = send(claire, method, url, read, {field: "mine", "version": read["version"]})
    assert response.status_code == 200, response.json()
    assert stored(obj, field) == ("mine", version + 2)


@pytest.mark.parametrize("method", METHODS)
def test_a_change_over_the_current_version_is_saved_and_raises_it(method, archival, claire):
    obj, url, field = archival
    read = claire.get(url).json()
    version = read["version"]
    assert version == current_version(obj)
    response = send(claire, method, url, read, {field: "mine", "version": version})
    assert response.status_code == 200, response.json()
    assert response.json()["version"] == version + 1
    assert response.json()[field] == "mine"
    assert stored(obj, field) == ("mine", version + 1)
    assert claire.get(url).json()["version"] == version + 1
    # The same version again is now a stale one, even from the writer who saved it.
    response = send(claire, method, url, read, {field: "again", "version": version})
    assert response.status_code == 409
    assert stored(obj, field) == ("mine", version + 1)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("two", "A valid integer is required."),
        (1.5, "A valid integer is required."),
        (True, "A valid integer is required."),
        (-1, "Ensure this value is greater than or equal to 1."),
        (0, "Ensure this value is greater than or equal to 1."),
        (2**31, "Ensure this value is less than or equal to 2147483647."),
        (None, "This field may not be null."),
        ("missing", "Send the version you read, so that no one else's change is lost."),
    ],
)
def test_a_change_without_a_valid_version_is_a_400_at_version(method, version, message, archival, claire):
    obj, url, field = archival
    read = claire.get(url).json()
    before = stored(obj, field)
    changes = {field: "mine"} if version == "missing" else {field: "mine", "version": version}
    if method == "put":
        read = {name: value for name, value in read.items() if name != "version"}
    response = send(claire, method, url, read, changes)
    assert response.status_code == 400
    assert response.json() == {"version": [message]}
    assert stored(obj, field) == before


def test_a_version_the_object_never_had_is_a_400_at_version(archival, claire):
    obj, url, field = archival
    version = claire.get(url).json()["version"]
    response = claire.patch(url, {field: "mine", "version": version + 5}, content_type="application/json")
    assert response.status_code == 400
    [message] = response.json()["version"]
    assert f"never had version {version + 5}; it is at version {version}." in message
    assert stored(obj, field)[1] == version


def test_creating_ignores_a_version(claire):
    response = claire.post(
        reverse("api:domain-list"), {"name": "example.fr", "version": 7}, content_type="application/json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["version"] == 1


def test_a_template_numbers_its_saves_and_its_crawler_settings_apart(claire):
    template = template_save(name="deep", depth_policy="host")
    url = reverse("api:harvesttemplate-detail", kwargs={"pk": template.pk})
    response = claire.patch(url, {"description": "Deep", "version": 1}, content_type="application/json")
    assert (response.json()["version"], response.json()["settings_version"]) == (2, 1)
    response = claire.patch(url, {"clicks": 4, "version": 2}, content_type="application/json")
    assert (response.json()["version"], response.json()["settings_version"]) == (3, 2)


@pytest.mark.parametrize("action", ["status", "transfer"])
def test_a_record_action_over_a_version_saved_since_is_a_409(action, claire, camille):
    record = RecordFactory()
    url = reverse("api:record-detail", kwargs={"pk": record.pk})
    theirs = {"technical_notes": "theirs", "version": 1}
    response = camille.patch(url, theirs, content_type="application/json")
    assert response.status_code == 200
    target = ThemeFactory()
    body = {
        "status": {"status": "validated", "version": 1},
        "transfer": {"collection": target.collection_id, "theme": target.pk, "version": 1},
    }[action]
    response = claire.post(
        reverse(f"api:record-{'set-status' if action == 'status' else 'transfer'}", kwargs={"pk": record.pk}),
        body,
        content_type="application/json",
    )
    assert response.status_code == 409, response.json()
    assert [change["field"] for change in response.json()["changes"]] == ["technical_notes"]
    fresh = Record.objects.get(pk=record.pk)
    assert (fresh.status, fresh.collection_id, fresh.version) == (record.status, record.collection_id, 2)


def test_the_schema_says_which_operations_may_answer_409(claire):
    schema = claire.get(reverse("api-schema") + "?format=json").json()
    assert schema["components"]["schemas"]["Conflict"]["required"] == ["detail", "version", "changes"]
    paths = schema["paths"]
    routes = {
        "collection": "/api/collections/{id}/",
        "record": "/api/records/{id}/",
        "domain": "/api/domains/{id}/",
        "seedlist": "/api/seed-lists/{id}/",
        "domainconfiguration": "/api/configurations/{id}/",
        "harvesttemplate": "/api/templates/{id}/",
        "schedule": "/api/schedules/{id}/",
        "harvestchannel": "/api/channels/{id}/",
        "harvestdefinition": "/api/harvest-definitions/{id}/",
        "globalcrawlertraplist": "/api/crawler-traps/{id}/",
    }
    assert set(routes) == set(ARCHIVAL)
    for path in routes.values():
        for method in ("put", "patch"):
            conflict = paths[path][method]["responses"]["409"]["content"]["application/json"]
            assert conflict["schema"] == {"$ref": "#/components/schemas/Conflict"}
        assert "409" not in paths[path]["get"]["responses"]
    assert "409" in paths["/api/records/{id}/status/"]["post"]["responses"]
    assert "409" in paths["/api/records/{id}/transfer/"]["post"]["responses"]
    # Creations, and what is changed without a version, do not.
    assert "409" not in paths["/api/domains/"]["post"]["responses"]
    assert "409" not in paths["/api/domains/{id}/alias/"]["post"]["responses"]
    assert "409" not in paths["/api/collection-mappings/{id}/"]["patch"]["responses"]
    assert "version" not in schema["components"]["schemas"]["BudgetMapping"]["properties"]
