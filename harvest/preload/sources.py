"""Reading domain lists: each line (a domain or a URL, or a CSV cell) normalised to its registered
domain, or refused with the reason. Plain Python: the preparation's stage 1 (harvest.services.preload)
streams a file through here."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass

import idna
from django.utils.translation import gettext as _

from webarchive.urlnorm import InvalidURL, _extractor, normalise_url, url_host

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def normalise_entry(text: str) -> tuple[str, str]:
    """(registered domain, seed URL or "") of one line of a list; ValueError says why not."""
    text = text.strip()
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
    labels = host.split(".")
    if any(not _LABEL.match(label) for label in labels):
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


def file_lines(path: str, *, column: str = "") -> Iterator[SourceLine]:
    """The meaningful lines of a list (one per line, ``#`` comments) or the cells of one CSV column."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as stream:
        if not column:
            for number, line in enumerate(stream, start=1):
                line = line.strip()
                if line and not line.startswith("#"):
                    yield SourceLine(number, line)
            return
        header = stream.readline()
        dialect = csv.Sniffer().sniff(header, delimiters=",;\t") if header.strip() else csv.excel
        names = [name.strip() for name in next(csv.reader([header], dialect))] if header.strip() else []
        index = names.index(column)  # checked when the run was created
        for number, row in enumerate(csv.reader(stream, dialect), start=2):
            cell = row[index].strip() if index < len(row) else ""
            if cell:
                yield SourceLine(number, cell)


def csv_columns(path: str) -> list[str]:
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as stream:
        header = stream.readline()
    if not header.strip():
        return []
    dialect = csv.Sniffer().sniff(header, delimiters=",;\t")
    return [name.strip() for name in next(csv.reader([header], dialect))]
