"""CSV import, first step: read a file and check each line; nothing is written."""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models.functions import Lower
from django.utils import translation
from django.utils.translation import gettext as _

from selection import services
from selection.choices import Budget, Depth, Frequency
from selection.csvio.columns import (
    BOM,
    EXPORT_COLUMNS,
    IMPORT_COLUMNS,
    REQUIRED_COLUMNS,
    column_label,
    unescape_cell,
)
from selection.models import Collection, CompatibilityRule, Record, Theme
from selection.selectors import incompatibility
from selection.urlcheck import UrlCheckResult, check_url
from webarchive.permissions import CHANGE, SELECTION_PEOPLE, people_with_roles, restrict
from webarchive.urlnorm import InvalidURL, normalise_url, url_key

Checker = Callable[[str], UrlCheckResult]

# Records per file: the preview checks every URL online and the commit writes in one
# web request (about 20 ms a record), so a file stays within what a request can do.
MAX_ROWS = 1000
MAX_BYTES = 10 * 1024 * 1024  # size of a file
CHECK_WORKERS = 8  # URLs checked at the same time
DELIMITERS = (",", ";", "\t")

_CHOICES = {"budget": Budget, "frequency": Frequency, "depth": Depth}
_EXAMPLE_COLUMNS = ("url", "theme", "budget", "frequency", "depth", "responsible")

_YES = {"yes", "y", "true", "1", "oui", "o", "x"}
_NO = {"no", "n", "false", "0", "non"}


# Import: what a preview holds ------------------------------------------------------------------


@dataclass
class ImportRow:
    """One line of the file: its raw values (by column), what they mean, and what is wrong."""

    line: int
    values: dict[str, str]
    errors: dict[str, list[str]] = field(default_factory=dict)  # column (or "row") -> messages
    cleaned: dict[str, Any] = field(default_factory=dict)  # what record_propose is given
    check: UrlCheckResult | None = None
    # "new" (a record to create), "update" (the record it names changes), "unchanged"
    action: str = ""
    changes: list[list[str]] = field(default_factory=list)  # [column, old, new] of an update, as read

    @property
    def valid(self) -> bool:
        return not self.errors

    @property
    def messages(self) -> list[str]:
        """Every error of the row once, in column order."""
        return list(dict.fromkeys(message for messages in self.errors.values() for message in messages))

    def add_error(self, column: str, message: str) -> None:
        self.errors.setdefault(column, []).append(message)

    def as_dict(self, *, compact: bool = False) -> dict:
        """Plain JSON types; ``compact`` keeps only what a commit needs (the URL of the values)."""
        if compact:
            values = {"url": self.values.get("url", "")}
            if not self.valid:
                return {"line": self.line, "values": values, "errors": self.errors}
            return {
                "line": self.line,
                "values": values,
                "cleaned": self.cleaned,
                "check": self._check_dict(),
                "action": self.action,
            }
        return {
            "line": self.line,
            "values": self.values,
            "errors": self.errors,
            "cleaned": self.cleaned,
            "check": self._check_dict(),
            "action": self.action,
            "changes": self.changes,
        }

    def _check_dict(self) -> dict | None:
        return self.check.as_dict() if self.check else None

    @classmethod
    def from_dict(cls, data: dict) -> ImportRow:
        check = data.get("check")
        return cls(
            line=data["line"],
            values=data["values"],
            errors=data.get("errors", {}),
            cleaned=data.get("cleaned", {}),
            check=UrlCheckResult.from_dict(check) if check else None,
            action=data.get("action", ""),
            changes=data.get("changes", []),
        )


