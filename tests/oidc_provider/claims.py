"""The groups claim (scope "groups"): the names of the user's groups, as a directory-backed provider
(Keycloak, Azure AD…) gives them."""

from oidc_provider.lib.claims import ScopeClaims


class GroupsClaims(ScopeClaims):
    info_groups = ("Groups", "The groups you are a member of.")

    def scope_groups(self):
        return {"groups": sorted(self.user.groups.values_list("name", flat=True))}


def userinfo(claims, user):
    """The standard claims of the "profile" and "email" scopes, from the provider's user."""
    claims["preferred_username"] = user.username
    claims["given_name"] = user.first_name
    claims["family_name"] = user.last_name
    claims["name"] = f"{user.first_name} {user.last_name}".strip()
    claims["email"] = user.email
    claims["email_verified"] = True
    return claims
