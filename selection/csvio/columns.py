"""The columns of the CSV files, and the escaping of spreadsheet formulas (both directions)."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _

from selection.models import Record

BOM = "\ufeff"

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


# Spreadsheet formulas ----------------------------------------------------------------------

_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_ESCAPED_FORMULA = re.compile(r"^'+[=+\-@\t\r]")


def escape_cell(value: str) -> str:
    """Make a cell that a spreadsheet would run as a formula read as text (see the module doc)."""
    return f"'{value}" if _FORMULA.match(value) else value


def unescape_cell(value: str) -> str:
    """Undo :func:`escape_cell`."""
    return value[1:] if _ESCAPED_FORMULA.match(value) else value
