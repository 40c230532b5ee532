import http.client

import pytest

from tests.access_fixtures import access_archive  # noqa: F401  (captures under every access rule)
from tests.archive_fixtures import copy_warcs, crawled_site, warc_paths  # noqa: F401  (a crawl, as WARC files)
from tests.crawl_worker import crawl_worker  # noqa: F401  (a real Celery worker, for the crawl tests)
from tests.factories import UserFactory
from tests.planning_fixtures import (  # noqa: F401  (planning objects, built through the services)
    channels,
    default_template,
    make_domain,
    schedule,
    selective,
    snapshot,
    template,
)
from tests.testsite_fixtures import testsite  # noqa: F401  (the session-wide test website)
from webarchive.permissions import Role

# pywb, imported by some test modules (never by the application), raises http.client's header limit for
# the whole process; the crawler's "too many headers" rule is the standard library's default.
_HTTP_MAX_HEADERS = http.client._MAXHEADERS


@pytest.fixture(autouse=True)
def _http_header_limit_as_in_the_application():
    http.client._MAXHEADERS = _HTTP_MAX_HEADERS


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests create many users; the production hasher is slow on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _crawl_output_in_tmp(settings, tmp_path):
    """WARC files and crawl logs that a test makes (a job ending writes some) go to its own folder."""
    settings.HARVEST_WARC_DIR = tmp_path / "warcs"
    settings.HARVEST_SPOOL_DIR = tmp_path / "spool"
    settings.VAR_DIR = tmp_path / "var"  # what is read from it at run time (the demo's storage nodes)
    # Every test site is on 127.0.0.1: a pace per address would only slow the tests down (the tests
    # of politeness across sites set their own, tests/crawler/test_politeness.py).
    settings.HARVEST_IP_MIN_INTERVAL = 0.0


@pytest.fixture(autouse=True)
def _empty_cache():
    """Each test starts with an empty cache: what one test rendered (a dashboard) never shows in the next,
    whose rows may have the same ids (SQLite reuses them once a test's transaction is rolled back)."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def user_with_role(db):
    """Make a user holding the given roles (none: a user with no role)."""

    def make(*roles: Role, **fields):
        return UserFactory(roles=list(roles), **fields)

    return make


@pytest.fixture
def as_role(client):
    """The test client, logged in as a new user holding ``role``."""

    def login(role):
        client.force_login(UserFactory(roles=[role]))
        return client

    return login


@pytest.fixture
def superuser(db):
    return UserFactory(username="administrator", is_superuser=True, is_staff=True)
