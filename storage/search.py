"""Full-text search of the archive: the one module that knows how the text index is stored and queried.

On PostgreSQL (the reference database) each text has a ``tsvector`` built with the dictionary of its
language (``archive_fr``: French stemming, ``archive_en``: English, ``archive_simple``: any other
language, no stemming; all three fold accents with ``unaccent``, so ``cafe`` finds ``café``), title
weighted above headings above the text, in a GIN index over a table partitioned by digest (16
partitions: each index stays a size that vacuum and insertion handle). A query is read with
``websearch_to_tsquery`` in each dictionary (a document matches if it matches in its own language),
ranked with ``ts_rank``; snippets come from ``ts_headline``.

On SQLite (the embedded default) the text is in an FTS5 table (``unicode61``, diacritics removed: the
same accent folding, no stemming), ranked with ``bm25``, snippets from FTS5's ``snippet``.

The query language is a search engine's, the same on both: words (all must match), ``"a phrase"``,
``OR`` between two terms, ``-word`` or ``-"a phrase"`` to exclude. :func:`parse_query` reads it into
a :class:`ParsedQuery` that each backend writes in its own syntax, so no input is ever a syntax error.

A search reads at most ``CANDIDATES`` matching entries (the filters and the access rules applied
first, in the same query), ranks and groups them by URL: a query matching more pages says so
(``capped``) rather than spending seconds on counting them; filters narrow it. On PostgreSQL the
entries whose *summary* matches come first: each entry keeps the vector of its text's title, headings
and first ``LEAD_CHARS`` characters in its own row, with a GIN index, so a word found in hundreds of
thousands of documents is matched, filtered and ranked there without reading a single whole text; the
texts' own vectors are searched (through their GIN index) only when the summaries give fewer than
``CANDIDATES`` entries, and those entries rank after the others. Another backend (Solr, OpenSearch)
for archives past one database server implements :class:`Backend`'s methods.
"""

# The SQL below is written from constants only (table, configuration and column names); every value,
# the query first, is a parameter.
# ruff: noqa: S608, S610, S611

from __future__ import annotations

import html
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from storage.models_search import SearchAnchor, SearchEntry, SearchText

CANDIDATES = 500  # matching entries read per search by their text
LINKED_CANDIDATES = 250  # and by the anchor text of the links to them
LEAD_CHARS = 300  # characters of a text's start in its entries' summary (PostgreSQL)
ANCHOR_RANK = 0.1  # what words in the links to a page add to its rank
ANCHORS_SHOWN = 3
MAX_QUERY = 500  # characters of a query
MAX_TERMS = 32
CONFIGS = {"fr": "archive_fr", "en": "archive_en"}
DEFAULT_CONFIG = "archive_simple"
HEADLINE_CHARS = 30_000  # snippets are cut from the start of a text
ENTRY_COLUMNS = (  # what a search entry is written from (storage.services.fulltext)
    ("urlkey", "text"),
    ("url", "text"),
    ("domain", "text"),
    ("digest", "text"),
    ("harvest_definition_id", "integer"),
    ("year", "smallint"),
    ("mime", "text"),
    ("language", "text"),
    ("captures", "integer"),
    ("first_capture", "timestamptz"),
    ("last_capture", "timestamptz"),
)
MARK_START, MARK_END = "\x02", "\x03"  # removed from every extracted text (storage.textextract)
_TERM = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORDY = re.compile(r"\w")
_FTS_NAME = "storage_searchtext_fts"


class QueryError(ValueError):
    """A query that asks for nothing (no word to find) or too much."""


@dataclass(frozen=True)
class ParsedQuery:
    """A search: ``clauses`` must all match, each one of its alternatives (a word or a phrase, as a
    tuple of words); ``excluded`` must not."""

    clauses: tuple[tuple[tuple[str, ...], ...], ...]
    excluded: tuple[tuple[str, ...], ...] = ()

    def websearch(self) -> str:
        """The query in ``websearch_to_tsquery``'s syntax."""
        parts = [" or ".join(_websearch_term(term) for term in clause) for clause in self.clauses]
        parts += ["-" + _websearch_term(term) for term in self.excluded]
        return " ".join(parts)

    def fts5(self) -> str:
        """The query in FTS5's syntax (every word a quoted string: nothing in it is an operator)."""
        positive = " AND ".join(
            "(" + " OR ".join(_fts5_term(term) for term in clause) + ")" for clause in self.clauses
        )
        if not self.excluded:
            return positive
        return f"({positive}) NOT (" + " OR ".join(_fts5_term(term) for term in self.excluded) + ")"

    def words(self) -> list[str]:
        return [word for clause in self.clauses for term in clause for word in term]