@dataclass
class ImportPreview:
    """A file read and checked, ready to be imported into a collection; nothing written yet.

    ``errors`` are about the whole file (nothing can be imported); each row has its own.
    """

    collection_id: int
    rows: list[ImportRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)  # the import columns the file has
    ignored_columns: list[str] = field(default_factory=list)  # its other columns, as named there
    delimiter: str = ","
    filename: str = ""
    encoding: str = "UTF-8"  # how the file was read: UTF-8, UTF-16 or Windows-1252

    @property
    def valid_rows(self) -> list[ImportRow]:
        return [row for row in self.rows if row.valid]

    @property
    def invalid_rows(self) -> list[ImportRow]:
        return [row for row in self.rows if not row.valid]

    @property
    def has_errors(self) -> bool:
        return bool(self.errors or self.invalid_rows)

    def as_dict(self, *, compact: bool = False) -> dict:
        """Plain JSON types, to keep the preview in the session until it is committed.

        ``compact`` leaves out what only the preview page shows (the rows' other values; the
        meaning and check of rows with errors): enough for :func:`import_commit` and its report.
        """
        return {
            "collection_id": self.collection_id,
            "rows": [row.as_dict(compact=compact) for row in self.rows],
            "errors": self.errors,
            "columns": self.columns,
            "ignored_columns": self.ignored_columns,
            "delimiter": self.delimiter,
            "filename": self.filename,
            "encoding": self.encoding,
        }

    @classmethod
    def from_dict(cls, data: dict) -> ImportPreview:
        return cls(**{**data, "rows": [ImportRow.from_dict(row) for row in data.get("rows", [])]})


@dataclass
class ImportResult:
    """What :func:`import_commit` did: the records created and updated, and the rows left out and why."""

    all_or_nothing: bool
    created: list[Record] = field(default_factory=list)
    updated: list[Record] = field(default_factory=list)
    unchanged: int = 0  # rows naming a record that they leave as it is
    skipped: list[ImportRow] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # why nothing was written, when nothing was


# Import: reading the file ----------------------------------------------------------------------


class _FileError(Exception):
    """The whole file is refused; the message says why."""


