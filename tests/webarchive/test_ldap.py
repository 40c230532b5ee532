"""LDAP login against a real slapd (tests.ldap_server): users, roles from groups, admins, local accounts.

Every login goes through the login page with the test client, so django-axes,
the LDAP backend and the model backend all take part as in production. The
directory is shared by the whole session: a test that changes it puts it back.
"""

import importlib.util
import logging
import os
import sys

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import BACKEND_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse

from tests import ldap_server as directory
from tests.factories import PASSWORD, UserFactory
from tests.ldap_server import ldap_server  # noqa: F401  (the session fixture)
from webarchive.permissions import Role, user_roles

pytestmark = [pytest.mark.ldap, pytest.mark.django_db]

User = get_user_model()

LDAP_BACKEND = "webarchive.ldap.RoleMappingLDAPBackend"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
BACKENDS = ["axes.backends.AxesStandaloneBackend", LDAP_BACKEND, MODEL_BACKEND]

ROLE_GROUPS = {
    Role.LIBRARIAN.value: directory.group_dn("librarians"),
    Role.CURATOR.value: directory.group_dn("curators"),
    Role.ENGINEER.value: directory.group_dn("engineers"),
    # Written as an administrator might: group DNs are compared without regard to case.
    Role.MANAGER.value: "CN=Managers,OU=Groups,DC=example,DC=org",
    Role.READER.value: directory.group_dn("readers"),
}
ADMIN_GROUP = directory.group_dn("admins")


@pytest.fixture
def ldap_login(settings, ldap_server):  # noqa: F811
    """Configure the application for the test directory; the directory server itself."""
    import ldap
    from django_auth_ldap.config import GroupOfNamesType, LDAPSearch

    for name in [n for n in dir(django_settings) if n.startswith("AUTH_LDAP_")]:
        delattr(settings, name)
    settings.AUTH_LDAP_SERVER_URI = ldap_server.uri
    settings.AUTH_LDAP_BIND_DN = ldap_server.bind_dn
    settings.AUTH_LDAP_BIND_PASSWORD = ldap_server.bind_password
    settings.AUTH_LDAP_USER_SEARCH = LDAPSearch(ldap_server.people_dn, ldap.SCOPE_SUBTREE, "(uid=%(user)s)")
    settings.AUTH_LDAP_GROUP_SEARCH = LDAPSearch(
        ldap_server.groups_dn, ldap.SCOPE_SUBTREE, "(objectClass=groupOfNames)"
    )
    settings.AUTH_LDAP_GROUP_TYPE = GroupOfNamesType()
    settings.AUTH_LDAP_USER_ATTR_MAP = {"first_name": "givenName", "last_name": "sn", "email": "mail"}
    settings.AUTH_LDAP_ALWAYS_UPDATE_USER = True
    settings.AUTH_LDAP_ROLE_GROUPS = dict(ROLE_GROUPS)
    settings.AUTH_LDAP_USER_FLAGS_BY_GROUP = {"is_staff": ADMIN_GROUP, "is_superuser": ADMIN_GROUP}
    settings.AUTH_LDAP_CONNECTION_OPTIONS = {ldap.OPT_NETWORK_TIMEOUT: 5.0}
    settings.AUTH_LDAP_CACHE_TIMEOUT = 0
    settings.AUTHENTICATION_BACKENDS = list(BACKENDS)
    return ldap_server


def log_in(client, username: str, password: str):
    client.logout()
    return client.post(reverse("login"), {"username": username, "password": password})


def assert_logged_in(client, response, username: str, backend: str = LDAP_BACKEND):
    """The login page sent the user home, and the session holds that user, from that backend."""
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == reverse("home")
    user = User.objects.get(username=username)
    assert client.session[SESSION_KEY] == str(user.pk)
    assert client.session[BACKEND_SESSION_KEY] == backend
    home = client.get(reverse("home"), follow=True)  # readers land in the reading room
    assert home.status_code == 200
    assert home.context["user"].pk == user.pk
    return user


def assert_not_logged_in(client, response):
    assert response.status_code == 200
    assert "registration/login.html" in [t.name for t in response.templates]
    errors = response.context["form"].non_field_errors()
    assert any("correct username and password" in str(e) for e in errors), errors
    assert 'class="alert alert-danger"' in response.content.decode()
    assert SESSION_KEY not in client.session
    home = client.get(reverse("home"))
    assert home.status_code == 302  # anonymous: sent to the login page
    assert home["Location"].startswith(reverse("login"))


