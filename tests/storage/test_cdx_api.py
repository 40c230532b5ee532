"""The CDX API (/cdx): pywb's parameters and their meaning, its output byte for byte, its refusals.

The archive of these tests is a few WARC files written here with warcio
(several captures of one URL over the years, a revisit, neighbouring hosts
and domains) and indexed through the indexing service; the crawl of the test
website checks the output against pywb's own indexer, and pywb's own parser
reads every line (pywb is imported by the tests only, never by the application).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.urls import reverse
from pywb.warcserver.index.cdxobject import CDXObject
from pywb.warcserver.index.indexsource import RemoteIndexSource
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage.services.indexing import warc_file_index
from storage.services.replay import replay_account_ensure
from tests.access import user_for
from webarchive.permissions import Role

CDXJ_INDEXER = Path(sys.executable).with_name("cdxj-indexer")

# (url, 14-digit date, HTTP status, MIME type, body); a body None is a revisit of the URL's first body.
RECORDS = [
    ("http://example.com/", "20240101000000", 200, "text/html", b"<p>home 1</p>"),
    ("http://example.com/", "20240601000000", 200, "text/html", b"<p>home 2</p>"),
    ("http://example.com/", "20250101000000", 200, "text/html", b"<p>home 3</p>"),
    ("http://example.com/", "20250228235959", 200, "text/html", b"<p>home 4</p>"),
    ("http://example.com/", "20250301000000", 200, "text/html", None),
    ("http://example.com/", "20260101000000", 200, "text/html; charset=utf-8", b"<p>home 5</p>"),
    ("http://example.com/about", "20240501000000", 200, "text/html", b"<p>about</p>"),
    ("http://example.com/logo.png", "20240101000005", 200, "image/png", b"\x89PNG\r\n\x1a\n"),
    ("http://example.com/page?x=1", "20240301000000", 404, "text/html", b"<p>gone</p>"),
    ("http://sub.example.com/x", "20240801000000", 200, "text/plain", b"x"),
    ("http://examples.com/", "20240101000000", 200, "text/html", b"<p>not example.com</p>"),
    ("http://example.org/", "20240901000000", 200, "text/html", b"<p>org</p>"),
    ("http://tie.example.net/", "20240101000000", 200, "text/html", b"t0"),
    ("http://tie.example.net/", "20240101000010", 200, "text/html", b"t10"),
    ("http://tie.example.net/", "20240101000020", 200, "text/html", b"t20"),
]
HOME_DATES = [stamp for url, stamp, *_rest in RECORDS if url == "http://example.com/"]


def iso(stamp: str) -> str:
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[8:10]}:{stamp[10:12]}:{stamp[12:]}Z"


def write_warc(path: Path, records) -> Path:
    """A gzip WARC file of response records, and revisits of the first payload of their URL."""
    first = {}
    with path.open("wb") as output:
        writer = WARCWriter(output, gzip=True, warc_version="1.1")
        for url, stamp, status, mime, body in records:
            http = StatusAndHeaders(f"{status} X", [("Content-Type", mime)], protocol="HTTP/1.1")
            headers = {"WARC-Date": iso(stamp)}
            if body is None:
                digest, date = first[url]
                record = writer.create_revisit_record(url, digest, url, date, http_headers=http)
                record.rec_headers.replace_header("WARC-Date", iso(stamp))
            else:
                record = writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), http_headers=http, warc_headers_dict=headers
                )
            writer.write_record(record)
            if body is not None and url not in first:
                first[url] = (record.rec_headers.get_header("WARC-Payload-Digest"), iso(stamp))
    return path


def cdxj_indexer(*paths: Path) -> list[str]:
    """pywb's indexer's lines for these files (named as in the archive: by their base name)."""
    command = [str(CDXJ_INDEXER), *(path.name for path in paths)]
    cwd = paths[0].parent
    return subprocess.run(command, check=True, capture_output=True, text=True, cwd=cwd).stdout.splitlines()


@pytest.fixture
def archive(db, tmp_path):
    """The RECORDS, in two files (the tied captures in the second), indexed: the two paths."""
    first = write_warc(tmp_path / "first.warc.gz", RECORDS[:12])
    second = write_warc(tmp_path / "second.warc.gz", RECORDS[12:])
    for path in (first, second):
        warc_file_index(path=path)
    return [first, second]


@pytest.fixture
def reader(client, user_with_role):
    client.force_login(user_with_role(Role.LIBRARIAN))
    return client


def cdx(client, **params):
    """GET /cdx; ``filter`` may be a list (the parameter repeated)."""
    return client.get(reverse("cdx"), params)


def body(response) -> str:
    assert response.status_code == 200, response.content if not response.streaming else response.status_code
    return b"".join(response.streaming_content).decode()


def lines(response) -> list[tuple[str, str, dict]]:
    """(urlkey, timestamp, fields) of each CDXJ line, checked by pywb's own parser on the way."""
    found = []
    for line in body(response).splitlines():
        parsed = CDXObject(line.encode())
        urlkey, stamp, fields = line.split(" ", 2)
        assert (parsed["urlkey"], parsed["timestamp"]) == (urlkey, stamp)
        assert parsed["filename"] and parsed["offset"] and parsed["length"]
        found.append((urlkey, stamp, json.loads(fields)))
    return found


