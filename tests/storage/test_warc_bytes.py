"""WARC bytes (/warcs/<name>): whole files or single ranges, of registered files only, to readers only."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone
from warcio.archiveiterator import ArchiveIterator

from storage.models import Capture, WarcFile
from tests.access import user_for
from webarchive.permissions import Role


@pytest.fixture
def reader(client, user_with_role):
    # WARC bytes are for crawl engineers (and the replay account): no downloads for the other roles.
    client.force_login(user_with_role(Role.ENGINEER))
    return client


@pytest.fixture
def warc(indexed_site) -> WarcFile:
    """The crawl's largest file."""
    return max(indexed_site, key=lambda warc_file: warc_file.size)


def url_of(name: str) -> str:
    return reverse("warc_bytes", kwargs={"filename": name})


def fetch(client, name: str, range_header: str | None = None, method: str = "get"):
    headers = {"Range": range_header} if range_header is not None else {}
    return getattr(client, method)(url_of(name), headers=headers)


def content(response) -> bytes:
    return b"".join(response.streaming_content)


def test_the_whole_file(reader, warc):
    response = fetch(reader, warc.name)
    assert response.status_code == 200
    assert response.streaming  # read from the file block by block, never whole in memory
    data = content(response)
    assert data == Path(warc.path).read_bytes()
    assert response["Content-Length"] == str(len(data)) == str(warc.size)
    assert response["Accept-Ranges"] == "bytes"
    assert response["Content-Type"] == "application/warc"
    assert not response.has_header("Content-Encoding")  # clients must not inflate the records
    assert not response.has_header("Content-Range")


@pytest.mark.parametrize(
    ("header", "first", "last"),
    [
        ("bytes=0-0", 0, 0),
        ("bytes=100-1099", 100, 1099),
        ("bytes=1000-", 1000, None),  # open-ended: to the end
        ("bytes=-500", -500, None),  # suffix: the last 500 bytes
        ("bytes=10-99999999999", 10, None),  # a last byte past the end stops at the end
        ("bytes=-99999999999", 0, None),  # a suffix longer than the file is the whole file
        ("bytes= 5 - 9", 5, 9),
    ],
)
def test_a_single_range(reader, warc, header, first, last):
    data = Path(warc.path).read_bytes()
    expected = data[first : None if last is None else last + 1]
    response = fetch(reader, warc.name, header)
    assert response.status_code == 206
    assert content(response) == expected
    start = first if first >= 0 else len(data) + first
    assert response["Content-Range"] == f"bytes {start}-{start + len(expected) - 1}/{len(data)}"
    assert response["Content-Length"] == str(len(expected))
    assert response["Accept-Ranges"] == "bytes"


def test_the_range_of_a_capture_is_its_record(reader, warc):
    """What pywb asks for: offset and length from the index, one whole gzip member, one record."""
    for capture in Capture.objects.filter(warc_file=warc).order_by("offset")[:5]:
        header = f"bytes={capture.offset}-{capture.offset + capture.length - 1}"
        data = content(fetch(reader, warc.name, header))
        assert len(data) == capture.length
        records = list(ArchiveIterator(io.BytesIO(data)))
        assert len(records) == 1
        assert records[0].rec_headers.get_header("WARC-Target-URI") == capture.url


@pytest.mark.parametrize("header", ["bytes=99999999999-", "bytes=-0"])
def test_a_range_past_the_end_is_not_satisfiable(reader, warc, header):
    response = fetch(reader, warc.name, header)
    assert response.status_code == 416
    assert response["Content-Range"] == f"bytes */{warc.size}"
    assert f"the file has {warc.size} bytes" in response.content.decode()


@pytest.mark.parametrize("header", ["bytes=0-9,20-29", "bytes=abc", "lines=0-9", "bytes=9-0", "bytes=-"])
def test_several_or_malformed_ranges_get_the_whole_file(reader, warc, header):
    response = fetch(reader, warc.name, header)
    assert response.status_code == 200
    assert content(response) == Path(warc.path).read_bytes()


