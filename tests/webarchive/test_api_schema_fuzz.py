"""The OpenAPI schema says what the API does: schemathesis runs every operation for every role.

The schema is the one ``/api/schema/`` serves, generated in-process; the requests go
through the project's WSGI application, logged in as a user of each role (a session
cookie), against data made for the test (so that DELETE, stop, resubmit and the other
writes act on objects that exist, and are rolled back after). Each operation gets a
bounded number of examples, positive (what the schema allows) and negative (what it
forbids), derandomized so that a run is the same every time.

Checked for every response: no server error; the status code, content type and body
are the ones the schema documents; and data the schema forbids is refused (negative
mode).

Run it alone with ``pytest tests/webarchive/test_api_schema_fuzz.py`` (add
``DATABASE_URL=postgres://…`` for PostgreSQL). ``SCHEMA_FUZZ_EXAMPLES`` changes the
number of examples per operation and mode (default 8).
"""

from __future__ import annotations

import json
import os
import socket
from datetime import timedelta

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.utils import timezone
from drf_spectacular.views import SpectacularAPIView
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from rest_framework.test import APIRequestFactory, force_authenticate
from schemathesis.checks import CHECKS
from schemathesis.generation.modes import GenerationMode

from harvest.choices import HarvestKind
from harvest.models import BudgetMapping, HarvestInfo, JobStatistics, TransferReport
from harvest.services import transfer
from harvest.services.domains import configuration_save, domain_create, domain_set_alias, seed_list_save
from harvest.services.planning import (
    collection_mapping_save,
    definition_save,
    schedule_save,
    template_save,
    trap_list_save,
)
from harvest.services.statistics import job_statistics_compute
from selection.choices import Frequency
from storage.models import WarcFile
from storage.services.nodes import node_create
from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
from tests.harvest.statistics_jobs import three_site_job
from webarchive import netguard
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_EXAMPLES", "8"))
CHECK_NAMES = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "negative_data_rejection",
)
# Not fuzzed, and why:
EXCLUDED = {
    # The token endpoint takes a password: random ones would only lock the account (django-axes);
    # it is tested with the login in tests/webarchive/test_login.py.
    ("POST", "/api/auth/token/"),
}


def _schema_dict() -> dict:
    """The schema as /api/schema/ serves it, asked for by a logged-in user (no database needed)."""
    request = APIRequestFactory().get("/api/schema/", {"format": "json"})
    user = type("SchemaReader", (), {"is_authenticated": True, "is_active": True, "pk": None})()
    force_authenticate(request, user=user)
    response = SpectacularAPIView.as_view()(request, format="json")
    assert response.status_code == 200
    response.render()
    return json.loads(response.content)


def _json_bodies_only(schema: dict) -> dict:
    """Request bodies as JSON only. The form encodings (also offered, by DRF's default parsers) cannot
    carry the types and nesting the schema describes: a "negative" form body is often a valid one on
    the wire (the form ``True`` is an empty PATCH), which the negative check would count as accepted."""
    for operations in schema["paths"].values():
        for operation in operations.values():
            content = operation.get("requestBody", {}).get("content", {})
            for media_type in [m for m in content if m != "application/json"]:
                del content[media_type]
    return schema


@pytest.fixture(scope="module")
def api_schema():
    schema = schemathesis.openapi.from_dict(_json_bodies_only(_schema_dict()))
    schema.app = get_wsgi_application()
    return schema