def _websearch_term(term: tuple[str, ...]) -> str:
    return '"' + " ".join(term) + '"' if len(term) > 1 else term[0]


def _fts5_term(term: tuple[str, ...]) -> str:
    return '"' + " ".join(word.replace('"', "") for word in term) + '"'


def parse_query(text: str) -> ParsedQuery:
    """Read a query typed by someone; raises :class:`QueryError` when it asks for nothing."""
    text = (text or "").strip()
    if len(text) > MAX_QUERY:
        raise QueryError(_("A query has at most %(count)d characters.") % {"count": MAX_QUERY})
    clauses: list[list[tuple[str, ...]]] = []
    excluded: list[tuple[str, ...]] = []
    join_next = False
    for match in _TERM.finditer(text.replace(MARK_START, " ").replace(MARK_END, " ")):
        negated, phrase, word = match.group(1), match.group(2), match.group(3)
        if word is not None and word.lower() == "or":
            join_next = bool(clauses)
            continue
        if word is not None and word.startswith("-") and len(word) > 1:
            negated, word = "-", word[1:]
        words = tuple(
            part for part in (phrase if phrase is not None else word).split() if _WORDY.search(part)
        )
        words = tuple(part.replace('"', "") for part in words)
        if not words:
            continue
        if negated:
            excluded.append(words)
        elif join_next:
            clauses[-1].append(words)
        else:
            clauses.append([words])
        join_next = False
    if not clauses:
        raise QueryError(_("Type at least one word to find."))
    if sum(len(clause) for clause in clauses) + len(excluded) > MAX_TERMS:
        raise QueryError(_("A query has at most %(count)d words or phrases.") % {"count": MAX_TERMS})
    return ParsedQuery(tuple(tuple(clause) for clause in clauses), tuple(excluded))


def config_of(language: str) -> str:
    """The text search configuration (PostgreSQL) of a language."""
    return CONFIGS.get(language, DEFAULT_CONFIG)


def marked_html(snippet: str) -> SafeString:
    """A snippet with its matched words marked: the crawled text escaped, the marks as ``<mark>``."""
    out = []
    for index, part in enumerate(re.split(f"[{MARK_START}{MARK_END}]", snippet)):
        escaped = html.escape(part)
        out.append(f"<mark>{escaped}</mark>" if index % 2 and part else escaped)
    return mark_safe("".join(out))  # noqa: S308 (every part above is escaped)


def plain(snippet: str) -> str:
    return snippet.replace(MARK_START, "").replace(MARK_END, "")


# Backends -------------------------------------------------------------------------------------------


class Backend:
    """Where texts are stored and how they are matched."""

    def store(self, texts: list[SearchText]) -> int:
        """Add texts not yet indexed (by digest; a digest already there is left as it is)."""
        raise NotImplementedError

    def store_anchors(self, rows: list[tuple[str, str, str]]) -> int:
        """Add link anchors, (target SURT key, anchor text, source digest) each, those already there left."""
        anchors = [
            SearchAnchor(target_urlkey=key, text=text, source_digest=digest) for key, text, digest in rows
        ]
        SearchAnchor.objects.bulk_create(anchors, ignore_conflicts=True, batch_size=500)
        return len(rows)

    def matching(self, entries: QuerySet, query: ParsedQuery, language: str = "") -> QuerySet:
        """``entries`` narrowed to those whose text matches, annotated with ``rank`` (higher: better)."""
        raise NotImplementedError

    def first_matches(
        self, entries: QuerySet, query: ParsedQuery, language: str, fields: tuple[str, ...], limit: int
    ) -> list[tuple]:
        """At most ``limit`` of the matching ``entries``, the best first found: (id, *fields, rank)."""
        return list(self.matching(entries, query, language).values_list("id", *fields, "rank")[:limit])

    def add_entries(self, rows: list[tuple]) -> int:
        """Add search entries (tuples of ENTRY_COLUMNS' values), each with its summary where the backend
        keeps them."""
        names = [name for name, _type in ENTRY_COLUMNS]
        entries = [SearchEntry(**dict(zip(names, row, strict=True))) for row in rows]
        SearchEntry.objects.bulk_create(entries, batch_size=500)
        return len(entries)

    def headlines(self, digests: list[str], query: ParsedQuery) -> dict[str, str]:
        """Digest → a snippet of its text around the matched words, marked with MARK_START/END."""
        raise NotImplementedError

    def anchored(self, anchors: QuerySet, query: ParsedQuery) -> QuerySet:
        """``anchors`` (link anchors) narrowed to those whose text matches (accents folded, no stemming)."""
        raise NotImplementedError


