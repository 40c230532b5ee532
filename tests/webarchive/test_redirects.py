"""Every view that takes a ``next`` address sends the user back there only when it is on this site.

``NEXT_VIEWS`` lists them, each with how to exercise it (its URL, method, data and the role that
may use it). A forged ``next`` — another host, a scheme-relative address, a backslash that browsers
read as a slash, a ``javascript:`` URL — must give the view's own page; a page of the site is
honoured. ``test_every_view_taking_next_is_listed`` fails when a view reading ``next`` is added to
the code without an entry here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import reverse

from selection.choices import RecordStatus
from tests.factories import PASSWORD, RecordFactory, UserFactory
from tests.webarchive.test_url_access import new_job
from webarchive.permissions import Role

OUTSIDE = ["https://evil.example/", "//evil.example/", "/\\evil.example", "javascript:alert(1)"]
INSIDE = "/selection/records/?page=2"


@dataclass(frozen=True)
class NextView:
    """How to use a view that takes ``next``: ``url()`` builds the URL (and what it acts on) afresh
    for each try, ``data()`` the form, ``role`` is who may do it (None: anyone, logged out)."""

    url: Callable[[], str]
    method: str = "post"
    data: Callable[[], dict] = dict
    role: Role | None = None


def record_status_url() -> str:
    return reverse("selection:record_status", kwargs={"pk": RecordFactory().pk})


def validation_decide_data() -> dict:
    return {"records": [RecordFactory().pk], "decision": RecordStatus.VALIDATED}


def job_url(name: str) -> Callable[[], str]:
    return lambda: reverse(name, kwargs={"pk": new_job().pk})


def ended_job_resubmit_url() -> str:
    """A job that is done: resubmitting it is refused."""
    from harvest.choices import JobStatus
    from harvest.services.jobs import job_transition

    job = job_transition(job=job_transition(job=new_job(), status=JobStatus.STARTED), status=JobStatus.DONE)
    return reverse("harvest:job_resubmit", kwargs={"pk": job.pk})


def login_data() -> dict:
    return {"username": UserFactory().username, "password": PASSWORD}


NEXT_VIEWS = {
    # A curator validates one record from the validation queue or the record's page.
    "selection:record_status": NextView(
        url=record_status_url, data=lambda: {"status": RecordStatus.VALIDATED}, role=Role.CURATOR
    ),
    # A curator validates the records ticked in the validation queue.
    "selection:validation_decide": NextView(
        url=lambda: reverse("selection:validation_decide"), data=validation_decide_data, role=Role.CURATOR
    ),
    # An engineer stops a job from the running jobs' page.
    "harvest:job_stop": NextView(url=job_url("harvest:job_stop"), role=Role.ENGINEER),
    # A refused resubmission (the job is done) goes back to where the button was.
    "harvest:job_resubmit": NextView(url=ended_job_resubmit_url, role=Role.ENGINEER),
    # Logging in goes on to the page that asked for it (Django's own check).
    "login": NextView(url=lambda: reverse("login"), data=login_data),
}


def use(client, view: NextView, next_url: str):
    if view.role is not None:
        client.force_login(UserFactory(roles=[view.role]))
    else:
        client.logout()
    data = {**view.data(), "next": next_url}
    response = getattr(client, view.method)(view.url(), data)
    assert response.status_code == 302, (response.status_code, getattr(response, "context", None))
    return response["Location"]


def on_this_site(location: str) -> bool:
    """A Location the browser follows to this site: a path, or a URL of the test server itself."""
    normalised = location.replace("\\", "/")
    parts = urlsplit(normalised)
    if parts.scheme or parts.netloc:
        return parts.scheme in ("http", "https") and parts.netloc == "testserver"
    return normalised.startswith("/") and not normalised.startswith("//")


@pytest.mark.django_db
@pytest.mark.parametrize("outside", OUTSIDE)
@pytest.mark.parametrize("name", sorted(NEXT_VIEWS))
def test_a_next_address_off_the_site_is_not_followed(client, name, outside):
    location = use(client, NEXT_VIEWS[name], outside)
    assert on_this_site(location), location
    assert "evil.example" not in location and "javascript" not in location


@pytest.mark.django_db
@pytest.mark.parametrize("name", sorted(NEXT_VIEWS))
def test_a_next_address_on_the_site_is_followed(client, name):
    assert use(client, NEXT_VIEWS[name], INSIDE) == INSIDE


def test_every_view_taking_next_is_listed():
    """Each module that reads ``next`` from a request is one whose views are listed above."""
    root = Path(__file__).resolve().parents[2]
    reading = re.compile(r"""\.get\(\s*["']next["']|safe_next_url\(|redirect_next\(""")
    readers = {
        str(path.relative_to(root))
        for package in ("selection", "harvest", "storage", "webarchive")
        for path in (root / package).rglob("*.py")
        if reading.search(path.read_text())
    }
    covered = {
        "webarchive/views.py",  # where safe_next_url is
        "selection/views/records.py",  # selection:record_status
        "selection/views/validation.py",  # selection:validation_decide
        "harvest/views/jobs.py",  # harvest:job_stop, harvest:job_resubmit
        "webarchive/admin.py",  # passes next on to the login page, which checks it (login)
        # The replay gate (pywb's process) goes only to its ticket's collection: tested with outside
        # targets in tests/storage/test_replay_access.py.
        "storage/replay_gate.py",
    }
    assert readers <= covered, sorted(readers - covered)
