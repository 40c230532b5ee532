"""Who may read /cdx and /warcs/: sessions and tokens of readers, and the replay process's read-only account.

The last test is pywb's side of it: pywb's own index source and block loader
(imported here, never by the application) read a live server with the
credentials in the URL, as the replay process's configuration gives them.
"""

from __future__ import annotations

import base64
import io
from urllib.parse import urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.urls import reverse
from pywb.utils.loaders import BlockLoader
from pywb.utils.wbexception import NotFoundException
from pywb.warcserver.index.indexsource import RemoteIndexSource
from requests import HTTPError
from rest_framework.authtoken.models import Token
from warcio.archiveiterator import ArchiveIterator

from storage.models import Capture
from storage.services.indexing import warc_file_index
from storage.services.replay import REPLAY_USERNAME, replay_account_ensure, replay_token_rotate
from tests.access import assert_sent_to_login, user_for
from webarchive.permissions import Role, user_set_roles
from webarchive.services import user_token_regenerate

# What the replay account holds: read captures and files, and the files' bytes (pywb's archive_paths).
READ_ONLY = {"storage.view_capture", "storage.view_warcfile", "storage.download_warcfile"}


def replay_user():
    return get_user_model().objects.get(username=REPLAY_USERNAME)


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture
def endpoints(indexed_site):
    """A /cdx query and a /warcs/ range that find something in the crawl."""
    capture = Capture.objects.select_related("warc_file").order_by("urlkey").first()
    cdx = reverse("cdx") + f"?url={capture.url}"
    warc = reverse("warc_bytes", kwargs={"filename": capture.warc_file.name})
    return cdx, warc


def get(client, url: str, authorization: str | None = None):
    headers = {"Authorization": authorization} if authorization else {}
    response = client.get(url, headers=headers)
    if response.streaming:
        response.body = b"".join(response.streaming_content)
    else:
        response.body = response.content
    return response


# -- the replay account -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_replay_account_may_only_view_captures_and_read_warc_files():
    key = replay_account_ensure()
    user = replay_user()
    assert user.is_active and not user.is_staff and not user.is_superuser
    assert not user.has_usable_password()  # nobody logs in with it
    assert not user.groups.exists()  # no role
    assert user.get_all_permissions() == READ_ONLY
    assert Token.objects.get(user=user).key == key
    assert replay_account_ensure() == key  # stable: pywb's configuration keeps working


@pytest.mark.django_db
def test_ensuring_the_account_again_undoes_what_was_added_to_it():
    key = replay_account_ensure()
    user = replay_user()
    user_set_roles(user=user, roles=[Role.CURATOR])
    user.user_permissions.add(Permission.objects.get(codename="change_warcfile"))
    user.is_staff = user.is_superuser = True
    user.is_active = False
    user.set_password("a password someone gave it")
    user.save()
    assert replay_account_ensure() == key
    user = replay_user()
    assert user.is_active and not user.is_staff and not user.is_superuser
    assert not user.has_usable_password() and not user.groups.exists()
    assert user.get_all_permissions() == READ_ONLY


def test_rotating_the_token_revokes_the_old_one(client, endpoints):
    old = replay_account_ensure()
    new = replay_token_rotate()
    assert new != old and replay_account_ensure() == new
    for url in endpoints:
        assert get(client, url, f"Token {old}").status_code == 401
        assert get(client, url, f"Token {new}").status_code == 200


def test_the_replay_account_reads_both_endpoints_with_its_token(client, endpoints):
    key = replay_account_ensure()
    cdx, warc = endpoints
    for authorization in (f"Token {key}", basic(REPLAY_USERNAME, key)):
        response = get(client, cdx, authorization)
        assert response.status_code == 200 and response.body.count(b"\n") >= 1
        response = get(client, warc, authorization)
        assert response.status_code == 200 and response.body.startswith(b"\x1f\x8b")


def test_the_replay_account_is_refused_everywhere_else(client, db):
    key = replay_account_ensure()
    for name in (
        "api:record-list",
        "api:collection-list",
        "api:job-list",
        "api:domain-list",
        "api:crawl-feed",
    ):
        response = get(client, reverse(name), f"Token {key}")
        assert response.status_code == 403, name
    # Its token is no session: the pages send it to the login page.
    assert_sent_to_login(get(client, "/access/", f"Token {key}"), "/access/")
    # And were it logged in, no area would let it in.
    client.force_login(replay_user())
    for url in ("/access/", "/selection/", "/planning/", "/operations/", "/reports/"):
        assert client.get(url).status_code == 403, url


# -- tokens and sessions of people --------------------------------------------------------------------