def stamps(response) -> list[str]:
    return [stamp for _key, stamp, _fields in lines(response)]


def keys(response) -> set[str]:
    return {key for key, _stamp, _fields in lines(response)}


# -- match types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["http://example.com/", "example.com", "https://example.com/", "http://www.example.com/", "EXAMPLE.COM"],
)
def test_exact_match_finds_every_capture_of_the_url_in_date_order(archive, reader, url):
    found = lines(cdx(reader, url=url))
    assert [stamp for _key, stamp, _fields in found] == HOME_DATES
    assert {key for key, _stamp, _fields in found} == {"com,example)/"}
    assert found[0][2]["url"] == "http://example.com/"
    assert found[0][2]["filename"] == "first.warc.gz"
    # The revisit is a capture like the others, as pywb's indexer writes it.
    assert found[4][2]["mime"] == "warc/revisit"


def test_prefix_match_takes_the_keys_starting_with_the_url(archive, reader):
    expected = {"com,example)/", "com,example)/about", "com,example)/logo.png", "com,example)/page?x=1"}
    assert keys(cdx(reader, url="example.com/", matchType="prefix")) == expected
    # pywb's wildcard form needs no matchType.
    assert keys(cdx(reader, url="http://example.com/*")) == expected
    assert keys(cdx(reader, url="example.com/*", matchType="prefix")) == expected
    assert keys(cdx(reader, url="example.com/pa", matchType="prefix")) == {"com,example)/page?x=1"}
    # Key order: urlkey, then date.
    found = lines(cdx(reader, url="example.com/*"))
    assert [(key, stamp) for key, stamp, _fields in found] == sorted((key, stamp) for key, stamp, _ in found)


def test_host_match_takes_the_host_but_not_its_subdomains_nor_lookalikes(archive, reader):
    found = keys(cdx(reader, url="http://example.com/about", matchType="host"))
    assert found == {"com,example)/", "com,example)/about", "com,example)/logo.png", "com,example)/page?x=1"}


def test_domain_match_takes_the_host_and_its_subdomains(archive, reader):
    expected = {
        "com,example)/",
        "com,example)/about",
        "com,example)/logo.png",
        "com,example)/page?x=1",
        "com,example,sub)/x",
    }
    assert keys(cdx(reader, url="example.com", matchType="domain")) == expected
    assert keys(cdx(reader, url="*.example.com")) == expected
    # examples.com and example.org are other domains; a top-level domain takes everything under it.
    assert keys(cdx(reader, url="org", matchType="domain")) == {"org,example)/"}
    assert "com,examples)/" in keys(cdx(reader, url="com", matchType="domain"))


def test_nothing_found_is_an_empty_answer(archive, reader):
    response = cdx(reader, url="http://nowhere.example/")
    assert body(response) == ""
    assert response["Content-Type"].startswith("text/x-cdxj")
    assert body(cdx(reader, url="example.com", **{"from": "2030"})) == ""


