"""Numbers the database cannot hold and dates at the calendar's ends: refused with the reason, never a 500.

Ids are signed 64-bit integers; SQLite cannot be asked about a larger number, and the
crawl feed's window arithmetic overflowed at years 1 and 9999. Through HTTP: the API
answers 400 with the field's message; a page shows the form error (the list is not
filtered by it); an export answers 400.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

TOO_BIG = "99999999999999999999"  # more than 2**63 - 1
ID_REASON = "ids are whole numbers from 1 to 9223372036854775807"


@pytest.fixture
def curator(client):
    client.force_login(UserFactory(roles=[Role.CURATOR, Role.MANAGER]))
    return client


def post(client, url, data):
    return client.post(url, data, content_type="application/json")


@pytest.mark.parametrize(
    ("url", "field"),
    [
        (f"/api/records/?collection={TOO_BIG}", "collection"),
        (f"/api/records/?theme={TOO_BIG}", "theme"),
        (f"/api/statistics/?job={TOO_BIG}", "job"),
        (f"/api/statistics/totals/?job={TOO_BIG}", "job"),
        (f"/api/statistics/table/?table=by-job&job={TOO_BIG}", "job"),
        (f"/api/statistics/?collection={TOO_BIG}", "collection"),
        (f"/api/jobs/?id_min={TOO_BIG}", "id_min"),
        (f"/api/jobs/?harvest_definition={TOO_BIG}", "harvest_definition"),
        (f"/api/configurations/?template={TOO_BIG}", "template"),
        (f"/api/harvest-infos/?job={TOO_BIG}", "job"),
        (f"/api/warc-files/?job={TOO_BIG}", "job"),
        (f"/api/themes/?collection={TOO_BIG}", "collection"),
    ],
)
def test_an_id_beyond_64_bits_in_an_api_filter_is_a_400_with_the_reason(curator, url, field):
    response = curator.get(url)
    assert response.status_code == 400, response.content
    assert ID_REASON in " ".join(response.json()[field])


def test_a_run_beyond_64_bits_in_the_statistics_filter_is_refused(curator):
    response = curator.get(f"/api/statistics/?run={TOO_BIG}")
    assert response.status_code == 400
    assert "run" in response.json()


@pytest.mark.parametrize("field", ["add", "remove"])
def test_configuration_ids_beyond_64_bits_in_a_definition_change_are_refused(curator, field):
    from harvest.services.planning import definition_save

    definition = definition_save(kind="snapshot", name="snap")
    url = reverse("api:harvestdefinition-change-configurations", kwargs={"pk": definition.pk})
    response = post(curator, url, {field: [int(TOO_BIG)]})
    assert response.status_code == 400, response.content
    assert "9223372036854775807" in str(response.json()[field])


def test_configuration_ids_beyond_64_bits_in_bulk_limits_are_refused(curator):
    response = post(curator, "/api/configurations/bulk-limits/", {"ids": [int(TOO_BIG)], "max_objects": 5})
    assert response.status_code == 400, response.content
    assert "ids" in response.json()


def test_a_filter_beyond_64_bits_in_bulk_limits_is_refused(curator):
    response = post(
        curator, "/api/configurations/bulk-limits/", {"filter": {"template": TOO_BIG}, "max_objects": 5}
    )
    assert response.status_code == 400, response.content
    assert ID_REASON in str(response.json()["filter"])


def test_a_related_id_beyond_64_bits_in_a_body_is_refused(curator):
    response = post(curator, "/api/transfers/", {"collection": int(TOO_BIG)})
    assert response.status_code == 400, response.content
    assert ID_REASON in " ".join(response.json()["collection"])


@pytest.mark.parametrize(
    "query",
    [
        "start=0001-01-01",
        "start=9999-12-31",
        "start=0001-01-01T00:00:00Z",
        "start=9999-12-31T23:59:59Z",
        "end=0001-01-01T00:00:00Z",
        "start=9999-12-30T00:00:00Z&end=9999-12-31T00:00:00Z",
    ],
)
def test_crawl_feed_dates_at_the_calendars_ends_are_a_400_with_the_range(curator, query):
    response = curator.get(f"/api/crawl-feed/?{query}")
    assert response.status_code == 400, response.content
    assert "Dates go from 1900-01-01 to 2999-12-31." in str(response.json())


def test_a_schedule_starting_at_the_calendars_start_is_refused(curator):
    response = post(
        curator, "/api/schedules/", {"name": "early", "start": "0001-01-01T00:00:00Z", "unit": "day"}
    )
    assert response.status_code == 400, response.content
    assert response.json()["start"] == ["Dates go from 1900-01-01 to 2999-12-31."]


@pytest.mark.parametrize(
    "url",
    [
        f"/selection/records/?collection={TOO_BIG}",
        f"/selection/validation/?collection={TOO_BIG}",
        f"/reports/statistics/?job={TOO_BIG}",
        f"/harvest/jobs/?id_max={TOO_BIG}",
    ],
)
def test_an_id_beyond_64_bits_in_a_page_filter_is_a_form_error(curator, url):
    response = curator.get(url)
    assert response.status_code == 200
    assert ID_REASON in response.content.decode() or "9223372036854775807" in response.content.decode()


def test_an_id_beyond_64_bits_in_the_record_export_is_a_400_with_the_reason(curator):
    collection = CollectionFactory()
    RecordFactory(collection=collection)
    response = curator.get(f"/selection/records/export/?collection={collection.pk}&collection={TOO_BIG}")
    assert response.status_code == 400
    assert ID_REASON in response.content.decode()


def test_an_id_beyond_64_bits_in_the_statistics_export_is_refused(curator):
    response = curator.get(f"/reports/statistics/?job={TOO_BIG}&export=csv")
    assert response.status_code == 400
    assert ID_REASON in response.content.decode()


@pytest.mark.parametrize("url", ["/selection/records/bulk-edit/", "/selection/validation/decide/"])
def test_record_ids_beyond_64_bits_in_a_bulk_post_are_not_records(curator, url):
    response = curator.post(url, {"records": [TOO_BIG], "decision": "validated"})
    assert response.status_code == 302  # back to the list: no such record
