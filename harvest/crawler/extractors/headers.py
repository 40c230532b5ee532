"""Links in HTTP response headers: ``Location`` (R, on redirects), ``Refresh`` (R) and ``Link``
(E for preload/stylesheet/icon…, L for the other relations)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .base import REDIRECT, Document, ExtractOptions, Link, Resolver, hop_for_relations, parse_refresh

# One link-value of a Link header: <uri> then parameters, which may hold quoted commas.
_LINK_VALUE = re.compile(r'<([^>]*)>((?:[^<",]|"(?:[^"\\]|\\.)*")*)')
_REL = re.compile(r'(?:^|;)\s*rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))', re.IGNORECASE)


def _text(value: str) -> str:
    """A header value as text: HTTP libraries decode header bytes as Latin-1, servers mostly send UTF-8."""
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def parse_link_header(value: str) -> Iterator[tuple[str, str]]:
    """``(uri_reference, rel)`` for each link-value of a ``Link`` header (RFC 8288)."""
    for match in _LINK_VALUE.finditer(value):
        rel = _REL.search(match.group(2))
        yield match.group(1).strip(), (rel.group(1) or rel.group(2) or "") if rel else ""


class HeadersExtractor:
    """Response headers, whatever the document's type."""

    name = "headers"

    def accepts(self, document: Document) -> bool:
        """Every response has headers."""
        return True

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """The redirect target and the Link header targets."""
        resolver = Resolver(document.url)
        links = []
        for name, value in document.headers:
            name = name.lower()
            if name == "location" and 300 <= document.status < 400:
                url = resolver.resolve(_text(value))
                if url:
                    links.append(Link(url, REDIRECT, "header/Location"))
            elif name == "refresh":
                url = resolver.resolve(parse_refresh(_text(value)) or "")
                if url:
                    links.append(Link(url, REDIRECT, "header/Refresh"))
            elif name == "link":
                for reference, rel in parse_link_header(_text(value)):
                    hop = hop_for_relations(rel) if rel else "L"
                    url = resolver.resolve(reference) if hop else None
                    if url:
                        links.append(Link(url, hop, "header/Link"))
        return links
