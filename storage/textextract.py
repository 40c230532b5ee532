"""The text of an archived document, for the full-text index: HTML, plain text and PDF.

What a record's payload says, read as a browser would: the entity body with its transfer and content
encodings undone (warcio's ``content_stream``), decoded with the byte-order mark, else the charset the
HTTP header declares, else the one the page declares in a ``<meta>``, else the one its bytes look
like (Resiliparse's detector, which follows the HTML5 rules); a label a browser does not know is
ignored, and undecodable bytes are replaced, never fatal.

- HTML (Resiliparse): the title, the headings (h1 to h3), the whole visible text (no script, style or
  comment) and the main content, the language (Resiliparse's detector, the page's ``lang`` for short
  texts), and the links with their anchor text.
- Plain text: the decoded text; its first line is the title.
- PDF (pypdf): the document's title and the text of its first pages.
- A browser capture's rendered text (``resource`` records ``urn:text:<page>``): the text the page
  showed once its scripts had run, indexed under the page's URL.

Everything crawled is hostile: a payload is read up to ``MAX_PAYLOAD`` bytes, a PDF up to
``PDF_PAGES`` pages, and the text kept up to ``MAX_TEXT`` characters; control characters are removed
(the index marks matched words with two of them). This module does not use Django: ``index_warcs``
runs it in worker processes, and the benchmarks run it alone.
"""

from __future__ import annotations

import codecs
import functools
import io
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5
from resiliparse.parse.html import HTMLTree
from resiliparse.parse.lang import detect_fast
from warcio.archiveiterator import ArchiveIterator

from storage.warcindex import url_key

logger = logging.getLogger(__name__)

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
EXTRACTED_TYPES = HTML_TYPES | TEXT_TYPES | PDF_TYPES
RENDERED_PREFIX = "urn:text:"  # harvest.crawler.rendering.TEXT_PREFIX: a browser capture's text
MAX_PAYLOAD = 20 * 1024 * 1024  # bytes of a payload read; a larger document is indexed by its start
MAX_TEXT = 100_000  # characters of text kept (and indexed) per document
MAX_TITLE = 500
MAX_HEADINGS = 4_000
MAX_LINKS = 500
MAX_ANCHORS = 200  # links of one document whose anchor text is kept
MAX_LINK = 2000  # characters of a link's address
MAX_ANCHOR = 200
PDF_PAGES = 100
SHORT_TEXT = 40  # below this many characters, only the page's own lang attribute is trusted
LANGUAGES = ("fr", "en")  # those the index stems; any other language is indexed without stemming
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9._:-]{1,40})", re.IGNORECASE)
_LANG = re.compile(r"^([A-Za-z]{2,3})(?:[-_]|$)")
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


class ExtractionError(Exception):
    """A record whose document cannot be read (torn, not what it says it is)."""


@dataclass(slots=True)
class Document:
    """What the full-text index keeps of one payload."""

    mime: str
    title: str = ""
    headings: str = ""
    text: str = ""  # the whole visible text
    main: str = ""  # the main content (HTML), empty when it is the whole text
    language: str = ""
    truncated: bool = False
    links: list[tuple[str, str]] = field(default_factory=list)  # (href as written, anchor text)

    @property
    def size(self) -> int:
        return len(self.title) + len(self.headings) + len(self.text)


@dataclass(slots=True)
class RecordText:
    """A record read for the index: the address it documents, its payload digest, and its document
    (None when it was skipped, ``error`` saying why)."""

    url: str
    digest: str
    offset: int
    document: Document | None
    error: str = ""
    anchors: list[tuple[str, str]] = field(default_factory=list)  # (target SURT key, anchor text)


def record_text(url: str, digest: str, offset: int, document: Document | None, error: str = "") -> RecordText:
    """A record read for the index, with the anchors of its document's links resolved (where the
    reading happens: in ``index_warcs``'s worker processes). The document keeps what the index stores:
    its links and its main content (read for its language) are not sent on."""
    anchors: list[tuple[str, str]] = []
    if document is not None:
        anchors = link_anchors(url, document.links)
        document.links, document.main = [], ""
    return RecordText(url, digest, offset, document, error, anchors)


