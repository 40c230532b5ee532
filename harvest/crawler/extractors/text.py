"""Links in plain text (L): the ``http://`` and ``https://`` URLs written in it."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .base import NAVIGATION, Document, ExtractOptions, Link, Resolver, decode_document
from .sitemap import is_robots, is_text_sitemap

TEXT_TYPES = frozenset({"text/plain"})
_URL = re.compile(r"https?://[^\s<>\"'`\x00-\x1f\x7f]{1,4096}", re.IGNORECASE)
_TRAILING = ".,;:!?'\"*_>]}"


def _trim(url: str) -> str:
    """A URL without the punctuation of the sentence around it ("see http://a.org/x).")."""
    while url:
        last = url[-1]
        if last in _TRAILING or (last == ")" and url.count("(") < url.count(")")):
            url = url[:-1]
        else:
            break
    return url


class TextExtractor:
    """Plain text, except robots.txt and text sitemaps (read by the sitemap extractor)."""

    name = "text"

    def accepts(self, document: Document) -> bool:
        """``text/plain`` documents that are neither robots.txt nor a sitemap."""
        return (
            document.content_type in TEXT_TYPES
            and not is_robots(document.url)
            and not is_text_sitemap(document)
            and not document.url.partition("?")[0].endswith((".css", ".js", ".mjs", ".m3u8", ".m3u", ".mpd"))
        )

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """Every absolute web URL in the text."""
        text, encoding = decode_document(document)
        resolver = Resolver(document.url, encoding)
        for match in _URL.finditer(text):  # lazily: extract() stops at its cap
            url = resolver.resolve(_trim(match.group(0)))
            if url:
                yield Link(url, NAVIGATION, "text")
