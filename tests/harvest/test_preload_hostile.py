"""Hostile input to a broad-crawl preparation: NUL bytes, control characters and invalid UTF-8 in
the lists, uploads larger than the limit, nameservers on addresses the address guard refuses.

Each case is refused with its reason (an invalid line, a form or service error) and changes
nothing else: no run created, no file left in the upload folder, no query sent.
"""

from __future__ import annotations

import re

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.core.management import CommandError, call_command
from django.template.defaultfilters import filesizeformat
from django.test import Client
from django.urls import reverse

from harvest.choices import HarvestKind
from harvest.models import Domain, PreloadInvalidLine, PreloadRun
from harvest.preload.dns import DnsSettings, NameserverRefused, check_domains
from harvest.preload.sources import normalise_entry
from harvest.services import preload as preload_service
from harvest.services.planning import definition_save
from harvest.services.preload import (
    SourceSpec,
    UploadedSource,
    preload_create,
    preload_create_from_uploads,
    preload_run,
)
from tests.dns_server import dns_server
from tests.factories import UserFactory
from tests.harvest.test_preload_dns import ScriptedServer
from webarchive.netguard import AddressPolicy
from webarchive.permissions import Role


@pytest.fixture
def snapshot(db):
    return definition_save(kind=HarvestKind.SNAPSHOT, name="broad-hostile")


@pytest.fixture
def upload_dir(settings, tmp_path):
    settings.PRELOAD_UPLOAD_DIR = tmp_path / "uploads"
    return settings.PRELOAD_UPLOAD_DIR


def files_in(folder) -> list:
    return [path for path in folder.rglob("*") if path.is_file()] if folder.exists() else []


# NUL bytes, control characters, invalid UTF-8 ------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("alpha\x00.fr", "contains a NUL byte"),
        ("http://beta.fr/\x00x", "contains a NUL byte"),  # was accepted, as the seed http://beta.fr/%00x
        ("http://beta.fr/\x01", "contains a control character (U+0001)"),
        ("\x1b[2Jgamma.fr", "contains a control character (U+001B)"),
        ("delta.fr\x7f", "contains a control character (U+007F)"),
        ("http://delta.fr/\x85x", "contains a control character (U+0085)"),
        ("http://epsilon.fr/a\tb", "contains a control character (U+0009)"),
        ("zeta\udcff.fr", "not valid UTF-8 (byte 0xff)"),  # how the reader hands over an invalid byte
        ("http://eta.fr/" + "a" * 5000, "longer than 4,096 characters"),
    ],
)
def test_a_line_with_a_nul_byte_a_control_character_or_invalid_utf8_is_invalid(line, reason):
    with pytest.raises(ValueError, match=re.escape(reason)):
        normalise_entry(line)


HOSTILE_LIST = (
    b"alpha.fr\n"
    b"bad\x00.fr\n"
    b"http://beta.fr/\x00x\n"
    b"gamma\xff.fr\n"
    b"\x1b[2Jdelta.fr\n"
    b"http://epsilon.fr/\xc3\xa9t\xc3\xa9\n"  # valid UTF-8: accepted
    b"zeta.fr\r\n"  # a Windows line end is no control character in the line
)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_list_with_nul_bytes_and_invalid_utf8_is_read_with_those_lines_invalid(
    snapshot, tmp_path, settings, processes
):
    settings.PRELOAD_PROCESSES = processes
    settings.PRELOAD_PARALLEL_BYTES = 1  # with 2 processes: the list is read in parts
    listing = tmp_path / "list.txt"
    listing.write_bytes(HOSTILE_LIST)
    table = tmp_path / "table.csv"
    table.write_bytes(b"name,site\nA,theta.fr\nB,io\x00ta.fr\nC,kap\xfepa.fr\n")
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("registry", str(listing)), SourceSpec("table", str(table), column="site")],
        check_dns=False,
        find_redirects=False,
        include_selection=False,
    )

    run = preload_run(run.pk)

    assert run.state == PreloadRun.State.DONE, run.error
    assert set(Domain.objects.values_list("name", flat=True)) == {
        "alpha.fr",
        "epsilon.fr",
        "zeta.fr",
        "theta.fr",
    }
    invalid = {
        (line.source.name, line.line): (line.text, line.reason)
        for line in PreloadInvalidLine.objects.select_related("source")
    }
    assert invalid == {
        ("registry", 2): ("bad\\x00.fr", "contains a NUL byte"),
        ("registry", 3): ("http://beta.fr/\\x00x", "contains a NUL byte"),
        ("registry", 4): ("gamma\\xff.fr", "not valid UTF-8 (byte 0xff)"),
        ("registry", 5): ("\\x1b[2Jdelta.fr", "contains a control character (U+001B)"),
        ("table", 3): ("io\\x00ta.fr", "contains a NUL byte"),
        ("table", 4): ("kap\\xfepa.fr", "not valid UTF-8 (byte 0xfe)"),
    }
    assert run.statistics["sources"]["registry"]["invalid"] == 4


