"""Writes to the full-text index: the texts of captured documents, and the entries that say where and
when each was captured (storage.models_search).

Two paths fill it, as for the capture index. In real time, the capture recorder sends the documents a
crawl has just captured to ``storage.index_texts`` (:func:`captures_text_index`), which reads each
record from its WARC file. In bulk, ``index_warcs`` reads the documents of whole files in worker
processes (:func:`storage.textextract.read_documents`) and stores them with :func:`texts_store`.

A payload is read once: a digest already in the index is not read again, and one that could not be
read is stored with the reason (``error``) and skipped from then on. Entries are recomputed from the
capture index for the URLs and digests concerned (:func:`entries_refresh`), so that indexing a file
again, or its captures arriving in any order, gives the same entries.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from storage import search
from storage.models import Capture
from storage.models_search import SearchEntry, SearchText
from storage.selectors import RecordPayload, RecordUnavailable
from storage.textextract import (
    MAX_PAYLOAD,
    RENDERED_PREFIX,
    Document,
    ExtractionError,
    RecordText,
    extract,
    extracts,
    page_url,
    read_documents,
    record_text,
)
from storage.warcindex import url_key
from webarchive.urlnorm import registered_domain, url_host

logger = logging.getLogger(__name__)

INDEXED_RECORDS = ("response", "resource")
BATCH = 500


@dataclass
class TextIndexing:
    """What one pass of text indexing did."""

    read: int = 0  # documents extracted
    known: int = 0  # digests already in the index (not read again)
    skipped: list[str] = field(default_factory=list)  # "url: why", for records that could not be read
    entries: int = 0

    def add(self, other: TextIndexing) -> None:
        self.read += other.read
        self.known += other.known
        self.skipped += other.skipped
        self.entries += other.entries


def is_document(capture) -> bool:
    """Whether a capture (a Capture, or a capture-index entry: anything with ``record_type``,
    ``mime``, ``status`` and ``url``) holds a document the full-text index reads."""
    record_type, status = capture.record_type, capture.status
    if record_type not in INDEXED_RECORDS or not extracts(capture.mime, capture.url):
        return False
    return record_type == "resource" or (status is not None and 200 <= status < 300)


def text_of(digest: str, document: Document | None, error: str = "", *, now=None) -> SearchText:
    """The index row of a document (or of a payload that could not be read, with why)."""
    now = now or timezone.now()
    if document is None:
        return SearchText(digest=digest, error=error[:300], extracted_at=now)
    return SearchText(
        digest=digest,
        mime=document.mime,
        language=document.language,
        title=document.title,
        headings=document.headings,
        body=document.text,
        truncated=document.truncated,
        extracted_at=now,
    )


def known_digests(digests: Iterable[str]) -> set[str]:
    """Those of ``digests`` already in the index (read, or skipped with a reason)."""
    digests = list(set(digests))
    found: set[str] = set()
    for start in range(0, len(digests), BATCH):
        batch = digests[start : start + BATCH]
        found.update(SearchText.objects.filter(digest__in=batch).values_list("digest", flat=True))
    return found


def texts_store(records: Iterable[RecordText]) -> TextIndexing:
    """Store the documents read from records (one per digest; those already indexed are left)."""
    result = TextIndexing()
    now = timezone.now()
    texts: dict[str, SearchText] = {}
    for record in records:
        if record.document is None:
            result.skipped.append(f"{record.url}: {record.error}")
        else:
            result.read += 1
        if record.digest and record.digest not in texts:
            texts[record.digest] = text_of(record.digest, record.document, record.error, now=now)
    rows = list(texts.values())
    for start in range(0, len(rows), BATCH):
        search.backend().store(rows[start : start + BATCH])
    anchors_store(records)
    return result


def anchors_store(records: Iterable[RecordText]) -> int:
    """Keep the anchor text of the links of documents just read, by the URL each link points to."""
    rows = sorted(
        {(key, text, record.digest) for record in records if record.digest for key, text in record.anchors}
    )
    for start in range(0, len(rows), BATCH * 4):
        search.backend().store_anchors(rows[start : start + BATCH * 4])
    return len(rows)


def entries_refresh(pairs: Iterable[tuple[str, str]]) -> int:
    """Recompute the entries of these (capture SURT key, digest) pairs from the capture index."""
    pairs = {(key, digest) for key, digest in pairs if digest}
    if not pairs:
        return 0
    written = 0
    ordered_pairs = sorted(pairs)
    for start in range(0, len(ordered_pairs), BATCH):
        written += _refresh(ordered_pairs[start : start + BATCH])
    return written


def _refresh(pairs: list[tuple[str, str]]) -> int:
    digests = {digest for _key, digest in pairs}
    texts = {
        row["digest"]: row
        for row in SearchText.objects.filter(digest__in=digests, error="").values(
            "digest", "mime", "language"
        )
    }
    captures = Capture.objects.filter(
        urlkey__in={key for key, _digest in pairs}, digest__in=list(texts)
    ).values_list(
        "urlkey", "url", "digest", "record_type", "status", "timestamp", "job__harvest_definition_id"
    )
    groups: dict[tuple, list] = defaultdict(list)
    pages: dict[str, tuple[str, str]] = {}  # capture key → (page key, page URL)
    wanted = set(pairs)
    for key, url, digest, record_type, status, stamp, definition in captures:
        if (key, digest) not in wanted:
            continue
        if record_type == "response" and not (status and 200 <= status < 300):
            continue
        if key not in pages:
            page = page_url(url)
            pages[key] = (url_key(page) if page != url else key, page)
        year = timezone.localtime(stamp).year
        groups[(pages[key][0], digest, definition or 0, year)].append((stamp, pages[key][1]))
    page_pairs = {(pages.get(key, (key,))[0], digest) for key, digest in pairs}
    rows = []  # in search.ENTRY_COLUMNS' order
    for (page_key, digest, definition, year), found in groups.items():
        stamps = [stamp for stamp, _url in found]
        url = max(found)[1]
        text = texts[digest]
        row = (page_key, url, _domain(url), digest, definition, year, text["mime"], text["language"])
        rows.append((*row, len(found), min(stamps), max(stamps)))
    with transaction.atomic():
        # The entries of these pairs, found by digest (indexed), then deleted by id: one statement each.
        existing = SearchEntry.objects.filter(digest__in={digest for _key, digest in page_pairs})
        stale = [
            pk
            for pk, key, digest in existing.values_list("pk", "urlkey", "digest")
            if (key, digest) in page_pairs
        ]
        SearchEntry.objects.filter(pk__in=stale).delete()
        search.backend().add_entries(rows)
    return len(rows)


def _domain(url: str) -> str:
    try:
        host = url_host(url)
    except ValueError:  # an address the index holds as it was crawled, e.g. a bad IPv6 literal
        return ""
    return registered_domain(host) if host else ""


# Real time: captures a crawl has just made ----------------------------------------------------------


def document_capture_ids(captures: Iterable[Capture]) -> list[int]:
    """The ids of the captures the full-text index is concerned with (documents, and revisits of them)."""
    return [capture.pk for capture in captures if capture.record_type == "revisit" or is_document(capture)]


def captures_text_index(capture_ids: Iterable[int]) -> TextIndexing:
    """Index the documents of these captures, reading each payload not yet indexed from its record."""
    result = TextIndexing()
    captures = list(Capture.objects.filter(pk__in=list(capture_ids)).select_related("warc_file"))
    documents = [capture for capture in captures if is_document(capture) and capture.digest]
    known = known_digests(capture.digest for capture in documents)
    result.known = len(known)
    records: list[RecordText] = []
    for capture in documents:
        if capture.digest in known:
            continue
        known.add(capture.digest)
        try:
            document = capture_document(capture)
            records.append(record_text(capture.url, capture.digest, capture.offset, document))
        except ExtractionError as error:
            records.append(RecordText(capture.url, capture.digest, capture.offset, None, str(error)))
        except RecordUnavailable as error:  # not stored: read again when the file can be read
            known.discard(capture.digest)
            result.skipped.append(f"{capture.url}: {error}")
    stored = texts_store(records)
    result.read, result.skipped = stored.read, result.skipped + stored.skipped
    result.entries = entries_refresh((capture.urlkey, capture.digest) for capture in captures)
    for line in result.skipped:
        logger.warning("full-text index: skipped %s", line)
    return result


def capture_document(capture: Capture) -> Document:
    """The document in a capture's record (its payload decoded as a browser would)."""
    payload = RecordPayload(capture)
    content_type = payload.content_type
    if capture.url.startswith(RENDERED_PREFIX):
        content_type = "text/plain; charset=utf-8"
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in payload:
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_PAYLOAD:
                break
    except (OSError, EOFError, ValueError) as error:
        raise ExtractionError(f"unreadable payload ({type(error).__name__}: {error})"[:300]) from error
    finally:
        payload.close()
    data = b"".join(chunks)
    return extract(data[:MAX_PAYLOAD], content_type, truncated=len(data) > MAX_PAYLOAD)


