"""A real OpenID Connect provider on 127.0.0.1 for the tests: django-oidc-provider in its own process
(tests/oidc_provider), with its own database, signing key, people and groups, and one client, this
application. ``oidc_provider_for(redirect_uri)`` starts it; the fixture stops it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.ldap_server import free_port

ROOT = Path(__file__).resolve().parent.parent
CLIENT_ID, CLIENT_SECRET = "webarchive", "test-client-secret"
PASSWORD = "provider password"
# People of the provider and their groups (the groups claim).
PEOPLE = {
    "sso-curator": ["archive-curators", "staff-everyone"],
    "sso-nobody": ["staff-everyone"],
    "librarian": ["archive-librarians"],  # the same name as a local account of the application
}

SETUP = """
from django.contrib.auth.models import Group, User
from oidc_provider.models import Client, ResponseType
import json, os
for name, groups in json.loads(os.environ["PEOPLE"]).items():
    user = User.objects.create_user(name, email=name + "@provider.test", password=os.environ["PASSWORD"],
                                    first_name=name.title(), last_name="Provider")
    user.groups.set([Group.objects.get_or_create(name=group)[0] for group in groups])
client = Client.objects.create(
    name="webarchive", client_type="confidential", client_id=os.environ["CLIENT_ID"],
    client_secret=os.environ["CLIENT_SECRET"], jwt_alg="RS256", require_consent=False,
)
client.redirect_uris = [os.environ["REDIRECT_URI"]]
client.scope = ["openid", "email", "profile", "groups"]
client.save()
client.response_types.set([ResponseType.objects.get(value="code")])
"""


@dataclass
class OidcProvider:
    url: str
    process: subprocess.Popen

    def endpoint(self, path: str) -> str:
        return f"{self.url}/openid/{path}"

    def settings(self) -> dict:
        """The application's settings for this provider."""
        return {
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": self.endpoint("authorize"),
            "OIDC_OP_TOKEN_ENDPOINT": self.endpoint("token"),
            "OIDC_OP_USER_ENDPOINT": self.endpoint("userinfo"),
            "OIDC_OP_JWKS_ENDPOINT": self.endpoint("jwks"),
        }

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


def oidc_provider_for(redirect_uri: str, folder: Path) -> OidcProvider:
    import json

    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.oidc_provider.settings",
        "OIDC_PROVIDER_DIR": str(folder),
        "PEOPLE": json.dumps(PEOPLE),
        "PASSWORD": PASSWORD,
        "CLIENT_ID": CLIENT_ID,
        "CLIENT_SECRET": CLIENT_SECRET,
        "REDIRECT_URI": redirect_uri,
    }
    environment.pop("DATABASE_URL", None)

    def django(*args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "django", *args],
            cwd=ROOT,
            env=environment,
            check=True,
            capture_output=True,
        )

    django("migrate", "-v", "0")
    django("creatersakey")
    django("shell", "-c", SETUP)
    port = free_port()
    log = (folder / "provider.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    provider = OidcProvider(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if requests.get(provider.endpoint(".well-known/openid-configuration"), timeout=2).ok:
                return provider
        except requests.ConnectionError:
            time.sleep(0.2)
    provider.stop()
    raise RuntimeError("the OpenID provider did not start: " + (folder / "provider.log").read_text()[-2000:])