def test_a_csv_cell_too_large_for_the_csv_reader_is_an_invalid_line(snapshot, tmp_path):
    table = tmp_path / "table.csv"
    table.write_text("name,site\nA,alpha.fr\nB," + "x" * 200_000 + "\nC,beta.fr\n")
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("table", str(table), column="site")],
        check_dns=False,
        find_redirects=False,
        include_selection=False,
    )
    run = preload_run(run.pk)
    assert run.state == PreloadRun.State.DONE, run.error
    assert set(Domain.objects.values_list("name", flat=True)) == {"alpha.fr", "beta.fr"}
    (line,) = PreloadInvalidLine.objects.all()
    assert line.line == 3 and line.reason.startswith("not a CSV row (field larger than field limit")


def test_a_list_with_a_nul_byte_uploaded_on_the_page_shows_the_line_as_invalid(
    snapshot, as_role, upload_dir, monkeypatch
):
    monkeypatch.setattr("harvest.tasks.preload.delay", lambda run_id: None)
    client = as_role(Role.ENGINEER)
    data = {
        "harvest_definition": snapshot.pk,
        "dns_timeout": "2",
        "dns_retries": "1",
        "source_1": "registry",
        "files_1": SimpleUploadedFile("a.txt", b"alpha.fr\nbad\x00.fr\nbeta.fr\n"),
    }
    response = client.post(reverse("harvest:preload_start"), data)
    assert response.status_code == 302
    run = preload_run(PreloadRun.objects.get().pk)  # what the worker does
    assert run.state == PreloadRun.State.DONE, run.error
    page = client.get(run.get_absolute_url()).content.decode()
    assert "bad\\x00.fr" in page and "contains a NUL byte" in page
    assert "2 domains, 2 new" in page


# Upload size ---------------------------------------------------------------------------------------


def post_lists(client, snapshot, **data):
    return client.post(
        reverse("harvest:preload_start"),
        {"harvest_definition": snapshot.pk, "dns_timeout": "2", "dns_retries": "1", **data},
    )


def test_an_upload_larger_than_the_limit_is_refused_and_never_written_whole(
    snapshot, as_role, upload_dir, settings, tmp_path, monkeypatch
):
    settings.PRELOAD_MAX_UPLOAD_BYTES = 10_000
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0  # every upload goes to a temporary file, as a large one does
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "upload-tmp")
    (tmp_path / "upload-tmp").mkdir()
    written = []
    real_receive = TemporaryFileUploadHandler.receive_data_chunk

    def receive(handler, raw_data, start):
        written.append(start + len(raw_data))
        return real_receive(handler, raw_data, start)

    monkeypatch.setattr(TemporaryFileUploadHandler, "receive_data_chunk", receive)
    big = b"".join(f"domain-{i:06d}.fr\n".encode() for i in range(50_000))  # 900 kB
    client = as_role(Role.ENGINEER)

    response = post_lists(client, snapshot, source_1="registry", files_1=SimpleUploadedFile("big.txt", big))

    assert response.status_code == 200
    errors = " ".join(response.context["form"].errors["files_1"])
    assert "big.txt" in errors and filesizeformat(10_000) in errors and "PRELOAD_MAX_UPLOAD_BYTES" in errors
    assert max(written, default=0) <= 10_000  # stopped while streaming, not after
    assert not PreloadRun.objects.exists()
    assert files_in(upload_dir) == [] and files_in(tmp_path / "upload-tmp") == []


def test_lists_larger_together_than_the_limit_are_refused(snapshot, as_role, upload_dir, settings):
    settings.PRELOAD_MAX_UPLOAD_BYTES = 1000
    client = as_role(Role.ENGINEER)
    response = post_lists(
        client,
        snapshot,
        source_1="registry",
        files_1=[SimpleUploadedFile("a.txt", b"a.fr\n" * 150), SimpleUploadedFile("b.txt", b"b.fr\n" * 150)],
        source_2="other",
        files_2=SimpleUploadedFile("c.txt", b"c.fr\n" * 10),
    )
    assert response.status_code == 200
    form = response.context["form"]
    assert "b.txt" in " ".join(form.errors["files_1"])
    assert "c.txt" in " ".join(form.errors["files_2"])
    assert not PreloadRun.objects.exists() and files_in(upload_dir) == []

    # At the limit, it is taken.
    response = post_lists(
        client, snapshot, source_1="registry", files_1=SimpleUploadedFile("a.txt", b"a.fr\n" * 200)
    )
    assert response.status_code == 302 and PreloadRun.objects.count() == 1


