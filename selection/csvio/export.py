"""CSV export of records: a streamed file, one row per record, one column per field.

The rows are raw values; the application's one CSV writer (webarchive.csvfiles) escapes the cells
a spreadsheet would run, and the import (selection.csvio.preview) takes that escaping off again.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.utils import timezone

from selection.csvio.columns import EXPORT_COLUMNS, column_label
from selection.models import Record
from webarchive.csvfiles import ROWS_PER_CHUNK, csv_stream

EXPORT_CHUNK = 500  # records read from the database at a time


def _date(value) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M:%S") if value else ""


def _record_cells(record: Record) -> list[str]:
    return [
        str(record.pk),
        record.collection.name,
        record.url,
        " ".join(record.supplementary_url_list),
        record.responsible.get_username(),
        record.budget,
        record.frequency,
        record.depth,
        "yes" if record.needs_browser else "no",
        record.theme.name,
        "; ".join(keyword.name for keyword in record.keywords.all()),
        record.content_notes,
        record.technical_notes,
        "yes" if record.is_active else "no",
        record.status,
        record.status_reason,
        record.check_status,
        _date(record.checked_at),
        _date(record.created_at),
        record.created_by.get_username(),
        _date(record.modified_at),
        record.modified_by.get_username(),
    ]


def records_csv_rows(queryset, *, labels: bool = False) -> Iterator[list[str]]:
    """The header, then one row per record (raw: not escaped), read a chunk at a time so that memory
    stays flat. ``labels``: the header names the columns as the interface does, in its language
    (the import reads those back too); otherwise the stable keys."""
    yield [column_label(key) for key in EXPORT_COLUMNS] if labels else list(EXPORT_COLUMNS)
    records = queryset.select_related(
        "collection", "responsible", "theme", "created_by", "modified_by"
    ).prefetch_related("keywords")
    for record in records.iterator(chunk_size=EXPORT_CHUNK):
        yield _record_cells(record)


def records_csv_stream(
    queryset, *, rows_per_chunk: int = ROWS_PER_CHUNK, delimiter: str = ",", labels: bool = False
) -> Iterator[str]:
    """The CSV text of :func:`records_csv_rows`, BOM first, a few rows per chunk, formulas escaped;
    ``delimiter`` ``;`` for a spreadsheet on a French system."""
    rows = records_csv_rows(queryset, labels=labels)
    return csv_stream(rows, rows_per_chunk=rows_per_chunk, delimiter=delimiter)
