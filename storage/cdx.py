"""CDX queries on the capture index, with the parameters and meaning of pywb's CDX server.

:class:`CdxQuery` reads the parameters of a ``/cdx`` request (or of an access
page) and refuses bad ones with :class:`CdxQueryError`, whose message names
the parameter; :func:`captures_lookup` answers it; :func:`capture_cdxj` and
:func:`capture_json` write a capture as pywb's ``output=cdxj`` and
``output=json`` lines do.

The semantics are pywb's (``pywb.warcserver.index``), because pywb is the
client that matters (``index: cdx+http://…/cdx``):

- the key range of a match type is pywb's ``calc_search_range``: the SURT key
  of ``url`` for ``exact``; keys starting with it for ``prefix``; the host's
  keys for ``host``; the host and its subdomains for ``domain``. When
  ``matchType`` is not given, ``*.example.com`` means domain and a trailing
  ``*`` means prefix, as in pywb;
- ``from``/``to`` are 1 to 14 digits compared as pywb compares them, as a
  14-digit string padded with ``10000101000000`` (from) or
  ``29991231235959`` (to): ``from=2025`` is 2025-01-01 00:00:00,
  ``to=2025`` 2025-12-31 23:59:59;
- ``closest`` (1 to 14 digits, padded as warcio pads them) orders by distance
  to that date, earlier first on a tie; giving ``closest`` is enough, as in
  pywb, and ``sort=closest`` with an empty ``closest`` is the key order: pywb's
  remote index source sends ``closest=&sort=closest`` when it has no date
  (calendar and fuzzy-match queries);
- ``filter`` is ``[!][=|~]field:value``: contains by default, ``=`` exact,
  ``~`` regular expression matched at the start, ``!`` negates; a filter
  without a field applies to the whole CDXJ line. Regular expressions are
  RE2's (:mod:`webarchive.patterns`), not Python's as in pywb: they run in
  time proportional to the text, and back-references and look-around are
  refused with a 400 saying so;
- an empty parameter is an absent one (pywb sends ``closest=`` and
  ``matchType=`` empty); parameters this server does not know are ignored.

Every query reads the ``(urlkey, timestamp)`` index: one key or one key range
(``urlkey`` compares bytes, see :class:`~storage.models.SurtKeyField`),
bounded by the dates in SQL. A ``closest`` query is two index scans going away
from the date (later captures ascending, earlier ones descending), merged
here; rows are read in chunks, so a large answer is streamed, not held.
Filters are applied here, on rows in index order, before the limit.
"""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils.translation import gettext as _
from warcio.timeutils import timestamp_to_datetime

from storage.models import Capture
from storage.warcindex import Entry, cdxj_line, url_key
from webarchive.patterns import PatternError, compile_user_pattern

MATCH_TYPES = ("exact", "prefix", "host", "domain")
SORTS = ("reverse", "closest")
OUTPUTS = ("cdxj", "json")
# The fields of a CDXJ line, in the order pywb's json output gives them.
FIELDS = ("urlkey", "timestamp", "url", "mime", "status", "digest", "length", "offset", "filename")
# pywb's other names of fields in filters (CDXObject.CDX_ALT_FIELDS), but "s", which pywb maps to
# length although CDX files use it for the status: refused rather than guessed.
FIELD_ALIASES = {
    "original": "url",
    "u": "url",
    "statuscode": "status",
    "mimetype": "mime",
    "m": "mime",
    "l": "length",
    "o": "offset",
    "d": "digest",
    "t": "timestamp",
    "k": "urlkey",
    "f": "filename",
}
# As pywb's CDX server: 100,000 captures unless asked for fewer; more are never sent at once.
DEFAULT_MAX_LIMIT = 100_000
CHUNK = 2000  # rows fetched at a time from the database
_FROM_PAD = "10000101000000"  # pywb's PAD_14_DOWN
_TO_PAD = "29991231235959"  # pywb's PAD_14_UP
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)


