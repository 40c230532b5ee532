"""A capture index outside crawlers write to (``POST /api/cdx/``, the OutbackCDX role).

A WARC file written with warcio somewhere else is registered (``manage.py register_warcs``), indexed
by the other side's own tool (``cdxj-indexer``, CDXJ and CDX11), and its lines posted: they are then
in ``/cdx`` and replayed by a real pywb with the bytes written. Posting again writes nothing; a body
with any bad line is refused with every bad line's number, and nothing is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from io import BytesIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage.models import Capture, WarcFile
from storage.services.outside_index import CaptureLinesRefused, capture_lines_add
from tests.access import user_for
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from webarchive.permissions import Role

CDXJ_INDEXER = Path(sys.executable).parent / "cdxj-indexer"
PAGE = b"<html><head><title>Outside</title></head><body><p>Written by someone else.</p></body></html>"
PAGES = {
    "http://outside.example/": PAGE,
    "http://outside.example/about?lang=fr": b"<html><body>A propos</body></html>",
}
NAME = "outside-crawler-00001.warc.gz"


def write_warc(path: Path, *, gzip: bool = True) -> Path:
    """A WARC file as another crawler writes one: warcinfo, then a request and a response per page."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=gzip)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "outside-crawler/1.0"}))
        for url, body in PAGES.items():
            request = writer.create_warc_record(
                url, "request", payload=BytesIO(f"GET {url} HTTP/1.1\r\n\r\n".encode())
            )
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=headers)
            )
            writer.write_record(request)
    return path


def cdxj_indexer(path: Path, *options: str) -> list[str]:
    """The other side's index lines for the file (named by its base name, as the archive names it)."""
    command = [str(CDXJ_INDEXER), *options, path.name]
    result = subprocess.run(command, check=True, capture_output=True, text=True, cwd=path.parent)
    return result.stdout.splitlines()


@pytest.fixture
def outside_warc(tmp_path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    return write_warc(directory / NAME)


@pytest.fixture
def registered(outside_warc) -> WarcFile:
    call_command("register_warcs", str(outside_warc), stdout=BytesIOText(), stderr=BytesIOText())
    return WarcFile.objects.get(name=NAME)


class BytesIOText:
    """A stream the command writes to, read back as text."""

    def __init__(self):
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


@pytest.fixture
def engineer(client, db):
    client.force_login(user_for(Role.ENGINEER))
    return client


def post(client, body: str | bytes, **headers):
    data = body.encode() if isinstance(body, str) else body
    return client.post(reverse("api:cdx-lines"), data=data, content_type="text/plain", headers=headers)


def cdx_lines(client, url: str) -> list[dict]:
    response = client.get(reverse("cdx"), {"url": url, "matchType": "prefix"})
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line.split(" ", 2)[2]) for line in text.splitlines()]


# -- registering the file ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_file_written_elsewhere_is_registered_checked_and_not_indexed(outside_warc):
    import hashlib

    sha256 = hashlib.sha256(outside_warc.read_bytes()).hexdigest()
    out = BytesIOText()
    call_command("register_warcs", str(outside_warc), "--sha256", sha256, stdout=out)
    warc = WarcFile.objects.get(name=NAME)
    assert out.text.split() == [NAME, str(outside_warc.stat().st_size), sha256]
    assert (warc.origin, warc.sha256, warc.size, warc.path) == (
        WarcFile.Origin.IMPORTED,
        sha256,
        outside_warc.stat().st_size,
        str(outside_warc.resolve()),
    )
    assert warc.closed_at and warc.indexed_at  # its index is its crawler's: the ingest chain adds none
    assert not Capture.objects.exists()
    call_command("register_warcs", str(outside_warc), stdout=BytesIOText())  # again: nothing new
    assert WarcFile.objects.count() == 1


