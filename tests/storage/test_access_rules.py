"""Who may read what: every role, rule and address on the capture pages, search, /cdx, /warcs/, the raw
record and the replay entry (pywb itself: tests/storage/test_replay_access.py).

The archive holds one capture per case of tests/access_fixtures.py (open, readers, reading room,
staff only, embargoed, embargo over, a definition's rule, two collections, no rule, imported) and
one excluded URL. Each role is tried from inside a reading room (10.1.2.3) and from outside
(192.0.2.10), and anonymously.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.urls import reverse
from django.utils import timezone

from storage import access
from storage.models import Capture
from storage.models_access import AccessLevel, ExclusionKind
from storage.services.access import access_rule_save, exclusion_create, exclusion_lift
from tests.access import user_for
from tests.access_fixtures import CASES, EXCLUDED, STAMP, case_url
from webarchive.permissions import Role

INSIDE, OUTSIDE = "10.1.2.3", "192.0.2.10"
STAFF = [Role.LIBRARIAN, Role.CURATOR, Role.ENGINEER, Role.MANAGER, "admin"]
DOWNLOADERS = {Role.ENGINEER, "admin"}  # WARC bytes and raw records


def profile_of(role, address: str) -> str:
    if role is None:
        return "public"
    if role == Role.READER:
        return "reader-room" if address == INSIDE else "reader"
    return "staff"


def cdx_urls(response) -> list[str]:
    return [line.split(" ", 2)[2] for line in b"".join(response.streaming_content).decode().splitlines()]


@pytest.mark.parametrize("address", [INSIDE, OUTSIDE], ids=["inside", "outside"])
@pytest.mark.parametrize("role", [None, Role.READER, *STAFF], ids=lambda role: str(role or "anonymous"))
def test_every_surface_shows_each_role_exactly_what_its_rules_allow(client, access_archive, role, address):
    profile = profile_of(role, address)
    if role is not None:
        client.force_login(user_for(role))
    get = lambda path, **data: client.get(path, data, REMOTE_ADDR=address)  # noqa: E731
    for case, capture in access_archive.captures.items():
        allowed = profile in CASES[case]
        where = f"{case} as {role or 'anonymous'} {address}"

        page = get(capture.get_absolute_url())
        assert page.status_code == (200 if allowed else 404), where
        if allowed:
            assert "access-rule" in page.content.decode()

        search = get(reverse("storage:search"), url=case_url(case))
        assert search.status_code == 200, where
        assert search.context["total"] == (1 if allowed else 0), where

        cdx = get(reverse("cdx"), url=case_url(case), matchType="prefix")
        if role is None:
            assert cdx.status_code == 401, where  # a machine endpoint: no anonymous lookups
        else:
            assert cdx.status_code == 200, where
            expected = 2 if allowed else 0  # "/" and "/page"
            if case == "open" and profile == "staff":
                expected = 3  # and the excluded page, which staff still see
            assert len(cdx_urls(cdx)) == expected, where

        entry = get(reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": case_url(case)}))
        if allowed:
            assert entry.status_code == 302, where
            target = urlsplit(entry["Location"])
            assert entry["Location"].startswith("http://127.0.0.1:8080/_ticket?"), where
            assert parse_qs(target.query)["next"] == [f"/archive-{profile}/{STAMP}/{case_url(case)}"], where
        elif role is None:
            assert entry.status_code == 302 and entry["Location"].startswith(reverse("login")), where
        else:
            assert entry.status_code == 403, where
            assert "refusal-rule" in entry.content.decode(), where

        raw = get(reverse("storage:capture_raw", kwargs={"pk": capture.pk}))
        if role is None:
            assert raw.status_code == 302, where
        else:
            assert raw.status_code == (200 if role in DOWNLOADERS else 403), where

        warc = get(reverse("warc_bytes", kwargs={"filename": capture.warc_file.name}))
        if role is None:
            assert warc.status_code == 401, where
        else:
            assert warc.status_code == (200 if role in DOWNLOADERS else 403), where


@pytest.mark.parametrize("role", [None, Role.READER, *STAFF], ids=lambda role: str(role or "anonymous"))
def test_an_excluded_url_is_readable_by_staff_only_and_again_by_all_once_lifted(client, access_archive, role):
    if role is not None:
        client.force_login(user_for(role))
    staff = profile_of(role, OUTSIDE) == "staff"
    excluded = access_archive.excluded

    def readable() -> dict[str, bool]:
        page = client.get(excluded.get_absolute_url())
        search = client.get(reverse("storage:search"), {"url": EXCLUDED})
        entry = client.get(reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": EXCLUDED}))
        cdx = client.get(reverse("cdx"), {"url": EXCLUDED})
        return {
            "page": page.status_code == 200,
            "search": search.context["total"] == 1,
            "replay": entry.status_code == 302 and "_ticket" in entry["Location"],
            "cdx": role is not None and len(cdx_urls(cdx)) == 1,
        }

    in_force = readable()
    assert in_force == {"page": staff, "search": staff, "replay": staff, "cdx": staff}
    if not staff:
        # Hidden, not refused: for readers the archive does not have it (404, not a 403 naming a rule).
        entry = client.get(reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": EXCLUDED}))
        assert entry.status_code == 404
    else:
        page = client.get(excluded.get_absolute_url()).content.decode()
        assert "Excluded from access" in page

    exclusion_lift(exclusion=access_archive.exclusion)
    assert readable() == {"page": True, "search": True, "replay": True, "cdx": role is not None}
    # Stored, indexed and audited all along: the capture row and its file never moved.
    assert Capture.objects.get(pk=excluded.pk).warc_file_id == excluded.warc_file_id


def test_an_exclusion_takes_a_prefix_or_a_whole_domain_with_its_subdomains_and_ports(access_archive):
    reader = access.Viewer(access.READER)
    captures = Capture.objects.all()
    before = set(access.visible_captures(captures, reader).values_list("url", flat=True))
    assert case_url("readers", "/page") in before

    exclusion_create(kind=ExclusionKind.PREFIX, target="readers.fr/pa", reason="r", requested_by="p")
    after = set(access.visible_captures(captures, reader).values_list("url", flat=True))
    assert before - after == {case_url("readers", "/page")}

    domain = exclusion_create(kind=ExclusionKind.DOMAIN, target="definition.fr", reason="r", requested_by="p")
    assert not access.visible_captures(captures.filter(url__contains="definition.fr"), reader).exists()
    assert domain.covers("fr,definition,www)/") and domain.covers("fr,definition:8080)/")
    assert not domain.covers("fr,definition-shop)/") and not domain.covers("fr,definitions)/")


def test_an_embargo_closes_until_its_date_and_opens_on_it(client, access_archive):
    rule = access_archive.rules["embargoed"]
    capture = access_archive.captures["embargoed"]
    today = timezone.localdate()
    reader = access.Viewer(access.READER)
    assert not access.visible_captures(Capture.objects.filter(pk=capture.pk), reader).exists()
    assert access.capture_decision(capture, reader).describe().startswith("Embargoed until")
    # The same rule seen on its date, and the day before it.
    on_the_day = access.visible_captures(
        Capture.objects.filter(pk=capture.pk), reader, day=rule.embargo_until
    )
    assert on_the_day.exists()
    the_day_before = rule.embargo_until - timedelta(days=1)
    assert not access.visible_captures(
        Capture.objects.filter(pk=capture.pk), reader, day=the_day_before
    ).exists()

    # The curator moves the embargo to today: the capture is open from today, anonymous visitors included.
    access_rule_save(rule=rule, expected_version=rule.version, embargo_until=today)
    assert client.get(capture.get_absolute_url()).status_code == 200


def test_the_capture_page_names_the_rule_that_decides(client, access_archive):
    client.force_login(user_for(Role.READER))
    page = client.get(access_archive.captures["mixed"].get_absolute_url()).content.decode()
    # Two collections cover it (staff only, open): the most open decides, and is named.
    assert "Open" in page and "Access mixed" in page
    assert "raw-link" not in page  # readers download nothing


def test_a_capture_no_rule_covers_is_closed(access_archive):
    for case in ("norule", "imported"):
        decision = access.capture_decision(access_archive.captures[case], access.Viewer(access.READER, True))
        assert not decision.allowed and decision.rule is None
        assert decision.describe() == "No access rule: staff only"


def test_without_anonymous_reading_visitors_are_sent_to_the_login_page(client, access_archive, settings):
    settings.ACCESS_ANONYMOUS = False
    capture = access_archive.captures["open"]
    for url in (
        capture.get_absolute_url(),
        reverse("storage:search") + "?url=" + case_url("open"),
        reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": case_url("open")}),
    ):
        answer = client.get(url)
        assert answer.status_code == 302 and answer["Location"].startswith(reverse("login")), url


def test_the_replay_account_asks_the_cdx_api_for_one_kind_of_viewer(client, access_archive):
    from storage.services.replay import replay_account_ensure

    token = replay_account_ensure()
    header = {"HTTP_AUTHORIZATION": f"Token {token}"}
    counts = {}
    for profile in access.PROFILES:
        answer = client.get(reverse("cdx"), {"url": "*.fr", "access": profile}, **header)
        assert answer.status_code == 200
        lines = b"".join(answer.streaming_content).decode().splitlines()
        counts[profile] = {line.split('"url": "')[1].split('"')[0] for line in lines}
        # Each line says which rule lets this viewer read it, for the replay banner.
        assert all('"access_rule": ' in line for line in lines)
    for profile, urls in counts.items():
        readable = {case for case in CASES if profile in CASES[case]}
        assert {urlsplit(url).hostname.removesuffix(".fr") for url in urls} == readable, profile
    refused = client.get(reverse("cdx"), {"url": "*.fr", "access": "everything"}, **header)
    assert refused.status_code == 400
    assert "access=everything: must be one of public, reader, reader-room, staff." in refused.content.decode()


def test_a_reader_cannot_widen_the_cdx_api_with_a_profile(client, access_archive):
    client.force_login(user_for(Role.READER))
    answer = client.get(reverse("cdx"), {"url": "staff.fr", "access": "staff"}, REMOTE_ADDR=OUTSIDE)
    assert answer.status_code == 200 and b"".join(answer.streaming_content) == b""


@pytest.mark.parametrize(
    ("kind", "target", "message"),
    [
        (ExclusionKind.URL, "", "Type one URL or domain, without spaces."),
        (ExclusionKind.URL, "http://a b/", "Type one URL or domain, without spaces."),
        (ExclusionKind.DOMAIN, "localhost", "“localhost” is not a domain name."),
        (ExclusionKind.DOMAIN, "http://", "“http://” is not a domain name."),
    ],
)
def test_an_exclusion_of_what_is_not_a_url_is_refused_and_nothing_is_saved(db, kind, target, message):
    from django.core.exceptions import ValidationError

    from storage.models_access import Exclusion

    with pytest.raises(ValidationError) as refused:
        exclusion_create(kind=kind, target=target, reason="r", requested_by="p")
    assert refused.value.message_dict["target"] == [message]
    assert not Exclusion.objects.exists()


def test_a_rule_is_for_one_collection_or_one_definition(access_archive):
    from django.core.exceptions import ValidationError

    collection = access_archive.collections["open"]
    definition = access_archive.captures["norule"].job.harvest_definition
    with pytest.raises(ValidationError):
        access_rule_save(collection=collection, harvest_definition=definition, level=AccessLevel.OPEN)
    with pytest.raises(ValidationError):
        access_rule_save(level=AccessLevel.OPEN)
    with pytest.raises(ValidationError):  # the collection has its rule already
        access_rule_save(collection=collection, level=AccessLevel.STAFF)
    assert access_archive.rules["open"].level == AccessLevel.OPEN


@pytest.mark.parametrize("stamp", ["*", "2024*", "20240315093000im_", ""])
def test_the_replay_entry_takes_pywbs_other_addresses(client, access_archive, stamp):
    url = (
        reverse("storage:replay_entry", kwargs={"stamp": stamp, "url": case_url("open")})
        if stamp
        else (f"/access/replay//{case_url('open')}")
    )
    entry = client.get(url)
    assert entry.status_code == 302, url
    assert parse_qs(urlsplit(entry["Location"]).query)["next"] == [
        f"/archive-public/{stamp}/{case_url('open')}"
    ]


def test_a_replay_entry_for_what_is_not_a_url_or_not_archived_is_not_found(client, access_archive):
    client.force_login(user_for(Role.READER))
    for url in ("http://absent.fr/", "http://open.fr/nothing-here"):
        answer = client.get(reverse("storage:replay_entry", kwargs={"stamp": STAMP, "url": url}))
        assert answer.status_code == 404 and "The archive has no capture" in answer.content.decode()
    answer = client.get(f"/access/replay/{STAMP}/http://open.fr/%00")
    assert answer.status_code == 404