# -- dates ------------------------------------------------------------------------------------------


def test_from_and_to_are_date_prefixes(archive, reader):
    assert stamps(cdx(reader, url="example.com", **{"from": "2025"})) == HOME_DATES[2:]
    assert stamps(cdx(reader, url="example.com", to="2024")) == HOME_DATES[:2]
    assert stamps(cdx(reader, url="example.com", **{"from": "202406", "to": "20250101"})) == HOME_DATES[1:3]
    # to=202502 ends with the last second of February (pywb pads it to 20250231235959).
    assert stamps(cdx(reader, url="example.com", to="202502"))[-1] == "20250228235959"
    # from=20250229 (no such day in 2025) starts after every date before it, as pywb compares.
    assert stamps(cdx(reader, url="example.com", **{"from": "20250229"})) == HOME_DATES[4:]
    assert stamps(cdx(reader, url="example.com", **{"from": "20240101000000", "to": "20240101000000"})) == [
        "20240101000000"
    ]
    assert stamps(cdx(reader, url="example.com", **{"from": "9"})) == []


# -- limit and order --------------------------------------------------------------------------------


def test_limit_takes_the_first_captures_and_is_capped(archive, reader, settings):
    assert stamps(cdx(reader, url="example.com", limit="2")) == HOME_DATES[:2]
    settings.CDX_MAX_LIMIT = 3
    assert stamps(cdx(reader, url="example.com", limit="100")) == HOME_DATES[:3]
    assert stamps(cdx(reader, url="example.com")) == HOME_DATES[:3]


def test_reverse_is_the_key_order_backwards(archive, reader):
    assert stamps(cdx(reader, url="example.com", sort="reverse")) == HOME_DATES[::-1]
    assert stamps(cdx(reader, url="example.com", sort="reverse", limit="2")) == HOME_DATES[::-1][:2]
    found = lines(cdx(reader, url="example.com/*", sort="reverse"))
    pairs = [(key, stamp) for key, stamp, _fields in found]
    assert pairs == sorted(pairs, reverse=True)


def test_closest_orders_by_distance_to_the_date(archive, reader):
    found = stamps(cdx(reader, url="example.com", closest="20250301000001", sort="closest"))
    by_distance = ["20250301000000", "20250228235959", "20250101000000", "20240601000000"]
    assert found == [*by_distance, "20260101000000", "20240101000000"]
    # Limited, and closest alone is enough (sort=closest is implied, as in pywb).
    assert stamps(cdx(reader, url="example.com", closest="2026", limit="2")) == [
        "20260101000000",
        "20250301000000",
    ]
    # A date before every capture, and one after: the captures from the nearest end.
    assert stamps(cdx(reader, url="example.com", closest="1999", limit="1")) == ["20240101000000"]
    assert stamps(cdx(reader, url="example.com", closest="2099", limit="1")) == ["20260101000000"]


def test_closest_ties_go_to_the_earlier_capture(archive, reader):
    assert stamps(cdx(reader, url="tie.example.net", closest="20240101000010")) == [
        "20240101000010",
        "20240101000000",
        "20240101000020",
    ]
    assert stamps(cdx(reader, url="tie.example.net", closest="20240101000015")) == [
        "20240101000010",
        "20240101000020",
        "20240101000000",
    ]


def test_closest_on_a_prefix_merges_every_key(archive, reader):
    found = lines(cdx(reader, url="example.com/*", closest="20240101000004", limit="3"))
    assert [(key, stamp) for key, stamp, _ in found] == [
        ("com,example)/logo.png", "20240101000005"),
        ("com,example)/", "20240101000000"),
        ("com,example)/page?x=1", "20240301000000"),
    ]


def test_sort_closest_without_a_date_is_key_order_as_pywb_sends_it(archive, reader):
    # pywb's remote index source always sends "closest={closest}&sort=closest", empty without a date.
    assert stamps(cdx(reader, url="example.com", closest="", sort="closest")) == HOME_DATES