@pytest.mark.parametrize("role", [*Role, None])
def test_a_users_own_token_gives_their_role(client, endpoints, role):
    key = user_token_regenerate(user=user_for(role)).key
    cdx, warc = endpoints
    response = get(client, cdx, f"Token {key}")
    assert response.status_code == (403 if role is None else 200), (cdx, role)
    # WARC bytes are for crawl engineers (and the replay account): no downloads for the other roles.
    response = get(client, warc, f"Token {key}")
    assert response.status_code == (200 if role == Role.ENGINEER else 403), (warc, role)


def test_basic_auth_with_a_token_needs_its_owners_name(client, endpoints):
    user = user_for(Role.ENGINEER)
    key = user_token_regenerate(user=user).key
    for url in endpoints:
        assert get(client, url, basic(user.username, key)).status_code == 200
        response = get(client, url, basic("someone-else", key))
        assert response.status_code == 401
        assert response.body == b"This token belongs to another user.\n"
        # The account's password is not a token: Basic takes tokens only.
        assert get(client, url, basic(user.username, "correct horse battery staple")).status_code == 401


@pytest.mark.parametrize(
    ("authorization", "message"),
    [
        ("Token 0123456789abcdef0123456789abcdef01234567", "Invalid token."),
        ("Token ", "Invalid token."),
        (basic(REPLAY_USERNAME, "not-a-token"), "Invalid token."),
        ("Basic %%%not-base64", "Malformed Basic credentials."),
    ],
)
def test_a_bad_token_is_refused_with_a_challenge(client, endpoints, authorization, message):
    replay_account_ensure()
    for url in endpoints:
        response = get(client, url, authorization)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Basic realm="web archive"'
        assert response.body.decode().strip() == message


def test_a_bad_token_is_refused_even_with_a_session(client, endpoints):
    client.force_login(user_for(Role.ENGINEER))
    for url in endpoints:
        assert get(client, url).status_code == 200
        assert get(client, url, "Token wrong").status_code == 401


def test_an_inactive_users_token_is_refused(client, endpoints):
    user = user_for(Role.ENGINEER)
    key = user_token_regenerate(user=user).key
    user.is_active = False
    user.save()
    for url in endpoints:
        assert get(client, url, f"Token {key}").status_code == 401


# -- pywb reads the archive with the replay account's credentials ---------------------------------------


def close_sessions(source: RemoteIndexSource, loader: BlockLoader) -> None:
    """Close pywb's keep-alive connections before the live server stops (its threads share the test DB)."""
    source.sesh.close()
    for scheme_loader in loader.cached.values():
        if getattr(scheme_loader, "session", None) is not None:
            scheme_loader.session.close()


@pytest.mark.django_db(transaction=True)
def test_pywb_reads_the_index_and_the_records_with_credentials_in_urls(live_server, crawled_site, warc_paths):
    for path in warc_paths:
        warc_file_index(path=path)
    key = replay_account_ensure()
    capture = Capture.objects.select_related("warc_file").filter(mime="text/html").order_by("urlkey").first()
    server = urlsplit(live_server.url).netloc

    # pywb's configuration: "index: cdx+http://replay:KEY@host/cdx" and archive_paths ".../warcs/".
    source = RemoteIndexSource.init_from_string(f"cdx+http://{REPLAY_USERNAME}:{key}@{server}/cdx")
    loader = BlockLoader()
    try:
        found = list(
            source.load_index({"url": capture.url, "closest": capture.timestamp14, "matchType": "exact"})
        )
        assert found and found[0]["timestamp"] == capture.timestamp14
        assert found[0]["filename"] == capture.warc_file.name

        archive_path = f"http://{REPLAY_USERNAME}:{key}@{server}/warcs/"
        stream = loader.load(
            archive_path + found[0]["filename"], int(found[0]["offset"]), int(found[0]["length"])
        )
        data = stream.read()
        stream.close()
        record = next(iter(ArchiveIterator(io.BytesIO(data))))
        assert record.rec_headers.get_header("WARC-Target-URI") == capture.url
        assert record.rec_type == "response"
    finally:
        close_sessions(source, loader)

    # Without the right token, pywb finds nothing and loads nothing.
    wrong = RemoteIndexSource.init_from_string(f"cdx+http://{REPLAY_USERNAME}:wrong@{server}/cdx")
    loader = BlockLoader()
    try:
        with pytest.raises(NotFoundException):
            list(wrong.load_index({"url": capture.url, "closest": capture.timestamp14}))
        with pytest.raises(HTTPError):
            loader.load(f"http://{REPLAY_USERNAME}:wrong@{server}/warcs/{capture.warc_file.name}", 0, 10)
    finally:
        close_sessions(wrong, loader)
