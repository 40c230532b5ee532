"""Full-text search of the archive as a reader sees it: the access rules, the filters, the facets, one
hit per URL, a page of hits with their snippets, captures and replay (storage.search matches).

A reader never sees a hit, a snippet or a count for a capture they may not read: the entries are
narrowed to the harvest definitions whose rules let the viewer in, and to URLs no exclusion covers,
in the query that matches them, before anything is counted (storage.access).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db.models import Count, Exists, OuterRef
from django.utils.translation import get_language_info
from django.utils.translation import gettext as _

from harvest.models import CollectionMapping
from storage import access, search
from storage.access import Viewer
from storage.models import Capture
from storage.models_search import SearchAnchor, SearchEntry
from storage.replay import replay_url

PER_PAGE = 20
MAX_PER_PAGE = 100
FACET_VALUES = 20  # values shown per facet, the most frequent first
FACETS = ("collection", "domain", "year", "mime", "language")


@dataclass(frozen=True)
class SearchRequest:
    """A search as asked: the query (parsed) and its filters, sort and page."""

    query: search.ParsedQuery
    domain: str = ""
    year: int | None = None
    mime: str = ""
    collection: int | None = None
    language: str = ""
    sort: str = "relevance"
    page: int = 1
    per_page: int = PER_PAGE

    def filters(self) -> dict:
        return {
            name: value
            for name, value in (
                ("domain", self.domain),
                ("year", self.year),
                ("mime", self.mime),
                ("collection", self.collection),
                ("language", self.language),
            )
            if value not in ("", None)
        }


@dataclass
class FacetValue:
    value: str | int
    label: str
    count: int
    selected: bool = False


@dataclass
class SearchResults:
    """A page of hits, how many URLs match (at least, when ``capped``), and the facets."""

    request: SearchRequest
    hits: list[search.Hit]
    total: int
    capped: bool
    facets: dict[str, list[FacetValue]] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.request.per_page))


def searchable_entries(viewer: Viewer, day=None):
    """The entries whose captures the viewer may read (staff: all)."""
    entries = SearchEntry.objects.all()
    if viewer.is_staff:
        return entries
    definitions = access.definitions_open_to(viewer, day)
    if not definitions:
        return entries.none()
    return entries.filter(harvest_definition_id__in=definitions).exclude(access.excluded(day))


def searchable_anchors(viewer: Viewer, entries):
    """The link anchors the viewer may search: those of pages the viewer may read (``entries``)."""
    if viewer.is_staff:
        return SearchAnchor.objects.all()
    return SearchAnchor.objects.filter(Exists(entries.filter(digest=OuterRef("source_digest"))))


def collections_of_definitions() -> dict[int, list[tuple[int, str]]]:
    """Harvest definition id → the collections mapped to it (id, name)."""
    mapped: dict[int, list[tuple[int, str]]] = {}
    rows = CollectionMapping.objects.values_list(
        "harvest_definition_id", "collection_id", "collection__name"
    ).order_by("collection__name", "collection_id")
    for definition, collection, name in rows:
        mapped.setdefault(definition, []).append((collection, name))
    return mapped


def archive_search(request: SearchRequest, viewer: Viewer) -> SearchResults:
    """Search the archive's text as ``viewer`` may read it."""
    entries = searchable_entries(viewer)
    anchors = searchable_anchors(viewer, entries)
    filters = request.filters()
    mapped = collections_of_definitions()
    if "domain" in filters:
        entries = entries.filter(domain=filters["domain"])
    if "year" in filters:
        entries = entries.filter(year=filters["year"])
    if "mime" in filters:
        entries = entries.filter(mime=filters["mime"])
    if "language" in filters:
        entries = entries.filter(language=filters["language"])
    if "collection" in filters:
        definitions = [
            definition
            for definition, collections in mapped.items()
            if any(collection == filters["collection"] for collection, _name in collections)
        ]
        entries = entries.filter(harvest_definition_id__in=definitions)
    found, capped = search.candidates(entries, request.query, request.language, anchors)
    hits = search.ordered(search.group(found), request.sort)
    results = SearchResults(request, [], len(hits), capped, _facets(hits, mapped, filters))
    start = (request.page - 1) * request.per_page
    results.hits = hits[start : start + request.per_page]
    search.add_snippets(results.hits, request.query)
    search.anchor_texts(results.hits, request.query, anchors)
    _add_captures(results.hits, viewer)
    for hit in results.hits:
        hit.collections = [
            name for definition in sorted(hit.definitions) for _id, name in mapped.get(definition, [])
        ]
    return results


