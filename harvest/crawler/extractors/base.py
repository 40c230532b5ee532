"""What every link extractor shares: the link and document types, decoding and URL resolution.

An extractor is one class with a ``name``, ``accepts(document)`` and
``extract(document, options)``; adding a format is writing one and adding it to
``EXTRACTORS`` in this package's ``__init__``.

Decoding follows what a browser does, so that the crawler asks for the URLs a
visitor's browser would ask for: a byte order mark wins, then the charset of the
``Content-Type`` header, then a declaration in the document (``<meta>``,
``@charset``, ``<?xml encoding?>``), then UTF-8 — or windows-1252 when the bytes
are clearly not UTF-8. An unknown or wrong encoding never raises: bytes that do
not decode become U+FFFD.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote, urljoin, urlsplit

from .. import defaults
from ..urls import remove_dot_segments

# Hop letters (Heritrix convention).
NAVIGATION = "L"
EMBED = "E"
SPECULATIVE = "X"
REDIRECT = "R"
SITEMAP = "M"


@dataclass(frozen=True)
class Link:
    """A URL found in a document: absolute but not canonicalised, with its hop letter and where it was."""

    url: str
    hop: str
    context: str


@dataclass
class Document:
    """A fetched response as the extractors see it (``body`` already without its Content-Encoding)."""

    url: str
    status: int
    headers: list[tuple[str, str]]
    content_type: str
    charset: str | None
    body: bytes


@dataclass(frozen=True)
class ExtractOptions:
    """Which optional kinds of links to look for, and how many to keep."""

    javascript: bool = True
    forms: bool = False
    sitemaps: bool = True
    max_links: int = defaults.EXTRACT_MAX_LINKS  # per document: the others are counted as skipped, not kept
    max_bytes: int = defaults.EXTRACT_MAX_BYTES  # of what a compressed sitemap decompresses to
    stream_variants: str = defaults.STREAM_VARIANTS  # of HLS and DASH streams: "all", or only the "best"


class LinkList(list):
    """A document's links as an extractor collects them: at most ``limit``, the others only counted.

    An extractor that builds its links in a list uses one, so that a page of a million links never
    makes a million objects.
    """

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.skipped = 0

    def append(self, link: Link) -> None:
        if len(self) < self.limit:
            super().append(link)
        else:
            self.skipped += 1

    def extend(self, links: Iterable[Link]) -> None:
        for link in links:
            self.append(link)


class Extractor(Protocol):
    """One document format's link extractor."""

    name: str

    def accepts(self, document: Document) -> bool:
        """Whether this extractor reads ``document``'s format."""

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """The links in ``document``."""


# --- Decoding ---------------------------------------------------------------------------------------------

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
# The WHATWG Encoding Standard maps these labels to the encodings browsers really use.
_LABELS = {
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "x-user-defined": "cp1252",
    "unicode-1-1-utf-8": "utf-8",
    "utf8": "utf-8",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "windows-31j": "cp932",
    "tis-620": "cp874",
    "iso-8859-11": "cp874",
    "windows-874": "cp874",
    "iso-8859-9": "cp1254",
    "macintosh": "mac-roman",
    "x-mac-roman": "mac-roman",
}

# Encodings browsers refuse to read a page in (UTF-7 was a cross-site scripting vector).
_NOT_FOR_THE_WEB = frozenset({"utf-7", "utf-32", "utf-32-le", "utf-32-be"})


def encoding_name(label: str | None) -> str | None:
    """The Python codec for a charset label as browsers read it, or ``None`` if it is unknown."""
    if not label:
        return None
    label = label.strip().strip("\"'").strip().lower()
    label = _LABELS.get(label, label)
    try:
        name = codecs.lookup(label).name
    except (LookupError, ValueError):
        return None
    return None if name in _NOT_FOR_THE_WEB else name