# -- filters ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (["mime:html"], ["/", "/about", "/page?x=1"]),  # contains
        (["=mime:text/html"], ["/", "/about", "/page?x=1"]),  # exact
        (["=mime:html"], []),
        (["~url:.*\\.png$"], ["/logo.png"]),  # regular expression
        (["~mime:html"], []),  # matched at the start, as pywb does
        (["~status:4.."], ["/page?x=1"]),
        (["status:404"], ["/page?x=1"]),
        (["statuscode:404"], ["/page?x=1"]),  # pywb's other names of fields
        (["!status:200"], ["/page?x=1"]),  # negation
        (["!=mime:text/html"], ["/", "/logo.png"]),
        (["!~url:http://example.com/.+"], ["/"]),
        (["mime:html", "!status:404"], ["/", "/about"]),  # all must match
        (["mime:warc/revisit"], ["/"]),
        (["!mime:warc/revisit", "~timestamp:2025"], ["/"]),
        (["first.warc"], ["/", "/about", "/logo.png", "/page?x=1"]),  # no field: the whole line
        (["filename:second"], []),
    ],
)
def test_filters(archive, reader, filters, expected):
    found = lines(cdx(reader, url="example.com/*", filter=filters))
    paths = {fields["url"].removeprefix("http://example.com") for _key, _stamp, fields in found}
    assert sorted(paths) == sorted(expected)


def test_filters_apply_before_the_limit(archive, reader):
    found = lines(cdx(reader, url="example.com/*", filter="status:404", limit="1"))
    assert [fields["url"] for _key, _stamp, fields in found] == ["http://example.com/page?x=1"]
    found = lines(cdx(reader, url="example.com", filter="!mime:warc/revisit", closest="20250301", limit="2"))
    assert [stamp for _key, stamp, _fields in found] == ["20250228235959", "20250101000000"]


def test_a_revisit_and_its_original_are_found_by_digest(archive, reader):
    """What pywb does to resolve a revisit: the same URL, the same digest, not a revisit."""
    revisit = lines(cdx(reader, url="example.com", filter="=mime:warc/revisit"))
    assert len(revisit) == 1
    digest = revisit[0][2]["digest"]
    original = lines(cdx(reader, url="example.com", filter=["!mime:warc/revisit", f"digest:{digest}"]))
    assert [stamp for _key, stamp, _fields in original] == ["20240101000000"]


# -- output -----------------------------------------------------------------------------------------


def test_cdxj_output_is_what_cdxj_indexer_writes(archive, reader):
    served = body(cdx(reader, url="*.com")).splitlines() + body(cdx(reader, url="*.org")).splitlines()
    served += body(cdx(reader, url="*.net")).splitlines()
    assert sorted(served) == sorted(cdxj_indexer(*archive))


def test_cdxj_output_of_a_crawl_is_what_cdxj_indexer_writes(indexed_site, warc_paths, reader):
    expected = []
    for path in warc_paths:
        expected += cdxj_indexer(path)
    hosts = {urlsplit(json.loads(line.split(" ", 2)[2])["url"]).netloc for line in expected}
    served = []
    for host in hosts:
        response = cdx(reader, url=f"http://{host}/", matchType="host")
        served += body(response).splitlines()
    assert len(served) == len(expected) > 30
    assert sorted(served) == sorted(expected)
    for line in served:
        CDXObject(line.encode())


def test_json_output_is_pywb_json_lines(archive, reader):
    response = cdx(reader, url="example.com/*", output="json")
    assert response["Content-Type"].startswith("text/x-ndjson")
    json_lines = body(response).splitlines()
    cdxj_lines = body(cdx(reader, url="example.com/*")).splitlines()
    assert len(json_lines) == len(cdxj_lines) == 9
    for json_line, cdxj_line in zip(json_lines, cdxj_lines, strict=True):
        # pywb's CDX server turns a CDXJ line into its json output this way.
        assert json_line + "\n" == CDXObject(cdxj_line.encode()).to_json()
        fields = json.loads(json_line)
        assert list(fields)[:3] == ["urlkey", "timestamp", "url"]
        assert fields["filename"] == "first.warc.gz"