@pytest.mark.django_db
def test_registering_refuses_a_wrong_checksum_a_wrong_size_and_a_file_that_is_not_warc(
    outside_warc, tmp_path
):
    err = BytesIOText()
    with pytest.raises(CommandError, match="1 files refused"):
        call_command("register_warcs", str(outside_warc), "--sha256", "0" * 64, stderr=err)
    assert "reads as SHA-256" in err.text and "not " + "0" * 64 in err.text
    with pytest.raises(CommandError):
        call_command("register_warcs", str(outside_warc), "--size", "12", stderr=err)
    assert "not 12." in err.text
    torn = tmp_path / "torn.warc.gz"
    torn.write_bytes(outside_warc.read_bytes()[:-20])
    text = tmp_path / "notes.warc"
    text.write_text("these are not WARC records\n")
    with pytest.raises(CommandError, match="2 files refused"):
        call_command("register_warcs", str(torn), str(text), stderr=err)
    assert "torn.warc.gz: cannot read at byte" in err.text and "notes.warc: cannot read" in err.text
    assert not WarcFile.objects.exists()


def register(client, **fields):
    return client.post(reverse("api:warcfile-register"), fields, content_type="application/json")


@pytest.mark.django_db
def test_the_api_registers_a_file_in_an_open_directory_only(
    outside_warc, tmp_path, engineer, client, settings
):
    import hashlib

    sha256 = hashlib.sha256(outside_warc.read_bytes()).hexdigest()
    settings.CDX_WRITE_ALLOWED_ROOTS = []
    refused = register(engineer, path=str(outside_warc))
    assert refused.status_code == 400
    assert "is not in a directory open to registration" in refused.json()["path"][0]
    settings.CDX_WRITE_ALLOWED_ROOTS = [outside_warc.parent]
    elsewhere = tmp_path / NAME
    elsewhere.write_bytes(outside_warc.read_bytes())
    escaping = outside_warc.parent / ".." / NAME  # the same file by a path that leaves the directory
    for path in (elsewhere, escaping):
        assert "is not in a directory open" in register(engineer, path=str(path)).json()["path"][0]
    wrong = register(engineer, path=str(outside_warc), sha256="0" * 64)
    assert wrong.status_code == 400 and "not " + "0" * 64 in wrong.json()["path"][0]
    missing = register(engineer, path=str(outside_warc.parent / "missing.warc.gz"))
    assert missing.status_code == 400 and "no such file" in missing.json()["path"][0]
    assert register(engineer, path=str(outside_warc), sha256="not-hex").status_code == 400
    assert not WarcFile.objects.exists()

    created = register(engineer, path=str(outside_warc), sha256=sha256, size=outside_warc.stat().st_size)
    assert created.status_code == 201, created.content
    assert (created.json()["name"], created.json()["sha256"], created.json()["origin"]) == (
        NAME,
        sha256,
        "imported",
    )
    again = register(engineer, path=str(outside_warc))
    assert again.status_code == 200 and again.json()["id"] == created.json()["id"]
    assert post(engineer, "\n".join(cdxj_indexer(outside_warc))).json() == {"written": 2, "unchanged": 0}


@pytest.mark.django_db
def test_only_those_who_may_add_captures_register_files(outside_warc, client, settings):
    settings.CDX_WRITE_ALLOWED_ROOTS = [outside_warc.parent]
    assert register(client, path=str(outside_warc)).status_code == 401
    for role in (Role.READER, Role.LIBRARIAN, Role.CURATOR, Role.MANAGER):
        client.force_login(user_for(role))
        assert register(client, path=str(outside_warc)).status_code == 403, role
    assert not WarcFile.objects.exists()


# -- lines in, /cdx and replay out ------------------------------------------------------------------


def test_cdxj_indexer_lines_posted_are_in_the_cdx_api_and_replay_with_the_same_bytes(
    pywb_replay,  # noqa: F811
    outside_warc,
    client,
):
    call_command("register_warcs", str(outside_warc), stdout=BytesIOText())
    lines = cdxj_indexer(outside_warc)
    assert len(lines) == 2  # the two responses (cdxj-indexer leaves requests and warcinfo out)
    token = Token.objects.create(user=user_for(Role.ENGINEER)).key
    auth = {"Authorization": f"Token {token}"}

    response = post(client, "\n".join(lines) + "\n", **auth)
    assert response.status_code == 200, response.content
    assert response.json() == {"written": 2, "unchanged": 0}

    # As soon as the POST returned: in /cdx (with our SURT key), then replayed by pywb from our index.
    client.force_login(user_for(Role.ENGINEER))
    found = cdx_lines(client, "http://outside.example/")
    assert sorted(line["url"] for line in found) == sorted(PAGES)
    assert {line["filename"] for line in found} == {NAME}
    capture = Capture.objects.get(url="http://outside.example/")
    assert capture.record_type == "response" and capture.record_id.startswith("<urn:uuid:")
    replayed = pywb_replay.get(pywb_replay.capture_url("http://outside.example/", capture.timestamp14, "id_"))
    assert replayed.status_code == 200, pywb_replay.log_text()
    assert replayed.content == PAGE

    # Posted again (say the crawler retried): nothing new.
    again = post(client, "\n".join(lines), **auth)
    assert again.status_code == 200 and again.json() == {"written": 0, "unchanged": 2}
    assert Capture.objects.count() == 2