def _facets(hits: list[search.Hit], mapped, filters: dict) -> dict[str, list[FacetValue]]:
    counts = search.facet_counts(hits)
    collections: dict[int, int] = {}
    names: dict[int, str] = {}
    for hit in hits:
        seen = {collection for definition in hit.definitions for collection, _n in mapped.get(definition, [])}
        for collection in seen:
            collections[collection] = collections.get(collection, 0) + 1
    for items in mapped.values():
        names.update(items)
    facets = {
        "collection": [
            FacetValue(collection, names[collection], count) for collection, count in collections.items()
        ],
        "domain": [FacetValue(domain, domain, count) for domain, count in counts["domain"].items() if domain],
        "year": [FacetValue(year, str(year), count) for year, count in counts["year"].items()],
        "mime": [FacetValue(mime, mime, count) for mime, count in counts["mime"].items() if mime],
        "language": [
            FacetValue(language, language_name(language), count)
            for language, count in counts["language"].items()
            if language
        ],
    }
    for name, values in facets.items():
        if name == "year":
            values.sort(key=lambda item: -int(item.value))
        else:
            values.sort(key=lambda item: (-item.count, str(item.label)))
        del values[FACET_VALUES:]
        for item in values:
            item.selected = filters.get(name) == item.value
    return facets


def language_name(code: str) -> str:
    """A language's name in the reader's language (its code when Django does not know it)."""
    try:
        return _(get_language_info(code)["name"])
    except KeyError:
        return code


CAPTURES_READ = 2_000  # captures of a page of hits read to choose the one each hit opens


def _add_captures(hits: list[search.Hit], viewer: Viewer) -> None:
    """Each hit's captures the viewer may read (counted), and the one to open: the latest capture of
    the hit's text, else the latest before it (a browser capture's text), else the latest."""
    if not hits:
        return
    visible = access.visible_captures(Capture.objects.all(), viewer)
    keys = {hit.urlkey for hit in hits}
    counts = dict(
        visible.filter(urlkey__in=keys)
        .values("urlkey")
        .annotate(count=Count("pk"))
        .values_list("urlkey", "count")
    )
    # The captures of the hits' texts, the latest first: one statement for the page, in most cases.
    latest: dict[tuple[str, str], int] = {}
    rows = (
        visible.filter(urlkey__in=keys, digest__in={hit.digest for hit in hits})
        .order_by("-timestamp", "-pk")
        .values_list("pk", "urlkey", "digest")[:CAPTURES_READ]
    )
    for pk, key, digest in rows:
        latest.setdefault((key, digest), pk)
    chosen: dict[str, int] = {}
    for hit in hits:
        pk = latest.get((hit.urlkey, hit.digest))
        if pk is None and counts.get(hit.urlkey):
            own = visible.filter(urlkey=hit.urlkey).order_by("-timestamp", "-pk").values_list("pk", flat=True)
            pk = own.filter(timestamp__lte=hit.last_capture).first() or own.first()
        if pk is not None:
            chosen[hit.urlkey] = pk
    captures = Capture.objects.in_bulk(list(chosen.values()))
    for hit in hits:
        capture = captures.get(chosen.get(hit.urlkey))
        hit.capture = capture
        hit.capture_count = counts.get(hit.urlkey, 0)
        hit.replay = replay_url(hit.url, capture.timestamp14) if capture is not None else ""
