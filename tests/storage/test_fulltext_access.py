"""Full-text search under the access rules: every role, from inside and outside a reading room, sees
exactly the hits, snippets, counts and facets of the captures its rules let it read (the archive of
tests/access_fixtures.py, one case per rule; its pages say "Case <case>, page <path>")."""

from __future__ import annotations

import pytest
from django.urls import reverse

from harvest.models import CollectionMapping
from storage.models import Capture
from storage.services.access import exclusion_lift
from storage.services.indexing import warc_file_index
from tests.access import user_for
from tests.access_fixtures import CASES, EXCLUDED, case_url
from tests.storage.test_access_rules import INSIDE, OUTSIDE, STAFF, profile_of
from tests.storage.test_fulltext import write_pages
from webarchive.permissions import Role


def expected_urls(profile: str, *, excluded_shown: bool) -> set[str]:
    urls = {
        case_url(case, path)
        for case, profiles in CASES.items()
        if profile in profiles
        for path in ("/", "/page")
    }
    if excluded_shown and profile in CASES["open"]:
        urls.add(EXCLUDED)
    return urls


@pytest.fixture(autouse=True)
def _anonymous_reading(settings):
    settings.ACCESS_ANONYMOUS = True


def test_each_role_finds_exactly_the_pages_its_rules_let_it_read(client, access_archive):
    # One archive for every role and place (building it is the slow part).
    for role in [None, Role.READER, *STAFF]:
        for address in (INSIDE, OUTSIDE):
            client.logout()
            if role is not None:
                client.force_login(user_for(role))
            check_search(client, role, address)


def check_search(client, role, address):
    where = f"{role or 'anonymous'} from {address}"
    profile = profile_of(role, address)
    expected = expected_urls(profile, excluded_shown=profile == "staff")

    if role is None:  # the page answers anonymous visitors; the API (as /cdx) does not
        assert client.get("/api/search/", {"q": "case"}, REMOTE_ADDR=address).status_code == 401
    else:
        answer = client.get("/api/search/", {"q": "case", "page_size": 100}, REMOTE_ADDR=address)
        assert answer.status_code == 200, where
        body = answer.json()
        assert {hit["url"] for hit in body["results"]} == expected, where
        assert body["count"] == len(expected), where
        assert all(hit["captures"] == 1 for hit in body["results"]), where
        # The facets count what the viewer reads, nothing more.
        assert sum(facet["count"] for facet in body["facets"]["domain"]) == len(expected), where
        assert {facet["value"] for facet in body["facets"]["domain"]} == {
            url.split("/")[2] for url in expected
        }, where
        definitions = Capture.objects.filter(url__in=expected).values("job__harvest_definition_id")
        mapped = CollectionMapping.objects.filter(harvest_definition_id__in=definitions)
        assert {facet["label"] for facet in body["facets"]["collection"]} == set(
            mapped.values_list("collection__name", flat=True)
        ), where
        # A word only a closed page has finds nothing, not even a count.
        closed = client.get("/api/search/", {"q": "staff"}, REMOTE_ADDR=address).json()
        if profile == "staff":
            assert closed["count"] >= 2, where
        else:
            assert closed["count"] == 0 and closed["results"] == [] and closed["facets"]["domain"] == [], (
                where
            )

    page = client.get(reverse("storage:text_search"), {"q": "case", "page_size": 50}, REMOTE_ADDR=address)
    assert page.status_code == 200, where
    assert {hit.url for hit in page.context["results"].hits} == expected, where
    content = page.content.decode()
    for case in CASES:
        if not any(url.startswith(case_url(case)) for url in expected):
            assert f"Case {case}," not in content, where  # no snippet of a page the viewer may not read


def test_an_exclusion_hides_its_page_from_search_until_it_is_lifted(client, access_archive):
    client.force_login(user_for(Role.READER))
    found = lambda: {hit["url"] for hit in client.get("/api/search/", {"q": "case open"}).json()["results"]}  # noqa: E731
    assert found() == {"http://open.fr/", "http://open.fr/page"}
    exclusion_lift(exclusion=access_archive.exclusion, user=user_for(Role.CURATOR))
    assert found() == {"http://open.fr/", "http://open.fr/page", EXCLUDED}


def test_anonymous_visitors_are_sent_to_log_in_when_the_site_does_not_open_reading(
    client, access_archive, settings
):
    settings.ACCESS_ANONYMOUS = False
    page = client.get(reverse("storage:text_search"), {"q": "case"})
    assert page.status_code == 302 and page["Location"].startswith(reverse("login"))
    assert client.get("/api/search/", {"q": "case"}).status_code == 401


def test_the_words_of_links_in_a_closed_page_find_nothing_for_those_who_may_not_read_it(
    client, access_archive, tmp_path
):
    body = b'<html><body><p>Staff notes: <a href="http://open.fr/">zeppelin voyage</a></p></body></html>'
    path = write_pages(tmp_path / "closed-links.warc.gz", [("http://staff.fr/links", "text/html", body)])
    warc_file_index(path=path, job_id=access_archive.captures["staff"].job_id)

    client.force_login(user_for(Role.READER))
    assert client.get("/api/search/", {"q": "zeppelin"}).json()["count"] == 0
    client.force_login(user_for(Role.CURATOR))
    hits = {hit["url"]: hit for hit in client.get("/api/search/", {"q": "zeppelin"}).json()["results"]}
    assert set(hits) == {"http://open.fr/", "http://staff.fr/links"}
    assert hits["http://open.fr/"]["anchors"] == ["zeppelin voyage"]
