"""Links in style sheets: ``@import``, ``url()`` and ``image-set()`` — all requisites (E).

:func:`css_references` is also used by the HTML extractor for ``<style>``
elements and ``style`` attributes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .base import EMBED, Document, ExtractOptions, Link, Resolver, decode_document, sniff_css_charset

CSS_TYPES = frozenset({"text/css"})

_COMMENT = re.compile(r"/\*.*?(?:\*/|\Z)", re.DOTALL)
_IMPORT = re.compile(
    r"""@import\s*(?:url\(\s*(?:"([^"]*)"|'([^']*)'|((?:[^)"'\s\\]|\\.)*))\s*\)|"([^"]*)"|'([^']*)')""",
    re.IGNORECASE,
)
_URL = re.compile(r"""\burl\(\s*(?:"([^"]*)"|'([^']*)'|((?:[^)"'\s\\]|\\.)*))\s*\)""", re.IGNORECASE)
_IMAGE_SET = re.compile(r"image-set\(((?:[^()]|\([^()]*\))*)\)", re.IGNORECASE)
_STRING = re.compile(r""""([^"]*)"|'([^']*)'""")
_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n\r\f]?|(.))", re.DOTALL)


def _unescape(match: re.Match) -> str:
    if match.group(1):
        code = int(match.group(1), 16)
        return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
    return match.group(2)


def _value(match: re.Match) -> str:
    text = next((group for group in match.groups() if group is not None), "")
    return _ESCAPE.sub(_unescape, text) if "\\" in text else text


def css_references(text: str) -> Iterator[tuple[str, str]]:
    """``(reference, kind)`` for each URL in CSS text; kind is ``@import``, ``url`` or ``image-set``."""
    if "/*" in text:
        text = _COMMENT.sub(" ", text)
    imports = list(_IMPORT.finditer(text))
    if imports:
        for match in imports:
            yield _value(match), "@import"
        text = _IMPORT.sub(" ", text)  # so that "@import url(…)" is not found again as a url()
    for match in _URL.finditer(text):
        yield _value(match), "url"
    for image_set in _IMAGE_SET.finditer(text):
        for match in _STRING.finditer(image_set.group(1)):
            yield _value(match), "image-set"


def css_links(text: str, resolver: Resolver, context: str | None = None) -> Iterator[Link]:
    """The links in CSS text; ``context`` overrides the default ``css/<kind>`` context."""
    for reference, kind in css_references(text):
        url = resolver.resolve(reference)
        if url:
            yield Link(url, EMBED, context or f"css/{kind}")


class CssExtractor:
    """Style sheets."""

    name = "css"

    def accepts(self, document: Document) -> bool:
        """Style sheets by type, or by a ``.css`` name when the server sent no useful type."""
        if document.content_type in CSS_TYPES:
            return True
        return document.content_type in ("", "text/plain") and document.url.partition("?")[0].endswith(".css")

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """Every ``@import``, ``url()`` and ``image-set()`` reference."""
        text, encoding = decode_document(document, sniff_css_charset)
        return css_links(text, Resolver(document.url, encoding))  # lazily: extract() stops at its cap
