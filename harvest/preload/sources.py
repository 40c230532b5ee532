"""Reading domain lists: each line (a domain or a URL, or a CSV cell) normalised to its registered
domain, or refused with the reason. Plain Python: the preparation's stage 1 (harvest.services.preload)
streams a file through here."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import idna
from django.utils.translation import gettext as _

from webarchive.urlnorm import InvalidURL, _extractor, normalise_url, url_host

_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_HOST = re.compile(rf"(?:{_LABEL}\.)*{_LABEL}")  # every label: letters, digits, - and _, not at the ends
MAX_LINE = 4096  # characters: far above any domain name (253) or sensible seed URL
# What no domain or URL holds: C0 controls (NUL included), DEL, C1 controls, and the lone surrogates
# that stand for the bytes of invalid UTF-8 (the files are decoded with "surrogateescape").
_UNWANTED = re.compile(r"[\x00-\x1f\x7f-\x9f\udc80-\udcff]")


def line_refusal(text: str) -> str | None:
    """Why a line can be no entry whatever it says (a NUL byte, a control character, invalid UTF-8,
    too long), or None. Checked before anything else: PostgreSQL refuses NUL in text, a URL
    parser would quietly drop a tab or percent-encode a control character into a seed."""
    if len(text) > MAX_LINE:
        return _("longer than %(max)s characters") % {"max": f"{MAX_LINE:,}"}
    found = _UNWANTED.search(text)
    if found is None:
        return None
    code = ord(found.group())
    if code >= 0xDC80:
        return _("not valid UTF-8 (byte 0x%(byte)02x)") % {"byte": code - 0xDC00}
    if code == 0:
        return _("contains a NUL byte")
    return _("contains a control character (U+%(code)04X)") % {"code": code}


def printable(text: str) -> str:
    """``text`` with what `line_refusal` refuses written as ``\\xNN`` (the byte or the character), to
    show and to store (NUL cannot be stored in PostgreSQL, a lone surrogate in no UTF-8 text)."""
    return _UNWANTED.sub(lambda found: f"\\x{ord(found.group()) & 0xFF:02x}", text)


def normalise_entry(text: str) -> tuple[str, str]:
    """(registered domain, seed URL or "") of one line of a list; ValueError says why not."""
    text = text.strip()
    refusal = line_refusal(text)
    if refusal:
        raise ValueError(refusal)
    seed = ""
    if "/" in text or ":" in text.replace("::", ""):
        try:
            seed = normalise_url(text)
        except InvalidURL as error:
            raise ValueError(str(error)) from None
        host = url_host(seed)
    else:
        host = text.lower().rstrip(".")
    if not host:
        raise ValueError(_("no host name"))
    if host.replace(".", "").isdigit() or ":" in host:
        raise ValueError(_("an address, not a domain name"))
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except idna.IDNAError as error:
            raise ValueError(
                _("not a valid international domain name (%(error)s)") % {"error": error}
            ) from None
    if not _HOST.fullmatch(host):
        raise ValueError(_("not a valid domain name"))
    if "xn--" in host:
        try:
            idna.decode(host)
        except idna.IDNAError as error:
            raise ValueError(
                _("not a valid international domain name (%(error)s)") % {"error": error}
            ) from None
    extracted = _extractor()(host)
    if not extracted.suffix:
        raise ValueError(_("no public suffix (such as .fr or .co.uk)"))
    if not extracted.domain:
        raise ValueError(_("a public suffix, not a domain"))
    return f"{extracted.domain}.{extracted.suffix}", seed


@dataclass
class SourceLine:
    number: int
    text: str
    refusal: str = ""  # why the reader could not even take the line (a CSV row it cannot parse)


BOM = b"\xef\xbb\xbf"


def file_lines(
    path: str, *, column: str = "", start: int = 0, end: int | None = None, tally: Tally | None = None
) -> Iterator[SourceLine]:
    """The meaningful lines of a list (one per line, ``#`` comments) or the cells of one CSV column.

    A list can be read in parts: the lines that begin in bytes ``[start, end)`` (so parts cut at
    any byte offsets share no line and miss none), numbered from 1 within the part; ``tally``
    counts the part's lines, blank and comment lines included (to number the next part's)."""
    if column:
        if start or end is not None:
            raise ValueError("a CSV file is read whole")
        yield from _csv_cells(path, column)
        return
    with open(path, "rb") as stream:
        if start:
            stream.seek(start - 1)
            stream.readline()  # the rest of the line that began before the part
        position = stream.tell()
        for number, raw in enumerate(stream, start=1):
            if end is not None and position >= end:
                break
            position += len(raw)
            if tally is not None:
                tally.physical = number
            # Invalid UTF-8 kept as lone surrogates, for normalise_entry to refuse with the byte.
            line = raw.removeprefix(BOM) if position == len(raw) else raw
            line = line.decode("utf-8", "surrogateescape").strip()
            if line and not line.startswith("#"):
                yield SourceLine(number, line)


def _csv_cells(path: str, column: str) -> Iterator[SourceLine]:
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as stream:
        header = stream.readline()
        dialect = csv.Sniffer().sniff(header, delimiters=",;\t") if header.strip() else csv.excel
        names = [name.strip() for name in next(csv.reader([header], dialect))] if header.strip() else []
        index = names.index(column)  # checked when the run was created
        rows, number = csv.reader(stream, dialect), 1
        while True:
            number += 1
            try:
                row = next(rows)
            except StopIteration:
                return
            except csv.Error as error:  # a cell over csv.field_size_limit(): the reader goes on after it
                yield SourceLine(number, "", _("not a CSV row (%(error)s)") % {"error": error})
                continue
            cell = row[index].strip() if index < len(row) else ""
            if cell:
                yield SourceLine(number, cell)


@dataclass
class Tally:
    """What reading a source (or a part of it) found: lines, accepted, invalid, the first invalid kept."""

    physical: int = 0  # lines of a list's part, blank and comment lines included
    lines: int = 0
    accepted: int = 0
    invalid: int = 0
    kept: list[tuple[int, str, str]] = field(default_factory=list)  # (line, text, reason)


def normalised(lines: Iterator[SourceLine], tally: Tally, *, keep: int) -> Iterator[tuple[str, str]]:
    """(domain, seed) of each line that gives one; the others counted in ``tally`` (the first
    ``keep`` with their line number, text and reason)."""
    for line in lines:
        tally.lines += 1
        try:
            if line.refusal:
                raise ValueError(line.refusal)
            entry = normalise_entry(line.text)
        except ValueError as error:
            tally.invalid += 1
            if len(tally.kept) < keep:  # as they can be stored and shown: no NUL, no lone surrogate
                tally.kept.append((line.number, printable(line.text)[:500], printable(str(error))[:500]))
            continue
        tally.accepted += 1
        yield entry


def csv_columns(path: str) -> list[str]:
    """The names in a CSV file's header (as ``_csv_cells`` reads them: invalid UTF-8 kept as lone
    surrogates; pass them through ``printable`` to show them)."""
    with open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as stream:
        header = stream.readline()
    if not header.strip():
        return []
    dialect = csv.Sniffer().sniff(header, delimiters=",;\t")
    return [name.strip() for name in next(csv.reader([header], dialect))]
