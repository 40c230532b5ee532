"""Link extractors, one module per format, and :func:`extract` that runs them.

To support a new format, write a class with ``name``, ``accepts(document)`` and
``extract(document, options)`` (see :class:`.base.Extractor`) and add an
instance to :data:`EXTRACTORS`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from .base import Document, ExtractOptions, Extractor, Link
from .css import CssExtractor
from .headers import HeadersExtractor
from .html import HtmlExtractor
from .javascript import JavaScriptExtractor
from .sitemap import SitemapExtractor
from .streams import StreamExtractor
from .text import TextExtractor

__all__ = [
    "EXTRACTORS",
    "Document",
    "ExtractOptions",
    "Extraction",
    "Extractor",
    "Link",
    "extract",
]

logger = logging.getLogger(__name__)

DEFAULT_OPTIONS = ExtractOptions()

EXTRACTORS: list[Extractor] = [
    HeadersExtractor(),
    HtmlExtractor(),
    CssExtractor(),
    JavaScriptExtractor(),
    SitemapExtractor(),
    StreamExtractor(),
    TextExtractor(),
]


@dataclass
class Extraction:
    """The links of one document (at most ``options.max_links``), and how many more were found."""

    links: list[Link] = field(default_factory=list)
    skipped: int = 0  # found beyond the cap (each occurrence counted, duplicates too)


def extract(
    document: Document,
    options: ExtractOptions = DEFAULT_OPTIONS,
    extractors: Iterable[Extractor] | None = None,
) -> Extraction:
    """The links of ``document`` found by every extractor that reads it, without duplicates, at most
    ``options.max_links`` of them, with the count of the others; never raises."""
    found = Extraction()
    links = found.links
    seen: set[tuple[str, str]] = set()
    for extractor in EXTRACTORS if extractors is None else extractors:
        try:
            if not extractor.accepts(document):
                continue
            extracted = extractor.extract(document, options)
            for link in extracted:
                key = (link.url, link.hop)
                if key in seen:
                    continue
                if len(links) >= options.max_links:
                    found.skipped += 1  # counted, not kept (nor remembered: duplicates count too)
                    continue
                seen.add(key)
                links.append(link)
            found.skipped += getattr(extracted, "skipped", 0)
        except Exception:
            # Malformed input must not stop a crawl: keep what was found, say what broke at debug level.
            logger.debug(
                "The %s extractor failed on %s",
                getattr(extractor, "name", extractor),
                document.url,
                exc_info=True,
            )
    return found