@pytest.fixture
def connection_kept():
    """The WSGI application closes the database connection around each request, as in production; the
    test's transaction lives on it (Django's test client does the same)."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def no_network(monkeypatch, settings):
    """The URL checks of record proposals meet no name and no host: the internet is outside the tests."""

    def no_name(host, port):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def no_host(*args, **kwargs):
        raise ConnectionRefusedError("no network in the schema tests")

    monkeypatch.setattr(netguard, "_getaddrinfo", no_name)
    monkeypatch.setattr(netguard, "_open_socket", no_host)
    settings.SELECTION_URL_CHECK_TIMEOUT = 1.0


@pytest.fixture
def archive(tmp_path, no_network):
    """One of everything the API serves, made through the services; ids per path prefix."""
    collection = CollectionFactory()
    theme = ThemeFactory(collection=collection)
    record = RecordFactory(collection=collection, theme=theme)
    template = template_save(name="fuzz-template", depth_policy="host")
    schedule = schedule_save(
        name="fuzz-daily", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3
    )
    selective = definition_save(kind=HarvestKind.SELECTIVE, name="fuzz-selective", schedule=schedule)
    snapshot = definition_save(kind=HarvestKind.SNAPSHOT, name="fuzz-snapshot")
    domain = domain_create(name="fuzz.fr")
    alias = domain_create(name="fuzz-alias.fr")
    domain_set_alias(domain=alias, alias_of=domain)
    seeds = seed_list_save(domain=domain, name="fuzz-seeds", seeds="http://fuzz.fr/")
    configuration = configuration_save(domain=domain, name="fuzz", template=template, seed_lists=[seeds])
    trap_list = trap_list_save(name="fuzz-traps", traps=".*/calendar/.*")
    collection_mapping = collection_mapping_save(
        collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective
    )
    budget_mapping = BudgetMapping.objects.first()  # the migrations map every (budget, depth)
    transfer.transfer_collection(collection=collection, user=None)
    job, _ = three_site_job()
    job_statistics_compute(job_id=job.pk)
    warc = WarcFile.objects.create(
        name="fuzz.warc.gz",
        path=str(tmp_path / "fuzz.warc.gz"),
        size=10,
        job=job,
        created_at=timezone.now(),
        closed_at=timezone.now(),
    )
    node = node_create(name="fuzz-node", location="paris", root=str(tmp_path / "node"))
    ids = {
        "/api/collections/": [collection.pk],
        "/api/records/": [record.pk],
        "/api/themes/": [theme.pk],
        "/api/domains/": [domain.pk, alias.pk],
        "/api/seed-lists/": [seeds.pk],
        "/api/configurations/": [configuration.pk],
        "/api/templates/": [template.pk],
        "/api/schedules/": [schedule.pk],
        "/api/harvest-definitions/": [selective.pk, snapshot.pk],
        "/api/crawler-traps/": [trap_list.pk],
        "/api/collection-mappings/": [collection_mapping.pk],
        "/api/budget-mappings/": [budget_mapping.pk],
        "/api/transfers/": list(TransferReport.objects.values_list("pk", flat=True)),
        "/api/jobs/": [job.pk],
        "/api/harvest-infos/": list(HarvestInfo.objects.values_list("pk", flat=True)[:2]),
        "/api/warc-files/": [warc.pk],
        "/api/storage-nodes/": [node.pk],
        "/api/statistics/": list(JobStatistics.objects.values_list("pk", flat=True)[:2]),
    }
    return {"ids": ids, "collection": collection}


def _existing_ids(archive, path: str) -> list[int]:
    for prefix, ids in archive["ids"].items():
        if path.startswith(prefix):
            return ids
    return []


def _run_operation(operation, mode, *, headers, ids, checks) -> list[str]:
    """Examples of one operation in one mode; the failures, described."""
    failures: list[str] = []
    strategy = operation.as_strategy(generation_mode=mode)
    has_id = any(p.name == "id" for p in operation.path_parameters)
    choices = st.sampled_from([*ids, None]) if has_id and ids else st.none()

    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(case=strategy, existing=choices)
    def run(case, existing):
        if existing is not None:
            case.path_parameters = {**(case.path_parameters or {}), "id": existing}
        response = case.call(headers=headers)
        try:
            case.validate_response(response, checks=checks)
        except (Exception, BaseExceptionGroup) as error:  # a check failed: note it, go on
            message = str(error).strip().splitlines()
            body = response.text[:300].replace("\n", " ")
            failures.append(
                f"{operation.label} [{mode.value}] {response.status_code}: "
                f"{' | '.join(message[:6])}\n    sent: {case.as_curl_command()[:400]}\n    got: {body}"
            )

    try:
        run()
    except Unsatisfiable:  # nothing in the operation can be made invalid (no parameters, no body)
        assert mode == GenerationMode.NEGATIVE
    return failures


@pytest.mark.parametrize("role", list(Role), ids=[role.value for role in Role])
def test_every_operation_keeps_to_the_schema(role, api_schema, archive, connection_kept):
    user = UserFactory(roles=[role])
    archive["collection"].members.add(user)
    # A token (the schema's other scheme, session cookies, would need a CSRF token for each write).
    headers = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    checks = [CHECKS.get_one(name) for name in CHECK_NAMES]
    failures: list[str] = []
    operations = 0
    for result in api_schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in EXCLUDED:
            continue
        operations += 1
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures += _run_operation(
                operation, mode, headers=headers, ids=_existing_ids(archive, operation.path), checks=checks
            )
    assert operations > 50
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(dict.fromkeys(failures))
