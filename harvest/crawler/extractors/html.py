"""Links in HTML (and XHTML, and SVG documents): everything a browser loads or a visitor can follow.

Navigation (L): ``<a href>``, ``<area href>``, ``<link rel=alternate|next|prev|canonical|…>``,
``<form method=get action>`` (only with ``options.forms``).
Requisites (E): ``src`` of ``img``, ``script``, ``iframe``, ``frame``, ``embed``, ``input``,
``audio``, ``video``, ``source``, ``track``; ``srcset`` of ``img`` and ``source`` (and
``imagesrcset`` of ``link``); ``data-src`` / ``data-srcset`` / ``data-lazy-src`` of any
element and ``data-original`` of images (lazy loading); ``<video poster>``;
``<object data>``; Flash ``<param name=movie value>``; ``background`` attributes;
``<link rel=stylesheet|icon|preload|manifest|apple-touch-icon|…>``; ``url()`` and
``@import`` in ``<style>`` and in ``style`` attributes; SVG ``<image href>`` and
``<use href>``; ``<html manifest>``.
Redirects (R): ``<meta http-equiv=refresh content="0; url=…">``.
Speculative (X): URL-like literals in inline scripts and ``javascript:`` links (with
``options.javascript``).
``<base href>`` changes the base of every relative reference; ``<iframe srcdoc>``
documents are read too. Frames are requisites; the engine extracts their links.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from .base import (
    EMBED,
    NAVIGATION,
    REDIRECT,
    Document,
    ExtractOptions,
    Link,
    LinkList,
    Resolver,
    decode_document,
    hop_for_relations,
    parse_refresh,
    sniff_html_charset,
)
from .css import css_links
from .javascript import script_links

HTML_TYPES = frozenset(
    {"text/html", "application/xhtml+xml", "application/vnd.wap.xhtml+xml", "image/svg+xml"}
)

# tag -> ((attribute, hop, is_srcset), …). ``href`` also stands for SVG's ``xlink:href``.
_URL_ATTRIBUTES: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "a": (("href", NAVIGATION, False),),
    "area": (("href", NAVIGATION, False),),
    "img": (
        ("src", EMBED, False),
        ("srcset", EMBED, True),
        ("lowsrc", EMBED, False),
        ("data-original", EMBED, False),
    ),
    "source": (("src", EMBED, False), ("srcset", EMBED, True)),
    "video": (("src", EMBED, False), ("poster", EMBED, False)),
    "audio": (("src", EMBED, False),),
    "track": (("src", EMBED, False),),
    "embed": (("src", EMBED, False),),
    "bgsound": (("src", EMBED, False),),
    "object": (("data", EMBED, False),),
    "iframe": (("src", EMBED, False),),
    "frame": (("src", EMBED, False),),
    "input": (("src", EMBED, False),),
    "script": (("src", EMBED, False), ("href", EMBED, False)),
    "image": (("href", EMBED, False),),
    "use": (("href", EMBED, False),),
    "feimage": (("href", EMBED, False),),
    "html": (("manifest", EMBED, False),),
    "link": (("imagesrcset", EMBED, True),),
}
# Attributes that carry a URL on whatever element they are.
_ANY_ELEMENT_ATTRIBUTES = (
    ("data-src", False),
    ("data-srcset", True),
    ("data-lazy-src", False),
    ("data-lazy-srcset", True),
    ("background", False),
)
_SPECIAL_TAGS = frozenset({"link", "meta", "script", "style", "form", "param", "iframe"})
_HANDLED_TAGS = frozenset(_URL_ATTRIBUTES) | _SPECIAL_TAGS
_SCRIPT_TYPES = frozenset(
    {
        "", "text/javascript", "application/javascript", "module", "text/ecmascript",
        "application/ecmascript", "application/x-javascript", "text/jscript", "application/json",
    }
)  # fmt: skip
_FLASH_PARAMETERS = frozenset({"movie", "src", "url", "filename", "source"})
_WHITESPACE = " \t\n\f\r"


def _tag_ids() -> dict[int, str]:
    """Lexbor's numeric ids of the tags handled here (comparing ints is much cheaper than reading names)."""
    markup = "".join(
        f"<{tag}></{tag}>" for tag in _HANDLED_TAGS if tag not in ("image", "use", "feimage", "frame")
    )
    documents = (f"{markup}<svg><image/><use/><feImage/></svg>", "<frameset><frame></frameset>")
    return {
        node.tag_id: node.tag.lower()
        for document in documents
        for node in LexborHTMLParser(document).css("*")
        # Tags lexbor does not know get an id made from a pointer: those are looked up by name.
        if node.tag.lower() in _HANDLED_TAGS and node.tag_id < _FIRST_DYNAMIC_ID
    }


_FIRST_DYNAMIC_ID = 0x10000
_IDS = _tag_ids()


def parse_srcset(value: str) -> Iterator[str]:
    """The URLs of a ``srcset`` value (WHATWG algorithm: commas may be inside URLs and descriptors)."""
    position = 0
    length = len(value)
    while True:
        while position < length and (value[position] in _WHITESPACE or value[position] == ","):
            position += 1
        if position >= length:
            return
        start = position
        while position < length and value[position] not in _WHITESPACE:
            position += 1
        url = value[start:position]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            # Skip the descriptors up to the next comma outside parentheses.
            in_parentheses = False
            while position < length:
                char = value[position]
                position += 1
                if char == "(":
                    in_parentheses = True
                elif char == ")":
                    in_parentheses = False
                elif char == "," and not in_parentheses:
                    break
        if url:
            yield url


