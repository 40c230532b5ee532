"""What an engineer reads in the logs: a client error is one line; a server error keeps its traceback."""

import io
import logging

import pytest
from django.urls import reverse

from tests.factories import UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_output():
    """What the root handler writes (the one handler of the processes), as text."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    yield stream
    logging.getLogger().removeHandler(handler)


def test_a_403_and_a_404_are_one_line_each(client, root_output):
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    assert client.get(reverse("harvest:job_running")).status_code == 403
    assert client.get("/selection/records/999999/").status_code == 404
    lines = root_output.getvalue().splitlines()
    requests = [line for line in lines if " django.request: " in line]
    assert len(requests) == 2, lines
    forbidden = "WARNING django.request: Forbidden (Permission denied): /harvest/jobs/running/"
    assert requests[0].startswith(forbidden)
    assert requests[1].startswith("WARNING django.request: Not Found: /selection/records/999999/")
    assert "Traceback" not in root_output.getvalue()


def test_django_prints_through_the_root_handler_only():
    assert logging.getLogger("django").handlers == []
    assert logging.getLogger("django").propagate is True


def test_a_server_error_keeps_its_traceback(root_output):
    logger = logging.getLogger("django.request")
    try:
        raise RuntimeError("the database went away")
    except RuntimeError:
        logger.error("Internal Server Error: /x/", exc_info=True, extra={"status_code": 500})
    assert "Traceback" in root_output.getvalue() and "the database went away" in root_output.getvalue()
