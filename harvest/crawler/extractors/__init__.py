"""Link extractors, one module per format, and :func:`extract_links` that runs them.

To support a new format, write a class with ``name``, ``accepts(document)`` and
``extract(document, options)`` (see :class:`.base.Extractor`) and add an
instance to :data:`EXTRACTORS`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from .base import Document, ExtractOptions, Extractor, Link
from .css import CssExtractor
from .headers import HeadersExtractor
from .html import HtmlExtractor
from .javascript import JavaScriptExtractor
from .sitemap import SitemapExtractor
from .text import TextExtractor

__all__ = ["EXTRACTORS", "Document", "ExtractOptions", "Extractor", "Link", "extract_links"]

logger = logging.getLogger(__name__)

DEFAULT_OPTIONS = ExtractOptions()

EXTRACTORS: list[Extractor] = [
    HeadersExtractor(),
    HtmlExtractor(),
    CssExtractor(),
    JavaScriptExtractor(),
    SitemapExtractor(),
    TextExtractor(),
]


def extract_links(
    document: Document,
    options: ExtractOptions = DEFAULT_OPTIONS,
    extractors: Iterable[Extractor] | None = None,
) -> list[Link]:
    """The links of ``document`` found by every extractor that reads it, without duplicates; never raises."""
    links: list[Link] = []
    seen: set[tuple[str, str]] = set()
    for extractor in EXTRACTORS if extractors is None else extractors:
        try:
            if not extractor.accepts(document):
                continue
            for link in extractor.extract(document, options):
                key = (link.url, link.hop)
                if key not in seen:
                    seen.add(key)
                    links.append(link)
        except Exception:
            # Malformed input must not stop a crawl: keep what was found, say what broke at debug level.
            logger.debug(
                "The %s extractor failed on %s",
                getattr(extractor, "name", extractor),
                document.url,
                exc_info=True,
            )
    return links