def area_status(client, area: str) -> int:
    return client.get(reverse("area", kwargs={"area": area})).status_code


def fresh(user):
    """The user as the database has it now (no cached roles)."""
    return User.objects.get(pk=user.pk)


# 1. A good password logs in, mirrors the directory entry and gives the role of the group.


@pytest.mark.parametrize(
    ("uid", "role", "open_areas", "closed_areas"),
    [
        ("alice", Role.LIBRARIAN, ["selection", "access"], ["operations", "planning", "reports"]),
        ("bob", Role.ENGINEER, ["selection", "operations", "planning", "reports", "access"], []),
        ("judy", Role.READER, ["access"], ["selection", "operations", "planning", "reports"]),
    ],
)
def test_ldap_user_logs_in_with_the_role_of_their_group(
    client, ldap_login, uid, role, open_areas, closed_areas
):
    assert not User.objects.filter(username=uid).exists()

    user = assert_logged_in(client, log_in(client, uid, directory.password_for(uid)), uid)

    given, sn, mail = directory.USERS[uid]
    assert (user.first_name, user.last_name, user.email) == (given, sn, mail)
    assert not user.has_usable_password()  # the directory checks the password, not Django
    assert user.is_superuser is False
    assert user.is_staff is False
    assert user_roles(user) == frozenset({role})
    assert set(user.groups.values_list("name", flat=True)) == {role.value}

    home = client.get(reverse("home"), follow=True).content.decode()
    assert f"{given} {sn}" in home
    for area in open_areas:
        assert f'data-area="{area}"' in home
        assert area_status(client, area) == 200, area
    for area in closed_areas:
        assert f'data-area="{area}"' not in home
        assert area_status(client, area) == 403, area
    assert client.get("/admin/").status_code == 403  # the admin site is for administrators only


# 2. A bad password does not log in.


@pytest.mark.parametrize(
    ("username", "password"),
    [
        ("alice", "not-alice-password"),
        ("alice", directory.password_for("bob")),
        ("nobody", "whatever-password"),
    ],
)
def test_wrong_password_or_unknown_user_does_not_log_in(client, ldap_login, username, password):
    response = log_in(client, username, password)

    assert_not_logged_in(client, response)
    assert not User.objects.filter(username=username).exists()
    assert area_status(client, "selection") == 302  # anonymous: sent to the login page


# 3. A user in no mapped group logs in with no role.


def test_user_in_no_mapped_group_logs_in_without_a_role(client, ldap_login):
    user = assert_logged_in(client, log_in(client, "dave", directory.password_for("dave")), "dave")

    assert (user.first_name, user.last_name, user.email) == ("Dave", "Dalton", "dave@example.org")
    assert user_roles(user) == frozenset()
    assert not user.groups.exists()
    assert user.is_superuser is False
    for area in ("selection", "planning", "operations", "reports", "access"):
        assert area_status(client, area) == 403, area


# 4. Several groups give several roles; leaving a group in the directory removes the role.


def test_user_in_several_groups_gets_several_roles(client, ldap_login):
    user = assert_logged_in(client, log_in(client, "carol", directory.password_for("carol")), "carol")

    # The manager group is configured in capitals (ROLE_GROUPS): still recognised.
    assert user_roles(user) == frozenset({Role.CURATOR, Role.MANAGER})
    assert area_status(client, "selection") == 200
    assert area_status(client, "planning") == 200
    assert area_status(client, "reports") == 200
    assert area_status(client, "operations") == 403


def test_roles_follow_the_directory_at_the_next_login(client, ldap_login):
    server = ldap_login
    user = assert_logged_in(client, log_in(client, "frank", directory.password_for("frank")), "frank")
    assert user_roles(user) == frozenset({Role.LIBRARIAN, Role.CURATOR})
    assert area_status(client, "planning") == 200
    assert area_status(client, "operations") == 403
    # A Django group that is not a role is the application's business: kept.
    newsletter = Group.objects.create(name="newsletter")
    user.groups.add(newsletter)

    with directory.restored_groups(server, "curators", "engineers"):
        server.remove_member("curators", "frank")
        server.add_member("engineers", "frank")
        assert directory.user_dn("frank") not in server.members("curators")

        # Still logged in: nothing changes until the next login.
        assert user_roles(fresh(user)) == frozenset({Role.LIBRARIAN, Role.CURATOR})

        user = assert_logged_in(client, log_in(client, "frank", directory.password_for("frank")), "frank")
        assert user_roles(fresh(user)) == frozenset({Role.LIBRARIAN, Role.ENGINEER})
        assert set(fresh(user).groups.values_list("name", flat=True)) == {
            "librarian",
            "engineer",
            "newsletter",
        }
        assert area_status(client, "operations") == 200

        server.remove_member("engineers", "frank")
        user = assert_logged_in(client, log_in(client, "frank", directory.password_for("frank")), "frank")
        assert user_roles(fresh(user)) == frozenset({Role.LIBRARIAN})
        assert area_status(client, "operations") == 403
        assert area_status(client, "planning") == 403
        assert area_status(client, "selection") == 200

    assert User.objects.filter(username="frank").count() == 1