def decode(
    body: bytes, *, declared: str | None = None, sniff: Callable[[bytes], str | None] | None = None
) -> tuple[str, str]:
    """``(text, encoding)`` of ``body``: from its BOM, ``declared`` (header), ``sniff(body)`` or a guess."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(name, "replace"), name
    labels = (declared, sniff(body) if sniff else None)
    for label in labels:
        name = encoding_name(label)
        if name is None:
            continue
        try:
            return body.decode(name, "replace"), name
        except (LookupError, TypeError, ValueError):
            continue  # a codec that is not a text encoding (base64, rot13…)
    return _guess(body)


_DECODED_NON_ASCII = re.compile("[^\x00-\x7f\ufffd]+")


def _guess(body: bytes) -> tuple[str, str]:
    try:
        return body.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as error:
        if error.start >= len(body) - 3:  # a multi-byte character cut by a truncated body
            return body.decode("utf-8", "replace"), "utf-8"
    text = body.decode("utf-8", "replace")
    # Mostly UTF-8 with a few broken bytes is still UTF-8; otherwise it is a legacy Western page.
    broken = text.count("\ufffd")
    decoded = sum(map(len, _DECODED_NON_ASCII.findall(text)))
    if decoded > broken:
        return text, "utf-8"
    return body.decode("cp1252", "replace"), "cp1252"


_META_CHARSET = re.compile(rb"<meta\b[^>]*?charset\s*=\s*[\"']?\s*([A-Za-z0-9_.:+-]+)", re.IGNORECASE)
_XML_ENCODING = re.compile(rb"^\s*<\?xml\b[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9_.:+-]+)", re.IGNORECASE)
_CSS_CHARSET = re.compile(rb'^@charset "([A-Za-z0-9_.:+-]+)";')


def sniff_html_charset(body: bytes) -> str | None:
    """The charset a page declares in a ``<meta>`` near its start (or in an XML declaration)."""
    head = body[:4096]
    match = _META_CHARSET.search(head) or _XML_ENCODING.search(head)
    if match is None:
        return None
    label = match.group(1).decode("ascii")
    # A page that reached us as bytes cannot be UTF-16 because of a <meta>: WHATWG reads it as UTF-8.
    return "utf-8" if label.lower().startswith("utf-16") else label


def sniff_xml_charset(body: bytes) -> str | None:
    """The encoding of an XML declaration."""
    match = _XML_ENCODING.search(body[:1024])
    return match.group(1).decode("ascii") if match else None


def sniff_css_charset(body: bytes) -> str | None:
    """The encoding of a style sheet's ``@charset`` rule."""
    match = _CSS_CHARSET.match(body[:1024])
    return match.group(1).decode("ascii") if match else None


def decode_document(
    document: Document, sniff: Callable[[bytes], str | None] | None = None
) -> tuple[str, str]:
    """``(text, encoding)`` of a document's body, using its header charset and ``sniff``."""
    return decode(document.body, declared=document.charset, sniff=sniff)


# --- Resolving --------------------------------------------------------------------------------------------

# WHATWG: leading and trailing C0 controls and spaces are ignored, tabs and newlines anywhere.
_EDGES = "".join(chr(code) for code in range(0x21))
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_UNICODE_ENCODINGS = frozenset({"utf-8", "utf-16-le", "utf-16-be", "utf-16"})
WEB_SCHEMES = frozenset({"http", "https"})


