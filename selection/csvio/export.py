"""CSV export of records: a streamed file, one row per record, one column per field."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator

from django.utils import timezone

from selection.csvio.columns import BOM, EXPORT_COLUMNS, escape_cell
from selection.models import Record

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


def records_csv_rows(queryset) -> Iterator[list[str]]:
    """The header, then one row per record, read a chunk at a time so that memory stays flat."""
    yield list(EXPORT_COLUMNS)
    records = queryset.select_related(
        "collection", "responsible", "theme", "created_by", "modified_by"
    ).prefetch_related("keywords")
    for record in records.iterator(chunk_size=EXPORT_CHUNK):
        yield [escape_cell(cell) for cell in _record_cells(record)]


class _Echo:
    """A file whose ``write`` gives back what it was given: csv.writer then returns each line."""

    def write(self, value: str) -> str:
        return value


def records_csv_stream(queryset, *, rows_per_chunk: int = 100) -> Iterator[str]:
    """The CSV text of :func:`records_csv_rows`, BOM first, a few rows per chunk, for streaming."""
    return csv_stream(records_csv_rows(queryset), rows_per_chunk=rows_per_chunk)


def csv_stream(rows: Iterable[list], *, rows_per_chunk: int = 100) -> Iterator[str]:
    """CSV text of rows (the first is the header), BOM first, a few rows per chunk, for streaming."""
    writer = csv.writer(_Echo(), lineterminator="\r\n")
    chunk = [BOM]
    for row in rows:
        chunk.append(writer.writerow(row))
        if len(chunk) >= rows_per_chunk:
            yield "".join(chunk)
            chunk = []
    if chunk:
        yield "".join(chunk)