class CdxQueryError(ValueError):
    """A CDX query that cannot be answered; the message says which parameter is wrong and why."""


def max_limit() -> int:
    """The most captures one query returns (setting ``CDX_MAX_LIMIT``)."""
    return getattr(settings, "CDX_MAX_LIMIT", DEFAULT_MAX_LIMIT)


@dataclass(frozen=True)
class CdxFilter:
    """One ``filter=[!][=|~]field:value`` of a query."""

    text: str
    field: str  # "" for the whole line
    value: str
    mode: str  # "contains", "exact" or "regex"
    negate: bool
    regex: object | None = None  # the compiled RE2 pattern of a "~" filter

    @classmethod
    def parse(cls, text: str) -> CdxFilter:
        """Read a filter as pywb does, refusing unknown fields and bad regular expressions."""
        rest = text
        negate = rest.startswith("!")
        if negate:
            rest = rest[1:]
        mode = "contains"
        if rest.startswith("="):
            mode, rest = "exact", rest[1:]
        elif rest.startswith("~"):
            mode, rest = "regex", rest[1:]
        field, separator, value = rest.partition(":")
        if not separator:
            field, value = "", rest
        else:
            field = FIELD_ALIASES.get(field, field)
            if field not in FIELDS:
                raise CdxQueryError(
                    _("filter=%(filter)s: unknown field %(field)s (fields: %(fields)s).")
                    % {"filter": text, "field": field, "fields": ", ".join(FIELDS)}
                )
        regex = None
        if mode == "regex":
            try:
                regex = compile_user_pattern(value)  # RE2: linear time, whatever the pattern
            except PatternError as error:
                raise CdxQueryError(
                    _("filter=%(filter)s: %(error)s") % {"filter": text, "error": error}
                ) from None
        return cls(text=text, field=field, value=value, mode=mode, negate=negate, regex=regex)

    def matches(self, capture: Capture) -> bool:
        value = capture_cdxj(capture) if not self.field else cdx_field(capture, self.field)
        if self.mode == "exact":
            found = value == self.value
        elif self.mode == "regex":
            found = self.regex.match(value) is not None
        else:
            found = self.value in value
        return found != self.negate


@dataclass(frozen=True)
class CdxQuery:
    """A CDX query: which keys, which dates, in which order, how many, which fields, in which format."""

    url: str
    match_type: str
    key: str  # the first key of the range (the only one for exact)
    end_key: str | None  # the first key after the range; None for exact
    from_: datetime | None = None
    to: datetime | None = None
    limit: int = DEFAULT_MAX_LIMIT
    sort: str = ""  # "", "reverse" or "closest"
    closest: datetime | None = None
    filters: tuple[CdxFilter, ...] = ()
    output: str = "cdxj"
    fields: tuple[str, ...] | None = None
    matches_nothing: bool = False  # dates no capture can have (before year 1, after 9999)

    @classmethod
    def from_params(cls, params: Mapping) -> CdxQuery:
        """Read a query from request parameters (a QueryDict, or a dict of strings or lists)."""

        def get(name: str) -> str:
            value = params.get(name)
            if isinstance(value, list | tuple):
                value = value[-1] if value else ""
            return (value or "").strip() if name != "url" else (value or "")

        url, match_type = _read_url(get("url"), get("matchType"))
        key, end_key = key_range(url, match_type)
        from_, to, matches_nothing = _read_dates(get("from"), get("to"))
        sort, closest = _read_order(get("sort"), get("closest"))
        return cls(
            url=url,
            match_type=match_type,
            key=key,
            end_key=end_key,
            from_=from_,
            to=to,
            limit=_read_limit(get("limit")),
            sort=sort,
            closest=closest,
            filters=tuple(CdxFilter.parse(text) for text in _get_list(params, "filter") if text),
            output=_read_output(get("output")),
            fields=_read_fields(get("fl") or get("fields")),
            matches_nothing=matches_nothing,
        )

    def line(self, capture: Capture) -> str:
        """The capture as one line of this query's output (with its newline)."""
        if self.output == "json":
            fields = capture_json(capture)
            if self.fields is not None:
                fields = {name: fields[name] for name in self.fields if name in fields}
            return json.dumps(fields) + "\n"
        if self.fields is None:
            return capture_cdxj(capture) + "\n"
        fields = capture_json(capture)
        chosen = {name: fields[name] for name in self.fields if name in fields and name not in FIELDS[:2]}
        return f"{fields['urlkey']} {fields['timestamp']} {json.dumps(chosen)}\n"