def test_head_gives_the_headers_only(reader, warc):
    response = fetch(reader, warc.name, method="head")
    assert response.status_code == 200
    assert response.content == b""
    assert response["Content-Length"] == str(warc.size)
    assert response["Accept-Ranges"] == "bytes"
    response = fetch(reader, warc.name, "bytes=10-19", method="head")
    assert response.status_code == 206
    assert response["Content-Length"] == "10"
    assert response["Content-Range"] == f"bytes 10-19/{warc.size}"


def test_a_file_being_written_is_read_from_its_open_name(db, reader, tmp_path, warc_paths):
    final = tmp_path / warc_paths[0].name
    shutil.copy(warc_paths[0], f"{final}.open")
    WarcFile.objects.create(name=final.name, path=str(final), created_at=timezone.now())
    data = Path(f"{final}.open").read_bytes()
    assert content(fetch(reader, final.name)) == data
    assert content(fetch(reader, final.name, "bytes=0-99")) == data[:100]
    # Its writer closes it (renames it): the same address serves the final file.
    Path(f"{final}.open").rename(final)
    assert content(fetch(reader, final.name, "bytes=0-99")) == data[:100]
    # A closed file is only ever read at its path.
    WarcFile.objects.filter(name=final.name).update(closed_at=timezone.now())
    final.rename(f"{final}.open")
    assert fetch(reader, final.name).status_code == 503


def test_a_registered_file_missing_on_disk_is_unavailable(db, reader, tmp_path):
    WarcFile.objects.create(
        name="gone.warc.gz",
        path=str(tmp_path / "gone.warc.gz"),
        created_at=timezone.now(),
        closed_at=timezone.now(),
    )
    response = fetch(reader, "gone.warc.gz")
    assert response.status_code == 503
    assert "gone.warc.gz is in the archive but its bytes are not available" in response.content.decode()


def test_an_arc_file_is_served_as_bytes(db, reader, tmp_path):
    path = tmp_path / "old.arc.gz"
    path.write_bytes(b"\x1f\x8b not really an ARC file")
    WarcFile.objects.create(
        name=path.name, path=str(path), created_at=timezone.now(), closed_at=timezone.now()
    )
    response = fetch(reader, path.name)
    assert response["Content-Type"] == "application/octet-stream"
    assert content(response) == path.read_bytes()


@pytest.mark.parametrize(
    "name",
    [
        "nothing.warc.gz",
        "../../../../etc/passwd",
        "..",
        "%2e%2e/%2e%2e/etc/passwd",
        "sub/dir.warc.gz",
        "..%2fsecret.warc.gz",
    ],
)
def test_only_registered_files_are_served(reader, indexed_site, name):
    response = reader.get(f"/warcs/{name}")
    assert response.status_code == 404
    assert response.content == b"No WARC file of this name.\n"


def test_a_registered_name_with_a_slash_is_still_refused(db, reader, tmp_path):
    path = tmp_path / "plain.warc.gz"
    path.write_bytes(b"data")
    WarcFile.objects.create(
        name="a/plain.warc.gz", path=str(path), created_at=timezone.now(), closed_at=timezone.now()
    )
    assert reader.get("/warcs/a/plain.warc.gz").status_code == 404


def test_only_get_and_head(reader, warc):
    assert reader.post(url_of(warc.name)).status_code == 405


def test_anonymous_requests_are_challenged(client, warc):
    response = fetch(client, warc.name, "bytes=0-9")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="web archive"'


@pytest.mark.parametrize("role", [*Role, "admin", None])
def test_engineers_may_read_and_no_other_role_may(client, warc, role):
    client.force_login(user_for(role))
    response = fetch(client, warc.name, "bytes=0-9")
    if role not in (Role.ENGINEER, "admin"):
        assert response.status_code == 403
        assert "does not allow you to download WARC files" in response.content.decode()
    else:
        assert response.status_code == 206
        assert content(response) == Path(warc.path).read_bytes()[:10]