def test_the_service_refuses_uploads_larger_than_the_limit_and_writes_nothing(snapshot, upload_dir, settings):
    settings.PRELOAD_MAX_UPLOAD_BYTES = 1000
    uploads = [
        UploadedSource(name="registry", files=[SimpleUploadedFile("a.txt", b"a.fr\n" * 150)]),
        UploadedSource(name="other", files=[SimpleUploadedFile("b.txt", b"b.fr\n" * 150)]),
    ]
    with pytest.raises(ValidationError, match="PRELOAD_MAX_UPLOAD_BYTES"):
        preload_create_from_uploads(harvest_definition=snapshot, uploads=uploads, include_selection=False)
    assert not PreloadRun.objects.exists() and files_in(upload_dir) == []


def test_the_service_removes_the_stored_lists_when_the_run_is_refused(snapshot, upload_dir, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    uploads = [UploadedSource(name="registry", files=[SimpleUploadedFile("a.txt", b"a.fr\n")])]
    with pytest.raises(ValidationError, match="not allowed as a nameserver"):
        preload_create_from_uploads(harvest_definition=snapshot, uploads=uploads, nameservers=["127.0.0.1"])
    assert not PreloadRun.objects.exists() and files_in(upload_dir) == []

    run = preload_create_from_uploads(harvest_definition=snapshot, uploads=uploads, include_selection=False)
    (source,) = run.sources.all()
    assert source.path.startswith(str(upload_dir)) and source.path.endswith("-a.txt")


def test_the_start_page_still_checks_the_csrf_token(snapshot, db, upload_dir):
    client = Client(enforce_csrf_checks=True)
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    data = {"source_1": "registry", "files_1": SimpleUploadedFile("a.txt", b"alpha.fr\n")}
    assert post_lists(client, snapshot, **data).status_code == 403
    assert not PreloadRun.objects.exists() and files_in(upload_dir) == []

    client.get(reverse("harvest:preload_start"))
    token = client.cookies["csrftoken"].value
    data = {"source_1": "registry", "files_1": SimpleUploadedFile("a.txt", b"alpha.fr\n")}
    assert post_lists(client, snapshot, csrfmiddlewaretoken=token, **data).status_code == 302
    assert PreloadRun.objects.count() == 1


# Nameservers ---------------------------------------------------------------------------------------


REFUSED_NAMESERVERS = [
    ("127.0.0.1", "loopback"),
    ("127.0.0.1:5353", "loopback"),
    ("[::1]:53", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),
    ("169.254.169.254", "cloud metadata"),
    ("10.1.2.3", "private network"),
    ("0.0.0.0", "unspecified"),
]


@pytest.mark.parametrize(("nameserver", "reason"), REFUSED_NAMESERVERS)
def test_the_service_refuses_a_nameserver_the_address_guard_refuses(
    snapshot, tmp_path, settings, nameserver, reason
):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    listing = tmp_path / "list.txt"
    listing.write_text("alpha.fr\n")
    with pytest.raises(ValidationError) as refused:
        preload_create(
            harvest_definition=snapshot,
            sources=[SourceSpec("registry", str(listing))],
            nameservers=[nameserver],
        )
    message = " ".join(refused.value.message_dict["nameservers"])
    assert "not allowed as a nameserver" in message and reason in message
    assert "PRELOAD_ALLOWED_NAMESERVERS" in message or reason == "cloud metadata"
    assert not PreloadRun.objects.exists()


def test_the_allow_list_admits_named_addresses_and_never_a_metadata_service(snapshot, tmp_path, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    settings.PRELOAD_ALLOWED_NAMESERVERS = ["10.0.0.53", "192.168.10.0/24", "169.254.169.254"]
    listing = tmp_path / "list.txt"
    listing.write_text("alpha.fr\n")
    run = preload_create(
        harvest_definition=snapshot,
        sources=[SourceSpec("registry", str(listing))],
        nameservers=["10.0.0.53", "192.168.10.7:5353", "9.9.9.9"],
    )
    assert run.nameserver_list == ["10.0.0.53", "192.168.10.7:5353", "9.9.9.9"]
    for nameserver in ("10.0.0.54", "169.254.169.254"):
        with pytest.raises(ValidationError, match="not allowed as a nameserver"):
            preload_create(
                harvest_definition=snapshot,
                sources=[SourceSpec("registry", str(listing))],
                nameservers=[nameserver],
            )
    assert PreloadRun.objects.count() == 1


def test_the_form_refuses_a_nameserver_on_a_loopback_address_and_keeps_no_file(
    snapshot, as_role, upload_dir, settings
):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    response = post_lists(
        as_role(Role.ENGINEER),
        snapshot,
        nameservers="9.9.9.9\n169.254.169.254\n127.0.0.1:53",
        source_1="registry",
        files_1=SimpleUploadedFile("a.txt", b"alpha.fr\n"),
    )
    assert response.status_code == 200
    errors = response.context["form"].errors["nameservers"]
    assert len(errors) == 2
    assert "169.254.169.254" in errors[0] and "cloud metadata" in errors[0]
    assert "127.0.0.1:53" in errors[1] and "loopback" in errors[1]
    assert not PreloadRun.objects.exists() and files_in(upload_dir) == []


def test_the_dns_check_sends_no_query_to_a_refused_nameserver():
    with ScriptedServer(rcode=0) as server:
        settings = DnsSettings(nameservers=(server.address,), timeout=0.5)
        with pytest.raises(NameserverRefused, match="loopback"):
            list(check_domains(["alpha.fr"], settings, policy=AddressPolicy()))
        allowed = list(check_domains(["alpha.fr"], settings, policy=AddressPolicy.allowing(["127.0.0.1/32"])))
    assert [result.name for result in allowed] == ["alpha.fr"]
    assert server.queries == [
        ("alpha.fr", "A"),
        ("alpha.fr", "AAAA"),
        ("www.alpha.fr", "A"),
        ("www.alpha.fr", "AAAA"),
    ]


def test_a_run_whose_nameserver_is_no_longer_allowed_fails_without_sending_a_query(
    snapshot, tmp_path, settings
):
    listing = tmp_path / "list.txt"
    listing.write_text("alpha.fr\n")
    with ScriptedServer(rcode=0) as server:
        host, port = server.address
        run = preload_create(
            harvest_definition=snapshot,
            sources=[SourceSpec("registry", str(listing))],
            nameservers=[f"{host}:{port}"],
            find_redirects=False,
            include_selection=False,
        )
        settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False  # the deployment changed its mind

        run = preload_run(run.pk)

    assert run.state == PreloadRun.State.FAILED and run.stage == PreloadRun.Stage.DNS
    assert "not allowed as a nameserver" in run.error and "loopback" in run.error
    assert server.queries == []


def test_a_run_uses_a_resolver_on_a_private_address_the_deployment_allows(snapshot, tmp_path, settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    settings.PRELOAD_ALLOWED_NAMESERVERS = ["127.0.0.1"]
    listing = tmp_path / "list.txt"
    listing.write_text("alive.fr\ndead.fr\n")
    with dns_server({"alive.fr": "192.0.2.1"}) as server:
        run = preload_run(
            preload_create(
                harvest_definition=snapshot,
                sources=[SourceSpec("registry", str(listing))],
                nameservers=[server.nameserver],
                dns_timeout=1.0,
                find_redirects=False,
                include_selection=False,
            ).pk
        )
    assert run.state == PreloadRun.State.DONE, run.error
    assert list(Domain.objects.values_list("name", flat=True)) == ["alive.fr"]


def test_the_command_refuses_a_nameserver_on_a_metadata_address(snapshot, tmp_path):
    listing = tmp_path / "list.txt"
    listing.write_text("alpha.fr\n")
    with pytest.raises(CommandError, match=r"169\.254\.169\.254.* not allowed as a nameserver"):
        call_command(
            "preload_domains", str(listing), "--source", "registry", "--nameserver", "169.254.169.254"
        )
    assert not PreloadRun.objects.exists()


def test_an_error_with_a_nul_byte_is_kept_on_the_failed_run(snapshot, tmp_path, monkeypatch):
    listing = tmp_path / "list.txt"
    listing.write_text("alpha.fr\n")

    def merge(run, progress):
        raise ValueError("bad\x00name \udcff")

    monkeypatch.setitem(preload_service.STAGE_FUNCTIONS, PreloadRun.Stage.MERGE, merge)
    run = preload_create(
        harvest_definition=snapshot, sources=[SourceSpec("registry", str(listing))], check_dns=False
    )
    run = preload_run(run.pk)
    assert run.state == PreloadRun.State.FAILED and run.error == "bad\\x00name \\udcff"
