"""The one CSV writer of the application: every export (reports, preload statistics, records) goes here.

A file is streamed: a UTF-8 byte order mark first (so that Excel reads UTF-8), CRLF line ends,
a few rows per chunk. The rows are raw values; this module makes them safe to open in a spreadsheet.

Spreadsheet formula injection: names and crawled text (a harvest definition named
``=HYPERLINK(…)``, a Content-Type starting with ``=``) would be run by a spreadsheet that opens
the file. A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
(after any apostrophes) gets one more leading apostrophe, which a spreadsheet shows as text;
:func:`unescape_cell` takes it off again, so that an exported file imports back as it was (the
records' CSV import). Numbers (``int``, ``float``, ``Decimal``) are written as numbers, never
escaped: a negative number is not a formula, and a spreadsheet must still add them up.

Only the shared core is imported here (no app), so every app can use it.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator
from numbers import Number

from django.http import StreamingHttpResponse

BOM = "\ufeff"
ROWS_PER_CHUNK = 100

_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_ESCAPED_FORMULA = re.compile(r"^'+[=+\-@\t\r]")
_FIRST = frozenset("'=+-@\t\r")  # a cell not starting with one of these is never a formula


def escape_cell(value: str) -> str:
    """Make a text cell that a spreadsheet would run as a formula read as text (see the module doc)."""
    return f"'{value}" if value[:1] in _FIRST and _FORMULA.match(value) else value


def unescape_cell(value: str) -> str:
    """Undo :func:`escape_cell` (for files read back, such as the records' import)."""
    return value[1:] if _ESCAPED_FORMULA.match(value) else value


def csv_cell(value):
    """A value as the CSV writer takes it: numbers as they are, None empty, anything else escaped text."""
    if value.__class__ is str:  # most cells: asked first
        return escape_cell(value)
    if value is None:
        return ""
    if isinstance(value, Number):
        return value
    return escape_cell(str(value))


class _Echo:
    """A file whose ``write`` gives back what it was given: csv.writer then returns each line."""

    def write(self, value: str) -> str:
        return value


def csv_stream(
    rows: Iterable[Iterable], *, rows_per_chunk: int = ROWS_PER_CHUNK, delimiter: str = ","
) -> Iterator[str]:
    """CSV text of rows (the first is the header), BOM first, a few rows per chunk, for streaming;
    cells separated by ``delimiter`` (``;`` for a spreadsheet on a French system)."""
    writer = csv.writer(_Echo(), lineterminator="\r\n", delimiter=delimiter)
    chunk = [BOM]
    for row in rows:
        chunk.append(writer.writerow([csv_cell(value) for value in row]))
        if len(chunk) >= rows_per_chunk:
            yield "".join(chunk)
            chunk = []
    if chunk:
        yield "".join(chunk)


def csv_response(rows: Iterable[Iterable], filename: str) -> StreamingHttpResponse:
    """The streamed download of :func:`csv_stream` of ``rows``, saved as ``filename``."""
    response = StreamingHttpResponse(csv_stream(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