def config_sql(prefix: str = "") -> str:
    """The text search configuration of a text's language (``prefix``: the table's alias and a dot)."""
    cases = " ".join(f"WHEN '{language}' THEN '{name}'" for language, name in CONFIGS.items())
    return f"(CASE {prefix}language {cases} ELSE '{DEFAULT_CONFIG}' END)::regconfig"


def vector_sql(prefix: str = "", lead: int | None = None) -> str:
    """The vector of a text (PostgreSQL), from its columns (``prefix``: the table's alias and a dot):
    title weighted A, headings B, its language's configuration; ``lead``: the body's first characters
    only."""
    config = config_sql(prefix)
    body = f"left({prefix}body, {int(lead)})" if lead is not None else f"{prefix}body"
    return (
        f"setweight(to_tsvector({config}, {prefix}title), 'A')"
        f" || setweight(to_tsvector({config}, {prefix}headings), 'B') || to_tsvector({config}, {body})"
    )


def summary_sql(prefix: str = "") -> str:
    """The summary vector of an entry, from its text's columns (``prefix``: the text's alias)."""
    return vector_sql(prefix, LEAD_CHARS)


def vectors_sql(prefix: str = "") -> str:
    """A LATERAL subquery giving a text's ``vector`` and ``summary`` (what :func:`vector_sql` and
    :func:`summary_sql` give) with its title and headings parsed once; ``OFFSET 0`` keeps the
    planner from copying each expression into every place that reads it."""
    return (
        f"LATERAL (SELECT head || to_tsvector(config, {prefix}body) AS vector,"
        f" head || to_tsvector(config, left({prefix}body, {int(LEAD_CHARS)})) AS summary"
        f" FROM (SELECT config, setweight(to_tsvector(config, {prefix}title), 'A')"
        f" || setweight(to_tsvector(config, {prefix}headings), 'B') AS head"
        f" FROM (SELECT {config_sql(prefix)} AS config OFFSET 0) AS text_config OFFSET 0) AS text_head)"
        " AS vectors"
    )


TEXT_COLUMNS = (
    ("digest", "text"),
    ("mime", "text"),
    ("language", "text"),
    ("title", "text"),
    ("headings", "text"),
    ("body", "text"),
    ("truncated", "boolean"),
    ("error", "text"),
    ("extracted_at", "timestamptz"),
)
ANCHOR_COLUMNS = (("target_urlkey", "text"), ("text", "text"), ("source_digest", "text"))