# 5. The admin group makes administrators.


def test_admin_group_member_becomes_superuser(client, ldap_login):
    user = assert_logged_in(client, log_in(client, "erin", directory.password_for("erin")), "erin")

    assert user.is_superuser is True
    assert user.is_staff is True
    assert user_roles(user) == frozenset()  # administrator, but no role group
    assert client.get("/admin/").status_code == 200
    assert area_status(client, "admin") == 200
    assert area_status(client, "operations") == 200  # superusers enter every area


def test_leaving_the_admin_group_removes_administrator_rights(client, ldap_login):
    server = ldap_login
    user = assert_logged_in(client, log_in(client, "heidi", directory.password_for("heidi")), "heidi")
    assert (user.is_superuser, user.is_staff) == (True, True)
    assert user_roles(user) == frozenset({Role.ENGINEER})

    with directory.restored_groups(server, "admins"):
        server.remove_member("admins", "heidi")
        user = assert_logged_in(client, log_in(client, "heidi", directory.password_for("heidi")), "heidi")

        user = fresh(user)
        assert (user.is_superuser, user.is_staff) == (False, False)
        assert user_roles(user) == frozenset({Role.ENGINEER})
        assert client.get("/admin/").status_code == 403
        assert area_status(client, "operations") == 200  # still an engineer


# 6. Directory attributes are mirrored at every login.


def test_changed_directory_attributes_are_mirrored_at_the_next_login(client, ldap_login):
    server = ldap_login
    user = assert_logged_in(client, log_in(client, "grace", directory.password_for("grace")), "grace")
    assert (user.first_name, user.last_name, user.email) == ("Grace", "Garnier", "grace@example.org")
    # A local edit is overwritten: the directory is the source of truth.
    User.objects.filter(pk=user.pk).update(first_name="Local edit")

    try:
        server.replace_attr("grace", "mail", "grace.hopper@example.net")
        server.replace_attr("grace", "sn", "Hopper")
        assert server.attr("grace", "mail") == ["grace.hopper@example.net"]

        assert_logged_in(client, log_in(client, "grace", directory.password_for("grace")), "grace")
        user = fresh(user)
        assert (user.first_name, user.last_name, user.email) == (
            "Grace",
            "Hopper",
            "grace.hopper@example.net",
        )
        assert "Grace Hopper" in client.get(reverse("home")).content.decode()
        assert user_roles(user) == frozenset({Role.LIBRARIAN})
    finally:
        server.replace_attr("grace", "mail", "grace@example.org")
        server.replace_attr("grace", "sn", "Garnier")


# 7. Local accounts keep working next to the directory.


def test_local_account_still_logs_in_when_ldap_is_configured(client, ldap_login):
    local = UserFactory(username="localcurator", roles=[Role.CURATOR])

    user = assert_logged_in(client, log_in(client, "localcurator", PASSWORD), "localcurator", MODEL_BACKEND)

    assert user.pk == local.pk
    assert user.has_usable_password()
    assert user_roles(user) == frozenset({Role.CURATOR})  # the LDAP backend left the roles alone
    assert area_status(client, "planning") == 200
    assert area_status(client, "operations") == 403

    assert_not_logged_in(client, log_in(client, "localcurator", "not the password"))


def test_axes_locks_out_an_ldap_user_after_five_failures(client, ldap_login):
    for _ in range(5):
        log_in(client, "ivan", "wrong-password")

    response = log_in(client, "ivan", directory.password_for("ivan"))

    assert response.status_code == 429
    assert "registration/locked_out.html" in [t.name for t in response.templates]
    assert SESSION_KEY not in client.session
    assert not User.objects.filter(username="ivan").exists()


