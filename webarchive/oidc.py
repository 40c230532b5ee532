"""OpenID Connect login that maps the provider's group claims to the application's roles.

The provider is the source of truth for the roles of the people who log in through it, as the
directory is for LDAP (webarchive.ldap): at every login their roles are set to exactly those whose
group (``OIDC_<ROLE>_GROUP``) the groups claim names; administrators by ``OIDC_ADMIN_GROUP``. A
person is found again by the provider's subject (kept as the username ``oidc:<sub>`` unless the
provider gives a ``preferred_username``).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import Http404
from django.utils.decorators import method_decorator
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from webarchive.permissions import Role, user_set_roles

logger = logging.getLogger(__name__)


def _username(claims: dict) -> str:
    return (claims.get("preferred_username") or f"oidc:{claims['sub']}")[:150]


def roles_from_claims(claims: dict) -> tuple[set[Role], bool]:
    """The roles (and whether administrator) the groups claim gives."""
    groups = claims.get(settings.OIDC_GROUPS_CLAIM) or []
    if isinstance(groups, str):
        groups = [groups]
    member_of = {str(group) for group in groups}
    roles = {Role(role) for role, group in settings.OIDC_ROLE_GROUPS.items() if group in member_of}
    admin = bool(settings.OIDC_ADMIN_GROUP) and settings.OIDC_ADMIN_GROUP in member_of
    return roles, admin


class RoleMappingOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend, with the roles of the provider's groups."""

    def verify_claims(self, claims) -> bool:
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims):
        # Only accounts without a password of their own (made by a login from outside): a local
        # account of the same name is never taken over by the provider.
        return [
            user
            for user in self.UserModel.objects.filter(username=_username(claims))
            if not user.has_usable_password()
        ]

    def create_user(self, claims):
        username = _username(claims)
        if self.UserModel.objects.filter(username=username).exists():
            logger.warning("OIDC login refused: %s is a local account of this site", username)
            return None
        user = self.UserModel.objects.create_user(username, email=claims.get("email", ""))
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        user.email = claims.get("email", user.email) or ""
        user.first_name = (claims.get("given_name") or user.first_name)[:150]
        user.last_name = (claims.get("family_name") or user.last_name)[:150]
        roles, admin = roles_from_claims(claims)
        user.is_superuser = user.is_staff = admin
        user.set_unusable_password()
        user.save()
        user_set_roles(user=user, roles=roles)
        logger.info("OIDC login of %s with roles %s", user.get_username(), sorted(roles) or "none")
        return user


class _WhenConfigured:
    """A view of the login through the provider: there only when OIDC_RP_CLIENT_ID is set, and open
    to people who are not logged in yet (they come to log in)."""

    def dispatch(self, request, *args, **kwargs):
        if not settings.OIDC_RP_CLIENT_ID:
            raise Http404("single sign-on is not configured")
        return super().dispatch(request, *args, **kwargs)


@method_decorator(login_not_required, name="dispatch")
class LoginStartView(_WhenConfigured, OIDCAuthenticationRequestView):
    """Sends the browser to the provider's login."""


@method_decorator(login_not_required, name="dispatch")
class LoginCallbackView(_WhenConfigured, OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back with a code: checked, exchanged, logged in."""
