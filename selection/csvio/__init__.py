"""CSV export and import of records. No HTTP here: the pages are in selection/views/csv.py.

Export
------
One column per field, named by ``EXPORT_COLUMNS``: stable English keys, never
translated, so that a file re-imports whatever the interface language. Values:

- choices (budget, frequency, depth, status, url_check) as their codes
  (``small``, ``page+1``): what the import reads back;
- ``supplementary_urls`` separated by one space: a URL cannot contain a space,
  so the separator is unambiguous and every record stays on one line;
- ``keywords`` separated by ``"; "`` (a keyword containing ``;`` is split in two
  on import);
- ``active`` and ``needs_browser`` are ``yes``/``no``; users are their
  usernames; dates are ``YYYY-MM-DD HH:MM:SS`` in the server's time zone
  (``TIME_ZONE``), which spreadsheets read as dates.

Spreadsheet formula injection: a cell that starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return (after any apostrophes) gets one more leading
apostrophe, so that a spreadsheet shows it as text instead of running it; the
import takes that apostrophe off again, so a round trip is lossless. URLs never
start with those characters and are never changed. The stream starts with a
UTF-8 byte order mark so that Excel reads the file as UTF-8.

Import
------
:func:`import_preview` reads a file (UTF-8 with or without BOM, UTF-16 with its
BOM, else Windows-1252; ``,``, ``;`` or tab separated: the separator is the one
the header line uses most; names compared after NFC and case folding) whose header
names the columns like the export (case, spaces, ``_`` and ``-`` ignored; the
fields' names in the interface language are accepted too). ``url`` and
``theme`` are required; ``budget``, ``frequency``, ``depth`` (collection
defaults when empty), ``responsible`` (the importing user when empty),
``keywords``, ``supplementary_urls``, ``content_notes``, ``technical_notes``,
``active`` (yes when empty) and ``needs_browser`` (no when empty) are optional;
a yes/no cell also reads true/false, 1/0, oui/non (anything else is an error of
its row); the export's other columns are ignored. Each line becomes an
:class:`ImportRow` with its errors, field by field; the URLs are checked
online, several at a time. Nothing is written.

A row naming an existing record (``id``, or ``collection`` and URL) is an
update: its changes (the file's columns only) are listed in the preview, and
the version read then is the one the commit writes over. Other rows are new
records in the row's ``collection`` (else the chosen one); rights per row.

:func:`import_commit` then creates the records through
``selection.services.record_propose`` and updates the others through
``record_update``, in one transaction: all of them or none
(``all_or_nothing``), or only the valid rows, reporting the others.
"""

from selection.csvio.columns import (
    BOM,
    EXPORT_COLUMNS,
    IMPORT_COLUMNS,
    REQUIRED_COLUMNS,
    column_label,
    escape_cell,
    unescape_cell,
)
from selection.csvio.commit import import_commit
from selection.csvio.export import records_csv_rows, records_csv_stream
from selection.csvio.preview import (
    MAX_BYTES,
    MAX_ROWS,
    ImportPreview,
    ImportResult,
    ImportRow,
    import_preview,
)

__all__ = [
    "BOM",
    "EXPORT_COLUMNS",
    "IMPORT_COLUMNS",
    "MAX_BYTES",
    "MAX_ROWS",
    "REQUIRED_COLUMNS",
    "ImportPreview",
    "ImportResult",
    "ImportRow",
    "column_label",
    "escape_cell",
    "import_commit",
    "import_preview",
    "records_csv_rows",
    "records_csv_stream",
    "unescape_cell",
]
