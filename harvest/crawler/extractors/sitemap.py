"""Sitemaps (M): XML ``<urlset>`` and ``<sitemapindex>``, gzip-compressed or not, plain-text
sitemaps (one URL a line) and the ``Sitemap:`` lines of robots.txt.

The XML is read with regular expressions rather than an XML parser: sitemaps
are often truncated (size caps) or slightly malformed, and a tolerant scan
still gets every complete ``<loc>``; it also expands no entities.
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Iterable, Iterator

from .base import SITEMAP, Document, ExtractOptions, Link, Resolver, decode, sniff_xml_charset

MAX_UNCOMPRESSED = 50 * 1024 * 1024  # the sitemap protocol's limit; more is a zip bomb
XML_TYPES = frozenset({"application/xml", "text/xml"})
GZIP_TYPES = frozenset(
    {"application/gzip", "application/x-gzip", "application/octet-stream", "application/x-gunzip"}
)
_GZIP_MAGIC = b"\x1f\x8b"

# Bounded repetitions keep the scan linear on truncated or hostile input.
_LOC = re.compile(
    r"<((?:[\w.-]{1,64}:)?loc)\b[^>]{0,1024}>"  # <loc>, <image:loc>…
    r"\s*(<!\[CDATA\[.{0,16384}?\]\]>|[^<]{0,16384})\s*"
    r"</(?:[\w.-]{1,64}:)?loc\s*>",
    re.IGNORECASE | re.DOTALL,
)
_ALTERNATE = re.compile(r"<(?:[\w.-]+:)?link\b[^>]*?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.IGNORECASE)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.DOTALL)
_INDEX = re.compile(r"<(?:[\w.-]+:)?sitemapindex\b", re.IGNORECASE)
_URLSET = re.compile(r"<(?:[\w.-]+:)?urlset\b", re.IGNORECASE)
_ROBOTS_SITEMAP = re.compile(r"^[ \t]*sitemap[ \t]*:[ \t]*(\S+)", re.IGNORECASE | re.MULTILINE)
_TEXT_URL = re.compile(r"^[ \t]*(https?://\S+)", re.IGNORECASE | re.MULTILINE)


def _path(url: str) -> str:
    return url.partition("#")[0].partition("?")[0].lower()


def is_robots(url: str) -> bool:
    """Whether ``url`` is a site's robots.txt."""
    path = _path(url)
    return path.endswith("/robots.txt") and path.count("/") == 3


def is_text_sitemap(document: Document) -> bool:
    """Whether ``document`` is a plain-text sitemap (a ``.txt`` or ``.txt.gz`` file named like a sitemap)."""
    last = _path(document.url).rpartition("/")[2]
    return (
        "sitemap" in last
        and last.endswith((".txt", ".txt.gz"))
        and not document.content_type.endswith("html")
    )


def gunzip(body: bytes, limit: int = MAX_UNCOMPRESSED) -> bytes:
    """The content of gzip ``body`` (at most ``limit`` bytes; what can be read if truncated or corrupt)."""
    decompressor = zlib.decompressobj(zlib.MAX_WBITS | 16)
    try:
        return decompressor.decompress(body, limit)
    except zlib.error:
        return b""


def _xml_links(text: str, kind: str, resolver: Resolver) -> Iterator[Link]:
    for match in _LOC.finditer(text):
        value = match.group(2)
        if "<![CDATA[" in value:
            value = _CDATA.sub(r"\1", value)
        url = resolver.resolve(html.unescape(value.strip()))
        if url:
            yield Link(url, SITEMAP, f"{kind}/{match.group(1).lower()}")
    if kind == "sitemap" and "link" in text:
        for match in _ALTERNATE.finditer(text):
            url = resolver.resolve(html.unescape(match.group(1) or match.group(2) or ""))
            if url:
                yield Link(url, SITEMAP, "sitemap/link")


class SitemapExtractor:
    """Sitemaps and the ``Sitemap:`` lines of robots.txt (only with ``options.sitemaps``)."""

    name = "sitemap"

    def accepts(self, document: Document) -> bool:
        """XML and gzip documents, text sitemaps and robots.txt (XML that is no sitemap gives nothing)."""
        content_type = document.content_type
        path = _path(document.url)
        return (
            content_type in XML_TYPES
            # Only gzip files named like sitemaps are decompressed: not every archive a site offers.
            or (
                content_type in GZIP_TYPES
                and ("sitemap" in path.rpartition("/")[2] or path.endswith(".xml.gz"))
            )
            or (content_type in ("", "text/plain") and path.endswith((".xml", ".xml.gz")))
            or is_text_sitemap(document)
            or is_robots(document.url)
        )

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """The URLs the sitemap lists (or the sitemaps robots.txt names)."""
        if not options.sitemaps:
            return []
        resolver = Resolver(document.url)
        if is_robots(document.url):
            text, _ = decode(document.body, declared=document.charset)
            urls = (resolver.resolve(match.group(1)) for match in _ROBOTS_SITEMAP.finditer(text))
            return [Link(url, SITEMAP, "robots/sitemap") for url in urls if url]
        body = document.body
        if body[:2] == _GZIP_MAGIC:
            body = gunzip(body, min(MAX_UNCOMPRESSED, options.max_bytes))
        declared = None if body is not document.body else document.charset
        text, _ = decode(body, declared=declared, sniff=sniff_xml_charset)
        head = text[:65536]  # the root element, after the XML declaration and any comments
        if _INDEX.search(head):
            return _xml_links(text, "sitemapindex", resolver)  # lazily: extract() stops at its cap
        if _URLSET.search(head):
            return _xml_links(text, "sitemap", resolver)
        if is_text_sitemap(document):
            urls = (resolver.resolve(match.group(1)) for match in _TEXT_URL.finditer(text))
            return (Link(url, SITEMAP, "sitemap/text") for url in urls if url)
        return []
