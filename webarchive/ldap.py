"""LDAP login that maps directory groups to the application's roles."""

import logging

import ldap
from django.conf import settings
from django_auth_ldap.backend import LDAPBackend

from webarchive.permissions import Role, user_set_roles

logger = logging.getLogger(__name__)


class RoleMappingLDAPBackend(LDAPBackend):
    """django-auth-ldap backend that gives each user the roles of their directory groups.

    The directory is the source of truth for the roles of LDAP users: at every
    login the user's roles are set to exactly those whose group
    (``AUTH_LDAP_<ROLE>_GROUP``) the user is a member of; a user in no mapped
    group logs in with no role.

    When the groups cannot be read (an LDAP error during the group search),
    the login is refused, as django-auth-ldap refuses it for its own LDAP
    errors: the roles cannot be known, and the error is not a server error.
    """

    def authenticate_ldap_user(self, ldap_user, password):
        user = super().authenticate_ldap_user(ldap_user, password)
        if user is None:
            return None
        try:
            member_of = {dn.lower() for dn in ldap_user.group_dns}
        except ldap.LDAPError as error:
            logger.error("LDAP login of %s refused: cannot read its groups: %r", user.get_username(), error)
            return None
        roles = {
            Role(role)
            for role, group_dn in settings.AUTH_LDAP_ROLE_GROUPS.items()
            if group_dn.lower() in member_of
        }
        user_set_roles(user=user, roles=roles)
        return user
