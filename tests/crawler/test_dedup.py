"""Crawl-time deduplication: revisits instead of responses, conditional requests, collisions.

Two crawls of the same test website share a dedup index (the in-memory one: what
the first crawl wrote); the application's index over the capture index is tested
in tests/storage/test_crawl_dedup.py.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvest.crawler.dedup import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    MemoryDedupIndex,
    Original,
    stored_exchange,
)
from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite

EMPTY = "sha256:4OYMIQUY7QOBJGX36TEJS35ZEQT24QPEMSNZGTFESWMRW6CSXBKQ===="  # the digest of nothing


def records(result) -> dict[str, list]:
    """The response and revisit records of a crawl, by URL: (type, WARC headers, HTTP headers, body)."""
    found: dict[str, list] = {}
    for info in result.files:
        with open(info.path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type in ("response", "revisit"):
                    found.setdefault(record.rec_headers.get_header("WARC-Target-URI"), []).append(
                        (
                            record.rec_type,
                            dict(record.rec_headers.headers),
                            record.http_headers,
                            record.content_stream().read(),
                        )
                    )
    return found


def only(found: dict[str, list], url: str):
    (record,) = found[url]
    return record


def two_crawls(tmp_path: Path, site: TestSite, **options):
    index = MemoryDedupIndex()
    first = crawl(tmp_path / "first", [site.url("/site/")], dedup=index, **options)
    time.sleep(1.1)  # the second crawl's records are dated later than the first's
    second = crawl(tmp_path / "second", [site.url("/site/")], dedup=index, **options)
    return first, second


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=11, pages=20, hosts=2, slow_seconds=0.01, large_file_bytes=40_000) as site:
        yield site


@pytest.fixture(scope="module")
def conditional_site():
    with TestSite(
        port=0, seed=11, pages=20, hosts=2, slow_seconds=0.01, large_file_bytes=40_000, conditional=True
    ) as site:
        yield site


def test_a_recrawl_of_an_unchanged_site_stores_every_unchanged_payload_as_a_revisit(tmp_path, site):
    first, second = two_crawls(tmp_path, site)
    before, after = records(first), records(second)
    assert set(after) == set(before)  # the same URLs were reached

    revisits = 0
    for url, ((kind, warc, http, body),) in after.items():
        (old_kind, old_warc, _, _) = only(before, url)
        digest = warc["WARC-Payload-Digest"]
        if old_warc["WARC-Payload-Digest"] != digest or digest == EMPTY:
            assert kind == "response", url
            continue
        assert kind == "revisit", url
        # The original: the first crawl's response, or what the first crawl's revisit referred to
        # (the same payload under another URL).
        if old_kind == "response":
            original = (url, old_warc["WARC-Record-ID"], old_warc["WARC-Date"])
        else:
            original = tuple(old_warc[name] for name in ("WARC-Refers-To-Target-URI", "WARC-Refers-To"))
            original += (old_warc["WARC-Refers-To-Date"],)
        assert warc["WARC-Profile"] == IDENTICAL_PAYLOAD
        assert (warc["WARC-Refers-To-Target-URI"], warc["WARC-Refers-To"]) == original[:2]
        assert warc["WARC-Refers-To-Date"][:19] == original[2][:19]
        assert warc["WARC-Date"] > old_warc["WARC-Date"]
        assert http.get_statuscode() and body == b""  # the response headers kept, no payload
        revisits += 1
    assert revisits >= 0.9 * len(after) and revisits > 20
    report = second.crawl.report()
    assert report["duplicates"] == revisits
    assert report["duplicate_bytes"] > 0
    # Within the first crawl, only the same payload under two URLs.
    first_revisits = sum(found[0][0] == "revisit" for found in before.values())
    assert first.crawl.report()["duplicates"] == first_revisits < 0.1 * len(before)
    # The crawl log says which URLs were stored as revisits.
    assert sum("duplicate:digest" in line[-1] for line in second.lines) == revisits


def test_empty_payloads_are_never_revisits(tmp_path, site):
    _, second = two_crawls(tmp_path, site)
    for url, found in records(second).items():
        for kind, warc, _, _ in found:
            if (
                warc["WARC-Payload-Digest"]
                == "sha256:47DEQPJ3YTJ7UCBCIDQYKXODLSPR4BZ4B7FXRUPLDCDXGUQ7ICOQ===="
            ):
                assert kind == "response", url  # the digest of nothing: a revisit would save nothing


def test_a_recrawl_asks_conditionally_and_a_304_is_a_server_not_modified_revisit(tmp_path, conditional_site):
    site = conditional_site
    first, second = two_crawls(tmp_path, site)
    before, after = records(first), records(second)
    # The links were read from the stored pages: the recrawl went as deep as the first crawl.
    assert set(after) == set(before)
    not_modified = [
        url for url, found in after.items() if found[0][1].get("WARC-Profile") == SERVER_NOT_MODIFIED
    ]
    assert len(not_modified) > 20
    for url in not_modified:
        kind, warc, http, body = only(after, url)
        _, old_warc, old_http, _ = only(before, url)
        assert kind == "revisit" and body == b""
        assert warc["WARC-Refers-To"] == old_warc["WARC-Record-ID"]
        assert warc["WARC-Refers-To-Target-URI"] == url
        assert warc["WARC-Payload-Digest"] == old_warc["WARC-Payload-Digest"]
        # The stored response freshened by the 304: replayable, with what the 304 said.
        assert http.get_statuscode() == "200"
        assert http.get_header("Content-Type") == old_http.get_header("Content-Type")
        assert http.get_header("ETag") == old_http.get_header("ETag")
        assert http.get_header("Cache-Control") == "max-age=60"
    # The server was asked with the first capture's validators, and answered 304.
    lines = {line[3]: line for line in second.lines}
    for url in not_modified:
        assert lines[url][1] == "304" and "duplicate:server-not-modified" in lines[url][-1]
    conditional = [request for request in site.requests if "if-none-match" in request.headers]
    assert len(conditional) >= len(not_modified)
    assert second.crawl.report()["duplicates"] == len(not_modified) + sum(
        found[0][0] == "revisit" and found[0][1].get("WARC-Profile") == IDENTICAL_PAYLOAD
        for found in after.values()
    )


def forged_original(tmp_path: Path, url: str, digest: str, body: bytes) -> Original:
    """A stored response for ``url`` whose record claims ``digest`` for a payload that is ``body``."""
    path = tmp_path / "forged.warc.gz"
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/css")], protocol="HTTP/1.1")
        record = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=http,
            warc_headers_dict={"WARC-Payload-Digest": digest, "WARC-Date": "2020-01-01T00:00:00Z"},
        )
        writer.write_record(record)
    return Original(
        url=url,
        date="2020-01-01T00:00:00Z",
        record_id=record.rec_headers.get_header("WARC-Record-ID"),
        digest=digest,
        path=str(path),
        offset=0,
    )


@pytest.mark.parametrize("verify", [True, False])
def test_a_digest_collision_is_caught_when_matches_are_confirmed_byte_for_byte(tmp_path, site, verify):
    # The first crawl learns the digest of site.css; then a different payload claims that digest.
    reference = crawl(tmp_path / "reference", [site.url("/site/")])
    css_url = next(url for url in records(reference) if url.endswith("site.css"))
    digest = only(records(reference), css_url)[1]["WARC-Payload-Digest"]
    index = MemoryDedupIndex()
    index.remember(
        forged_original(tmp_path, "http://elsewhere.example/other.css", digest, b"body{color:red}")
    )

    result = crawl(tmp_path / "crawl", [site.url("/site/")], dedup=index, dedup_verify=verify)
    kind, warc, _, body = only(records(result), css_url)
    line = next(line for line in result.lines if line[3] == css_url)
    if verify:
        # Both kept in full: the collision is logged and counted, never written as a revisit.
        assert kind == "response" and body
        assert "duplicate:collision" in line[-1]
        assert result.crawl.report()["collisions"] == 1
    else:
        # Trusting the digest alone is what the setting is for: a revisit of the wrong payload.
        assert kind == "revisit" and warc["WARC-Refers-To-Target-URI"] == "http://elsewhere.example/other.css"
        assert result.crawl.report()["collisions"] == 0


def test_a_match_whose_original_cannot_be_read_is_stored_in_full_when_confirming(tmp_path, site):
    first = crawl(tmp_path / "first", [site.url("/site/")], dedup=(index := MemoryDedupIndex()))
    for info in first.files:
        Path(info.path).unlink()  # the originals are gone
    second = crawl(tmp_path / "second", [site.url("/site/")], dedup=index, dedup_verify=True)
    assert all(found[0][0] == "response" for found in records(second).values())
    assert second.crawl.report()["duplicates"] == 0
    assert any("duplicate:original-unreadable" in line[-1] for line in second.lines)


def test_a_stored_response_is_read_back_only_when_it_holds_its_digest(tmp_path):
    good = forged_original(tmp_path, "http://example.org/a.css", "sha256:X", b"a{}")
    assert stored_exchange(good) is None  # the record does not hold what the index says
    read = stored_exchange(good, check_digest=False)
    assert read.decoded_body() == b"a{}" and read.status == 200
    read.close()
    missing = Original(
        url="http://example.org/", date="", record_id="", digest="sha256:X", path="/nowhere", offset=0
    )
    assert stored_exchange(missing) is None
