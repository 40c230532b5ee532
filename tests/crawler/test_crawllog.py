"""The crawl log's error annotations (harvest.crawler.crawllog): a code for machines, words for people."""

from datetime import UTC, datetime

import pytest

from harvest.crawler.crawllog import ERROR_STATUS, NO_ANSWER, error_annotation, fetch_error, log_line
from harvest.crawler.outcomes import FetchError


def test_every_error_code_has_a_status_without_an_answer():
    assert set(ERROR_STATUS) == set(FetchError)
    assert set(ERROR_STATUS.values()) <= set(NO_ANSWER.values())


def test_an_error_annotation_reads_back_as_its_code_and_text():
    note = error_annotation(FetchError.TLS, "TLS error: certificate verify failed: self-signed, expired")
    assert note == "error:tls:TLS_error:_certificate_verify_failed:_self-signed;_expired"
    assert fetch_error(f"robots:disallowed,browser,{note}") == (
        FetchError.TLS,
        "TLS error: certificate verify failed: self-signed; expired",
    )


def test_the_line_keeps_the_annotation_as_one_field():
    line = log_line(
        when=datetime(2026, 1, 2, tzinfo=UTC),
        status=NO_ANSWER["connect"],
        size=0,
        url="http://example.fr/",
        hop_path="",
        via="",
        mime="",
        duration=0.0,
        digest="",
        site="example.fr",
        annotations=["browser", error_annotation(FetchError.CONNECTION_REFUSED, "connection refused")],
    )
    fields = line.split(" ")
    assert len(fields) == 11
    assert fields[10] == "browser,error:connection-refused:connection_refused"
    assert fetch_error(fields[10]) == (FetchError.CONNECTION_REFUSED, "connection refused")


def test_a_long_text_is_cut_not_the_code():
    note = error_annotation(FetchError.OTHER, "x" * 500)
    assert note.startswith("error:other:") and len(note) == len("error:other:") + 120


@pytest.mark.parametrize(
    ("annotations", "read"),
    [
        # Logs written before the codes: the text alone, whatever it looks like.
        ("error:connection_refused", (None, "connection refused")),
        ("error:address_refused:_127.0.0.1_is_loopback", (None, "address refused: 127.0.0.1 is loopback")),
        ("error:DNS_lookup_failed:_Name_not_known", (None, "DNS lookup failed: Name not known")),
        ("error:stopped", (None, "stopped")),
        ("robots:disallowed", (None, "")),
        ("-", (None, "")),
    ],
)
def test_old_lines_and_lines_without_an_error(annotations, read):
    assert fetch_error(annotations) == read