def test_field_list(archive, reader):
    response = cdx(reader, url="example.com/about", output="json", fl="timestamp,status,url")
    assert json.loads(body(response)) == {
        "timestamp": "20240501000000",
        "status": "200",
        "url": "http://example.com/about",
    }
    line = body(cdx(reader, url="example.com/about", fl="status,mime")).strip()
    assert line == 'com,example)/about 20240501000000 {"status": "200", "mime": "text/html"}'
    assert line + "\n" == CDXObject(body(cdx(reader, url="example.com/about")).encode()).to_cdxj(
        ["status", "mime"]
    )


def test_a_pywb_remote_index_request_parses_with_pywb(archive, reader):
    """The request pywb's RemoteIndexSource makes to replay a page, answered and read as pywb reads it."""
    source = RemoteIndexSource.init_from_string("cdx+http://testserver/cdx")
    params = {"url": "http://example.com/", "closest": "20250301000000", "matchType": "exact"}
    api_url = source._get_api_url(params)
    assert "sort=closest" in api_url and "limit=100" in api_url
    response = reader.get(api_url.replace("http://testserver", ""))
    parsed = [CDXObject(line) for line in b"".join(response.streaming_content).strip().split(b"\n")]
    assert [cdx["timestamp"] for cdx in parsed][:2] == ["20250301000000", "20250228235959"]
    assert parsed[0].is_revisit() and not parsed[1].is_revisit()
    assert parsed[1]["filename"] == "first.warc.gz" and int(parsed[1]["offset"]) > 0
    # Without a date (pywb's calendar and fuzzy queries): "closest=" empty, key order.
    api_url = source._get_api_url({"url": "http://example.com/", "matchType": "prefix"})
    response = reader.get(api_url.replace("http://testserver", ""))
    assert len(b"".join(response.streaming_content).strip().split(b"\n")) == 9


# -- refusals ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "url is required"),
        ({"url": ""}, "url is required"),
        ({"url": "*", "matchType": "prefix"}, "url is required"),
        ({"url": "example.com/\x00"}, "url contains a NUL character"),
        (
            {"url": "example.com", "matchType": "regex"},
            "matchType=regex: must be one of exact, prefix, host, domain",
        ),
        ({"url": "example.com", "from": "2025-01"}, "from=2025-01: must be a date of 1 to 14 digits"),
        (
            {"url": "example.com", "to": "202501011200001"},
            "to=202501011200001: must be a date of 1 to 14 digits",
        ),
        ({"url": "example.com", "from": "2026", "to": "2025"}, "from=2026 is after to=2025"),
        (
            {"url": "example.com", "closest": "yesterday"},
            "closest=yesterday: must be a date of 1 to 14 digits",
        ),
        (
            {"url": "example.com", "closest": "2025", "sort": "reverse"},
            "sort=reverse cannot be used with closest",
        ),
        ({"url": "example.com", "limit": "0"}, "limit=0: must be a whole number above 0"),
        ({"url": "example.com", "limit": "-5"}, "limit=-5: must be a whole number above 0"),
        ({"url": "example.com", "limit": "ten"}, "limit=ten: must be a whole number above 0"),
        ({"url": "example.com", "sort": "random"}, "sort=random: must be one of reverse, closest"),
        ({"url": "example.com", "filter": "colour:red"}, "filter=colour:red: unknown field colour"),
        (
            {"url": "example.com", "filter": "~url:(unclosed"},
            "filter=~url:(unclosed: “(unclosed” is not a valid regular expression: missing ): (unclosed.",
        ),
        ({"url": "example.com", "output": "xml"}, "output=xml: must be one of cdxj, json"),
        ({"url": "example.com", "fl": "url,colour"}, "fl=url,colour: unknown field colour"),
    ],
)
def test_bad_parameters_are_refused_with_a_clear_message(archive, reader, params, message):
    response = reader.get(reverse("cdx"), params)
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert message in text, text
    assert text.count("\n") == 1 and text.endswith("\n")


