"""The one CSV writer of the application: BOM, CRLF, chunks, formulas escaped, numbers kept."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest
from django.utils.translation import gettext_lazy

from webarchive.csvfiles import BOM, csv_cell, csv_response, csv_stream, escape_cell, unescape_cell


def written(rows, **options) -> str:
    return "".join(csv_stream(rows, **options))


@pytest.mark.parametrize(
    "value", ["=SUM(A1)", "+33 1 23", "-x", "-1", "@cmd", "\tx", "\rx", "'=x", "''+y", '=HYPERLINK("a","b")']
)
def test_a_cell_a_spreadsheet_would_run_gets_one_more_apostrophe_and_reads_back(value):
    assert escape_cell(value) == f"'{value}"
    assert unescape_cell(escape_cell(value)) == value
    assert csv_cell(value) == f"'{value}"


@pytest.mark.parametrize("value", ["https://example.org/", "'quoted'", "plain", "", "a=b", " =x", "$\\foo$"])
def test_other_text_is_written_as_it_is(value):
    assert escape_cell(value) == value
    assert unescape_cell(value) == value
    assert csv_cell(value) == value


def test_numbers_stay_numbers_and_only_text_is_escaped():
    text = written([["n", "f", "d", "text", "none", "lazy"], [-3, -2.5, Decimal("-1.50"), "-3", None, 7]])
    assert text == "\ufeffn,f,d,text,none,lazy\r\n-3,-2.5,-1.50,'-3,,7\r\n"
    assert csv_cell(True) is True  # a bool is a number to the csv module (written True)


def test_text_that_is_not_a_str_is_escaped_too():
    assert csv_cell(gettext_lazy("=lazy")) == "'=lazy"
    assert written([[gettext_lazy("-x")]]) == "\ufeff'-x\r\n"


def test_the_stream_is_bom_first_crlf_and_a_few_rows_per_chunk():
    rows = [["key", "value"], *([f"k{n}", n] for n in range(5))]
    chunks = list(csv_stream(rows, rows_per_chunk=2))
    assert chunks[0].startswith(BOM)
    assert chunks[0] == f"{BOM}key,value\r\n"  # the BOM counts as a row of the first chunk
    assert [chunk.count("\r\n") for chunk in chunks] == [1, 2, 2, 1]
    assert all(chunk.endswith("\r\n") for chunk in chunks)
    text = "".join(chunks)
    assert list(csv.reader(io.StringIO(text.removeprefix(BOM)))) == [
        ["key", "value"],
        *([f"k{n}", str(n)] for n in range(5)),
    ]


def test_an_empty_export_is_just_the_bom():
    assert written([]) == BOM


def test_quotes_separators_and_line_breaks_stay_in_their_cell():
    text = written([['say "hi", then\r\nleave', "=a,b"]])
    assert list(csv.reader(io.StringIO(text.removeprefix(BOM), newline=""))) == [
        ['say "hi", then\r\nleave', "'=a,b"]
    ]


def test_the_response_streams_the_file_as_an_attachment():
    response = csv_response(iter([["a"], ["=1+1"]]), "table.csv")
    assert response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="table.csv"'
    assert b"".join(response.streaming_content).decode() == "\ufeffa\r\n'=1+1\r\n"
