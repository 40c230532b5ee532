"""Replay only through the application's decision, against a real pywb behind the replay gate.

The archive of tests/access_fixtures.py is read by a real pywb (tests/pywb_server.py) through the live
server. People reach replay as a browser does: the application's replay link (the entry), which
gives a ticket and sends them to pywb, or the replay port directly, with or without a ticket, with
someone else's, a forged or an expired one. Content of a capture must reach only those its rules
allow, from where they ask.
"""

from __future__ import annotations

import re
import time

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse

from storage.replay import gate_ticket_key
from storage.replay_ticket import COOKIE, ticket_make
from tests.access import user_for
from tests.access_fixtures import CASES, STAMP, build_access_archive, case_url, page_body
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from webarchive.permissions import Role


@pytest.fixture
def archive(pywb_replay, transactional_db, tmp_path, settings):  # noqa: F811
    settings.ACCESS_ANONYMOUS = True
    settings.ACCESS_READING_ROOMS = ["10.1.0.0/16"]  # 127.0.0.1, where the tests ask from, is outside
    return build_access_archive(tmp_path / "access-warcs")


def browser(role) -> requests.Session:
    """A client logged in to the application as a fresh user of ``role`` (None: anonymous)."""
    session = requests.Session()
    if role is not None:
        client = Client()
        client.force_login(user_for(role))
        session.cookies.set(
            django_settings.SESSION_COOKIE_NAME, client.cookies[django_settings.SESSION_COOKIE_NAME].value
        )
    return session


def content_of(case: str) -> str:
    return page_body(case, "/").decode().split("<h1>")[1].split("</h1>")[0]


@pytest.mark.parametrize(
    ("role", "room", "profile"),
    [
        (None, False, "public"),
        (Role.READER, False, "reader"),
        (Role.READER, True, "reader-room"),
        (Role.ENGINEER, False, "staff"),
        (Role.MANAGER, True, "staff"),
    ],
    ids=["anonymous", "reader-outside", "reader-inside", "engineer", "manager-inside"],
)
def test_through_the_application_each_person_replays_what_the_rules_allow_and_nothing_else(
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    archive,
    settings,
    role,
    room,
    profile,
):
    if room:
        settings.ACCESS_READING_ROOMS = ["127.0.0.0/8"]
    session = browser(role)
    for case in CASES:
        entry = live_server.url + reverse(
            "storage:replay_entry", kwargs={"stamp": STAMP + "mp_", "url": case_url(case)}
        )
        answer = session.get(entry, timeout=30)
        where = f"{case} as {profile}"
        if profile in CASES[case]:
            assert answer.status_code == 200, where
            assert answer.url.startswith(f"{pywb_replay.url}archive-{profile}/{STAMP}mp_/"), where
            assert content_of(case) in answer.text, where
            continue
        assert content_of(case) not in answer.text, where
        assert not answer.url.startswith(pywb_replay.url), where  # never sent on to pywb
        if role is None:
            assert answer.status_code == 200 and "/login/" in answer.url, where  # the login page
        else:
            assert answer.status_code == 403, where
            assert "Access rule:" in answer.text or "No access rule" in answer.text or "Access" in answer.text


def test_the_replay_port_without_a_ticket_sends_the_browser_to_the_application(pywb_replay, archive):  # noqa: F811
    for collection in ("archive", "archive-public", "archive-reader", "archive-staff"):
        direct = requests.get(
            f"{pywb_replay.url}{collection}/{STAMP}mp_/{case_url('staff')}", timeout=30, allow_redirects=False
        )
        assert direct.status_code == 302, collection
        assert direct.headers["Location"] == (
            f"{django_settings.WEBARCHIVE_URL}access/replay/{STAMP}mp_/{case_url('staff')}"
        )
        # Followed anonymously: the login page, never the content.
        followed = requests.get(direct.headers["Location"], timeout=30)
        assert "/login/" in followed.url and content_of("staff") not in followed.text