# -- hostile regular expressions --------------------------------------------------------------------

# A URL long enough for a backtracking engine to take hours on the patterns below (2**60 ways to split it).
LONG_URL = "http://example.com/" + "a" * 60


@pytest.fixture
def long_url(archive, tmp_path):
    warc_file_index(
        path=write_warc(tmp_path / "long.warc.gz", [(LONG_URL, "20240101000000", 200, "text/html", b"a")])
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (["~url:(.+)+!"], []),  # every way to split the URL, with Python's re
        (["!~url:(.+)+!"], ["/", "/about", "/logo.png", "/page?x=1", "/" + "a" * 60]),
        (["~url:http://example\\.com/(a+)+!"], []),
        (["~url:http://example\\.com/(a+)+$"], ["/" + "a" * 60]),
        (["~(\\S+)+!"], []),  # no field: the whole CDXJ line
        (["~url:(.*a){25}x"], []),
    ],
)
def test_catastrophic_filters_answer_at_once(long_url, reader, filters, expected):
    found = lines(cdx(reader, url="example.com/*", filter=filters))
    paths = {fields["url"].removeprefix("http://example.com") for _key, _stamp, fields in found}
    assert sorted(paths) == sorted(expected)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(a)\\1", "back-references (\\1, (?P=name)) are not supported"),
        ("(?P<x>a+)(?P=x)", "back-references (\\1, (?P=name)) are not supported"),
        ("(?!http).*", "look-ahead and look-behind"),
        (".*(?<!\\.png)$", "look-ahead and look-behind"),
        ("(?>a+)+b", "atomic groups and possessive quantifiers"),
        ("a{1001}", "too large"),
    ],
)
def test_filters_re2_cannot_run_are_refused_saying_why(long_url, reader, pattern, reason):
    response = cdx(reader, url="example.com/*", filter=f"~url:{pattern}")
    assert response.status_code == 400
    text = response.content.decode()
    assert text.startswith(f"filter=~url:{pattern}: “{pattern}” cannot be used: ") and reason in text, text
    assert "RE2" in text


def test_a_too_long_filter_is_refused(archive, reader):
    response = cdx(reader, url="example.com", filter="~url:" + "a" * 1001)
    assert response.status_code == 400
    assert "too long: 1001 characters, at most 1000" in response.content.decode()


@pytest.mark.timeout(30)
def test_the_replay_account_gets_the_same_bounded_filters(long_url, client):
    token = replay_account_ensure()
    headers = {"Authorization": f"Token {token}"}
    response = client.get(reverse("cdx"), {"url": "example.com/*", "filter": "~url:(.+)+!"}, headers=headers)
    assert lines(response) == []
    response = client.get(reverse("cdx"), {"url": "example.com/*", "filter": "~url:(.)\\1"}, headers=headers)
    assert response.status_code == 400 and "back-references" in response.content.decode()


# -- who may ask ------------------------------------------------------------------------------------


def test_anonymous_requests_are_challenged_not_sent_to_the_login_page(archive, client):
    response = cdx(client, url="example.com")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Basic realm="web archive"'
    assert "Authentication required" in response.content.decode()


@pytest.mark.parametrize("role", [*Role, "admin", None])
def test_every_role_may_query_and_no_role_may_not(archive, client, role):
    client.force_login(user_for(role))
    response = cdx(client, url="example.com")
    if role is None:
        assert response.status_code == 403
        assert "does not allow you to view captures" in response.content.decode()
    elif role == Role.READER:
        # An imported file: no access rule covers it, so it is closed to readers (storage.access).
        assert response.status_code == 200 and stamps(response) == []
    else:
        assert stamps(response) == HOME_DATES


def test_only_get_and_head(archive, reader):
    assert reader.post(reverse("cdx") + "?url=example.com").status_code == 405
    head = reader.head(reverse("cdx"), {"url": "example.com"})
    assert head.status_code == 200 and head.content == b""
    assert reader.head(reverse("cdx"), {"url": "example.com", "limit": "x"}).status_code == 400