def link_anchors(url: str, links: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(SURT key of the target, anchor text) of a page's links: absolute http(s) addresses without
    their fragment, at most MAX_ANCHORS, none to the page itself, each pair once."""
    base = page_url(url)
    own = _key(base)
    try:
        parts = urlsplit(base)
    except ValueError:
        return []
    origin = f"{parts.scheme}://{parts.netloc}"
    anchors: dict[tuple[str, str], None] = {}
    for href, text in links[:MAX_ANCHORS]:
        href = href.strip()
        if not href or href.startswith("#") or len(href) > MAX_LINK:
            continue
        if href.startswith("/") and not href.startswith("//"):
            key = _target_key(origin, href)  # what it points to depends on the page's origin only
        elif href[:8].lower().startswith(("http://", "https://")):
            key = _target_key("", href)  # on nothing of the page
        else:
            key = _target_key(base, href)
        if key and key != own:
            anchors[(key, text)] = None
    return list(anchors)


@functools.lru_cache(maxsize=50_000)
def _target_key(base: str, href: str) -> str:
    """The SURT key of the http(s) address a link points to, without its fragment; "" for anything
    else. Cached: a site's menus repeat on every page, and many pages link to the same ones."""
    try:
        target = urljoin(base, href) if base else href
    except ValueError:
        return ""
    target = target.split("#", 1)[0]
    if not target.lower().startswith(("http://", "https://")):
        return ""
    return _key(target)


@functools.lru_cache(maxsize=20_000)
def _key(url: str) -> str:
    """The SURT key of an address ("" when it has none)."""
    try:
        return url_key(url)
    except Exception:
        return ""


def media_type(content_type: str) -> str:
    """``text/html; charset=…`` → ``text/html``."""
    return content_type.split(";", 1)[0].strip().lower()


def extracts(content_type: str, url: str = "") -> bool:
    """Whether a document of this type (or a browser capture's text) goes into the full-text index;
    robots.txt files are the crawlers' business, not documents."""
    if url.startswith(RENDERED_PREFIX):
        return True
    return media_type(content_type) in EXTRACTED_TYPES and not url.split("?", 1)[0].endswith("/robots.txt")


def page_url(url: str) -> str:
    """The page a record documents: a browser capture's text documents the page it rendered."""
    return url[len(RENDERED_PREFIX) :] if url.startswith(RENDERED_PREFIX) else url


def extract(payload: bytes, content_type: str, *, truncated: bool = False) -> Document:
    """The document in ``payload``, by its media type; raises :class:`ExtractionError`."""
    mime = media_type(content_type)
    if mime in PDF_TYPES:
        document = _pdf(payload)
    elif mime in HTML_TYPES:
        document = _html(payload, content_type)
    elif mime in TEXT_TYPES:
        document = _plain(payload, content_type)
    else:
        raise ExtractionError(f"not a document the index reads ({mime or 'no type'})")
    document.mime = mime
    document.truncated = document.truncated or truncated
    return document


def decode(payload: bytes, content_type: str = "", *, html: bool = False) -> str:
    """The payload as text, its encoding found as a browser finds it."""
    encoding = ""
    for bom, name in _BOMS:
        if payload.startswith(bom):
            return payload[len(bom) :].decode(name, errors="replace")
    declared = _CHARSET.search(content_type or "")
    if declared:
        encoding = map_encoding_to_html5(declared.group(1)) or ""
    if not encoding and html:
        encoding = detect_encoding(payload, from_html_meta=True) or ""
    if not encoding:
        encoding = detect_encoding(payload) or "utf-8"
    return bytes_to_str(payload, encoding, errors="replace")


def _clean(text: str, limit: int) -> tuple[str, bool]:
    text = _CONTROL.sub(" ", text)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    text = "\n".join(line for line in lines if line)
    if len(text) > limit:
        return text[:limit], True
    return text, False


def _language(text: str, declared: str = "") -> str:
    hint = _LANG.match(declared or "")
    if len(text) < SHORT_TEXT:
        return hint.group(1).lower() if hint else ""
    language, _score = detect_fast(text[:5000])
    return language or (hint.group(1).lower() if hint else "")


def _html(payload: bytes, content_type: str) -> Document:
    text = decode(payload, content_type, html=True)
    tree = HTMLTree.parse(text)
    if tree.document is None:
        raise ExtractionError("no HTML document")
    title, _cut = _clean(tree.title or "", MAX_TITLE)
    body = tree.body
    headings: list[str] = []
    links: list[tuple[str, str]] = []
    if body is not None:
        for node in body.query_selector_all("h1, h2, h3"):
            heading = " ".join(node.text.split())
            if heading:
                headings.append(heading)
        for node in body.query_selector_all("a[href]"):
            if len(links) >= MAX_LINKS:
                break
            anchor = " ".join(node.text.split())[:MAX_ANCHOR]
            if anchor:
                links.append((node.getattr("href") or "", anchor))
    heading_text, _cut = _clean("\n".join(headings), MAX_HEADINGS)
    whole, cut = _clean(extract_plain_text(tree, main_content=False, alt_texts=False), MAX_TEXT)
    main, _cut = _clean(extract_plain_text(tree, main_content=True, alt_texts=False), MAX_TEXT)
    root = tree.document.query_selector("html")
    declared = (root.getattr("lang") or "") if root is not None else ""
    return Document(
        mime="text/html",
        title=title,
        headings=heading_text,
        text=whole,
        main="" if main == whole else main,
        language=_language(main or whole, declared),
        truncated=cut,
        links=links,
    )


def _plain(payload: bytes, content_type: str) -> Document:
    text, cut = _clean(decode(payload, content_type), MAX_TEXT)
    first = text.split("\n", 1)[0]
    return Document(
        mime="text/plain", title=first[:MAX_TITLE], text=text, language=_language(text), truncated=cut
    )


def _pdf(payload: bytes) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # a damaged PDF warns on every object
    try:
        reader = PdfReader(io.BytesIO(payload), strict=False)
        if reader.is_encrypted:
            raise ExtractionError("encrypted PDF")
        title = ""
        try:
            title = str((reader.metadata or {}).get("/Title") or "")
        except (PyPdfError, ValueError, TypeError, KeyError):
            title = ""
        parts: list[str] = []
        length = 0
        pages = reader.pages
        for number in range(min(len(pages), PDF_PAGES)):
            part = pages[number].extract_text() or ""
            parts.append(part)
            length += len(part)
            if length > MAX_TEXT:
                break
        cut_pages = len(pages) > PDF_PAGES
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as error:
        raise ExtractionError(f"unreadable PDF ({type(error).__name__}: {error})"[:300]) from error
    text, cut = _clean("\n".join(parts), MAX_TEXT)
    title, _cut = _clean(title, MAX_TITLE)
    if not title and text:
        title = text.split("\n", 1)[0][:MAX_TITLE]
    return Document(
        mime="application/pdf", title=title, text=text, language=_language(text), truncated=cut or cut_pages
    )


# Reading records ----------------------------------------------------------------------------------


def record_document(record) -> Document:
    """The document of a warcio record (a response's entity body, a resource's block)."""
    headers = record.http_headers if record.rec_type in ("response", "revisit") else None
    content_type = (headers or record.rec_headers).get_header("Content-Type") or ""
    if record.rec_headers.get_header("WARC-Target-URI", "").startswith(RENDERED_PREFIX):
        content_type = "text/plain; charset=utf-8"
    try:
        stream = record.content_stream()
        payload = stream.read(MAX_PAYLOAD + 1)
    except (OSError, EOFError, ValueError) as error:  # a torn record, bad chunking, a broken gzip
        raise ExtractionError(f"unreadable payload ({type(error).__name__}: {error})"[:300]) from error
    truncated = len(payload) > MAX_PAYLOAD
    return extract(payload[:MAX_PAYLOAD], content_type, truncated=truncated)


def read_documents(path: str | Path, wanted: Iterable[tuple[int, str, str]]) -> list[RecordText]:
    """The documents of the records of ``path`` at the given (offset, url, digest): what
    ``index_warcs`` asks of a file once its capture index says which records hold documents."""
    results: list[RecordText] = []
    with open(path, "rb") as stream:
        for offset, url, digest in wanted:
            try:
                stream.seek(offset)
                record = next(iter(ArchiveIterator(stream, arc2warc=True)))
                document = record_document(record)
            except ExtractionError as error:
                results.append(RecordText(url, digest, offset, None, str(error)))
            except Exception as error:
                message = f"unreadable record ({type(error).__name__}: {error})"[:300]
                results.append(RecordText(url, digest, offset, None, message))
            else:
                results.append(record_text(url, digest, offset, document))
    return results


def file_documents(path: str | Path) -> Iterator[RecordText]:
    """Every document of a WARC/ARC file, read front to back (the benchmarks' extraction alone)."""
    with open(path, "rb") as stream:
        records = ArchiveIterator(stream, arc2warc=True)
        for record in records:
            if record.rec_type not in ("response", "resource"):
                continue
            url = record.rec_headers.get_header("WARC-Target-URI", "")
            headers = record.http_headers if record.rec_type == "response" else record.rec_headers
            if record.rec_type == "response" and (record.http_headers is None or not _ok(record)):
                continue
            if not extracts(headers.get_header("Content-Type") or "", url):
                continue
            digest = record.rec_headers.get_header("WARC-Payload-Digest", "")
            try:
                document, error = record_document(record), ""
            except ExtractionError as failure:
                document, error = None, str(failure)
            # Asked after the payload is read: warcio reads the rest of the record to answer.
            yield RecordText(url, digest, records.get_record_offset(), document, error)


def _ok(record) -> bool:
    status = record.http_headers.get_statuscode() or ""
    return status.startswith("2")
