"""LDAP login settings (django-auth-ldap), read from ``AUTH_LDAP_*`` variables.

Nothing here is active unless ``AUTH_LDAP_SERVER_URI`` is set; python-ldap is
imported only then, so a deployment without LDAP does not need it installed.
Each role is mapped to one directory group by ``AUTH_LDAP_<ROLE>_GROUP``
(the group's DN); administrators by ``AUTH_LDAP_ADMIN_GROUP``.
"""

import os

import environ

env = environ.Env()

AUTH_LDAP_SERVER_URI = env("AUTH_LDAP_SERVER_URI", default="")

# Role name -> group DN; read by webarchive.ldap.RoleMappingLDAPBackend.
AUTH_LDAP_ROLE_GROUPS = {
    role: env(f"AUTH_LDAP_{role.upper()}_GROUP", default="")
    for role in ("librarian", "curator", "engineer", "manager", "reader")
}
AUTH_LDAP_ROLE_GROUPS = {role: dn for role, dn in AUTH_LDAP_ROLE_GROUPS.items() if dn}

if AUTH_LDAP_SERVER_URI:
    import ldap
    from django_auth_ldap.config import (
        GroupOfNamesType,
        GroupOfUniqueNamesType,
        LDAPSearch,
        PosixGroupType,
    )

    AUTH_LDAP_BIND_DN = env("AUTH_LDAP_BIND_DN", default="")
    # Read as is: django-environ takes a value starting with "$" for the name of
    # another variable, which would turn such a password into another value.
    AUTH_LDAP_BIND_PASSWORD = os.environ.get("AUTH_LDAP_BIND_PASSWORD", "")
    AUTH_LDAP_START_TLS = env.bool("AUTH_LDAP_START_TLS", default=False)

    _user_dn_template = env("AUTH_LDAP_USER_DN_TEMPLATE", default="")
    if _user_dn_template:
        AUTH_LDAP_USER_DN_TEMPLATE = _user_dn_template
    else:
        AUTH_LDAP_USER_SEARCH = LDAPSearch(
            env("AUTH_LDAP_USER_SEARCH_BASE", default=""),
            ldap.SCOPE_SUBTREE,
            env("AUTH_LDAP_USER_SEARCH_FILTER", default="(uid=%(user)s)"),
        )

    AUTH_LDAP_GROUP_SEARCH = LDAPSearch(
        env("AUTH_LDAP_GROUP_SEARCH_BASE", default=""),
        ldap.SCOPE_SUBTREE,
        env("AUTH_LDAP_GROUP_SEARCH_FILTER", default="(objectClass=*)"),
    )
    AUTH_LDAP_GROUP_TYPE = {
        "groupOfNames": GroupOfNamesType,
        "groupOfUniqueNames": GroupOfUniqueNamesType,
        "posixGroup": PosixGroupType,
    }[env("AUTH_LDAP_GROUP_TYPE", default="groupOfNames")]()

    AUTH_LDAP_USER_ATTR_MAP = {
        "first_name": env("AUTH_LDAP_ATTR_FIRST_NAME", default="givenName"),
        "last_name": env("AUTH_LDAP_ATTR_LAST_NAME", default="sn"),
        "email": env("AUTH_LDAP_ATTR_EMAIL", default="mail"),
    }
    AUTH_LDAP_ALWAYS_UPDATE_USER = True

    _admin_group = env("AUTH_LDAP_ADMIN_GROUP", default="")
    if _admin_group:
        AUTH_LDAP_USER_FLAGS_BY_GROUP = {"is_staff": _admin_group, "is_superuser": _admin_group}

    AUTH_LDAP_CONNECTION_OPTIONS = {
        ldap.OPT_NETWORK_TIMEOUT: env.float("AUTH_LDAP_TIMEOUT", default=5.0),
        ldap.OPT_REFERRALS: 0,
    }
    AUTH_LDAP_CACHE_TIMEOUT = env.int("AUTH_LDAP_CACHE_TIMEOUT", default=0)