def html_links(
    text: str, url: str, encoding: str, options: ExtractOptions, *, srcdoc: bool = False
) -> list[Link]:
    """The links in an HTML document's text, resolved against its ``<base href>`` or ``url``."""
    tree = LexborHTMLParser(text)
    base = url
    base_element = tree.css_first("base[href]")
    if base_element is not None:
        base = Resolver(url, encoding).resolve(base_element.attributes.get("href") or "") or url
    page = _Page(Resolver(base, encoding), options, srcdoc)
    # One pass over the elements, comparing lexbor's tag ids: much cheaper than a CSS selector per kind.
    for node in tree.css("*"):
        tag_id = node.tag_id
        tag = _IDS.get(tag_id)
        if tag is None:
            if tag_id < _FIRST_DYNAMIC_ID:
                continue
            tag = (node.tag or "").lower()
            if tag not in _HANDLED_TAGS:
                continue
        page.element(tag, node)
    for attribute, is_srcset in _ANY_ELEMENT_ATTRIBUTES:
        for node in tree.css(f"[{attribute}]"):
            value = node.attributes.get(attribute)
            if value:
                context = f"{(node.tag or '').lower()}/@{attribute}"
                for reference in parse_srcset(value) if is_srcset else (value,):
                    page.add(reference, EMBED, context)
    for node in tree.css("[style]"):
        value = node.attributes.get("style")
        if value and "(" in value:
            page.links.extend(css_links(value, page.resolver, f"{(node.tag or '').lower()}/@style"))
    return page.links


class _Page:
    """The links of one HTML document, as its elements are read."""

    def __init__(self, resolver: Resolver, options: ExtractOptions, srcdoc: bool):
        self.resolver = resolver
        self.options = options
        self.srcdoc = srcdoc
        self.links: list[Link] = LinkList(options.max_links)

    def add(self, reference: str | None, hop: str, context: str) -> None:
        if reference:
            url = self.resolver.resolve(reference)
            if url:
                self.links.append(Link(url, hop, context))

    def element(self, tag: str, node: Node) -> None:
        attributes = node.attributes
        for attribute, hop, is_srcset in _URL_ATTRIBUTES.get(tag, ()):
            value = attributes.get(attribute)
            if not value:
                continue
            context = f"{tag}/@{attribute}"
            if is_srcset:
                for reference in parse_srcset(value):
                    self.add(reference, hop, context)
            elif hop == NAVIGATION and value.lstrip(_WHITESPACE)[:11].lower() == "javascript:":
                if self.options.javascript:
                    code = value.lstrip(_WHITESPACE)[11:]
                    self.links.extend(script_links(code, self.resolver, context))
            else:
                self.add(value, hop, context)
        if tag in _SPECIAL_TAGS:
            self._special(tag, node, attributes)

    def _special(self, tag: str, node: Node, attributes: dict[str, str | None]) -> None:
        """The elements whose links depend on other attributes or on their content."""
        if tag == "link":
            hop = hop_for_relations(attributes.get("rel") or "")
            if hop:
                self.add(attributes.get("href"), hop, "link/@href")
        elif tag == "meta":
            if (attributes.get("http-equiv") or "").strip().lower() == "refresh":
                self.add(parse_refresh(attributes.get("content") or ""), REDIRECT, "meta/refresh")
        elif tag == "script":
            script_type = (attributes.get("type") or "").strip().lower()
            if self.options.javascript and "src" not in attributes and script_type in _SCRIPT_TYPES:
                self.links.extend(script_links(node.text(deep=True), self.resolver))
        elif tag == "style":
            self.links.extend(css_links(node.text(deep=True), self.resolver))
        elif tag == "form":
            method = (attributes.get("method") or "get").strip().lower()
            if self.options.forms and method == "get":
                self.add(attributes.get("action"), NAVIGATION, "form/@action")
        elif tag == "param":
            if (attributes.get("name") or "").strip().lower() in _FLASH_PARAMETERS:
                self.add(attributes.get("value"), EMBED, "param/@value")
        elif tag == "iframe":
            document = attributes.get("srcdoc")
            if document and not self.srcdoc:  # one level: a srcdoc inside a srcdoc is not read
                resolver = self.resolver
                links = html_links(document, resolver.base, resolver.encoding, self.options, srcdoc=True)
                self.links.extend(links)
                self.links.skipped += links.skipped


def looks_like_html(body: bytes) -> bool:
    """Whether an untyped body starts like an HTML document (what browsers sniff)."""
    start = body[:512].lstrip(b" \t\n\r\f\xef\xbb\xbf").lower()
    return start.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<!--", b"<script", b"<title"))


class HtmlExtractor:
    """HTML, XHTML and SVG documents."""

    name = "html"

    def accepts(self, document: Document) -> bool:
        """HTML by type, or an untyped body that starts like HTML."""
        if document.content_type in HTML_TYPES:
            return True
        return document.content_type == "" and looks_like_html(document.body)

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """Every link of the page, in document order (attributes on any element last)."""
        text, encoding = decode_document(document, sniff_html_charset)
        return html_links(text, document.url, encoding, options)
