"""A list of the API never ignores a query parameter it does not take: it answers 400, naming the
parameter and those it takes. Ignored, a misspelt filter answers with everything (``/api/domains/
?search=…`` listed every domain: the filter is ``q``), which a script would take for an answer."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from tests.factories import CollectionFactory, UserFactory
from webarchive.api_urls import router
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

LISTS = sorted(
    reverse(f"api:{basename}-list")
    for _prefix, viewset, basename in router.registry
    if hasattr(viewset, "list")
)
TAKES = re.compile(r"This endpoint takes: (.*)\.$")


@pytest.fixture
def staff(client):
    client.force_login(UserFactory(roles=[Role.LIBRARIAN, Role.CURATOR, Role.ENGINEER, Role.MANAGER]))
    return client


def taken(response) -> list[str]:
    """The parameters a 400 for an unknown one says the endpoint takes."""
    return TAKES.search(response.json()["detail"]).group(1).split(", ")


def test_every_list_of_the_router_is_checked():
    assert len(LISTS) == len(router.registry) >= 20
    assert "/api/domains/" in LISTS and "/api/records/" in LISTS


@pytest.mark.parametrize("url", LISTS)
def test_an_unknown_parameter_on_a_list_is_a_400_naming_it_and_those_the_list_takes(staff, url):
    response = staff.get(url, {"no_such_filter": "1", "page": "1"})
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert detail.startswith("Unknown query parameter(s): no_such_filter.")
    names = taken(response)
    assert {"page", "format"} <= set(names) and "no_such_filter" not in names
    # Every parameter it names is taken: all of them at once, empty (a page: the first), are read as
    # filters: a list, or a 400 about their values (an empty choice is not a choice), never "unknown".
    every = staff.get(url, dict.fromkeys(names, "") | {"format": "json", "page": "1"})
    assert every.status_code in (200, 400), (url, every.content)
    if every.status_code == 400:
        assert set(every.json()) <= set(names), (url, every.content)


def test_a_misspelt_filter_is_refused_and_the_right_one_filters(staff):
    CollectionFactory(name="Presse régionale")
    CollectionFactory(name="Sites de partis")
    misspelt = staff.get("/api/collections/", {"search": "presse"})
    assert misspelt.status_code == 400
    assert "search" in misspelt.json()["detail"] and "q" in taken(misspelt)
    found = staff.get("/api/collections/", {"q": "presse"})
    assert [row["name"] for row in found.json()["results"]] == ["Presse régionale"]


def test_ranges_are_taken_by_the_names_of_their_parts(staff):
    response = staff.get("/api/jobs/", {"id": "3"})
    assert response.status_code == 400
    assert {"id_min", "id_max"} <= set(taken(response))
    assert staff.get("/api/jobs/", {"id_min": "1", "id_max": "3"}).status_code == 200


def test_one_object_and_the_lists_own_parameters_are_not_concerned(staff):
    collection = CollectionFactory()
    assert staff.get(f"/api/collections/{collection.pk}/", {"expand": "1"}).status_code == 200
    # The crawl feed and the search check their own parameters the same way.
    feed = staff.get("/api/crawl-feed/", {"frequency": "weekly", "freq": "daily"})
    assert feed.status_code == 400 and "freq" in feed.json()["detail"]
    assert set(taken(feed)) >= {"frequency", "start", "end", "page"}
    assert staff.get("/api/crawl-feed/", {"frequency": "weekly"}).status_code == 200


def test_a_filter_that_is_not_text_given_empty_is_refused_not_taken_for_one_left_out(staff):
    # Taken for one left out, ?harvest_definition= answered with every definition's mappings.
    response = staff.get("/api/collection-mappings/", {"harvest_definition": "", "frequency": "monthly"})
    assert response.status_code == 400
    assert response.json() == {"harvest_definition": ["Empty: give a value or leave the parameter out."]}
    # Text may be empty: an empty search is no search.
    assert staff.get("/api/collections/", {"q": ""}).status_code == 200