class Resolver:
    """Makes references found in a document absolute: ``None`` for javascript:, mailto:, data:, #fragment…"""

    def __init__(self, base: str, encoding: str = "utf-8"):
        self.base = base
        self.encoding = encoding
        self._legacy = encoding not in _UNICODE_ENCODINGS
        # The common references (absolute, "/path", "name.html") are joined by concatenation:
        # urljoin costs more than everything else done for a link.
        self._origin = None
        try:
            parts = urlsplit(base)
        except ValueError:
            return
        if parts.scheme in WEB_SCHEMES and parts.netloc and base.startswith(f"{parts.scheme}://"):
            self._scheme = parts.scheme
            self._origin = f"{parts.scheme}://{parts.netloc}"
            path = parts.path or "/"
            self._document = self._origin + path
            self._directory = self._origin + path[: path.rfind("/") + 1]

    def resolve(self, reference: str) -> str | None:
        """The absolute http(s) URL ``reference`` points to, or ``None``."""
        reference = reference.strip(_EDGES)
        if not reference or reference[0] == "#":
            return None
        if "\t" in reference or "\n" in reference or "\r" in reference:
            reference = _TAB_NEWLINE.sub("", reference)
        match = _SCHEME.match(reference)
        if match and match.group(1).lower() not in WEB_SCHEMES:
            return None
        if "\\" in reference:
            # Browsers read backslashes as slashes in http(s) URLs, up to the query.
            head, mark, tail = reference.partition("?")
            reference = head.replace("\\", "/") + mark + tail
        url = self._join(reference, match)
        if url is None or not url.startswith(("http://", "https://")):
            return None
        if "#" in url:
            url = url.partition("#")[0]  # never sent to a server: one URL, not one per anchor
        if self._legacy and "?" in url and not url.isascii():
            url = self._encode_query(url)
        return url

    def _join(self, reference: str, scheme: re.Match | None) -> str | None:
        # The WHATWG URL parser's rules for http(s) references, by hand. urljoin is slower and
        # differs from browsers ("a//b" loses a slash, "?" keeps the base's query).
        origin = self._origin
        if scheme is not None:
            name = scheme.group(1).lower()
            rest = reference[scheme.end() :]
            if rest.startswith("//") or origin is None or name != self._scheme:
                return f"{name}://{rest.lstrip('/')}"
            reference = rest  # "http:page.html" on an http page is relative
            if not reference:
                return self._document
        if origin is None:
            try:
                return urljoin(self.base, reference)
            except ValueError:  # e.g. an unbalanced "[" in the host
                return None
        if reference[0] == "/":
            if reference[1:2] == "/":
                return f"{self._scheme}:{reference}"
            path = reference
        elif reference[0] == "?":
            return self._document + reference
        else:
            path = self._directory[len(origin) :] + reference
        if "." in path:
            path, mark, rest = path.partition("?")
            if "/." in path:
                path = remove_dot_segments(path)
            path = path + mark + rest
        return origin + path

    def _encode_query(self, url: str) -> str:
        # A browser sends the query of a link in a legacy-encoded page in that encoding (the path in UTF-8).
        head, _, query = url.partition("?")
        query, hash_mark, fragment = query.partition("#")

        def encode(match: re.Match) -> str:
            return quote(match.group(0).encode(self.encoding, "xmlcharrefreplace"), safe="")

        try:
            query = _NON_ASCII.sub(encode, query)
        except (LookupError, UnicodeError):
            return url
        return f"{head}?{query}{hash_mark}{fragment}"


# --- Shared link vocabulary ---------------------------------------------------------------------------------

# <link rel> and Link: header relations whose target the browser loads to show the page.
EMBED_RELATIONS = frozenset(
    {
        "stylesheet", "icon", "apple-touch-icon", "apple-touch-icon-precomposed", "mask-icon",
        "fluid-icon", "preload", "modulepreload", "prefetch", "manifest",
    }
)  # fmt: skip
# Relations that name an origin to connect to, not a resource: nothing to fetch.
CONNECTION_RELATIONS = frozenset({"dns-prefetch", "preconnect"})


def hop_for_relations(relations: str) -> str | None:
    """The hop of a ``rel`` value: E for requisites, ``None`` for connection hints, L otherwise."""
    tokens = set(relations.lower().split())
    if tokens & EMBED_RELATIONS:
        return EMBED
    if tokens and tokens <= CONNECTION_RELATIONS:
        return None
    return NAVIGATION


def parse_refresh(value: str) -> str | None:
    """The URL of a ``Refresh`` header or ``<meta http-equiv=refresh>`` content, as browsers parse it."""
    text = value.strip(" \t\n\f\r")
    position = 0
    length = len(text)
    while position < length and text[position] in "0123456789":
        position += 1
    if position == 0 and not text.startswith("."):
        return None
    while position < length and text[position] in "0123456789.":
        position += 1
    if position < length and text[position] not in ";, \t\n\f\r":
        return None
    rest = text[position:].lstrip(" \t\n\f\r")
    if rest[:1] in (";", ","):
        rest = rest[1:].lstrip(" \t\n\f\r")
    if not rest:
        return None
    # "url=" is optional; a "url" that no "=" follows is part of the URL itself (as WebKit reads it).
    if rest[:3].lower() == "url":
        after = rest[3:].lstrip(" \t\n\f\r")
        if after.startswith("="):
            rest = after[1:].lstrip(" \t\n\f\r")
    if rest[:1] in ("'", '"'):
        quote_char = rest[0]
        rest = rest[1:].partition(quote_char)[0]
    return rest.strip() or None