def key_range(url: str, match_type: str) -> tuple[str, str | None]:
    """The SURT keys a match type covers: (first key, first key after) as pywb's calc_search_range."""
    key = url_key(url)
    if match_type == "exact":
        return key, None
    if match_type == "prefix":
        # A trailing "/" or "?" is part of the prefix, though the SURT drops it.
        if url.endswith("/") and not key.endswith("/"):
            key += "/"
        if url.endswith("?") and not key.endswith("?"):
            key += "?"
        return key, _next_key(key)
    host = key.split(")/")[0]
    if match_type == "host":
        return host + ")/", host + "*"  # "*" follows ")": the host's keys, not its subdomains
    # domain: the host's keys and its subdomains' ("com,example,www)/…"), "," and ")" being before "-"
    return (host + ")/" if "," in host else host + ","), host + "-"


def _read_url(url: str, match_type: str) -> tuple[str, str]:
    required = _("url is required: the URL (or URL prefix) to look up, with or without http://.")
    if not url:
        raise CdxQueryError(required)
    if "\x00" in url:
        raise CdxQueryError(_("url contains a NUL character, which no URL of the archive has."))
    if match_type and match_type not in MATCH_TYPES:
        raise CdxQueryError(
            _("matchType=%(value)s: must be one of %(choices)s.")
            % {"value": match_type, "choices": ", ".join(MATCH_TYPES)}
        )
    # pywb's wildcards: "*.example.com" for a domain, "example.com/path/*" for a prefix.
    if url.startswith("*.") and match_type in ("", "domain"):
        url, match_type = url[2:], "domain"
    elif url.endswith("*") and match_type in ("", "prefix"):
        url, match_type = url[:-1], "prefix"
    if not url:
        raise CdxQueryError(required)
    return url, match_type or "exact"


def _read_dates(from_text: str, to_text: str) -> tuple[datetime | None, datetime | None, bool]:
    """The from and to dates, and whether they leave no possible date."""
    from_ = _bound("from", from_text, _FROM_PAD, first=True)
    to = _bound("to", to_text, _TO_PAD, first=False)
    if from_ is not None and to is not None and from_ > to:
        raise CdxQueryError(
            _("from=%(from)s is after to=%(to)s: no capture can be in between.")
            % {"from": from_text, "to": to_text}
        )
    return from_, to, (bool(from_text) and from_ is None) or (bool(to_text) and to is None)


def _read_limit(text: str) -> int:
    if not text:
        return max_limit()
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise CdxQueryError(_("limit=%(value)s: must be a whole number above 0.") % {"value": text})
    return min(int(text), max_limit())  # more is never sent at once: the client asks for the rest


def _read_order(sort: str, closest_text: str) -> tuple[str, datetime | None]:
    if sort and sort not in SORTS:
        raise CdxQueryError(
            _("sort=%(value)s: must be one of %(choices)s (the default is key then date order).")
            % {"value": sort, "choices": ", ".join(SORTS)}
        )
    if not closest_text:
        # pywb's "closest=&sort=closest" (calendar and fuzzy queries): no date to be close to, key order.
        return ("" if sort == "closest" else sort), None
    if not _is_timestamp(closest_text):
        raise CdxQueryError(
            _("closest=%(value)s: must be a date of 1 to 14 digits (YYYYMMDDhhmmss or its start).")
            % {"value": closest_text}
        )
    if sort == "reverse":
        raise CdxQueryError(
            _("sort=reverse cannot be used with closest=%(value)s: closest orders by distance to it.")
            % {"value": closest_text}
        )
    # Padded as pywb pads it (warcio's timestamp_to_datetime: "2025" is the end of 2025).
    return "closest", timestamp_to_datetime(closest_text).replace(tzinfo=UTC)


