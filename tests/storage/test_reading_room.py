"""The reading room: the collections a person may read from where they are, and their records' URLs as
entry points, counted in what that person may read (tests/access_fixtures.py's archive)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from storage.services.access import exclusion_create, exclusion_lift
from tests.access import user_for
from tests.access_fixtures import EXCLUDED, case_url
from tests.factories import RecordFactory
from webarchive.permissions import Role

INSIDE, OUTSIDE = "10.1.2.3", "192.0.2.10"


@pytest.fixture
def entry_points(access_archive):
    """Each collection of the archive has its case's two pages as records (and "open" its secret page)."""
    for case, collection in access_archive.collections.items():
        RecordFactory(collection=collection, url=case_url(case, "/"))
        RecordFactory(collection=collection, url=case_url(case, "/page"))
    RecordFactory(collection=access_archive.collections["open"], url=EXCLUDED)
    RecordFactory(collection=access_archive.collections["open"], url="http://never-crawled.fr/")
    return access_archive


def listed(client, address: str) -> set[str]:
    page = client.get(reverse("storage:reading_room"), REMOTE_ADDR=address)
    assert page.status_code == 200
    return {collection.name.removeprefix("Access ") for collection in page.context["collections"]}


@pytest.mark.parametrize(
    ("role", "address", "expected"),
    [
        (None, OUTSIDE, {"open", "embargo-over", "mixed"}),
        (None, INSIDE, {"open", "embargo-over", "mixed"}),
        (Role.READER, OUTSIDE, {"open", "readers", "embargo-over", "mixed"}),
        (Role.READER, INSIDE, {"open", "readers", "room", "embargo-over", "mixed"}),
    ],
    ids=["anonymous-outside", "anonymous-inside", "reader-outside", "reader-inside"],
)
def test_the_collections_listed_are_those_the_person_may_read_from_there(
    client, entry_points, role, address, expected
):
    if role is not None:
        client.force_login(user_for(role))
    assert listed(client, address) == expected


def test_staff_see_every_collection(client, entry_points):
    client.force_login(user_for(Role.LIBRARIAN))
    assert {"staff", "embargoed", "room", "mixed-staff"} <= listed(client, OUTSIDE)


def test_a_collection_lists_its_readable_entry_points_with_their_captures(client, entry_points):
    client.force_login(user_for(Role.READER))
    collection = entry_points.collections["open"]
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("storage:reading_room_collection", kwargs={"pk": collection.pk}))
    assert page.status_code == 200
    points = {point["url"]: point for point in page.context["points"]}
    # The excluded page and the URL never crawled are not entry points for a reader.
    assert set(points) == {case_url("open", "/"), case_url("open", "/page")}
    assert all(point["count"] == 1 for point in points.values())
    html = page.content.decode()
    assert (
        reverse("storage:replay_entry", kwargs={"stamp": "20240315093000", "url": case_url("open", "/")})
        in html
    )
    counted = [query for query in queries.captured_queries if "storage_capture" in query["sql"]]
    assert len(counted) <= 2  # one grouped query for the page's entry points (and nothing per row)

    # Staff see the excluded page among the entry points; lifting it shows it to readers too.
    reader = client.session.get("_auth_user_id")
    client.force_login(user_for(Role.CURATOR))
    staff_page = client.get(reverse("storage:reading_room_collection", kwargs={"pk": collection.pk}))
    assert EXCLUDED in {point["url"] for point in staff_page.context["points"]}
    exclusion_lift(exclusion=entry_points.exclusion)
    client.force_login(get_user_model().objects.get(pk=reader))
    page = client.get(reverse("storage:reading_room_collection", kwargs={"pk": collection.pk}))
    assert EXCLUDED in {point["url"] for point in page.context["points"]}


def test_rejected_records_are_no_entry_points(client, entry_points):
    collection = entry_points.collections["readers"]
    RecordFactory(
        collection=collection, url="http://readers.fr/rejected", status="rejected", status_reason="Gone"
    )
    client.force_login(user_for(Role.READER))
    page = client.get(reverse("storage:reading_room"))
    counts = {c.name: c.entry_points for c in page.context["collections"]}
    assert counts["Access readers"] == 2  # its two selected sites, not the rejected proposal


def test_a_collection_the_person_may_not_read_is_not_found(client, entry_points, settings):
    client.force_login(user_for(Role.READER))
    for case in ("staff", "embargoed", "room"):
        url = reverse("storage:reading_room_collection", kwargs={"pk": entry_points.collections[case].pk})
        assert client.get(url, REMOTE_ADDR=OUTSIDE).status_code == 404, case
    room = reverse("storage:reading_room_collection", kwargs={"pk": entry_points.collections["room"].pk})
    assert client.get(room, REMOTE_ADDR=INSIDE).status_code == 200
    settings.ACCESS_ANONYMOUS = False
    client.logout()
    answer = client.get(reverse("storage:reading_room"))
    assert answer.status_code == 302 and answer["Location"].startswith(reverse("login"))


def test_an_excluded_domain_leaves_the_entry_points_of_readers(client, entry_points):
    exclusion_create(
        kind="domain", target="readers.fr", reason="A complaint", requested_by="The site's owner"
    )
    client.force_login(user_for(Role.READER))
    collection = entry_points.collections["readers"]
    page = client.get(reverse("storage:reading_room_collection", kwargs={"pk": collection.pk}))
    assert page.context["points"] == []
    assert "None of this page" in page.content.decode()


def test_a_reader_lands_in_the_reading_room(client, entry_points):
    client.force_login(user_for(Role.READER))
    home = client.get(reverse("home"), follow=True)
    assert home.redirect_chain[-1][0] == reverse("storage:reading_room")
    nav = [link["label"] for area in home.context["nav_areas"] for link in area["pages"]]
    assert nav == ["Reading room", "Search the archive", "Search the text"]