def _staged(cursor, name: str, columns: tuple[tuple[str, str], ...], rows: list[tuple]) -> None:
    """``rows`` into the temporary table ``name`` of this connection, by COPY (sent as they are: no
    quoting); the caller reads them in the same transaction and empties the table."""
    definition = ", ".join(f"{column} {kind}" for column, kind in columns)
    cursor.execute(f"CREATE TEMPORARY TABLE IF NOT EXISTS {name} ({definition}) ON COMMIT DELETE ROWS")
    names = ", ".join(column for column, _kind in columns)
    with cursor.cursor.copy(f"COPY {name} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


class PostgresBackend(Backend):
    def store(self, texts):
        if not texts:
            return 0
        columns = ", ".join(name for name, _type in TEXT_COLUMNS)
        read = ", ".join(f"text.{name}" for name, _type in TEXT_COLUMNS)
        # The batch is sent by COPY, then each vector is computed from its row in its language's
        # configuration, and the summary with it (the text's entries copy it).
        statement = (
            f"INSERT INTO storage_searchtext ({columns}, vector, summary)"
            f" SELECT {read}, CASE WHEN text.error = '' THEN vectors.vector END,"
            " CASE WHEN text.error = '' THEN vectors.summary END"
            f" FROM search_text_staging AS text, {vectors_sql('text.')}"
            " ON CONFLICT (digest) DO NOTHING"
        )
        rows = [
            tuple(getattr(text, name) for name, _type in TEXT_COLUMNS)
            for text in sorted(texts, key=lambda text: text.digest)
        ]
        with transaction.atomic(), connection.cursor() as cursor:
            _staged(cursor, "search_text_staging", TEXT_COLUMNS, rows)
            cursor.execute(statement)
            cursor.execute("DELETE FROM search_text_staging")
        return len(rows)

    def store_anchors(self, rows):
        if not rows:
            return 0
        with transaction.atomic(), connection.cursor() as cursor:
            _staged(cursor, "search_anchor_staging", ANCHOR_COLUMNS, rows)
            cursor.execute(
                "INSERT INTO storage_searchanchor (target_urlkey, text, source_digest)"
                " SELECT * FROM search_anchor_staging ORDER BY 1, 2, 3"
                " ON CONFLICT (target_urlkey, text, source_digest) DO NOTHING"
            )
            cursor.execute("DELETE FROM search_anchor_staging")
        return len(rows)

    def add_entries(self, rows):
        if not rows:
            return 0
        columns = ", ".join(name for name, _type in ENTRY_COLUMNS)
        read = ", ".join(f"entry.{name}" for name, _type in ENTRY_COLUMNS)
        with transaction.atomic(), connection.cursor() as cursor:
            _staged(cursor, "search_entry_staging", ENTRY_COLUMNS, rows)
            # Each entry with its summary, copied from its text (computed for a text stored without).
            cursor.execute(
                f"INSERT INTO storage_searchentry ({columns}, summary)"
                f" SELECT {read}, coalesce(text.summary, {summary_sql('text.')})"
                " FROM search_entry_staging AS entry"
                " LEFT JOIN storage_searchtext AS text ON text.digest = entry.digest"
            )
            cursor.execute("DELETE FROM search_entry_staging")
        return len(rows)

    def _tsquery(self, language: str) -> tuple[str, int]:
        configs = [config_of(language)] if language else [*CONFIGS.values(), DEFAULT_CONFIG]
        return "(" + " || ".join(f"websearch_to_tsquery('{name}', %s)" for name in configs) + ")", len(
            configs
        )

    def matching(self, entries, query, language=""):
        tsquery, count = self._tsquery(language)
        text = query.websearch()
        return entries.extra(
            select={"rank": f"ts_rank(storage_searchtext.vector, {tsquery}, 1)"},
            select_params=[text] * count,
            tables=["storage_searchtext"],
            where=[
                "storage_searchtext.digest = storage_searchentry.digest",
                f"storage_searchtext.vector @@ {tsquery}",
            ],
            params=[text] * count,
        )

    def first_matches(self, entries, query, language, fields, limit):
        tsquery, count = self._tsquery(language)
        text = query.websearch()
        summary = "storage_searchentry.summary"
        # The summaries first: in the entries' own rows, found, filtered and ranked there. A summary
        # holds part of the text, so a query that excludes words is also checked against the whole text.
        first = entries.extra(
            select={"rank": f"ts_rank({summary}, {tsquery}, 1) + 1"},
            select_params=[text] * count,
            where=[f"{summary} @@ {tsquery}"],
            params=[text] * count,
        )
        if query.excluded:
            first = first.extra(
                tables=["storage_searchtext"],
                where=[
                    "storage_searchtext.digest = storage_searchentry.digest",
                    f"storage_searchtext.vector @@ {tsquery}",
                ],
                params=[text] * count,
            )
        rest = self.matching(entries, query, language).extra(
            where=[f"NOT coalesce({summary} @@ {tsquery}, false)"], params=[text] * count
        )
        # A summary is in its row: the planner scans the entries until enough match for a common word
        # (its statistics say how common), and uses the GIN index for the others.
        rows = list(first.values_list("id", *fields, "rank")[:limit])
        if len(rows) == limit:
            return rows
        # The planner cannot know that matching a text's vector means reading it from TOAST: left to
        # itself, it scans the texts, or hashes every text holding a word to join a filter's entries.
        # Through indexes and nested loops only, the texts read are those of the entries it needs (by
        # the GIN index for a rare word, by digest from a filter's entries).
        settings = ("enable_seqscan", "enable_hashjoin", "enable_mergejoin")
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT " + ", ".join(f"current_setting('{name}')" for name in settings))
            previous = cursor.fetchone()
            cursor.execute("SELECT " + ", ".join(f"set_config('{name}', 'off', true)" for name in settings))
            try:
                rows += rest.values_list("id", *fields, "rank")[: limit - len(rows)]
            finally:
                cursor.execute(
                    "SELECT " + ", ".join(f"set_config('{name}', %s, true)" for name in settings), previous
                )
        return rows

    def anchored(self, anchors, query):
        matching = (
            "SELECT id FROM storage_searchanchor WHERE vector @@ websearch_to_tsquery('archive_simple', %s)"
        )
        return anchors.filter(id__in=RawSQL(matching, [query.websearch()]))

    def headlines(self, digests, query):
        if not digests:
            return {}
        config = config_sql()
        options = f"StartSel={MARK_START}, StopSel={MARK_END}, MaxFragments=2, MaxWords=25, MinWords=10"
        statement = (
            f"SELECT digest, ts_headline({config}, left(body, {HEADLINE_CHARS}), "
            f"websearch_to_tsquery({config}, %s), %s) FROM storage_searchtext WHERE digest = ANY(%s)"
        )
        with connection.cursor() as cursor:
            cursor.execute(statement, [query.websearch(), options, list(digests)])
            return dict(cursor.fetchall())


class SqliteBackend(Backend):
    def store(self, texts):
        # The FTS5 table follows by a trigger (storage/migrations/0009_fulltext_index.py).
        return len(SearchText.objects.bulk_create(texts, ignore_conflicts=True))

    def matching(self, entries, query, language=""):
        return entries.extra(
            select={"rank": f"-bm25({_FTS_NAME}, 0.0, 10.0, 5.0, 1.0)"},
            tables=[_FTS_NAME],
            where=[f"{_FTS_NAME}.digest = storage_searchentry.digest", f"{_FTS_NAME} MATCH %s"],
            params=[query.fts5()],
        )

    def first_matches(self, entries, query, language, fields, limit):
        # FTS5 ranks every match anyway (the embedded default holds a small archive): the best first.
        ranked = self.matching(entries, query, language).extra(order_by=["-rank", "id"])
        return list(ranked.values_list("id", *fields, "rank")[:limit])

    def anchored(self, anchors, query):
        matching = "SELECT rowid FROM storage_searchanchor_fts WHERE storage_searchanchor_fts MATCH %s"
        return anchors.filter(id__in=RawSQL(matching, [query.fts5()]))

    def headlines(self, digests, query):
        if not digests:
            return {}
        marks = f"char({ord(MARK_START)}), char({ord(MARK_END)})"
        holders = ", ".join(["%s"] * len(digests))
        statement = (
            f"SELECT digest, snippet({_FTS_NAME}, 3, {marks}, '…', 40) FROM {_FTS_NAME} "
            f"WHERE {_FTS_NAME} MATCH %s AND digest IN ({holders})"
        )
        with connection.cursor() as cursor:
            cursor.execute(statement, [query.fts5(), *digests])
            return dict(cursor.fetchall())


def backend() -> Backend:
    return PostgresBackend() if connection.vendor == "postgresql" else SqliteBackend()


# Searching ------------------------------------------------------------------------------------------


@dataclass
class Candidate:
    """One matching entry as read from the index."""

    urlkey: str
    url: str
    domain: str
    digest: str
    definition: int
    year: int
    mime: str
    language: str
    captures: int
    last_capture: datetime
    rank: float
    anchored: bool = False  # found by the anchor text of links to it


@dataclass
class Hit:
    """One URL that matches: its best entry, and how many of its matching captures the reader may see."""

    urlkey: str
    url: str
    domain: str
    digest: str
    mime: str
    language: str
    rank: float
    last_capture: datetime
    captures: int
    definitions: set[int] = field(default_factory=set)
    years: set[int] = field(default_factory=set)
    title: str = ""
    snippet: str = ""  # marked with MARK_START/END
    collections: list[str] = field(default_factory=list)
    capture_count: int = 0  # the URL's captures the reader may see
    capture: object = None  # the capture a hit opens (storage.models.Capture)
    replay: str = ""
    anchored: bool = False
    anchors: list[str] = field(default_factory=list)  # matching anchor texts of links to it

    @property
    def snippet_html(self) -> SafeString:
        return marked_html(self.snippet)

    @property
    def snippet_text(self) -> str:
        return plain(self.snippet)


SORTS = ("relevance", "newest", "oldest")


CANDIDATE_FIELDS = (
    "urlkey",
    "url",
    "domain",
    "digest",
    "harvest_definition_id",
    "year",
    "mime",
    "language",
    "captures",
    "last_capture",
)


def candidates(
    entries: QuerySet, query: ParsedQuery, language: str = "", anchors: QuerySet | None = None
) -> tuple[list[Candidate], bool]:
    """The matching entries (at most CANDIDATES by their text, LINKED_CANDIDATES by the anchor text of the
    links to them, among ``anchors``) and whether there were more."""
    engine = backend()
    rows = engine.first_matches(entries, query, language, CANDIDATE_FIELDS, CANDIDATES + 1)
    capped = len(rows) > CANDIDATES
    found = {row[0]: Candidate(*row[1:]) for row in rows[:CANDIDATES]}
    if anchors is not None:
        targets = engine.anchored(anchors, query).values("target_urlkey")[:LINKED_CANDIDATES]
        linked = list(
            entries.filter(urlkey__in=targets).values_list("id", *CANDIDATE_FIELDS)[: LINKED_CANDIDATES + 1]
        )
        capped = capped or len(linked) > LINKED_CANDIDATES
        for row in linked[:LINKED_CANDIDATES]:
            candidate = found.get(row[0])
            if candidate is None:
                candidate = found[row[0]] = Candidate(*row[1:], rank=0.0)
            candidate.rank += ANCHOR_RANK
            candidate.anchored = True
    return list(found.values()), capped


def anchor_texts(hits: list[Hit], query: ParsedQuery, anchors: QuerySet) -> None:
    """Give the hits found by the links to them the matching anchor texts (a few each)."""
    keys = [hit.urlkey for hit in hits if hit.anchored]
    if not keys:
        return
    rows = (
        backend().anchored(anchors.filter(target_urlkey__in=keys), query).values_list("target_urlkey", "text")
    )
    by_key: dict[str, list[str]] = defaultdict(list)
    for key, text in rows.order_by("target_urlkey", "text")[: len(keys) * 50]:
        if text not in by_key[key] and len(by_key[key]) < ANCHORS_SHOWN:
            by_key[key].append(text)
    for hit in hits:
        hit.anchors = by_key.get(hit.urlkey, [])


def group(found: list[Candidate]) -> list[Hit]:
    """One hit per URL: its best-ranked entry, its latest capture, its captures counted."""
    hits: dict[str, Hit] = {}
    for entry in found:
        hit = hits.get(entry.urlkey)
        if hit is None:
            hit = hits[entry.urlkey] = Hit(
                urlkey=entry.urlkey,
                url=entry.url,
                domain=entry.domain,
                digest=entry.digest,
                mime=entry.mime,
                language=entry.language,
                rank=entry.rank,
                last_capture=entry.last_capture,
                captures=0,
            )
        elif (entry.rank, entry.last_capture) > (hit.rank, hit.last_capture):
            hit.digest, hit.rank, hit.mime, hit.language = (
                entry.digest,
                entry.rank,
                entry.mime,
                entry.language,
            )
        hit.anchored = hit.anchored or entry.anchored
        hit.last_capture = max(hit.last_capture, entry.last_capture)
        hit.captures += entry.captures
        hit.definitions.add(entry.definition)
        hit.years.add(entry.year)
    return list(hits.values())


def ordered(hits: list[Hit], sort: str) -> list[Hit]:
    if sort == "newest":
        return sorted(hits, key=lambda hit: (hit.last_capture, hit.rank, hit.urlkey), reverse=True)
    if sort == "oldest":
        return sorted(hits, key=lambda hit: (hit.last_capture, -hit.rank, hit.urlkey))
    return sorted(hits, key=lambda hit: (-hit.rank, -hit.last_capture.timestamp(), hit.urlkey))


def facet_counts(hits: list[Hit]) -> dict[str, Counter]:
    """Hits (URLs) by domain, year, MIME type, language and harvest definition."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for hit in hits:
        counts["domain"][hit.domain] += 1
        counts["mime"][hit.mime] += 1
        counts["language"][hit.language] += 1
        for year in hit.years:
            counts["year"][year] += 1
        for definition in hit.definitions:
            counts["definition"][definition] += 1
    return counts


def add_snippets(hits: list[Hit], query: ParsedQuery) -> None:
    """Give the hits (of one page) their titles and snippets."""
    digests = [hit.digest for hit in hits]
    snippets = backend().headlines(digests, query)
    titles = dict(SearchText.objects.filter(digest__in=digests).values_list("digest", "title"))
    for hit in hits:
        hit.title = titles.get(hit.digest, "")
        hit.snippet = snippets.get(hit.digest) or ""
