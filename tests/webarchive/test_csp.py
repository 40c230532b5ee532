"""Every answer carries the Content-Security-Policy: scripts from our static files only, nothing inline.

The pages walked are every named URL of the project, as ``tests/webarchive/test_url_access.py`` lists
them (its ``test_every_url_is_listed`` keeps that list complete), opened by the administrator, who may
open them all; plus the login page, the error pages, the Django admin and a WARC file's bytes. Whether
the pages still work under the policy is checked in a browser (tests/browser/test_csp_browser.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from tests.access import user_for
from tests.webarchive.test_url_access import ACCESS

pytestmark = pytest.mark.django_db

READ_KINDS = ("page", "public", "api")
STRICT = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
}
# The Swagger UI page keeps drf-spectacular's <style> block: styles may be inline there, scripts not.
RELAXED_STYLES = {"api-docs": ["'self'", "'unsafe-inline'"]}
# A screenshot the crawler made is served with a policy of its own that allows nothing at all; the
# middleware keeps a view's own header.
NOTHING_ALLOWED = {"storage:capture_image": {"default-src": ["'none'"], "sandbox": []}}


def policy(response) -> dict[str, list[str]]:
    """The Content-Security-Policy header of a response, directive → sources (AssertionError if none)."""
    header = response.headers.get("Content-Security-Policy")
    assert header, f"{response.request['PATH_INFO']}: no Content-Security-Policy header"
    directives = {}
    for part in header.split(";"):
        name, *sources = part.split()
        directives[name] = sources
    return directives


def assert_strict(response, *, style_src: list[str] | None = None) -> None:
    expected = dict(STRICT, **({"style-src": style_src} if style_src else {}))
    assert policy(response) == expected
    assert "Content-Security-Policy-Report-Only" not in response.headers


@pytest.mark.parametrize("name", sorted(name for name, (kind, *_) in ACCESS.items() if kind in READ_KINDS))
def test_every_page_has_the_strict_policy(client, name):
    kind, build, _allowed = ACCESS[name]
    url = build()
    if kind != "public":  # the login page
        client.force_login(user_for("admin"))
    headers = {"Accept": "application/json"} if kind == "api" else {}
    response = client.get(url, headers=headers)
    assert response.status_code == 200, f"{name} ({url}): HTTP {response.status_code}"
    if name in NOTHING_ALLOWED:
        assert policy(response) == NOTHING_ALLOWED[name]
    else:
        assert_strict(response, style_src=RELAXED_STYLES.get(name))


def test_the_api_docs_script_is_a_file_not_inline(client):
    """The Swagger UI page loads its own start-up script from a URL: nothing inline to allow."""
    client.force_login(user_for("admin"))
    page = client.get(reverse("api-docs"))
    html = page.content.decode()
    assert re.search(r'<script src="[^"]*\?script=?"', html)
    assert "<script>" not in html
    script = client.get(reverse("api-docs") + "?script")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()
    assert policy(script)["script-src"] == ["'self'"]


@pytest.mark.parametrize(
    "path",
    ["/login/", "/", "/no-such-page/", "/selection/records/999999999/", "/admin/", "/admin/login/"],
)
def test_login_redirects_and_errors_have_the_policy(client, path):
    assert_strict(client.get(path))


def test_a_refused_role_and_a_missing_page_have_the_policy(client):
    client.force_login(user_for(None))  # no role: 403 on an area
    response = client.get("/operations/")
    assert response.status_code == 403
    assert_strict(response)
    client.force_login(user_for("admin"))
    response = client.get("/selection/records/999999999/")
    assert response.status_code == 404
    assert_strict(response)
    assert_strict(client.get("/admin/"))


def test_no_template_has_inline_script_or_style():
    """What the policy forbids is not in the templates: the pages would break without a word."""
    forbidden = re.compile(
        r"<script(?![^>]*\b(?:src=|type=\"application/json\"))[^>]*>|<style\b|\sstyle=\"|\son[a-z]+=\"",
        re.IGNORECASE,
    )
    found = []
    for path in sorted(Path(settings.BASE_DIR, "templates").rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if forbidden.search(line):
                found.append(f"{path.relative_to(settings.BASE_DIR)}:{number}: {line.strip()}")
    assert found == []
