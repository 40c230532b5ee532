import pytest

from tests.factories import UserFactory
from tests.testsite_fixtures import testsite  # noqa: F401  (the session-wide test website)
from webarchive.permissions import Role


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests create many users; the production hasher is slow on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def user_with_role(db):
    """Make a user holding the given roles (none: a user with no role)."""

    def make(*roles: Role, **fields):
        return UserFactory(roles=list(roles), **fields)

    return make


@pytest.fixture
def superuser(db):
    return UserFactory(username="administrator", is_superuser=True, is_staff=True)