def test_unreadable_groups_refuse_the_login_without_a_server_error(client, ldap_login, settings, caplog):
    import ldap
    from django_auth_ldap.config import LDAPSearch

    # A group search base that is not in the directory: the group search fails.
    settings.AUTH_LDAP_GROUP_SEARCH = LDAPSearch(
        f"ou=nowhere,{directory.BASE_DN}", ldap.SCOPE_SUBTREE, "(objectClass=groupOfNames)"
    )
    known = UserFactory(username="carol", roles=[Role.LIBRARIAN])

    with caplog.at_level(logging.ERROR, logger="webarchive.ldap"):
        response = log_in(client, "carol", directory.password_for("carol"))

    assert_not_logged_in(client, response)
    [record] = [r for r in caplog.records if r.name == "webarchive.ldap"]
    assert record.levelno == logging.ERROR
    assert record.getMessage().startswith(
        "LDAP login of carol refused: cannot read its groups: NO_SUCH_OBJECT("
    )
    assert user_roles(fresh(known)) == frozenset({Role.LIBRARIAN})  # a refused login changes no role


# The configuration read from the environment (webarchive/ldap_settings.py, webarchive/settings.py).


def load_fresh(module_name: str):
    """Run a module's file again into a new module object, leaving sys.modules alone."""
    spec = importlib.util.find_spec(module_name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def environment(monkeypatch):
    """Set AUTH_LDAP_* variables; returns (ldap_settings, settings) modules as read from them."""
    for name in list(os.environ):
        if name.startswith("AUTH_LDAP_"):
            monkeypatch.delenv(name)

    def read(**variables):
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        ldap_settings = load_fresh("webarchive.ldap_settings")
        # settings.py does `from webarchive.ldap_settings import *`: give it the fresh one.
        monkeypatch.setitem(sys.modules, "webarchive.ldap_settings", ldap_settings)
        project_settings = load_fresh("webarchive.settings")
        return ldap_settings, project_settings

    return read


def use_settings(settings, project_settings):
    """Apply the LDAP part of freshly read project settings to the running test."""
    for name in [n for n in dir(django_settings) if n.startswith("AUTH_LDAP_")]:
        delattr(settings, name)
    for name in dir(project_settings):
        if name.startswith("AUTH_LDAP_"):
            setattr(settings, name, getattr(project_settings, name))
    settings.AUTHENTICATION_BACKENDS = project_settings.AUTHENTICATION_BACKENDS


def test_without_server_uri_ldap_is_off(environment):
    ldap_settings, project_settings = environment(AUTH_LDAP_LIBRARIAN_GROUP=directory.group_dn("librarians"))

    assert ldap_settings.AUTH_LDAP_SERVER_URI == ""
    assert not hasattr(ldap_settings, "AUTH_LDAP_USER_SEARCH")
    assert not hasattr(ldap_settings, "AUTH_LDAP_BIND_DN")
    assert project_settings.AUTHENTICATION_BACKENDS == [
        "axes.backends.AxesStandaloneBackend",
        MODEL_BACKEND,
    ]


def test_environment_configures_a_working_ldap_login(client, settings, environment, ldap_server):  # noqa: F811
    import ldap
    from django_auth_ldap.config import GroupOfNamesType

    ldap_settings, project_settings = environment(
        AUTH_LDAP_SERVER_URI=ldap_server.uri,
        AUTH_LDAP_BIND_DN=ldap_server.bind_dn,
        AUTH_LDAP_BIND_PASSWORD=ldap_server.bind_password,
        AUTH_LDAP_USER_SEARCH_BASE=ldap_server.people_dn,
        AUTH_LDAP_GROUP_SEARCH_BASE=ldap_server.groups_dn,
        AUTH_LDAP_GROUP_SEARCH_FILTER="(objectClass=groupOfNames)",
        AUTH_LDAP_LIBRARIAN_GROUP=directory.group_dn("librarians"),
        AUTH_LDAP_CURATOR_GROUP=directory.group_dn("curators"),
        AUTH_LDAP_ENGINEER_GROUP=directory.group_dn("engineers"),
        AUTH_LDAP_MANAGER_GROUP=directory.group_dn("managers"),
        AUTH_LDAP_READER_GROUP=directory.group_dn("readers"),
        AUTH_LDAP_ADMIN_GROUP=directory.group_dn("admins"),
        AUTH_LDAP_TIMEOUT="3",
    )

    server_uri = ldap_settings.AUTH_LDAP_SERVER_URI
    assert server_uri == ldap_server.uri
    assert ldap_settings.AUTH_LDAP_BIND_DN == directory.SERVICE_DN
    assert ldap_settings.AUTH_LDAP_BIND_PASSWORD == directory.SERVICE_PASSWORD
    assert ldap_settings.AUTH_LDAP_ROLE_GROUPS == {
        "librarian": "cn=librarians,ou=groups,dc=example,dc=org",
        "curator": "cn=curators,ou=groups,dc=example,dc=org",
        "engineer": "cn=engineers,ou=groups,dc=example,dc=org",
        "manager": "cn=managers,ou=groups,dc=example,dc=org",
        "reader": "cn=readers,ou=groups,dc=example,dc=org",
    }
    search = ldap_settings.AUTH_LDAP_USER_SEARCH
    assert (search.base_dn, search.scope, search.filterstr) == (
        "ou=people,dc=example,dc=org",
        ldap.SCOPE_SUBTREE,
        "(uid=%(user)s)",
    )
    group_search = ldap_settings.AUTH_LDAP_GROUP_SEARCH
    assert (group_search.base_dn, group_search.filterstr) == (
        "ou=groups,dc=example,dc=org",
        "(objectClass=groupOfNames)",
    )
    assert isinstance(ldap_settings.AUTH_LDAP_GROUP_TYPE, GroupOfNamesType)
    assert ldap_settings.AUTH_LDAP_USER_FLAGS_BY_GROUP == {
        "is_staff": "cn=admins,ou=groups,dc=example,dc=org",
        "is_superuser": "cn=admins,ou=groups,dc=example,dc=org",
    }
    assert ldap_settings.AUTH_LDAP_USER_ATTR_MAP == {
        "first_name": "givenName",
        "last_name": "sn",
        "email": "mail",
    }
    assert ldap_settings.AUTH_LDAP_ALWAYS_UPDATE_USER is True  # mirrored at every login, not only the first
    assert ldap_settings.AUTH_LDAP_CONNECTION_OPTIONS[ldap.OPT_NETWORK_TIMEOUT] == 3.0
    assert project_settings.AUTHENTICATION_BACKENDS == BACKENDS

    use_settings(settings, project_settings)

    user = assert_logged_in(client, log_in(client, "carol", directory.password_for("carol")), "carol")
    assert user_roles(user) == frozenset({Role.CURATOR, Role.MANAGER})
    assert (user.first_name, user.last_name, user.email) == ("Carol", "Carter", "carol@example.org")
    reader = assert_logged_in(client, log_in(client, "judy", directory.password_for("judy")), "judy")
    assert user_roles(reader) == frozenset({Role.READER})
    assert (reader.is_superuser, reader.is_staff) == (False, False)
    admin = assert_logged_in(client, log_in(client, "erin", directory.password_for("erin")), "erin")
    assert (admin.is_superuser, admin.is_staff) == (True, True)
    assert_not_logged_in(client, log_in(client, "carol", "wrong"))


def test_environment_with_dn_template_and_some_groups(client, settings, environment, ldap_server):  # noqa: F811
    ldap_settings, project_settings = environment(
        AUTH_LDAP_SERVER_URI=ldap_server.uri,
        AUTH_LDAP_BIND_DN=ldap_server.bind_dn,
        AUTH_LDAP_BIND_PASSWORD=ldap_server.bind_password,
        AUTH_LDAP_USER_DN_TEMPLATE=f"uid=%(user)s,{ldap_server.people_dn}",
        AUTH_LDAP_GROUP_SEARCH_BASE=ldap_server.groups_dn,
        AUTH_LDAP_CURATOR_GROUP=directory.group_dn("curators"),
    )

    assert ldap_settings.AUTH_LDAP_USER_DN_TEMPLATE == "uid=%(user)s,ou=people,dc=example,dc=org"
    assert not hasattr(ldap_settings, "AUTH_LDAP_USER_SEARCH")
    assert ldap_settings.AUTH_LDAP_ROLE_GROUPS == {"curator": "cn=curators,ou=groups,dc=example,dc=org"}
    assert not hasattr(ldap_settings, "AUTH_LDAP_USER_FLAGS_BY_GROUP")

    use_settings(settings, project_settings)

    # carol is also in managers, but no variable maps that group: curator only.
    user = assert_logged_in(client, log_in(client, "carol", directory.password_for("carol")), "carol")
    assert user_roles(user) == frozenset({Role.CURATOR})
    # erin is in admins, but AUTH_LDAP_ADMIN_GROUP is not set: no administrator rights.
    admin = assert_logged_in(client, log_in(client, "erin", directory.password_for("erin")), "erin")
    assert (admin.is_superuser, admin.is_staff) == (False, False)
