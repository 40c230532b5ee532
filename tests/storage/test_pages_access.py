"""The Access pages through HTTP: search by URL (exact and prefix), a capture's page and its raw record,
a WARC file's page, the captures of a job and of a domain, and who may open them.

The archive is a small WARC file written here with warcio (several captures of one URL over years and
months, other URLs for prefix and domain searches, statuses and MIME types to count), indexed by the
same service as ``index_warcs``; the crawl of the test website (``indexed_site``) checks the pages on
what the crawler really writes.
"""

from __future__ import annotations

import gzip
import io
import re
import shutil
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage.models import Capture, WarcFile
from storage.models_access import AccessLevel
from storage.replay import replay_url
from storage.services.access import access_rule_save
from storage.services.indexing import warc_file_index
from storage.views import pages
from tests.access import EVERYONE, assert_page_access
from tests.factories import UserFactory
from tests.harvest.crawljobs import job_for_sites
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

# url, WARC-Date, HTTP status (None: a resource record), MIME type
RECORDS = [
    ("http://example.com/a", "2021-03-05T10:00:00Z", 200, "text/html"),
    ("http://example.com/a", "2021-03-20T08:30:00Z", 200, "text/html"),
    ("http://example.com/a", "2021-07-01T00:00:01Z", 200, "text/html"),
    ("https://www.example.com/a", "2022-06-01T12:00:00Z", 200, "text/html"),
    ("http://example.com/a", "2023-01-15T09:00:00Z", 200, "text/html"),
    # Still November in UTC (December in Paris, the site's time zone): months are UTC, as timestamps.
    ("http://example.com/a", "2023-11-30T23:59:59Z", 200, "text/html"),
    ("http://example.com/about", "2023-02-01T00:00:00Z", 200, "text/html"),
    ("http://example.com/b/logo.png", "2023-02-01T00:00:01Z", 200, "image/png"),
    ("http://example.com/missing", "2023-02-01T00:00:02Z", 404, "text/html"),
    ("http://sub.example.com/", "2023-02-02T00:00:00Z", 200, "text/html"),
    ("http://example.com:8080/port", "2023-02-03T00:00:00Z", 200, "text/plain"),
    ("http://example.com/notes.txt", "2023-02-03T00:00:01Z", None, "text/plain"),
    ("http://example-shop.com/", "2023-02-04T00:00:00Z", 200, "text/html"),
    ("http://example.org/", "2023-02-05T00:00:00Z", 200, "text/html"),
]
A_KEY = "com,example)/a"