def _read_output(output: str) -> str:
    output = output or "cdxj"
    if output not in OUTPUTS:
        raise CdxQueryError(
            _("output=%(value)s: must be one of %(choices)s.")
            % {"value": output, "choices": ", ".join(OUTPUTS)}
        )
    return output


def _read_fields(field_list: str) -> tuple[str, ...] | None:
    if not field_list:
        return None
    fields = tuple(name.strip() for name in field_list.split(",") if name.strip())
    unknown = [name for name in fields if name not in FIELDS]
    if unknown or not fields:
        raise CdxQueryError(
            _("fl=%(value)s: unknown field %(field)s (fields: %(fields)s).")
            % {"value": field_list, "field": ", ".join(unknown), "fields": ", ".join(FIELDS)}
        )
    return fields


def _next_key(key: str) -> str:
    return key[:-1] + chr(ord(key[-1]) + 1)


def _is_timestamp(text: str) -> bool:
    return 1 <= len(text) <= 14 and text.isascii() and text.isdigit()


def _bound(name: str, text: str, pad: str, *, first: bool) -> datetime | None:
    """The date of a ``from``/``to`` value; None if absent, or if no date can be on that side of it."""
    if not text:
        return None
    if not _is_timestamp(text):
        raise CdxQueryError(
            _("%(name)s=%(value)s: must be a date of 1 to 14 digits (YYYYMMDDhhmmss or its start).")
            % {"name": name, "value": text}
        )
    padded = text + pad[len(text) :]
    # pywb compares 14-digit strings, and a padded value need not be a date ("2025023" pads to
    # 20250231…): find the first (last) second whose string is on the right side of it.
    low, high = _EARLIEST, _LATEST
    if first:
        if _timestamp14(high) < padded:
            return None
        while low < high:
            middle = low + (high - low) // 2
            middle = middle.replace(microsecond=0)
            if _timestamp14(middle) >= padded:
                high = middle
            else:
                low = middle + timedelta(seconds=1)
        return low
    if _timestamp14(low) > padded:
        return None
    while low < high:
        middle = (low + (high - low) // 2).replace(microsecond=0) + timedelta(seconds=1)
        if _timestamp14(middle) <= padded:
            low = middle
        else:
            high = middle - timedelta(seconds=1)
    return low


def _timestamp14(moment: datetime) -> str:
    # Not strftime: it does not pad years before 1000 with zeros on every platform.
    return (
        f"{moment.year:04d}{moment.month:02d}{moment.day:02d}"
        f"{moment.hour:02d}{moment.minute:02d}{moment.second:02d}"
    )


def _get_list(params: Mapping, name: str) -> list[str]:
    if hasattr(params, "getlist"):
        return params.getlist(name)
    value = params.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


# -- answering ----------------------------------------------------------------------------------------


# The capture fields a CDX line is made of (capture_entry: an Entry's, each a Capture field of its name),
# its WARC file's name aside.
LINE_FIELDS = tuple(field.name for field in dataclass_fields(Entry))


def captures_lookup(query: CdxQuery, captures=None) -> Iterator[Capture]:
    """The captures a query asks for, in its order, filtered and limited; read lazily, in chunks.

    ``captures`` are those the caller may read (storage.access.visible_captures); all by default."""
    if query.matches_nothing:
        return iter(())
    captures = (Capture.objects.all() if captures is None else captures).select_related("warc_file")
    # Only what a line holds: a WARC file row has some twenty columns, six of them dates to parse.
    captures = captures.only(*LINE_FIELDS, "warc_file__name")
    if query.end_key is None:
        captures = captures.filter(urlkey=query.key)
    else:
        captures = captures.filter(urlkey__gte=query.key, urlkey__lt=query.end_key)
    if query.from_ is not None:
        captures = captures.filter(timestamp__gte=query.from_)
    if query.to is not None:
        captures = captures.filter(timestamp__lte=query.to)
    # Without filters the database stops at the limit; with them, rows are read until enough match.
    bounded = not query.filters
    if query.sort == "closest":
        rows = _closest(captures, query, bounded=bounded)
    else:
        order = ("urlkey", "timestamp", "id")
        if query.sort == "reverse":
            order = tuple(f"-{name}" for name in order)
        ordered = captures.order_by(*order)
        rows = _rows(ordered[: query.limit] if bounded else ordered)
    if query.filters:
        rows = (capture for capture in rows if all(f.matches(capture) for f in query.filters))
    rows = itertools.islice(rows, query.limit)
    return _in_transaction(rows) if connection.vendor == "postgresql" else rows


def _in_transaction(rows: Iterator[Capture]) -> Iterator[Capture]:
    # Outside a transaction, PostgreSQL's server-side cursors are WITH HOLD: the whole answer would be
    # computed and stored when they are opened. In one, rows are produced as they are fetched, so a
    # filtered scan stops as soon as enough rows match and the first lines leave at once.
    with transaction.atomic():
        yield from rows


def _closest(captures, query: CdxQuery, *, bounded: bool) -> Iterator[Capture]:
    """Two scans going away from the date, merged by distance (then key, date, id: pywb's input order)."""
    moment = query.closest
    by_key = () if query.end_key is None else ("urlkey",)  # one key: the index order is the date's
    later = captures.filter(timestamp__gte=moment).order_by("timestamp", *by_key, "id")
    earlier = captures.filter(timestamp__lt=moment).order_by("-timestamp", *by_key, "id")
    if bounded:
        later, earlier = later[: query.limit], earlier[: query.limit]

    def distance(capture: Capture):
        return (abs(capture.timestamp - moment), capture.urlkey, capture.timestamp, capture.pk)

    return heapq.merge(_rows(later), _rows(earlier), key=distance)


def _rows(queryset) -> Iterator[Capture]:
    return queryset.iterator(chunk_size=CHUNK)


# -- writing ------------------------------------------------------------------------------------------


def capture_entry(capture: Capture) -> Entry:
    """The capture as the index entry it was made from (what :func:`~storage.warcindex.cdxj_line` writes)."""
    return Entry(
        urlkey=capture.urlkey,
        timestamp=capture.timestamp14,
        url=capture.url,
        record_type=capture.record_type,
        mime=capture.mime,
        status=capture.status,
        digest=capture.digest,
        length=capture.length,
        offset=capture.offset,
        record_id=capture.record_id,
    )


def capture_cdxj(capture: Capture) -> str:
    """The capture as a CDXJ line (no newline), byte for byte what cdxj-indexer writes for its record."""
    return cdxj_line(capture_entry(capture), capture.warc_file.name)


def capture_json(capture: Capture) -> dict[str, str]:
    """The capture as pywb's ``output=json`` object: urlkey, timestamp, then the CDXJ line's fields."""
    urlkey, timestamp, fields = capture_cdxj(capture).split(" ", 2)
    return {"urlkey": urlkey, "timestamp": timestamp, **json.loads(fields)}


def cdx_field(capture: Capture, name: str) -> str:
    """One field of the capture as the CDX line writes it ("" when the line has none)."""
    if name == "timestamp":
        return capture.timestamp14
    if name == "filename":
        return capture.warc_file.name
    value = getattr(capture, name)
    return "" if value is None else str(value)
