"""CSV export of records: a streamed file, one row per record, one column per field.

The rows are raw values; the application's one CSV writer (webarchive.csvfiles) escapes the cells
a spreadsheet would run, and the import (selection.csvio.preview) takes that escaping off again.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone

from selection.csvio.columns import EXPORT_COLUMNS, column_label
from selection.models import Record, supplementary_url_list
from webarchive.csvfiles import ROWS_PER_CHUNK, csv_stream

EXPORT_CHUNK = 2000  # records read from the database at a time (their keywords: one query a chunk)
# What a row is made of, read as plain values (no model instance, no related object): in
# EXPORT_COLUMNS' order, the keywords apart.
_VALUES = (
    "pk",
    "collection__name",
    "url",
    "supplementary_urls",
    "responsible__username",
    "budget",
    "frequency",
    "depth",
    "needs_browser",
    "theme__name",
    "content_notes",
    "technical_notes",
    "is_active",
    "status",
    "status_reason",
    "check_status",
    "checked_at",
    "created_at",
    "created_by__username",
    "modified_at",
    "modified_by__username",
)


def _dates():
    """A function writing a date in the site's time zone as the export does ("" for none)."""
    zone = timezone.get_current_timezone()

    def date(value) -> str:
        return value.astimezone(zone).isoformat(sep=" ", timespec="seconds")[:19] if value else ""

    return date


def records_csv_rows(queryset, *, labels: bool = False) -> Iterator[list[str]]:
    """The header, then one row per record (raw: not escaped), read a chunk at a time so that memory
    stays flat, as plain values. ``labels``: the header names the columns as the interface does, in
    its language (the import reads those back too); otherwise the stable keys."""
    yield [column_label(key) for key in EXPORT_COLUMNS] if labels else list(EXPORT_COLUMNS)
    date = _dates()
    keywords = Record.keywords.through.objects
    rows = queryset.values_list(*_VALUES)  # in the order of the list it exports
    chunk: list[tuple] = []
    for row in rows.iterator(chunk_size=EXPORT_CHUNK):
        chunk.append(row)
        if len(chunk) == EXPORT_CHUNK:
            yield from _chunk_rows(chunk, keywords, date)
            chunk = []
    yield from _chunk_rows(chunk, keywords, date)


def _chunk_rows(chunk: list[tuple], keywords, date) -> Iterator[list[str]]:
    names: dict[int, list[str]] = {}
    if chunk:
        linked = keywords.filter(record_id__in=[row[0] for row in chunk]).order_by("keyword__name", "pk")
        for record_id, name in linked.values_list("record_id", "keyword__name"):
            names.setdefault(record_id, []).append(name)
    for (
        pk,
        collection,
        url,
        supplementary,
        responsible,
        budget,
        frequency,
        depth,
        needs_browser,
        theme,
        content_notes,
        technical_notes,
        is_active,
        status,
        status_reason,
        check_status,
        checked_at,
        created_at,
        created_by,
        modified_at,
        modified_by,
    ) in chunk:
        yield [
            str(pk),
            collection,
            url,
            " ".join(supplementary_url_list(supplementary)),
            responsible,
            budget,
            frequency,
            depth,
            "yes" if needs_browser else "no",
            theme,
            "; ".join(names.get(pk, ())),
            content_notes,
            technical_notes,
            "yes" if is_active else "no",
            status,
            status_reason,
            check_status,
            date(checked_at),
            date(created_at),
            created_by,
            date(modified_at),
            modified_by,
        ]


def records_csv_stream(
    queryset, *, rows_per_chunk: int = ROWS_PER_CHUNK, delimiter: str = ",", labels: bool = False
) -> Iterator[str]:
    """The CSV text of :func:`records_csv_rows`, BOM first, a few rows per chunk, formulas escaped;
    ``delimiter`` ``;`` for a spreadsheet on a French system."""
    rows = records_csv_rows(queryset, labels=labels)
    return csv_stream(rows, rows_per_chunk=rows_per_chunk, delimiter=delimiter)
