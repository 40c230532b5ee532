"""Speculative links (X) in JavaScript and JSON: string literals that look like URLs.

Code builds most of its URLs at run time, so this only finds the literal ones,
and it prefers missing a URL to inventing one: a literal is taken when it is

- an absolute ``http(s)://`` or protocol-relative ``//`` URL with a plausible
  host name (XML namespace names such as ``http://www.w3.org/2000/svg`` are not
  URLs anyone fetches), or
- a path starting with ``/``, ``./`` or ``../`` whose last segment has a known
  file extension (``/img/logo.png``, ``./chunk.js``), or a path starting with ``/``
  that has several segments and ends in a file name (``/assets/app.bundle.v2``) —
  not ``/``, not ``/api/users``, not a route pattern (``/user/:id``), not a
  template (``/item/${id}.html``), not a module name (``../modules/es.array.from``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from .base import SPECULATIVE, Document, ExtractOptions, Link, Resolver, decode_document

JAVASCRIPT_TYPES = frozenset(
    {
        "application/javascript", "text/javascript", "application/x-javascript", "application/ecmascript",
        "text/ecmascript", "text/jscript", "application/json", "text/json",
    }
)  # fmt: skip
KNOWN_EXTENSIONS = frozenset(
    {
        "html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "cfm", "cgi", "pl",
        "js", "mjs", "css", "json", "xml", "txt", "pdf", "csv", "rss", "atom", "webmanifest", "wasm",
        "png", "jpg", "jpeg", "gif", "webp", "avif", "svg", "ico", "bmp", "tif", "tiff",
        "woff", "woff2", "ttf", "otf", "eot",
        "mp4", "webm", "ogv", "ogg", "oga", "mp3", "m4a", "m4v", "wav", "flac", "aac", "mov", "avi",
        "m3u8", "mpd", "vtt", "srt", "swf", "flv",
        "zip", "gz", "epub", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "odp", "rtf",
    }
)  # fmt: skip

_CANDIDATE = re.compile(r"""(["'`])((?:https?:)?\\?/[^"'`\s<>]{0,2048}+|\.\.?\\?/[^"'`\s<>]{1,2048}+)\1""")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|(.))", re.DOTALL)
_ABSOLUTE = re.compile(r"(?:https?:)?//([^/?#]*)(.*)", re.DOTALL)
_HOST = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+(?:[a-z]{2,63}|xn--[a-z0-9-]+)(?::\d{1,5})?\.?"
)
_IP_HOST = re.compile(r"(?:localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\])(?::\d{1,5})?")
_NAMESPACE = re.compile(r"https?://(?:www\.)?w3\.org/(?:\d{4}|XML)/", re.IGNORECASE)
_FILE_NAME = re.compile(r"[A-Za-z0-9_~%.-]*[A-Za-z0-9_~%-]\.[A-Za-z0-9]{1,5}")
_TEMPLATE_CHARS = frozenset("{}$*^|\\")


def _unescape(match: re.Match) -> str:
    if match.group(1):
        return chr(int(match.group(1), 16))
    if match.group(2):
        return chr(int(match.group(2), 16))
    return match.group(3)


def _looks_like_url(literal: str) -> bool:
    if _TEMPLATE_CHARS.intersection(literal):
        return False
    absolute = _ABSOLUTE.fullmatch(literal)
    if absolute:
        host = absolute.group(1).lower()
        if not (_HOST.fullmatch(host) or _IP_HOST.fullmatch(host)):
            return False
        return not _NAMESPACE.match(literal)
    path = re.split(r"[?#]", literal, maxsplit=1)[0]
    if ":" in path or "(" in path or ")" in path:
        return False  # route patterns ("/user/:id") and regular expressions
    directory, _, last = path.rpartition("/")
    if not last or "." not in last:
        return False
    if last.rpartition(".")[2].lower() in KNOWN_EXTENSIONS and _FILE_NAME.fullmatch(last):
        return True
    if path[0] == ".":
        return False  # "./x.y" and "../x.y" with an unknown extension are module names, not files
    segments = [segment for segment in directory.split("/") if segment not in ("", ".", "..")]
    return bool(segments) and _FILE_NAME.fullmatch(last) is not None


def script_references(text: str) -> Iterator[str]:
    """The string literals in JavaScript (or JSON) text that look like URLs."""
    for match in _CANDIDATE.finditer(text):
        literal = match.group(2)
        if "\\" in literal:
            literal = _ESCAPE.sub(_unescape, literal)
        if _looks_like_url(literal):
            yield literal


def script_links(text: str, resolver: Resolver, context: str = "js/string") -> Iterator[Link]:
    """The speculative links in JavaScript text."""
    for reference in script_references(text):
        url = resolver.resolve(reference)
        if url:
            yield Link(url, SPECULATIVE, context)


class JavaScriptExtractor:
    """Scripts and JSON (web app manifests, API responses)."""

    name = "javascript"

    def accepts(self, document: Document) -> bool:
        """Scripts and JSON by type, or by a ``.js``/``.mjs`` name when the server sent no useful type."""
        content_type = document.content_type
        if content_type in JAVASCRIPT_TYPES or content_type.endswith("+json"):
            return True
        path = document.url.partition("?")[0]
        return content_type in ("", "text/plain") and path.endswith((".js", ".mjs"))

    def extract(self, document: Document, options: ExtractOptions) -> Iterable[Link]:
        """The URL-like string literals, only when ``options.javascript``."""
        if not options.javascript:
            return []
        text, encoding = decode_document(document)
        return script_links(text, Resolver(document.url, encoding))  # lazily: extract() stops at its cap