def _too_large() -> _FileError:
    return _FileError(
        _("The file is larger than %(size)d MB; split it into several files.")
        % {"size": MAX_BYTES // (1024 * 1024)}
    )


def _line_of(content: bytes, offset: int) -> int:
    return content.count(b"\n", 0, offset) + 1


def _decode(content: bytes | str) -> tuple[str, str]:
    """The file's text and how it was read: UTF-8 (with or without BOM), UTF-16 (with its BOM, as
    Excel's "Unicode text"), else Windows-1252 (what Excel writes as "CSV" on French systems)."""
    if isinstance(content, str):
        text, encoding = content.removeprefix(BOM), "UTF-8"
    else:
        if len(content) > MAX_BYTES:
            raise _too_large()
        if content.startswith((b"\xff\xfe", b"\xfe\xff")):
            try:
                text, encoding = content.decode("utf-16"), "UTF-16"
            except UnicodeDecodeError as error:
                raise _FileError(
                    _("The file starts as UTF-16 text but is not valid UTF-16 (byte %(offset)d).")
                    % {"offset": error.start + 1}
                ) from error
            text = text.removeprefix(BOM)
        else:
            try:
                text, encoding = content.decode("utf-8-sig"), "UTF-8"
            except UnicodeDecodeError as utf8:
                try:
                    text, encoding = content.decode("cp1252"), "Windows-1252"
                except UnicodeDecodeError as cp1252:
                    raise _FileError(
                        _(
                            "The file's encoding cannot be decided: it is not UTF-8 (line %(line)d has the "
                            "byte 0x%(byte)02X, which UTF-8 does not allow there), nor Windows-1252 "
                            "(line %(line2)d has the byte 0x%(byte2)02X, which Windows-1252 does not use). "
                            "Save the file as “CSV UTF-8” and upload it again."
                        )
                        % {
                            "line": _line_of(content, utf8.start),
                            "byte": content[utf8.start],
                            "line2": _line_of(content, cp1252.start),
                            "byte2": content[cp1252.start],
                        }
                    ) from cp1252
    if len(text) > MAX_BYTES:
        raise _too_large()
    if "\x00" in text:
        raise _FileError(_("This is not a CSV file: it contains binary data."))
    if not text.strip():
        raise _FileError(_("The file is empty."))
    return text, encoding


def fold(name: str) -> str:
    """A name as names are compared: Unicode NFC (a decomposed “é” is “é”), case folded, spaces tidied."""
    return " ".join(unicodedata.normalize("NFC", name).casefold().split())


def _sniff_delimiter(text: str) -> str:
    """The separator the header line uses most (French Excel writes ``;``)."""
    header = text.lstrip("\r\n").split("\n", 1)[0]
    counts = {delimiter: header.count(delimiter) for delimiter in DELIMITERS}
    best = max(DELIMITERS, key=lambda delimiter: counts[delimiter])
    return best if counts[best] else ","


def _normalise_header(name: str) -> str:
    return " ".join(re.split(r"[\s_\-]+", fold(name.replace(BOM, "")))).strip()


def _header_aliases() -> dict[str, str]:
    """Normalised header -> column: the keys, and the fields' names in English and the current language."""
    aliases: dict[str, str] = {}
    for language in ("en", translation.get_language() or "en"):
        with translation.override(language):
            for key in EXPORT_COLUMNS:
                aliases.setdefault(_normalise_header(column_label(key)), key)
    aliases.update({_normalise_header(key): key for key in EXPORT_COLUMNS})
    aliases.update(
        {"is active": "active", "check status": "url_check", "supplementary url": "supplementary_urls"}
    )
    return aliases


def _read(text: str, delimiter: str) -> tuple[list[str | None], list[str], list[tuple[int, list[str]]]]:
    """The header's columns (None: ignored), the ignored headers, the non-blank lines and their numbers."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header: list[str] = []
        for cells in reader:
            if any(cell.strip() for cell in cells):
                header = cells
                break
        aliases = _header_aliases()
        keys: list[str | None] = []
        ignored: list[str] = []
        for cell in header:
            key = aliases.get(_normalise_header(cell))
            if key is not None and key in keys:
                raise _FileError(
                    _("The column “%(column)s” appears twice in the header.") % {"column": cell.strip()}
                )
            if key not in IMPORT_COLUMNS:
                key = None
                if cell.strip():
                    ignored.append(cell.strip())
            keys.append(key)
        missing = [key for key in REQUIRED_COLUMNS if key not in keys]
        if missing:
            raise _FileError(
                _(
                    "The file has no “%(column)s” column. Its first line must name the columns, "
                    "for example: %(example)s"
                )
                % {"column": missing[0], "example": delimiter.join(_EXAMPLE_COLUMNS).replace("\t", " ")}
            )
        lines: list[tuple[int, list[str]]] = []
        previous = reader.line_num
        for cells in reader:
            start, previous = previous + 1, reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if len(lines) >= MAX_ROWS:
                raise _FileError(
                    _("The file has more than %(max)s records; split it into files of %(max)s at most.")
                    % {"max": f"{MAX_ROWS:,}"}
                )
            lines.append((start, cells))
    except csv.Error as error:
        raise _FileError(
            _("Line %(line)d cannot be read as CSV (%(error)s).") % {"line": reader.line_num, "error": error}
        ) from error
    if not lines:
        raise _FileError(_("The file has a header line but no records under it."))
    return keys, ignored, lines


# Import: checking each row ---------------------------------------------------------------------


def _choice(row: ImportRow, key: str, default: str) -> None:
    value = row.values.get(key, "").strip()
    choices = _CHOICES[key]
    if not value:
        row.cleaned[key] = default
        return
    for code, label in choices.choices:
        if fold(value) in (fold(code), fold(str(label))):
            row.cleaned[key] = code
            return
    row.add_error(
        key,
        _("“%(value)s” is not a valid %(field)s; the allowed values are: %(allowed)s.")
        % {"value": value, "field": column_label(key), "allowed": ", ".join(choices.values)},
    )


def _check_url_cell(row: ImportRow) -> None:
    # The same normalisation is the model field's validator, so what passes here saves.
    try:
        row.cleaned["url"] = normalise_url(row.values.get("url", ""))
    except InvalidURL as error:
        row.add_error("url", str(error))


def _check_theme(row: ImportRow, collection: Collection, themes: dict[str, Theme]) -> None:
    name = " ".join(row.values.get("theme", "").split())
    in_use = sorted(theme.name for theme in themes.values() if theme.is_active)
    listed = ", ".join(in_use) if in_use else _("none (a curator must add one first)")
    if not name:
        row.add_error(
            "theme", _("Enter a theme; the themes of this collection are: %(themes)s.") % {"themes": listed}
        )
        return
    theme = themes.get(fold(name))
    if theme is None:
        row.add_error(
            "theme",
            _("“%(theme)s” is not a theme of the collection “%(collection)s”; its themes are: %(themes)s.")
            % {"theme": name, "collection": collection, "themes": listed},
        )
    elif not theme.is_active:
        row.add_error("theme", _("The theme “%(theme)s” is no longer in use.") % {"theme": theme.name})
    else:
        row.cleaned["theme"] = theme.pk


def _check_supplementary(row: ImportRow) -> None:
    urls = []
    for raw in row.values.get("supplementary_urls", "").split():
        try:
            urls.append(normalise_url(raw))
        except InvalidURL as error:
            row.add_error("supplementary_urls", _("“%(url)s”: %(error)s") % {"url": raw, "error": error})
    row.cleaned["supplementary_urls"] = "\n".join(dict.fromkeys(urls))


def _check_keywords(row: ImportRow) -> None:
    names = row.values.get("keywords", "").split(";")
    try:
        row.cleaned["keywords"] = services.keyword_names(names)
    except ValidationError as error:
        for message in error.message_dict["keywords"]:
            row.add_error("keywords", message)
        row.cleaned["keywords"] = []


def _yes_no(row: ImportRow, column: str, field: str, *, default: bool) -> None:
    """A yes/no cell (also true/false, 1/0, oui/non, …); empty gives ``default``."""
    value = row.values.get(column, "").strip().lower()
    if not value:
        row.cleaned[field] = default
    elif value in _YES or value == _("yes").lower():
        row.cleaned[field] = True
    elif value in _NO or value == _("no").lower():
        row.cleaned[field] = False
    else:
        # Named, since a row's errors are also listed without their columns (the import's result).
        row.add_error(
            column,
            _("“%(value)s” is not yes or no (%(field)s).")
            % {"value": row.values[column].strip(), "field": column_label(column)},
        )


def _users_by_name(usernames: Iterable[str]) -> dict[str, Any]:
    """Username -> user among the librarians and curators (who may be responsible for a record), the
    exact name first, else the only one that differs by case."""
    people = people_with_roles(SELECTION_PEOPLE)
    wanted = set(usernames)
    found = {user.get_username(): user for user in people.filter(username__in=wanted)}
    rest = {name.lower() for name in wanted if name not in found}
    if rest:
        by_lower: dict[str, list] = {}
        for user in people.annotate(lname=Lower("username")).filter(lname__in=rest):
            by_lower.setdefault(user.lname, []).append(user)
        for name in wanted - found.keys():
            candidates = by_lower.get(name.lower(), [])
            if len(candidates) == 1:
                found[name] = candidates[0]
    return found


def _check_row(
    row: ImportRow,
    collection: Collection,
    themes: dict[str, Theme],
    users: dict[str, Any],
    record: Record | None,
) -> None:
    """What each cell means; an empty setting is the record's own (an update) or the collection's default."""
    _check_theme(row, collection, themes)
    for key in ("budget", "frequency", "depth"):
        _choice(row, key, getattr(record, key) if record else getattr(collection, f"default_{key}"))
    username = row.values.get("responsible", "").strip()
    if username:
        user = users.get(username)
        if user is None:
            row.add_error(
                "responsible",
                _("There is no librarian or curator “%(username)s”.") % {"username": username},
            )
        else:
            row.cleaned["responsible"] = user.pk
    elif record is not None:
        row.cleaned["responsible"] = record.responsible_id
    _check_keywords(row)
    _check_supplementary(row)
    _yes_no(row, "active", "is_active", default=record.is_active if record else True)
    _yes_no(row, "needs_browser", "needs_browser", default=record.needs_browser if record else False)
    # A spreadsheet may write the line breaks of a note as CRLF: the same note.
    row.cleaned["content_notes"] = row.values.get("content_notes", "").replace("\r\n", "\n")
    row.cleaned["technical_notes"] = row.values.get("technical_notes", "").replace("\r\n", "\n")


# Column -> (the Record field it changes, the cleaned key): what an update compares.
_UPDATED = {
    "url": "url",
    "theme": "theme",
    "budget": "budget",
    "frequency": "frequency",
    "depth": "depth",
    "responsible": "responsible",
    "keywords": "keywords",
    "supplementary_urls": "supplementary_urls",
    "content_notes": "content_notes",
    "technical_notes": "technical_notes",
    "active": "is_active",
    "needs_browser": "needs_browser",
}


def _stored(record: Record, key: str) -> Any:
    """A record's value in the form the row's cleaned value has."""
    if key == "theme":
        return record.theme_id
    if key == "responsible":
        return record.responsible_id
    if key == "keywords":
        return sorted(keyword.name for keyword in record.keywords.all())
    return getattr(record, key)


def _shown(key: str, value: Any, names: dict) -> str:
    """A value as the preview shows it: names, labels, yes/no, URLs separated by spaces."""
    if key in ("theme", "responsible"):
        return names.get((key, value), "") if value else ""
    if key in _CHOICES:
        return str(_CHOICES[key](value).label) if value in _CHOICES[key].values else str(value)
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if key == "keywords":
        return "; ".join(value)
    if key == "supplementary_urls":
        return " ".join(value.split())
    return str(value)


def _compare(row: ImportRow, record: Record, columns: list[str], names: dict) -> None:
    """An update's changes, column by column (only the columns the file has): what the commit writes."""
    update: dict[str, Any] = {}
    for column in columns:
        key = _UPDATED.get(column)
        if key is None or key not in row.cleaned or (key == "url" and row.cleaned.get("by_url")):
            continue
        new, old = row.cleaned[key], _stored(record, key)
        if key == "keywords":
            new = sorted(new)
        if new != old:
            update[key] = new
            row.changes.append([column, _shown(key, old, names), _shown(key, new, names)])
    row.cleaned["update"] = update
    row.action = "update" if update else "unchanged"


def _check_compatibility(row: ImportRow, rules: list[CompatibilityRule]) -> None:
    """New records, and updates that change a technical setting, follow the compatibility rules; an
    update that leaves them alone is never blocked by a rule made after the record."""
    if row.action == "unchanged" or (
        row.action == "update" and not set(row.cleaned["update"]) & set(CompatibilityRule.SETTINGS)
    ):
        return
    settings = tuple(row.cleaned.get(key) for key in CompatibilityRule.SETTINGS)
    if None in settings:
        return
    rule = incompatibility(*settings, rules=rules)
    if rule is not None:
        for key in rule.named_settings:
            row.add_error(key, rule.refusal)


def _check_duplicates(rows: list[ImportRow]) -> None:
    """A URL twice in the same collection of the file; an update whose new URL another record has."""
    first_line: dict[tuple[int, str], int] = {}
    moved = [row for row in rows if "url" in row.cleaned.get("update", {})]
    taken: dict[tuple[int, str], int] = {}
    for row in moved:
        key = url_key(row.cleaned["url"])
        other = (
            Record.objects.filter(collection_id=row.cleaned["collection"], url_key=key)
            .exclude(pk=row.cleaned["record"])
            .values_list("pk", flat=True)
            .first()
        )
        if other is not None:
            taken[(row.cleaned["collection"], key)] = other
    for row in rows:
        if "url" not in row.cleaned or "collection" not in row.cleaned:
            continue
        key = (row.cleaned["collection"], url_key(row.cleaned["url"]))
        if key in first_line:
            row.add_error(
                "url", _("This URL is already on line %(line)d of the file.") % {"line": first_line[key]}
            )
            continue
        first_line[key] = row.line
        if row in moved and key in taken:
            row.add_error(
                "url",
                _("This URL is already in this collection (record #%(pk)s).") % {"pk": taken[key]},
            )


def _run_checks(rows: list[ImportRow], checker: Checker) -> None:
    """Check the rows' URLs online, CHECK_WORKERS at a time; a failed check is an error of the row."""
    to_check = [
        row
        for row in rows
        if "url" in row.cleaned
        and "url" not in row.errors
        and (row.action == "new" or "url" in row.cleaned.get("update", {}))
    ]
    if not to_check:
        return
    language = translation.get_language()

    def run(url: str) -> tuple[UrlCheckResult | None, str]:
        with translation.override(language):
            try:
                return checker(url), ""
            except Exception as error:  # the contract says it never raises: never let one URL break the file
                return None, str(error) or type(error).__name__

    urls = list(dict.fromkeys(row.cleaned["url"] for row in to_check))
    with ThreadPoolExecutor(max_workers=min(CHECK_WORKERS, len(urls))) as pool:
        results = dict(zip(urls, pool.map(run, urls), strict=True))
    for row in to_check:
        result, failure = results[row.cleaned["url"]]
        if result is None:
            row.add_error("url_check", _("The URL could not be checked: %(error)s") % {"error": failure})
            continue
        row.check = result
        if not result.selectable:
            row.add_error("url_check", _("This URL cannot be selected: %(why)s") % {"why": result.message})


def import_preview(
    *,
    user,
    collection: Collection,
    content: bytes | str,
    checker: Checker | None = None,
    filename: str = "",
) -> ImportPreview:
    """Read a CSV file of records and say, line by line, what would be imported. Writes nothing.

    A row names an existing record by its ``id``, or by its ``collection`` and URL: that record is
    updated with the row's cells (the columns the file has), and the preview lists each change; the
    other rows are new records, in the row's ``collection`` or else in ``collection``. The user must
    be allowed to write in each row's collection (checked per row). Raises PermissionDenied when the
    user may not write in ``collection``; a file that cannot be read at all comes back with
    ``errors``. ``checker`` checks one URL (default: ``selection.urlcheck.check_url``); only new
    URLs are checked.
    """
    services.require_record_writable(user, collection)
    checker = checker or check_url
    preview = ImportPreview(collection_id=collection.pk, filename=filename)
    try:
        text, preview.encoding = _decode(content)
        preview.delimiter = _sniff_delimiter(text)
        keys, preview.ignored_columns, lines = _read(text, preview.delimiter)
    except _FileError as error:
        preview.errors.append(str(error))
        return preview
    preview.columns = [key for key in IMPORT_COLUMNS if key in keys]

    for line, cells in lines:
        values = {key: unescape_cell(cell) for key, cell in zip(keys, cells, strict=False) if key is not None}
        row = ImportRow(line=line, values=values)
        if any(cell.strip() for cell in cells[len(keys) :]):
            row.add_error("row", _("This line has more cells than the header has columns."))
        preview.rows.append(row)

    collections = _row_collections(preview.rows, user, collection)
    records = _named_records(preview.rows, user)
    themes: dict[int, dict[str, Theme]] = {pk: {} for pk in collections}
    for theme in Theme.objects.filter(collection__in=list(collections)):
        themes[theme.collection_id][fold(theme.name)] = theme
    users = _users_by_name({row.values.get("responsible", "").strip() for row in preview.rows} - {""})
    names = {("theme", theme.pk): theme.name for by_name in themes.values() for theme in by_name.values()}
    names.update({("responsible", user.pk): user.get_username() for user in users.values()})
    for record in records.values():
        names[("responsible", record.responsible_id)] = record.responsible.get_username()
    rules = list(CompatibilityRule.objects.all())
    for row in preview.rows:
        if "collection" not in row.cleaned:
            continue
        row_collection = collections[row.cleaned["collection"]]
        record = records.get(row.cleaned.get("record"))
        _check_row(row, row_collection, themes[row_collection.pk], users, record)
        if record is None:
            row.action = "new"
        else:
            row.cleaned["version"] = record.version
            _compare(row, record, preview.columns, names)
        _check_compatibility(row, rules)
    _check_duplicates(preview.rows)
    _run_checks(preview.rows, checker)
    return preview


def _row_collections(rows: list[ImportRow], user, default: Collection) -> dict[int, Collection]:
    """Each row's collection (its ``collection`` cell, by name, else ``default``), among those the user
    writes in; a row naming another is refused. Returns the collections used, by id."""
    writable = {fold(c.name): c for c in Collection.objects.writable_by(user)}
    known = {fold(name) for name in Collection.objects.values_list("name", flat=True)}
    used = {default.pk: default}
    for row in rows:
        name = " ".join(row.values.get("collection", "").split())
        if not name:
            row.cleaned["collection"] = default.pk
        elif fold(name) in writable:
            chosen = writable[fold(name)]
            used[chosen.pk] = chosen
            row.cleaned["collection"] = chosen.pk
        elif fold(name) in known:
            row.add_error(
                "collection",
                _("You are not a member of the collection “%(collection)s”.") % {"collection": name},
            )
        else:
            row.add_error("collection", _("There is no collection “%(collection)s”.") % {"collection": name})
        _check_url_cell(row)
    return used


def _named_records(rows: list[ImportRow], user) -> dict[int, Record]:
    """The existing records the rows name (by id, else by collection and URL) that the user may change;
    ``cleaned["record"]`` of each such row. Returns them by id."""
    changeable = restrict(Record.objects.all(), user, CHANGE)
    wanted: set[int] = set()
    for row in rows:
        cell = row.values.get("id", "").strip()
        if not cell:
            continue
        if not cell.isdigit():
            row.add_error("id", _("“%(value)s” is not a record number.") % {"value": cell})
        else:
            wanted.add(int(cell))
    by_url: dict[tuple[int, str], list[ImportRow]] = {}
    for row in rows:
        if not row.values.get("id", "").strip() and "url" in row.cleaned and "collection" in row.cleaned:
            by_url.setdefault((row.cleaned["collection"], url_key(row.cleaned["url"])), []).append(row)
    found: dict[tuple[int, str], tuple[int, bool]] = {}
    keys = sorted({key for _collection, key in by_url})
    may_change = set(changeable.filter(url_key__in=keys).values_list("pk", flat=True)) if keys else set()
    for start in range(0, len(keys), 500):
        for pk, collection_id, key in Record.objects.filter(
            url_key__in=keys[start : start + 500]
        ).values_list("pk", "collection_id", "url_key"):
            if (collection_id, key) in by_url:
                found[(collection_id, key)] = (pk, pk in may_change)
    records = {
        record.pk: record
        for record in changeable.filter(pk__in={*wanted, *(pk for pk, ok in found.values() if ok)})
        .select_related("responsible")
        .prefetch_related("keywords")
    }
    for row in rows:
        cell = row.values.get("id", "").strip()
        if cell.isdigit():
            record = records.get(int(cell))
            if record is None:
                row.add_error("id", _("There is no record #%(pk)s that you may change.") % {"pk": cell})
            elif (
                "collection" in row.cleaned
                and row.values.get("collection", "").strip()
                and (record.collection_id != row.cleaned["collection"])
            ):
                row.add_error(
                    "collection",
                    _("Record #%(pk)s is in “%(collection)s”; move it with “Transfer”, not by import.")
                    % {"pk": record.pk, "collection": record.collection},
                )
            else:
                row.cleaned["record"] = record.pk
                row.cleaned["collection"] = record.collection_id
    for key, key_rows in by_url.items():
        if key not in found:
            continue
        pk, allowed = found[key]
        for row in key_rows:
            if allowed:
                row.cleaned["record"] = pk
                row.cleaned["by_url"] = True  # the URL names the record: it is not changed
            else:
                row.add_error(
                    "url", _("This URL is already in this collection (record #%(pk)s).") % {"pk": pk}
                )
    return records