# Bulk: whole files ----------------------------------------------------------------------------------


def wanted_documents(entries) -> tuple[list[tuple[int, str, str]], int]:
    """(offset, url, digest) of the records of a file's capture-index entries whose documents the
    index does not hold yet (one record per digest), and how many it holds already."""
    documents = [entry for entry in entries if entry.digest and is_document(entry)]
    known = known_digests(entry.digest for entry in documents)
    already = len(known)
    wanted = []
    for entry in documents:
        if entry.digest not in known:
            known.add(entry.digest)
            wanted.append((entry.offset, entry.url, entry.digest))
    return wanted, already


def file_texts_finish(records: list[RecordText], entries) -> TextIndexing:
    """Store the documents read from a file and recompute the entries of its captures."""
    result = texts_store(records)
    result.entries = file_entries_refresh(entries)
    return result


def file_entries_refresh(entries) -> int:
    """Recompute the search entries of a file's captures (its capture-index ``entries``), once the
    texts of its documents are stored."""
    return entries_refresh(
        (entry.urlkey, entry.digest)
        for entry in entries
        if entry.record_type == "revisit" or is_document(entry)
    )


def file_text_index(path, entries) -> TextIndexing:
    """Index the documents of a file already in the capture index (its ``entries``), in this process."""
    wanted, already = wanted_documents(entries)
    result = file_texts_finish(read_documents(path, wanted), entries)
    result.known = already
    return result