@pytest.mark.django_db
def test_cdx11_lines_with_their_header_are_written_too(registered, engineer):
    lines = cdxj_indexer(Path(registered.path), "-11")
    assert lines[0] == " CDX N b a m s k r M S V g"
    response = post(engineer, "\n".join(lines))
    assert response.status_code == 200, response.content
    assert response.json() == {"written": 2, "unchanged": 0}
    page = Capture.objects.get(url="http://outside.example/about?lang=fr")
    assert (page.status, page.mime, page.warc_file) == (200, "text/html", registered)
    # The same captures as CDXJ: already there.
    assert post(engineer, "\n".join(cdxj_indexer(Path(registered.path)))).json() == {
        "written": 0,
        "unchanged": 2,
    }


# -- bad input: refused, naming the lines, nothing written ------------------------------------------


def good_lines(registered) -> list[str]:
    return cdxj_indexer(Path(registered.path))


def with_fields(line: str, **fields) -> str:
    key, stamp, blob = line.split(" ", 2)
    return f"{key} {fields.pop('timestamp', stamp)} {json.dumps(json.loads(blob) | fields)}"


BAD = {
    "bad JSON": (lambda good: good[1][:-2], "bad JSON"),
    "bad timestamp": (lambda good: with_fields(good[1], timestamp="2024130199"), "is not 14 digits"),
    "impossible date": (lambda good: with_fields(good[1], timestamp="20241301000000"), "is not a date"),
    "bad URL": (lambda good: with_fields(good[1], url="javascript:alert(1)"), "is not an http"),
    "unknown file": (lambda good: with_fields(good[1], filename="elsewhere.warc.gz"), "no file elsewhere"),
    "offset beyond the file": (lambda good: with_fields(good[1], offset="999999"), "beyond the end"),
    "wrong record at the offset": (
        lambda good: with_fields(good[0], offset=json.loads(good[1].split(" ", 2)[2])["offset"]),
        "is of http://outside.example/about?lang=fr, not http://outside.example/",
    ),
    "no record at the offset": (
        lambda good: with_fields(
            good[1], offset=str(int(json.loads(good[1].split(" ", 2)[2])["offset"]) + 10)
        ),
        "no WARC record at offset",
    ),
    "wrong length": (lambda good: with_fields(good[1], length="100"), "bytes long, not 100"),
    "date not the record's": (lambda good: with_fields(good[1], timestamp="20000101000000"), "captured at"),
    "not a number": (lambda good: with_fields(good[1], offset="-5"), "is not a whole number"),
    "neither CDXJ nor CDX11": (lambda good: "com,example)/ 20240101000000 http://example.com/", "3 fields"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_line_refuses_the_whole_body_naming_its_line(registered, engineer, case):
    good = good_lines(registered)
    make, reason = BAD[case]
    body = "\n".join([good[0], "", make(good)])  # the bad line is line 3: blank lines are counted
    response = post(engineer, body)
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["detail"] == "1 bad lines: nothing was written."
    assert [error["line"] for error in answer["errors"]] == [3]
    assert reason in answer["errors"][0]["error"]
    assert not Capture.objects.exists()  # not even the good first line


@pytest.mark.django_db
@pytest.mark.parametrize("compressed", [True, False], ids=["gzip", "uncompressed"])
def test_no_offset_inside_a_record_passes_for_one(tmp_path, compressed):
    """Every offset inside a record is refused, whatever the bytes there resemble.

    The middle of a deflate stream is random bytes, which warcio could read as an ARC record, so
    that a line's answer once depended on the record IDs and dates the file happened to hold.
    """
    name = "outside-crawler-00002.warc" + (".gz" if compressed else "")
    path = write_warc(tmp_path / name, gzip=compressed)
    call_command("register_warcs", str(path), stdout=BytesIOText(), stderr=BytesIOText())
    second = good_lines(WarcFile.objects.get(name=name))[1]
    fields = json.loads(second.split(" ", 2)[2])
    start, length = int(fields["offset"]), int(fields["length"])
    body = "\n".join(with_fields(second, offset=str(start + step)) for step in range(1, length))
    with pytest.raises(CaptureLinesRefused) as refusal:
        capture_lines_add(body=body.encode())
    errors = refusal.value.errors
    assert len(errors) == length - 1
    size = path.stat().st_size
    assert [error.error for error in errors] == [
        f"no WARC record at offset {offset}"
        if offset + length <= size
        else f"offset {offset} + length {length} is beyond the end of {name} ({size} bytes)"
        for offset in range(start + 1, start + length)
    ]
    assert not Capture.objects.exists()


@pytest.mark.django_db
def test_every_bad_line_is_listed(registered, engineer):
    good = good_lines(registered)
    body = "\n".join(["not a line", good[0], '{"url": 1}', with_fields(good[1], status="999")])
    answer = post(engineer, body).json()
    assert [error["line"] for error in answer["errors"]] == [1, 3, 4]
    assert answer["errors_count"] == 3 and "not an HTTP status" in answer["errors"][2]["error"]
    assert not Capture.objects.exists()


@pytest.mark.django_db
def test_an_empty_body_and_a_too_large_one_are_refused(registered, engineer, settings):
    for empty in ("", "\n\n"):
        response = post(engineer, empty)
        assert response.status_code == 400
        assert response.json()["detail"] == "No CDXJ or CDX line in the body."
    body = "\n".join(good_lines(registered))
    settings.CDX_WRITE_MAX_BYTES = len(body) - 1
    response = post(engineer, body)
    assert response.status_code == 400
    assert response.json()["detail"] == (
        f"The body has more than {len(body) - 1} bytes: send the lines in smaller parts."
    )
    assert not Capture.objects.exists()


@pytest.mark.django_db
def test_lines_of_a_retired_file_or_one_being_written_are_refused(registered, engineer):
    body = "\n".join(good_lines(registered))
    WarcFile.objects.filter(pk=registered.pk).update(closed_at=None)
    assert "retired or still being written" in post(engineer, body).json()["errors"][0]["error"]
    WarcFile.objects.filter(pk=registered.pk).update(closed_at=timezone.now(), retired_at=timezone.now())
    assert "retired or still being written" in post(engineer, body).json()["errors"][0]["error"]
    assert not Capture.objects.exists()


@pytest.mark.django_db
def test_another_capture_at_an_indexed_offset_is_refused(registered, engineer):
    good = good_lines(registered)
    assert post(engineer, good[0]).status_code == 200
    moved = with_fields(good[0], url="http://outside.example/other")
    answer = post(engineer, moved).json()
    assert "the index already has http://outside.example/ at offset" in answer["errors"][0]["error"]
    # The same line twice in one body is one capture.
    assert post(engineer, "\n".join([good[1], good[1]])).json() == {"written": 1, "unchanged": 1}
    assert Capture.objects.count() == 2


# -- who may write ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_anonymous_callers_and_roles_without_the_permission_are_refused(registered, client):
    body = "\n".join(good_lines(registered))
    assert post(client, body).status_code == 401
    assert post(client, body, Authorization="Token not-a-token").status_code == 401
    for role in (Role.READER, Role.LIBRARIAN, Role.CURATOR, Role.MANAGER):
        client.force_login(user_for(role))
        assert post(client, body).status_code == 403, role
    assert not Capture.objects.exists()
    assert engineer_can_get_nothing(client)


def engineer_can_get_nothing(client) -> bool:
    """The endpoint only takes lines: reading the index is /cdx."""
    client.force_login(user_for(Role.ENGINEER))
    return client.get(reverse("api:cdx-lines")).status_code == 405