def test_a_ticket_gives_its_own_collection_and_only_what_its_profile_may_read(pywb_replay, archive):  # noqa: F811
    staff_page = f"{STAMP}mp_/{case_url('staff')}"
    # A reader's ticket asking the staff collection is sent to the reader's own collection...
    wider = pywb_replay.get(f"{pywb_replay.url}archive-staff/{staff_page}", profile="reader")
    assert wider.status_code == 302
    assert wider.headers["Location"] == f"/archive-reader/{staff_page}"
    # ...where a staff-only capture is not found: pywb's index for readers does not have it.
    hidden = pywb_replay.get(f"{pywb_replay.url}archive-reader/{staff_page}", profile="reader")
    assert hidden.status_code == 404
    assert content_of("staff") not in hidden.text
    assert "its access rule does not let you read it from here" in hidden.text
    # What readers may read replays, and pywb's own CDX API lists only that.
    shown = pywb_replay.get(
        f"{pywb_replay.url}archive-reader/{STAMP}mp_/{case_url('readers')}", profile="reader"
    )
    assert shown.status_code == 200 and content_of("readers") in shown.text
    listed = pywb_replay.get(
        f"{pywb_replay.url}archive-reader/cdx", profile="reader", params={"url": "*.fr", "output": "json"}
    )
    hosts = set(re.findall(r'"url": "http://([a-z-]+)\.fr/', listed.text))
    assert hosts == {case for case, profiles in CASES.items() if "reader" in profiles}


def test_no_raw_bytes_for_readers(pywb_replay, archive):  # noqa: F811
    raw = f"{STAMP}id_/{case_url('open')}"
    for profile in ("public", "reader", "reader-room"):
        refused = pywb_replay.get(f"{pywb_replay.url}archive-{profile}/{raw}", profile=profile)
        assert refused.status_code == 403, profile
        assert content_of("open") not in refused.text
    staff = pywb_replay.get(f"{pywb_replay.url}archive-staff/{raw}", profile="staff")
    assert staff.status_code == 200 and staff.content == page_body("open", "/")


def test_a_forged_expired_or_borrowed_ticket_is_no_ticket(pywb_replay, archive):  # noqa: F811
    key = gate_ticket_key()
    page = f"{pywb_replay.url}archive-staff/{STAMP}mp_/{case_url('staff')}"
    reader = ticket_make(key=key, profile="reader", address="127.0.0.1", seconds=600)
    forged = reader.replace("reader.", "staff.", 1)
    tickets = {
        "forged": forged,
        "wrong key": ticket_make(key="not-the-key", profile="staff", address="127.0.0.1", seconds=600),
        "expired": ticket_make(
            key=key, profile="staff", address="127.0.0.1", seconds=600, now=time.time() - 3600
        ),
        "another address": ticket_make(key=key, profile="staff", address="10.1.2.3", seconds=600),
        "garbage": "x" * 40,
    }
    for name, ticket in tickets.items():
        answer = requests.get(page, cookies={COOKIE: ticket}, timeout=30, allow_redirects=False)
        assert answer.status_code == 302, name
        assert "/access/replay/" in answer.headers["Location"], name
        assert content_of("staff") not in answer.text, name
        taken = requests.get(
            f"{pywb_replay.url}_ticket",
            params={"t": ticket, "next": "/archive-staff/"},
            timeout=30,
            allow_redirects=False,
        )
        assert taken.status_code == 403 and "Set-Cookie" not in taken.headers, name


def test_the_ticket_link_sets_the_cookie_and_keeps_the_browser_in_its_collection(pywb_replay, archive):  # noqa: F811
    ticket = ticket_make(key=gate_ticket_key(), profile="reader", address="127.0.0.1", seconds=600)
    taken = requests.get(
        f"{pywb_replay.url}_ticket",
        params={"t": ticket, "next": f"/archive-staff/{STAMP}/{case_url('staff')}"},
        timeout=30,
        allow_redirects=False,
    )
    assert taken.status_code == 302
    assert taken.headers["Location"] == "/archive-reader/"  # not another profile's collection
    assert f"{COOKIE}={ticket}" in taken.headers["Set-Cookie"] and "HttpOnly" in taken.headers["Set-Cookie"]
    # Never off the replay site, however the address is written.
    for outside in (
        "http://outside.example/",
        "//outside.example/archive-reader/",
        "/\\outside.example/",
        "",
    ):
        taken = requests.get(
            f"{pywb_replay.url}_ticket",
            params={"t": ticket, "next": outside},
            timeout=30,
            allow_redirects=False,
        )
        assert taken.headers["Location"] == "/archive-reader/", outside


def test_pywbs_internal_server_cannot_be_asked_directly(pywb_replay, archive):  # noqa: F811
    deadline = time.monotonic() + 10
    port = None
    while port is None and time.monotonic() < deadline:
        found = re.search(r"internal server is on localhost:(\d+)", pywb_replay.log_text())
        port = found and found.group(1)
    assert port, pywb_replay.log_text()
    for path in (
        f"archive-staff/index?url={case_url('staff')}",
        f"archive-staff/resource?url={case_url('staff')}",
    ):
        answer = requests.get(f"http://localhost:{port}/{path}", timeout=30)
        assert answer.status_code == 404, path
        assert content_of("staff") not in answer.text
