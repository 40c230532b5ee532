"""The columns of the CSV files. Formulas are escaped by the application's one CSV writer
(webarchive.csvfiles), whose ``escape_cell``/``unescape_cell`` are re-exported here for the import."""

from __future__ import annotations

from django.utils.translation import gettext as _

from selection.models import Record
from webarchive.csvfiles import BOM, escape_cell, unescape_cell

__all__ = [
    "BOM",
    "EXPORT_COLUMNS",
    "FIELD_OF",
    "IMPORT_COLUMNS",
    "REQUIRED_COLUMNS",
    "column_label",
    "escape_cell",
    "unescape_cell",
]

EXPORT_COLUMNS = (
    "id",
    "collection",
    "url",
    "supplementary_urls",
    "responsible",
    "budget",
    "frequency",
    "depth",
    "needs_browser",
    "theme",
    "keywords",
    "content_notes",
    "technical_notes",
    "active",
    "status",
    "status_reason",
    "url_check",
    "checked_at",
    "created_at",
    "created_by",
    "modified_at",
    "modified_by",
)
IMPORT_COLUMNS = (
    "id",
    "collection",
    "url",
    "theme",
    "budget",
    "frequency",
    "depth",
    "responsible",
    "keywords",
    "supplementary_urls",
    "content_notes",
    "technical_notes",
    "active",
    "needs_browser",
)
REQUIRED_COLUMNS = ("url", "theme")
# Column -> the Record field it holds (for its verbose name); the others have the same name.
FIELD_OF = {"id": "id", "active": "is_active", "url_check": "check_status"}


def column_label(key: str) -> str:
    """What a column is called in the interface (the record field's verbose name)."""
    if key == "row":
        return _("line")
    return str(Record._meta.get_field(FIELD_OF.get(key, key)).verbose_name)
