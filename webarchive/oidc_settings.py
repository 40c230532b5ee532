"""Single sign-on with OpenID Connect (mozilla-django-oidc), beside LDAP, read from the environment.

Off unless ``OIDC_RP_CLIENT_ID`` is set. The provider's endpoints come from the environment, and each
role is mapped to one group of the provider's groups claim (``OIDC_GROUPS_CLAIM``, ``groups`` by
default) by ``OIDC_<ROLE>_GROUP``, as LDAP groups are (``AUTH_LDAP_<ROLE>_GROUP``).
"""

import environ

env = environ.Env()

OIDC_RP_CLIENT_ID = env("OIDC_RP_CLIENT_ID", default="")
OIDC_RP_CLIENT_SECRET = env("OIDC_RP_CLIENT_SECRET", default="")
OIDC_OP_AUTHORIZATION_ENDPOINT = env("OIDC_OP_AUTHORIZATION_ENDPOINT", default="")
OIDC_OP_TOKEN_ENDPOINT = env("OIDC_OP_TOKEN_ENDPOINT", default="")
OIDC_OP_USER_ENDPOINT = env("OIDC_OP_USER_ENDPOINT", default="")
OIDC_OP_JWKS_ENDPOINT = env("OIDC_OP_JWKS_ENDPOINT", default="")
OIDC_RP_SIGN_ALGO = env("OIDC_RP_SIGN_ALGO", default="RS256")
OIDC_RP_SCOPES = env("OIDC_RP_SCOPES", default="openid email profile groups")
OIDC_GROUPS_CLAIM = env("OIDC_GROUPS_CLAIM", default="groups")
OIDC_PROVIDER_NAME = env("OIDC_PROVIDER_NAME", default="single sign-on")
# Role name -> group name of the claim; read by webarchive.oidc.RoleMappingOIDCBackend.
OIDC_ROLE_GROUPS = {
    role: env(f"OIDC_{role.upper()}_GROUP", default="")
    for role in ("librarian", "curator", "engineer", "manager", "reader")
}
OIDC_ROLE_GROUPS = {role: group for role, group in OIDC_ROLE_GROUPS.items() if group}
OIDC_ADMIN_GROUP = env("OIDC_ADMIN_GROUP", default="")
OIDC_TIMEOUT = env.float("OIDC_TIMEOUT", default=10.0)