def write_warc(path: Path, records=RECORDS) -> Path:
    """A gzip WARC file (one member per record) holding ``records``; each body names its URL and date."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for url, date, status, mime in records:
            body = f"<p>{url} at {date}</p>".encode()
            if status is None:
                record = writer.create_warc_record(
                    url,
                    "resource",
                    payload=io.BytesIO(body),
                    warc_content_type=mime,
                    warc_headers_dict={"WARC-Date": date},
                )
            else:
                http = StatusAndHeaders(
                    f"{status} {'OK' if status == 200 else 'Not Found'}",
                    [("Content-Type", mime), ("Content-Length", str(len(body))), ("X-Archive-Test", date)],
                    protocol="HTTP/1.1",
                )
                record = writer.create_warc_record(
                    url,
                    "response",
                    payload=io.BytesIO(body),
                    http_headers=http,
                    warc_headers_dict={"WARC-Date": date},
                )
            writer.write_record(record)
    return path


@pytest.fixture
def job(db):
    return job_for_sites([("example.com", "http://example.com/")])


@pytest.fixture
def archive(tmp_path, job):
    """The WARC file of RECORDS, indexed as made by ``job``: its WarcFile row."""
    return warc_file_index(
        path=write_warc(tmp_path / "test-1-20230101000000-00001-tests.warc.gz"), job_id=job.pk
    ).warc_file


@pytest.fixture
def librarian(client):
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    return client


@pytest.fixture
def engineer(client):
    """A crawl engineer: the one role that downloads records as stored."""
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    return client


def capture_of(url: str, date: str) -> Capture:
    stamp = re.sub(r"\D", "", date)
    return next(c for c in Capture.objects.filter(url=url) if c.timestamp14 == stamp)


def search(client, **params):
    return client.get(reverse("storage:search"), params)


def text(response) -> str:
    return unescape(response.content.decode())


def field_error(response, field: str) -> str:
    found = re.search(rf'id="{field}-error">([^<]*)<', response.content.decode())
    assert found, f"no error shown at the {field} field"
    return unescape(found.group(1))


def listed_timestamps(response) -> list[str]:
    return re.findall(r'data-timestamp="(\d{14})"', response.content.decode())


def record_at(path: Path, offset: int):
    """The record at ``offset`` as warcio reads it: (WARC headers, HTTP headers or None, payload)."""
    with path.open("rb") as stream:
        stream.seek(offset)
        record = next(iter(ArchiveIterator(stream)))
        return (
            record.rec_headers.headers,
            record.http_headers.headers if record.http_headers else None,
            record.content_stream().read(),
        )


# Who may open the pages --------------------------------------------------------------------------


PAGES = {
    "search": lambda archive, job: reverse("storage:search"),
    "search results": lambda archive, job: reverse("storage:search") + "?url=example.com/a",
    "capture_detail": lambda archive, job: reverse(
        "storage:capture_detail", kwargs={"pk": archive.captures.first().pk}
    ),
    "capture_raw": lambda archive, job: reverse(
        "storage:capture_raw", kwargs={"pk": archive.captures.first().pk}
    ),
    "warcfile_detail": lambda archive, job: reverse("storage:warcfile_detail", kwargs={"pk": archive.pk}),
    "job_captures": lambda archive, job: reverse("storage:job_captures", kwargs={"pk": job.pk}),
    "domain_captures": lambda archive, job: reverse(
        "storage:domain_captures", kwargs={"name": "example.com"}
    ),
}


# Readers see the search and the captures their rules open to them (the job's definition is open
# here); the pages of files, jobs and domains are for staff, raw records for crawl engineers.
STAFF = EVERYONE - {Role.READER}
ALLOWED = {
    "search": EVERYONE,
    "search results": EVERYONE,
    "capture_detail": EVERYONE,
    "capture_raw": frozenset({Role.ENGINEER}),
    "warcfile_detail": STAFF,
    "job_captures": STAFF,
    "domain_captures": STAFF,
}


@pytest.mark.parametrize("name", PAGES)
def test_each_role_opens_the_pages_it_may_anonymous_users_log_in_and_users_without_a_role_may_not(
    client, archive, job, name, settings
):
    settings.ACCESS_ANONYMOUS = False  # with it, see tests/storage/test_access_rules.py
    access_rule_save(harvest_definition=job.harvest_definition, level=AccessLevel.OPEN)
    assert_page_access(client, PAGES[name](archive, job), ALLOWED[name])


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("storage:capture_detail", {"pk": 999_999}),
        ("storage:capture_raw", {"pk": 999_999}),
        ("storage:warcfile_detail", {"pk": 999_999}),
        ("storage:job_captures", {"pk": 999_999}),
        ("storage:domain_captures", {"name": "not_a..domain"}),
        ("storage:domain_captures", {"name": "-bad-.com"}),
    ],
)
def test_what_does_not_exist_is_404(engineer, name, kwargs):
    assert engineer.get(reverse(name, kwargs=kwargs)).status_code == 404


def test_the_access_area_lists_the_search(librarian):
    response = librarian.get("/access/")
    assert f'href="{reverse("storage:search")}">Search the archive<' in response.content.decode()


# Search by URL -----------------------------------------------------------------------------------


def test_exact_search_groups_the_captures_by_year_and_month_latest_first(librarian, archive):
    response = search(librarian, url="http://example.com/a")
    assert response.status_code == 200
    context = response.context
    assert context["key"] == A_KEY
    assert context["total"] == 6
    years = [
        (entry.year, entry.count, {m: c.count for m, c in entry.months.items()}) for entry in context["years"]
    ]
    # 2023-11-30 23:59:59 UTC is in December in the site's time zone (Paris), where the pages show it.
    assert years == [(2023, 2, {12: 1, 1: 1}), (2022, 1, {6: 1}), (2021, 3, {7: 1, 3: 2})]
    html = response.content.decode()
    assert "6 captures of http://example.com/a" in text(response)
    # The calendar: one row per year, latest first, and a count in the cell of each month that has captures.
    assert re.findall(r'<tr data-year="(\d{4})"', html) == ["2023", "2022", "2021"]
    row_2021 = html[html.index('data-year="2021"') :]
    assert re.search(r'data-month="3"><a href="[^"]*month=3[^"]*" class="month-count">2</a>', row_2021)
    # Without a year asked for, the latest year's captures are listed, under their months, latest first.
    assert listed_timestamps(response) == ["20231130235959", "20230115090000"]
    assert re.findall(r'month-group" data-month="([\d-]+)"', html) == ["2023-12", "2023-01"]


def test_a_year_or_a_month_lists_its_captures(librarian, archive):
    response = search(librarian, url="example.com/a", year="2021")
    assert listed_timestamps(response) == ["20210701000001", "20210320083000", "20210305100000"]
    assert "3 captures in 2021" in text(response)
    response = search(librarian, url="example.com/a", year="2021", month="3")
    assert listed_timestamps(response) == ["20210320083000", "20210305100000"]
    assert "2 captures in March 2021" in text(response)
    # A period without captures (or nonsense) falls back to the latest year.
    for period in ({"year": "1999"}, {"year": "2021", "month": "13"}, {"year": "abc"}):
        response = search(librarian, url="example.com/a", **period)
        expected = (
            ["20210701000001", "20210320083000", "20210305100000"] if period.get("year") == "2021" else None
        )
        assert listed_timestamps(response) == (expected or ["20231130235959", "20230115090000"])


@pytest.mark.parametrize(
    "typed",
    [
        "example.com/a",
        "http://example.com/a",
        "https://www.example.com/a",
        "HTTP://EXAMPLE.COM/a",
        " example.com/a ",
    ],
)
def test_a_url_is_found_however_it_is_typed_as_pywb_keys_it(librarian, archive, typed):
    response = search(librarian, url=typed)
    assert response.context["key"] == A_KEY
    assert response.context["total"] == 6


def test_the_capture_rows_link_to_the_capture_page_and_to_replay(librarian, archive, settings):
    settings.REPLAY_URL = "http://replay.example:8080/"
    settings.REPLAY_COLLECTION = "archive"
    capture = capture_of("http://example.com/a", "2023-01-15T09:00:00Z")
    html = search(librarian, url="example.com/a").content.decode()
    row = html[html.index(f'data-capture="{capture.pk}"') :].split("</tr>")[0]
    assert f'href="{capture.get_absolute_url()}"' in row
    assert f'href="{replay_url("http://example.com/a", "20230115090000")}"' in row
    assert 'href="/access/replay/20230115090000/http://example.com/a"' in row  # the entry decides
    assert ">2023-01-15 10:00:00<" in row  # in the site's time zone (Paris), the timestamp stays UTC
    assert ">200<" in row and ">text/html<" in row


def test_a_long_history_is_listed_a_page_at_a_time_with_a_bounded_number_of_queries(
    librarian, archive, monkeypatch, django_assert_max_num_queries
):
    monkeypatch.setattr(pages, "CAPTURES_PER_PAGE", 1)
    with django_assert_max_num_queries(12):
        first = search(librarian, url="example.com/a", year="2021")
    assert listed_timestamps(first) == ["20210701000001"]
    assert first.context["paginator"].num_pages == 3
    third = search(librarian, url="example.com/a", year="2021", page="3")
    assert listed_timestamps(third) == ["20210305100000"]


def test_a_url_without_captures_offers_a_prefix_search(librarian, archive):
    response = search(librarian, url="example.com/nothing-here")
    assert response.context["total"] == 0
    html = response.content.decode()
    assert "The archive has no capture of this URL." in html
    assert re.search(r'href="\?[^"]*match=prefix', html)


def test_prefix_search_lists_the_urls_with_their_capture_counts(librarian, archive):
    response = search(librarian, url="example.com/a", match="prefix")
    rows = [(row["sample_url"], row["captures"]) for row in response.context["url_rows"]]
    # /a under both spellings is one key; /about starts with /a too; /b does not.
    assert [count for _url, count in rows] == [6, 1]
    assert rows[1][0] == "http://example.com/about"
    html = response.content.decode()
    assert re.findall(r'data-urlkey="([^"]+)"', html) == [A_KEY, "com,example)/about"]
    # Each URL leads to its captures by year and month.
    assert re.search(r'href="\?url=http%3A%2F%2Fexample.com%2Fabout&amp;match=exact"', html)


def test_a_trailing_star_is_a_prefix_search_and_a_trailing_slash_narrows_it(librarian, archive):
    response = search(librarian, url="example.com/a*")
    assert response.context["match"] == "prefix"
    assert re.search(
        r'<input type="radio" name="match" value="prefix"[^>]* checked>', response.content.decode()
    )
    assert [row["urlkey"] for row in response.context["url_rows"]] == [A_KEY, "com,example)/about"]
    response = search(librarian, url="example.com/b/", match="prefix")
    assert [row["urlkey"] for row in response.context["url_rows"]] == ["com,example)/b/logo.png"]
    response = search(librarian, url="example.com", match="prefix")
    keys = [row["urlkey"] for row in response.context["url_rows"]]
    assert keys == sorted(keys) and len(keys) == 5  # the host's paths only: not sub.example.com, not :8080


def test_a_prefix_matching_many_urls_is_paged_and_says_so(librarian, archive, monkeypatch):
    monkeypatch.setattr(pages, "URLS_PER_PAGE", 2)
    first = search(librarian, url="example.com/", match="prefix")
    keys = [row["urlkey"] for row in first.context["url_rows"]]
    assert keys == ["com,example)/a", "com,example)/about"]
    html = first.content.decode()
    assert 'id="more-urls"' in html
    next_link = unescape(re.search(r'id="next-urls" href="([^"]+)"', html).group(1))
    second = librarian.get(reverse("storage:search") + next_link)
    assert [row["urlkey"] for row in second.context["url_rows"]] == [
        "com,example)/b/logo.png",
        "com,example)/missing",
    ]
    third = search(librarian, url="example.com/", match="prefix", after="com,example)/missing")
    assert [row["urlkey"] for row in third.context["url_rows"]] == ["com,example)/notes.txt"]
    assert 'id="more-urls"' not in third.content.decode()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "Enter the URL to look for."),
        ("   ", "Enter the URL to look for."),
        ("*", "Enter the URL to look for."),
        ("http://exa mple.com/", "A URL cannot contain spaces."),
        ("http://exa$mple.com/", "“exa$mple.com” is not a valid host name."),
        ("http:///path-only", "The URL has no host name."),
        ("mailto://someone", "The archive holds http and https URLs, not “mailto” ones."),
        (
            "javascript:alert(1)",
            "This is not a valid URL (Port could not be cast",
        ),
        ("http://[::1/", "This is not a valid URL (Invalid IPv6 URL"),
    ],
)
def test_a_url_that_cannot_be_looked_up_is_refused_at_the_field(librarian, archive, url, message):
    response = search(librarian, url=url)
    assert response.status_code == 200
    assert field_error(response, "url").startswith(message)  # the rest is urllib's own words
    assert "key" not in response.context and 'id="results"' not in response.content.decode()


def test_a_bad_match_value_is_refused_at_its_field(librarian, archive):
    response = search(librarian, url="example.com/a", match="fuzzy")
    assert field_error(response, "match") == "“fuzzy” is not a way to match: choose exact or prefix."
    assert 'id="results"' not in response.content.decode()


def test_the_search_page_alone_shows_the_form_without_errors(librarian):
    response = search(librarian)
    html = response.content.decode()
    assert 'id="search-form"' in html
    assert "-error" not in html and 'id="results"' not in html


# A capture ---------------------------------------------------------------------------------------


def test_the_capture_page_shows_where_the_record_is_and_its_headers(client, archive, job, settings):
    settings.REPLAY_URL = "http://replay.example:8080/"
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    capture = capture_of("http://example.com/a", "2021-03-20T08:30:00Z")
    response = client.get(capture.get_absolute_url())
    assert response.status_code == 200
    html = text(response)
    assert 'id="timestamp14">20210320083000<' in html and "2021-03-20 09:30:00" in html
    assert "Times are in the Europe/Paris time zone." in html  # one time zone, said on every page
    assert f'id="digest">{capture.digest}<' in html and capture.digest.startswith("sha1:")
    assert f'id="record-id">{capture.record_id}<' in html
    assert f'href="{reverse("storage:warcfile_detail", kwargs={"pk": archive.pk})}"' in html
    assert f"at byte {capture.offset}" in html
    assert f'id="length">{capture.length} bytes as stored<' in html
    # The engineer may open the job and the harvest definition: links.
    assert f'href="{job.get_absolute_url()}">{job}<' in html
    assert f'href="{job.harvest_definition.get_absolute_url()}"' in html
    # Headers read from the file: WARC and HTTP.
    warc_headers, http_headers, _payload = record_at(Path(archive.path), capture.offset)
    for name, value in warc_headers:
        assert f'>{name}</th><td class="font-monospace text-break">{value}<' in html
    assert 'id="http-status-line">HTTP/1.1 200 OK<' in html
    assert '>X-Archive-Test</th><td class="font-monospace text-break">2021-03-20T08:30:00Z<' in html
    assert dict(http_headers)["X-Archive-Test"] == "2021-03-20T08:30:00Z"
    # Replay at this timestamp, the raw record, and the other captures of the URL.
    assert f'id="replay-link" href="{replay_url(capture.url, "20210320083000")}"' in html
    assert "/access/replay/20210320083000/http://example.com/a" in html
    assert f'id="raw-link" href="{reverse("storage:capture_raw", kwargs={"pk": capture.pk})}"' in html
    previous = capture_of("http://example.com/a", "2021-03-05T10:00:00Z")
    following = capture_of("http://example.com/a", "2021-07-01T00:00:01Z")
    assert f'id="previous-capture" href="{previous.get_absolute_url()}"' in html
    assert f'id="next-capture" href="{following.get_absolute_url()}"' in html
    assert "all 6 captures of this URL" in html


def test_the_first_and_last_captures_have_one_neighbour_across_spellings(librarian, archive):
    first = librarian.get(capture_of("http://example.com/a", "2021-03-05T10:00:00Z").get_absolute_url())
    assert 'id="previous-capture"' not in first.content.decode()
    www = capture_of("https://www.example.com/a", "2022-06-01T12:00:00Z")
    html = librarian.get(www.get_absolute_url()).content.decode()
    assert capture_of("http://example.com/a", "2021-07-01T00:00:01Z").get_absolute_url() in html
    assert capture_of("http://example.com/a", "2023-01-15T09:00:00Z").get_absolute_url() in html
    last = librarian.get(capture_of("http://example.com/a", "2023-11-30T23:59:59Z").get_absolute_url())
    assert 'id="next-capture"' not in last.content.decode()


def test_a_librarian_sees_the_job_and_definition_named_but_not_linked(librarian, archive, job):
    capture = archive.captures.first()
    html = text(librarian.get(capture.get_absolute_url()))
    assert f">{job}" in html and f'href="{job.get_absolute_url()}"' not in html
    assert str(job.harvest_definition) in html
    assert f'href="{job.harvest_definition.get_absolute_url()}"' not in html
    assert f'href="{reverse("storage:job_captures", kwargs={"pk": job.pk})}"' in html


def test_a_resource_record_has_no_http_headers(librarian, archive):
    capture = capture_of("http://example.com/notes.txt", "2023-02-03T00:00:01Z")
    html = text(librarian.get(capture.get_absolute_url()))
    assert (
        'id="warc-headers"' in html
        and '>WARC-Type</th><td class="font-monospace text-break">resource<' in html
    )
    assert "This record has no HTTP headers." in html
    assert 'id="status">—<' in html


# The raw record ----------------------------------------------------------------------------------


def raw(client, capture):
    response = client.get(reverse("storage:capture_raw", kwargs={"pk": capture.pk}))
    assert response.status_code == 200, response.content[:500]
    return response, b"".join(response.streaming_content)


def test_the_raw_record_is_the_record_as_stored_decompressed(engineer, archive):
    path = Path(archive.path)
    data = path.read_bytes()
    for capture in archive.captures.all():
        response, body = raw(engineer, capture)
        assert response["Content-Type"] == "application/warc"
        assert response["Content-Disposition"] == (
            f'attachment; filename="test-1-20230101000000-00001-tests-{capture.offset}.warc"'
        )
        assert body == gzip.decompress(data[capture.offset : capture.offset + capture.length])
        # The download is a WARC record warcio reads as it reads the one in the file.
        downloaded = next(iter(ArchiveIterator(io.BytesIO(body))))
        warc_headers, http_headers, payload = record_at(path, capture.offset)
        assert downloaded.rec_headers.headers == warc_headers
        assert (downloaded.http_headers.headers if downloaded.http_headers else None) == http_headers
        assert downloaded.content_stream().read() == payload


def test_a_crawled_page_and_its_raw_record(engineer, indexed_site, crawled_site):
    page_url = next(url for url in crawled_site.truth if url.endswith("/site/"))
    response = search(engineer, url=page_url)
    assert response.context["total"] >= 1
    capture = Capture.objects.filter(url=page_url, record_type="response").first()
    html = text(engineer.get(capture.get_absolute_url()))
    assert "WARC-Payload-Digest" in html and capture.digest in html
    assert 'id="http-status-line">HTTP/1.1 200' in html
    _response, body = raw(engineer, capture)
    data = Path(capture.warc_file.path).read_bytes()
    assert body == gzip.decompress(data[capture.offset : capture.offset + capture.length])
    assert body.startswith(b"WARC/1.1\r\n") and capture.record_id.encode() in body


def test_a_file_still_being_written_is_read_at_its_open_name(engineer, archive):
    path = Path(archive.path)
    path.rename(path.with_name(path.name + ".open"))
    WarcFile.objects.filter(pk=archive.pk).update(closed_at=None)
    capture = capture_of("http://example.com/about", "2023-02-01T00:00:00Z")
    html = text(engineer.get(capture.get_absolute_url()))
    assert 'id="headers-error"' not in html and ">WARC-Target-URI<" in html
    _response, body = raw(engineer, capture)
    assert b"http://example.com/about at 2023-02-01T00:00:00Z" in body
    page = text(engineer.get(reverse("storage:warcfile_detail", kwargs={"pk": archive.pk})))
    assert 'id="file-open"' in page and f"{path}.open" in page and 'id="not-on-disk"' not in page


def test_a_file_missing_on_disk_is_a_clear_error_not_a_crash(engineer, archive):
    Path(archive.path).unlink()
    capture = archive.captures.first()
    response = engineer.get(reverse("storage:capture_raw", kwargs={"pk": capture.pk}))
    assert response.status_code == 503
    reason = text(response)
    assert f"The file {archive.name} is not on disk (expected at {archive.path})." in reason
    page = engineer.get(capture.get_absolute_url())
    assert page.status_code == 200
    assert "The headers cannot be shown: The file" in text(page)
    files_page = engineer.get(reverse("storage:warcfile_detail", kwargs={"pk": archive.pk}))
    assert 'id="not-on-disk"' in files_page.content.decode()


def test_a_file_of_another_crawl_machine_is_never_looked_for_here(engineer, archive, settings):
    WarcFile.objects.filter(pk=archive.pk).update(machine="crawler9")  # its spool copy is there, not here
    Path(archive.path).unlink()  # no replica, and the path is crawler9's: nothing here to read
    capture = archive.captures.first()
    response = engineer.get(reverse("storage:capture_raw", kwargs={"pk": capture.pk}))
    assert response.status_code == 503
    assert "its copy is on crawl machine crawler9, where it was written" in text(response)
    page = engineer.get(reverse("storage:warcfile_detail", kwargs={"pk": archive.pk})).content.decode()
    assert 'id="other-machine"' in page and 'id="not-on-disk"' not in page
    assert 'id="machine">crawler9<' in page


def test_an_index_that_no_longer_matches_the_file_is_said(engineer, archive, tmp_path):
    capture = capture_of("http://example.com/about", "2023-02-01T00:00:00Z")
    Capture.objects.filter(pk=capture.pk).update(record_id="<urn:uuid:00000000-0000-0000-0000-000000000000>")
    html = text(engineer.get(capture.get_absolute_url()))
    assert "the index is out of date" in html
    # A file cut short: the record would run past its end.
    path = Path(archive.path)
    shutil.copy(path, tmp_path / "whole")
    path.write_bytes((tmp_path / "whole").read_bytes()[: capture.offset + 10])
    response = engineer.get(reverse("storage:capture_raw", kwargs={"pk": capture.pk}))
    assert response.status_code == 503
    assert f"but the file has only {capture.offset + 10} bytes" in text(response)


# A WARC file -------------------------------------------------------------------------------------


def test_the_warc_file_page(librarian, archive, job, monkeypatch):
    monkeypatch.setattr(pages, "CAPTURES_PER_PAGE", 10)
    response = librarian.get(reverse("storage:warcfile_detail", kwargs={"pk": archive.pk}))
    html = text(response)
    assert archive.name in html
    assert 'id="origin">imported<' in html
    assert f'id="sha256">{archive.sha256}<' in html and len(archive.sha256) == 64
    assert f'id="records">{archive.records}<' in html and archive.records == len(RECORDS)
    assert f"{archive.size} bytes" in html
    assert "closed on" in html and 'id="file-open"' not in html
    assert f"{job}" in html and reverse("storage:job_captures", kwargs={"pk": job.pk}) in html
    assert f"{len(RECORDS)} captures" in html
    offsets = [int(c) for c in re.findall(r'data-capture="(\d+)"', html)]
    assert len(offsets) == 10  # a page
    expected = list(archive.captures.order_by("offset").values_list("pk", flat=True)[:10])
    assert offsets == expected
    second = librarian.get(reverse("storage:warcfile_detail", kwargs={"pk": archive.pk}) + "?page=2")
    assert len(re.findall(r'data-capture="', second.content.decode())) == len(RECORDS) - 10


# Captures of a job, of a domain ------------------------------------------------------------------


def counts(response) -> tuple[dict, dict]:
    data = response.context["counts"]
    return (
        {row["status"]: row["count"] for row in data["statuses"]},
        {row["mime"]: row["count"] for row in data["mimes"]},
    )


def listed_urls(response) -> list[str]:
    return [capture.url for capture in response.context["object_list"]]


def test_the_captures_of_a_job_with_their_counts(librarian, archive, job):
    url = reverse("storage:job_captures", kwargs={"pk": job.pk})
    response = librarian.get(url)
    assert response.status_code == 200
    statuses, mimes = counts(response)
    assert statuses == {200: 12, 404: 1, None: 1}
    assert mimes == {"text/html": 11, "image/png": 1, "text/plain": 2}
    assert response.context["counts"]["total"] == len(RECORDS)
    assert f"{len(RECORDS)} captures" in text(response)
    keys = [capture.urlkey for capture in response.context["object_list"]]
    assert keys == sorted(keys)
    html = response.content.decode()
    assert re.search(r'data-mime="image/png">\s*<td class="text-break"><a href="\?mime=image%2Fpng">', html)
    assert re.search(r'<a href="\?status=404">404</a>', html)


def test_job_captures_filter_by_status_and_mime_keeping_the_counts_of_the_whole_job(librarian, archive, job):
    url = reverse("storage:job_captures", kwargs={"pk": job.pk})
    response = librarian.get(url, {"status": "404"})
    assert listed_urls(response) == ["http://example.com/missing"]
    assert response.context["counts"]["total"] == len(RECORDS)
    assert listed_urls(librarian.get(url, {"mime": "image/png"})) == ["http://example.com/b/logo.png"]
    assert listed_urls(librarian.get(url, {"mime": "text/plain", "record_type": "resource"})) == [
        "http://example.com/notes.txt"
    ]
    bad = librarian.get(url, {"status": "abc"})
    assert bad.status_code == 200
    assert "Enter a whole number." in text(bad)


def test_an_engineer_reaches_a_jobs_captures_from_the_job_page(client, archive, job):
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    html = client.get(job.get_absolute_url()).content.decode()
    assert f'href="{reverse("storage:job_captures", kwargs={"pk": job.pk})}" id="job-captures-link"' in html
    captures = text(client.get(reverse("storage:job_captures", kwargs={"pk": job.pk})))
    assert f'href="{job.get_absolute_url()}" id="job-link"' in captures


def test_the_captures_of_a_domain_are_its_hosts_and_subdomains_on_any_port(librarian, archive):
    response = librarian.get(reverse("storage:domain_captures", kwargs={"name": "example.com"}))
    urls = set(listed_urls(response))
    assert "http://sub.example.com/" in urls and "http://example.com:8080/port" in urls
    assert "https://www.example.com/a" in urls
    assert "http://example-shop.com/" not in urls and "http://example.org/" not in urls
    assert response.context["counts"]["total"] == len(listed_urls(response)) == 12
    statuses, mimes = counts(response)
    assert statuses == {200: 10, 404: 1, None: 1}
    assert mimes == {"text/html": 9, "image/png": 1, "text/plain": 2}
    # The same domain, written another way.
    for name in ("www.example.com", "EXAMPLE.com"):
        other = librarian.get(reverse("storage:domain_captures", kwargs={"name": name}))
        assert other.context["counts"]["total"] == 12
    sub = librarian.get(reverse("storage:domain_captures", kwargs={"name": "sub.example.com"}))
    assert listed_urls(sub) == ["http://sub.example.com/"]
    shop = librarian.get(reverse("storage:domain_captures", kwargs={"name": "example-shop.com"}))
    assert listed_urls(shop) == ["http://example-shop.com/"]
    filtered = librarian.get(
        reverse("storage:domain_captures", kwargs={"name": "example.com"}), {"status": "404"}
    )
    assert listed_urls(filtered) == ["http://example.com/missing"]


def test_a_domain_with_no_captures_says_so(librarian, archive):
    response = librarian.get(reverse("storage:domain_captures", kwargs={"name": "nothing.example"}))
    assert response.status_code == 200
    assert response.context["counts"]["total"] == 0
    assert "No capture." in response.content.decode()


def test_a_curator_reaches_a_domains_captures_from_the_domain_page(client, archive):
    from harvest.models import Domain

    client.force_login(UserFactory(roles=[Role.CURATOR]))
    domain = Domain.objects.get(name="example.com")
    html = client.get(domain.get_absolute_url()).content.decode()
    link = reverse("storage:domain_captures", kwargs={"name": "example.com"})
    assert f'href="{link}" id="domain-captures-link"' in html
    captures = client.get(link).content.decode()
    assert f'href="{domain.get_absolute_url()}" id="domain-link"' in captures


def test_search_links_use_the_search_address(librarian, archive):
    capture = archive.captures.first()
    html = librarian.get(capture.get_absolute_url()).content.decode()
    expected = reverse("storage:search") + "?" + urlencode({"url": capture.url, "match": "exact"})
    assert f'href="{expected.replace("&", "&amp;")}" id="all-captures"' in html
