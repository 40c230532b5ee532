"""Benchmark: the full-text index on PostgreSQL: indexing against extraction alone, queries with
1,000,000 documents, and the index's size against the WARC files'.

    .venv/bin/python benchmarks/fulltext.py [--only indexing,queries] [--pages N] [--workers N]
        [--repeat N] [--documents N] [--connections N] [--runs N] [--data DIR] [--database-url URL]
        [--explain] [--smoke]

The texts are generated, French (60 %), English (35 %) and Spanish (5 %): each language's function
words, a few hundred real content words with their inflected forms, accented, and 200,000 made-up
words, drawn with a Zipf law (exponent 1.1), so that some words are in a quarter of the documents
and others in a handful; collocations ("conseil municipal") make phrases that match fewer
documents than their words. Language detection, stemming and accent folding all have work to do.
Each page links to 4 pages of its site's menu and to 5 others ("read also"), with anchor texts.

1. **indexing** (``--pages`` HTML pages of those texts, default 20,000, in gzip WARC files written
   with warcio, built once and kept under ``--data``, default ``var/bench/fulltext``): in turns,
   ``--repeat`` times (the best kept), ``manage.py index_warcs FILES --workers N`` (the capture
   index and the full-text index, into PostgreSQL, the tables emptied before each run) against
   *extraction alone*: ``storage.textextract.file_documents`` over the same files in N processes
   (the same parallelism, ``--workers``, default one a CPU), and in one process. Documents/s, MB/s
   of WARC, and the ratio (goal: index_warcs within 1.5x of extraction alone).
2. **queries** (``--documents`` texts, default 1,000,000, loaded directly: COPY into a staging
   table, then ``INSERT … SELECT`` into ``storage_searchtext`` computing the vector as
   ``storage.search.PostgresBackend.store`` does, on ``--connections`` connections while the next
   texts are generated; the search entries, one capture each and the link anchors by COPY; the
   indexes built after the load, then VACUUM ANALYZE): a common word, a rare word, a phrase,
   and the common word filtered by domain and by year, each through
   ``storage.selectors_search.archive_search`` (what /api/search/ calls) as staff and as a reader
   (readers may read the captures of two of the four harvest definitions), ``--runs`` times each
   after a warm-up: p50 and p95 (goal: p95 < 200 ms), the time in SQL, and EXPLAIN ANALYZE of the
   slowest statement of each query that misses the goal (of every query with ``--explain``).
3. **size**: the full-text tables (every partition, TOAST and index; the entries, the anchors)
   against the bytes of the WARC files of part 1, and per million documents from part 2.

The database (``bench_fulltext`` on 127.0.0.1:5432 by default) is created by the script, refused if
it exists, migrated and dropped at the end, also on an error or Ctrl-C. It prints the results as
Markdown; numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import functools
import io
import itertools
import json
import math
import os
import platform
import queue
import random
import signal
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATA = ROOT / "var" / "bench" / "fulltext"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_fulltext"
MANIFEST = "manifest.json"
GOAL_EXTRACTION = 1.5  # index_warcs within 1.5x of the time of extraction alone
GOAL_P95_MS = 200.0
SEED = 20240124
GENERATOR = 2  # the version of the generated texts: a WARC set built by another is built again
PARTS = ("indexing", "queries")
SMOKE = {"pages": 300, "documents": 3000, "runs": 3, "repeat": 1, "file_mb": 1}

# The texts -----------------------------------------------------------------------------------------

LANGUAGE_SHARES = (("fr", 0.60), ("en", 0.35), ("es", 0.05))
# Most frequent first: function words, then content words (the Zipf law ranks them in this order),
# then the made-up words.
FUNCTION_WORDS = {
    "fr": "de la le et les des en un une du à est que pour dans qui au par sur il ne plus pas avec se ce a"
    " sont ou elle son sa aux ses nous on mais comme leur cette ces tout aussi être fait bien même entre"
    " deux après sans ont très peut où lors dont avait",
    "en": "the of and to a in is that for it as was with be by on not he this are or his from at which but"
    " have an they you were her she there their one all we can has more will been would its who also"
    " after two first",
    "es": "de la que el en y a los se del las un por con no una su para es al lo como más pero sus le ya o"
    " este sí porque esta entre cuando muy sin sobre también me hasta hay donde",
}
CONTENT_WORDS = {
    "fr": "archives ville année France projet travail histoire pays monde temps jour public mairie conseil"
    " municipal président gouvernement école collège lycée université étudiant étudiants enfant enfants"
    " famille société économie entreprise entreprises emploi santé hôpital médecin culture musée théâtre"
    " bibliothèque patrimoine culturel culturelle culturels festival musique concert exposition artiste"
    " artistes région département commune village quartier rue place église château forêt rivière"
    " montagne mer plage été hiver printemps automne siècle événement événements développement numérique"
    " internet site sites page pages document documents archive archivé archivage données recherche"
    " recherches chercheur science sciences sport football rugby équipe match saison championnat joueur"
    " joueurs victoire défaite club association associations bénévole bénévoles politique élection"
    " élections candidat candidats vote maire député sénateur ministre ministère loi lois réforme budget"
    " impôt impôts transport train gare route voiture vélo bus métro aéroport énergie électricité climat"
    " environnement agriculture agriculteur ferme vigne vin information informations journal presse"
    " article articles actualité actualités photo photos vidéo vidéos histoires mémoire souvenir nouveau"
    " nouvelle nouveaux nouvelles grand grande grands grandes petit petite premier première dernier"
    " dernière général générale national nationale local locale européen européenne français française"
    " important importante possible difficile ouvert ouverte fermé fermée faire dire voir prendre venir"
    " pouvoir vouloir savoir devoir trouver donner parler aimer passer mettre rester penser porter"
    " organisé organisée présenté présentée accueilli accueillie publié publiée annoncé annoncée décidé"
    " lancé créé créée",
    "en": "archives city year project work history country world time day public council municipal"
    " president government school college university student students child children family society"
    " economy company companies business job health hospital doctor culture museum theatre library"
    " heritage cultural festival music concert exhibition artist artists region county town village street"
    " church castle forest river mountain sea beach summer winter spring autumn century event events"
    " development digital internet website websites page pages document documents archive archived"
    " archiving data research researcher science sciences sport football rugby team match season"
    " championship player players victory defeat club association volunteer volunteers politics election"
    " elections candidate candidates vote mayor member minister ministry law laws reform budget tax taxes"
    " transport train station road car bike bus subway airport energy electricity climate environment"
    " agriculture farmer farm vineyard wine information news newspaper press article articles photo"
    " photos video videos story stories memory new large great small little last general national local"
    " european british important possible difficult open opened closed make say see take come want know"
    " find give talk love pass put stay think carry organised organized presented welcomed published"
    " announced decided launched created building buildings people",
    "es": "archivos ciudad año proyecto trabajo historia país mundo tiempo día público ayuntamiento"
    " consejo municipal presidente gobierno escuela universidad estudiante niño niños familia sociedad"
    " economía empresa salud hospital cultura museo teatro biblioteca patrimonio cultural festival música"
    " exposición región pueblo barrio calle iglesia castillo río montaña mar playa verano invierno siglo"
    " desarrollo digital internet página documento datos investigación deporte fútbol equipo temporada"
    " jugador política elección candidato alcalde ministro ley reforma transporte tren coche energía"
    " clima información noticias periódico artículo foto vídeo nuevo nueva grande pequeño primero último"
    " nacional local europeo español importante posible",
}
SYLLABLES = {
    "fr": "ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo ga ge gi go la le li lo lu ma me mi mo"
    " mu na ne ni no pa pe pi po pu ra re ri ro ru sa se si so ta te ti to va ve vi vo tra pla cha che chan"
    " pon mon ron ver lin tri cla gre",
    "en": "ba be bi bo ca co cu da de di do fa fe fi fo ga go ha he hi ho ja ka la le li lo ma me mi mo na"
    " ne ni no pa pe pi po ra re ri ro sa se si so ta te ti to wa we wi wo bra cla dro fla gro pla pro sta"
    " stro tre",
    "es": "ba be bi bo ca co cu da de di do fa fe fi fo ga go la le li lo ma me mi mo na ne ni no pa pe pi"
    " po ra re ri ro sa se si so ta te ti to va ve vi vo tra pla bra",
}
ENDINGS = {
    "fr": "tion ment ique eur aire ité é ée er ier ois ette age ance ence ant eux oire",
    "en": "ing ness tion ly ed er ship ful ity ment ous ive able ism ist al y on",
    "es": "ción mente ico dad ero era ado ada ar ir oso osa ista aje",
}
# Phrases written as one: each sentence has COLLOCATION_RATE chances of holding one (the first of a
# list most often).
COLLOCATIONS = {
    "fr": (
        "patrimoine culturel",
        "site internet",
        "premier ministre",
        "conseil municipal",
        "mise en ligne",
        "chemin de fer",
        "office de tourisme",
        "changement climatique",
        "élection présidentielle",
        "fin de semaine",
    ),
    "en": (
        "city council",
        "prime minister",
        "climate change",
        "web archive",
        "public library",
        "local history",
        "general election",
        "high school",
        "railway station",
        "world war",
    ),
    "es": ("consejo municipal", "patrimonio cultural", "cambio climático"),
}
COLLOCATION_RATE = 0.03
ZIPF_EXPONENT = 1.1
ZIPF_SHIFT = 2.7
TAIL_WORDS = 200_000  # made-up words per language
BODY_WORDS = (5.75, 0.5)  # the log-normal law of a text's length in words: median 314
RARE_SHARE = 1e-4  # the expected share of its language's documents a rare word is in
COMMON_WORD, PHRASE = "archives", "conseil municipal"
# The common word's forms, at ranks where each is in about 20 %, 12 %, 7 % and 4 % of the texts: the
# query (stemmed) matches about a third of them.
PLACED = {
    "archives": 150,
    "archive": 260,
    "archivé": 420,
    "archived": 420,
    "archivage": 700,
    "archiving": 700,
}
RARE_WORDS = {"fr": "palimpseste", "en": "palimpsest"}  # placed in the tail at RARE_SHARE
SECTIONS = ("actualites", "culture", "sport", "politique", "economie", "agenda", "dossiers", "archives")
TLDS = ("fr", "fr", "fr", "fr", "com", "org", "net", "eu", "be", "info")
FIRST_YEAR, LAST_YEAR = 2015, 2025
NAVIGATION_PATHS = ("/", "/actualites/", "/agenda/", "/contact/")  # every page's menu
NAVIGATION = {
    "fr": ("Accueil", "Actualités", "Agenda", "Contact"),
    "en": ("Home", "News", "Events", "Contact"),
    "es": ("Inicio", "Noticias", "Agenda", "Contacto"),
}
RELATED_LINKS = 5  # "read also" links of a page to other pages of its site, their anchor texts 2 to 5 words


def _words(text: str) -> list[str]:
    return text.split()


@dataclass
class Vocabulary:
    """One language's words, most frequent first, with the Zipf law's cumulative weights."""

    language: str
    words: object  # numpy array of str objects
    cumulative: object  # numpy array of float
    collocations: tuple[str, ...]
    collocation_weights: list[float]
    rare_rank: int | None = None


@functools.cache
def vocabulary(language: str, seed: int):
    """The words of a language: real ones first, then made-up ones, the rare word in the tail."""
    import numpy as np

    rng = np.random.default_rng(seed)
    real = list(dict.fromkeys(_words(FUNCTION_WORDS[language]) + _words(CONTENT_WORDS[language])))
    syllables, endings = _words(SYLLABLES[language]), _words(ENDINGS[language])
    taken = set(real) | set(RARE_WORDS.values())
    tail: list[str] = []
    while len(tail) < TAIL_WORDS:
        count = (TAIL_WORDS - len(tail)) * 2
        lengths = rng.integers(1, 4, count)
        parts = rng.integers(0, len(syllables), (count, 3))
        ends = rng.integers(0, len(endings), count)
        for length, row, end in zip(lengths.tolist(), parts.tolist(), ends.tolist(), strict=True):
            word = "".join(syllables[index] for index in row[:length]) + endings[end]
            if word not in taken:
                taken.add(word)
                tail.append(word)
                if len(tail) == TAIL_WORDS:
                    break
    words = real + tail
    for word, rank in sorted(PLACED.items(), key=lambda item: item[1]):
        if word in real:
            words.remove(word)
            words.insert(rank, word)
    weights = (np.arange(len(words), dtype=np.float64) + ZIPF_SHIFT) ** -ZIPF_EXPONENT
    rare_rank = None
    if language in RARE_WORDS:
        # The rank where a word is in RARE_SHARE of the documents: p * (words in a text) = share.
        mean_words = math.exp(BODY_WORDS[0] + BODY_WORDS[1] ** 2 / 2)
        target = RARE_SHARE / mean_words * weights.sum()
        rare_rank = min(len(words) - 1, int(target ** (-1 / ZIPF_EXPONENT) - ZIPF_SHIFT))
        words[rare_rank] = RARE_WORDS[language]
    collocations = COLLOCATIONS[language]
    return Vocabulary(
        language,
        np.array(words, dtype=object),
        np.cumsum(weights),
        collocations,
        list(itertools.accumulate(1 / (rank + 1) for rank in range(len(collocations)))),
        rare_rank,
    )


@dataclass(slots=True)
class Text:
    """A generated document: its language, title, headings (h2), paragraphs, and the anchor texts of
    its links to other pages of its site ("read also")."""

    language: str
    title: str
    headings: list[str]
    paragraphs: list[str]
    related: list[str]

    def heading_text(self) -> str:
        """What the extractor keeps as headings: h1 (the title here) and the h2s."""
        return "\n".join([self.title, *self.headings])

    def body(self) -> str:
        """The visible text as the extractor gives it: the menu, the h1, each h2 before its paragraphs,
        the links to other pages."""
        lines = [" ".join(NAVIGATION[self.language]), self.title]
        per_heading = max(1, len(self.paragraphs) // (len(self.headings) + 1))
        for index, paragraph in enumerate(self.paragraphs):
            if index and index % per_heading == 0 and index // per_heading <= len(self.headings):
                lines.append(self.headings[index // per_heading - 1])
            lines.append(paragraph)
        return "\n".join([*lines, *self.related])

    def anchors(self, home: str, links: list[str]) -> list[tuple[str, str]]:
        """(target, anchor text) of the page's links: the menu's (``home`` + each path: its site's root
        as a URL or a SURT key), then the "read also" links to ``links``."""
        menu = [
            (home + path, text)
            for path, text in zip(NAVIGATION_PATHS, NAVIGATION[self.language], strict=True)
        ]
        return menu + list(zip(links, self.related, strict=True))

    def html(self, lang: str, links: list[str]) -> str:
        """The page, its "read also" links to the URLs ``links``."""
        per_heading = max(1, len(self.paragraphs) // (len(self.headings) + 1))
        parts = []
        for index, paragraph in enumerate(self.paragraphs):
            if index and index % per_heading == 0 and index // per_heading <= len(self.headings):
                parts.append(f"<h2>{self.headings[index // per_heading - 1]}</h2>")
            parts.append(f"<p>{paragraph}</p>")
        attribute = f' lang="{lang}"' if lang else ""
        menu = " ".join(
            f'<a href="{path}">{text}</a>'
            for path, text in zip(NAVIGATION_PATHS, NAVIGATION[self.language], strict=True)
        )
        related = "".join(
            f'<li><a href="{url}">{text}</a></li>' for url, text in zip(links, self.related, strict=True)
        )
        return (
            f'<!doctype html>\n<html{attribute}><head><meta charset="utf-8"><title>{self.title}</title>'
            '<link rel="stylesheet" href="/static/site.css"></head>\n'
            f"<body><header><nav>{menu}</nav></header>\n<main><article><h1>{self.title}</h1>\n"
            + "\n".join(parts)
            + f'\n</article><ul class="related">{related}</ul></main>\n</body></html>\n'
        )


class Corpus:
    """Texts in the three languages, the same for the same seed."""

    def __init__(self, seed: int = SEED):
        import numpy as np

        self.vocabularies = {  # the same words for every corpus (a seed draws other texts)
            language: vocabulary(language, SEED + number)
            for number, (language, _share) in enumerate(LANGUAGE_SHARES)
        }
        self.numbers = np.random.default_rng(seed)
        self.random = random.Random(seed)  # noqa: S311 (test data, not secrets)
        self.languages = [language for language, _share in LANGUAGE_SHARES]
        self.language_weights = list(itertools.accumulate(share for _language, share in LANGUAGE_SHARES))

    def texts(self, count: int) -> list[Text]:
        """``count`` texts, languages mixed."""
        languages = self.random.choices(self.languages, cum_weights=self.language_weights, k=count)
        by_language: dict[str, list[Text]] = {}
        for language, number in Counter(languages).items():
            by_language[language] = self._texts(self.vocabularies[language], number)
        return [by_language[language].pop() for language in languages]

    def _texts(self, vocabulary: Vocabulary, count: int) -> list[Text]:
        numbers = self.numbers
        mean, sigma = BODY_WORDS
        lengths = [int(n) for n in numbers.lognormal(mean, sigma, count).clip(60, 1500)]
        title_lengths = numbers.integers(3, 9, count).tolist()
        heading_counts = numbers.integers(1, 4, count).tolist()
        heading_lengths = numbers.integers(2, 7, sum(heading_counts)).tolist()
        related_lengths = numbers.integers(2, 6, RELATED_LINKS * count).tolist()
        total = sum(lengths) + sum(title_lengths) + sum(heading_lengths) + sum(related_lengths)
        draws = numbers.random(total) * vocabulary.cumulative[-1]
        words = vocabulary.words[vocabulary.cumulative.searchsorted(draws)].tolist()
        sizes = numbers.integers(6, 19, total // 6 + 1).tolist()  # sentences' lengths in words
        coins = numbers.random(3 * len(sizes)).tolist()
        texts, position, heading, sentence_number, link = [], 0, 0, 0, 0
        collocations, weights = vocabulary.collocations, vocabulary.collocation_weights
        for length, title_length, headings in zip(lengths, title_lengths, heading_counts, strict=True):
            title = " ".join(words[position : position + title_length]).capitalize()
            position += title_length
            titles = []
            for _ in range(headings):
                size = heading_lengths[heading]
                heading += 1
                titles.append(" ".join(words[position : position + size]).capitalize())
                position += size
            end = position + length
            paragraphs, sentences = [], []
            while position < end:
                size = sizes[sentence_number]
                collocation, where, paragraph_end = coins[3 * sentence_number : 3 * sentence_number + 3]
                sentence_number += 1
                sentence = words[position : position + size if position + size < end else end]
                position += size
                if collocation < COLLOCATION_RATE:
                    phrase = collocations[
                        bisect.bisect(weights, collocation / COLLOCATION_RATE * weights[-1])
                    ]
                    sentence.insert(int(where * len(sentence)), phrase)
                sentence[0] = sentence[0].capitalize()
                sentences.append(" ".join(sentence) + ".")
                if paragraph_end < 0.2:
                    paragraphs.append(" ".join(sentences))
                    sentences = []
            position = end
            if sentences:
                paragraphs.append(" ".join(sentences))
            related = []
            for _ in range(RELATED_LINKS):
                size = related_lengths[link]
                link += 1
                related.append(" ".join(words[position : position + size]).capitalize())
                position += size
            texts.append(Text(vocabulary.language, title, titles, paragraphs, related))
        return texts


def digest_of(raw: bytes) -> str:
    """A payload digest as the crawler writes it ("sha256:" and 52 base32 characters)."""
    return "sha256:" + base64.b32encode(raw).decode().rstrip("=")


# Part 1's WARC files ---------------------------------------------------------------------------------


@dataclass
class WarcSet:
    """The WARC files of part 1 and what is in them."""

    directory: Path
    files: list[Path]
    size: int  # bytes, compressed
    pages: int
    records: int
    html_bytes: int  # of the pages' payloads, uncompressed
    other_bytes: int  # of the other payloads (images, style sheets)
    languages: dict[str, int]
    build_seconds: float = 0.0
    reused: bool = False

    @property
    def paths(self) -> list[str]:
        return [str(path) for path in self.files]


def warc_set(data: Path, *, pages: int, file_mb: int, log) -> WarcSet:
    """The WARC files for these parameters: those built by an earlier run, else written now."""
    directory = data / f"pages-{pages}-{file_mb}MB-v{GENERATOR}"
    manifest = directory / MANIFEST
    if manifest.exists():
        built = json.loads(manifest.read_text())
        files = [directory / name for name in built["files"]]
        if all(path.exists() and path.stat().st_size == built["sizes"][path.name] for path in files):
            log(f"Reusing {len(files)} WARC files in {directory}")
            return WarcSet(
                directory,
                files,
                built["size"],
                built["pages"],
                built["records"],
                built["html_bytes"],
                built["other_bytes"],
                built["languages"],
                reused=True,
            )
        log(f"{directory}: files changed since they were built; building them again")
        manifest.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    for leftover in directory.glob("*.warc.gz"):
        leftover.unlink()  # an interrupted build: only this script writes here
    started = time.perf_counter()
    result = write_warcs(directory, pages, file_mb * 10**6, log)
    result.build_seconds = time.perf_counter() - started
    manifest.write_text(
        json.dumps(
            {
                "files": [path.name for path in result.files],
                "sizes": {path.name: path.stat().st_size for path in result.files},
                "size": result.size,
                "pages": result.pages,
                "records": result.records,
                "html_bytes": result.html_bytes,
                "other_bytes": result.other_bytes,
                "languages": result.languages,
            },
            indent=1,
        )
    )
    log(f"Built {len(result.files)} WARC files ({result.size / 1e6:.1f} MB) in {result.build_seconds:.0f} s")
    return result


def write_warcs(directory: Path, pages: int, file_size: int, log) -> WarcSet:
    """Gzip WARC files of ``pages`` HTML pages (a request and a response record each, as a crawler
    writes them), one page in four with a picture (random bytes), each site a style sheet."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    corpus = Corpus(SEED + 1)
    rng = random.Random(SEED + 1)  # noqa: S311 (test data, not secrets)
    domains = [
        f"{rng.choice(SECTIONS)}-{number}.{rng.choice(TLDS)}" for number in range(max(3, pages // 100))
    ]
    domain_weights = list(itertools.accumulate(1 / (rank + 5) for rank in range(len(domains))))
    files: list[Path] = []
    records = html_bytes = other_bytes = 0
    languages: Counter = Counter()
    styled: set[str] = set()
    out = writer = None

    def roll():
        nonlocal out, writer
        if out is not None:
            out.close()
        path = directory / f"fulltext-{len(files):05d}.warc.gz"
        files.append(path)
        out = path.open("wb")
        writer = WARCWriter(out, gzip=True, warc_version="1.1")

    def write(url: str, when: datetime, content_type: str, body: bytes) -> None:
        nonlocal records
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        path = "/" + url.split("/", 3)[3]
        host = url.split("/")[2]
        request = StatusAndHeaders(
            f"GET {path} HTTP/1.1",
            [("Host", host), ("User-Agent", "webarchive-bench/1"), ("Accept", "*/*")],
            is_http_request=True,
        )
        response = StatusAndHeaders(
            "200 OK",
            [("Content-Type", content_type), ("Content-Length", str(len(body)))],
            protocol="HTTP/1.1",
        )
        record = writer.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            http_headers=response,
            warc_headers_dict={"WARC-Date": stamp},
        )
        writer.write_record(record)
        writer.write_record(
            writer.create_warc_record(
                url,
                "request",
                http_headers=request,
                warc_headers_dict={
                    "WARC-Date": stamp,
                    "WARC-Concurrent-To": record.rec_headers["WARC-Record-ID"],
                },
            )
        )
        records += 2

    roll()
    span = int(
        (datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC) - datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)).total_seconds()
    )
    # Each page's site, drawn first so that a page links to pages of its own site.
    site_of = [bisect.bisect(domain_weights, rng.random() * domain_weights[-1]) for _ in range(pages)]
    site_pages: dict[int, list[int]] = {}
    for number, site in enumerate(site_of):
        site_pages.setdefault(site, []).append(number)

    def page_url(number: int) -> str:
        return f"https://www.{domains[site_of[number]]}/{SECTIONS[number % len(SECTIONS)]}/page-{number}.html"

    done = 0
    while done < pages:
        batch = corpus.texts(min(2000, pages - done))
        for text in batch:
            domain = domains[site_of[done]]
            origin = f"https://www.{domain}"
            links = [page_url(rng.choice(site_pages[site_of[done]])) for _ in text.related]
            when = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(span))
            if domain not in styled:
                styled.add(domain)
                css = b"body { margin: 0 auto; max-width: 60em; font-family: Georgia, serif; }\n" * 20
                write(f"{origin}/static/site.css", when, "text/css", css)
                other_bytes += len(css)
            lang = text.language if rng.random() < 0.9 else ""
            body = text.html(lang, links).encode()
            write(page_url(done), when, "text/html; charset=utf-8", body)
            html_bytes += len(body)
            languages[text.language] += 1
            if rng.random() < 0.25:
                picture = rng.randbytes(rng.randrange(5_000, 40_000))
                write(f"{origin}/images/{done}.jpg", when, "image/jpeg", picture)
                other_bytes += len(picture)
            done += 1
            if out.tell() >= file_size and done < pages:
                roll()
        log(f"  {done:,} pages written")
    out.close()
    return WarcSet(
        directory,
        files,
        sum(path.stat().st_size for path in files),
        pages,
        records,
        html_bytes,
        other_bytes,
        dict(languages),
    )


# Part 1: indexing against extraction alone -------------------------------------------------------------


def extract_file(path: str) -> tuple[int, int, int, dict[str, int]]:
    """Extraction alone over one file: documents, errors, characters of text, languages detected."""
    from storage.textextract import file_documents

    documents = errors = characters = 0
    languages: Counter = Counter()
    for record in file_documents(path):
        if record.document is None:
            errors += 1
            continue
        documents += 1
        characters += record.document.size
        languages[record.document.language] += 1
    return documents, errors, characters, dict(languages)


def extraction_alone(paths: list[str], workers: int) -> tuple[float, float, tuple]:
    """Wall and CPU seconds of ``extract_file`` over every file in ``workers`` processes (1: this one),
    and the sums of what it returned."""
    import multiprocessing

    from benchmarks.indexing import _children_cpu, _own_cpu

    cpu = _own_cpu() + _children_cpu()
    started = time.perf_counter()
    if workers == 1:
        results = [extract_file(path) for path in paths]
    else:
        context = multiprocessing.get_context("spawn")  # as index_warcs: fresh processes
        with ProcessPoolExecutor(max_workers=min(workers, len(paths)), mp_context=context) as pool:
            results = list(pool.map(extract_file, paths))
    seconds = time.perf_counter() - started
    languages: Counter = Counter()
    for _documents, _errors, _characters, found in results:
        languages.update(found)
    totals = (
        sum(result[0] for result in results),
        sum(result[1] for result in results),
        sum(result[2] for result in results),
        dict(languages),
    )
    return seconds, _own_cpu() + _children_cpu() - cpu, totals


def empty_index() -> None:
    """Empty the capture index, the files and the full-text index, so each run starts the same."""
    import contextlib

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE storage_capture, storage_warcfile, storage_searchtext, storage_searchentry,"
            " storage_searchanchor"
            " RESTART IDENTITY CASCADE"
        )
        with contextlib.suppress(Exception):  # write the dirty pages now, not during the next run
            cursor.execute("CHECKPOINT")


@dataclass
class IndexingResult:
    """What part 1 measured."""

    warcs: WarcSet
    workers: int
    contenders: dict = field(default_factory=dict)  # name -> benchmarks.indexing.Contender
    extracted: tuple = (0, 0, 0, {})  # extraction alone: documents, errors, characters, languages
    command_said: list[str] = field(default_factory=list)
    documents_read: int = 0  # what index_warcs said it read
    texts: int = 0  # rows of storage_searchtext
    entries: int = 0
    languages: dict[str, int] = field(default_factory=dict)  # in the index
    sizes: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)
    machine_cpu: dict[float, float] = field(default_factory=dict)  # index_warcs' wall s -> machine CPU s
    vectors_seconds: float = 0.0  # PostgreSQL computing every stored text's vector and summary, alone
    writing_seconds: float = 0.0  # and writing the texts with those vectors into a table with a GIN index


def measure_indexing(warcs: WarcSet, *, workers: int, repeat: int, env: dict, log) -> IndexingResult:
    """index_warcs and extraction alone ``repeat`` times in turns; the sizes after the last run."""
    from benchmarks.indexing import Contender, checksum_only, run_timed

    result = IndexingResult(warcs, workers)
    contenders = result.contenders
    for name, label in (
        ("ours", f"`manage.py index_warcs FILES --workers {workers}` (capture + full-text index)"),
        ("peer", f"extraction alone, {workers} processes (`file_documents`)"),
        ("single", "extraction alone, 1 process"),
    ):
        contenders[name] = Contender(name, label)
    paths = warcs.paths
    checksum_only(paths)  # the files in the page cache for everyone
    result.load = (os.getloadavg()[0], 0.0)
    for turn in range(1, repeat + 1):
        log(f"Indexing, turn {turn} of {repeat}")
        empty_index()
        command = [sys.executable, str(ROOT / "manage.py"), "index_warcs", *paths, "--workers", str(workers)]
        machine = machine_cpu()
        seconds, cpu, said = run_timed(command, env=env, output=True)
        result.machine_cpu[seconds] = machine_cpu() - machine
        contenders["ours"].runs.append((seconds, cpu))
        result.command_said = said.strip().splitlines()[-2:]
        seconds, cpu, result.extracted = extraction_alone(paths, workers)
        contenders["peer"].runs.append((seconds, cpu))
        if workers > 1:
            seconds, cpu, _totals = extraction_alone(paths, 1)
            contenders["single"].runs.append((seconds, cpu))
        log("  " + ", ".join(f"{c.name} {c.runs[-1][0]:.2f} s" for c in contenders.values() if c.runs))
    if workers == 1:
        del contenders["single"]
    result.load = (result.load[0], os.getloadavg()[0])
    for line in result.command_said:
        if line.startswith("Full-text index: "):
            result.documents_read = int(line.split()[2])
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT language, count(*) FROM storage_searchtext GROUP BY language ORDER BY 2 DESC")
        result.languages = dict(cursor.fetchall())
        cursor.execute("SELECT count(*) FROM storage_searchentry")
        result.entries = cursor.fetchone()[0]
        result.vectors_seconds = vectors_alone(cursor)
        result.writing_seconds = writing_alone(cursor)
        cursor.execute("VACUUM ANALYZE storage_searchtext")
        cursor.execute("VACUUM ANALYZE storage_searchentry")
    result.texts = sum(result.languages.values())
    result.sizes = index_sizes()
    documents = result.extracted[0]
    if not (documents == result.documents_read == result.texts == warcs.pages):
        result.problems.append(
            f"pages {warcs.pages:,}, extracted alone {documents:,},"
            f" index_warcs read {result.documents_read:,},"
            f" texts in the index {result.texts:,}"
        )
    return result


def machine_cpu() -> float:
    """CPU seconds the whole machine has spent (every process, PostgreSQL's included), from /proc/stat."""
    with open("/proc/stat") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def vectors_alone(cursor) -> float:
    """Seconds PostgreSQL takes to compute the vector and the summary of every stored text (what
    ``PostgresBackend.store`` computes), in one statement, writing nothing: part of the floor."""
    from storage.search import vectors_sql

    started = time.perf_counter()
    cursor.execute(
        "SELECT sum(length(vectors.vector)) + sum(length(vectors.summary))"  # noqa: S608 (our names)
        f" FROM storage_searchtext AS text, {vectors_sql('text.')} WHERE text.error = ''"
    )
    cursor.fetchone()
    return time.perf_counter() - started


def writing_alone(cursor) -> float:
    """Seconds PostgreSQL takes to write the stored texts, their vectors already computed, into a
    scratch table with a GIN index on them (a temporary table: no WAL, so a little less than the real
    table costs): the rest of the floor."""
    cursor.execute("CREATE TEMPORARY TABLE bench_texts (LIKE storage_searchtext)")
    cursor.execute("CREATE INDEX ON bench_texts USING gin (vector)")
    cursor.execute("CREATE TEMPORARY TABLE bench_vectors AS SELECT * FROM storage_searchtext")
    started = time.perf_counter()
    cursor.execute("INSERT INTO bench_texts SELECT * FROM bench_vectors")
    seconds = time.perf_counter() - started
    cursor.execute("DROP TABLE bench_texts, bench_vectors")
    return seconds


def index_sizes() -> dict[str, int]:
    """Bytes of the full-text tables: texts (heap and TOAST), their GIN index, their primary key, the
    entries (with their indexes); the capture index for comparison."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree("
            "'storage_searchtext')),"
            " (SELECT coalesce(sum(pg_relation_size(relid)), 0)"
            " FROM pg_partition_tree('storage_searchtext_vector')),"
            " (SELECT coalesce(sum(pg_relation_size(relid)), 0)"
            " FROM pg_partition_tree('storage_searchtext_pkey')),"
            " pg_total_relation_size('storage_searchentry'), pg_total_relation_size('storage_searchanchor'),"
            " pg_total_relation_size('storage_capture')"
        )
        texts, vector, key, entries, anchors, captures = (int(value) for value in cursor.fetchone())
    return {
        "texts": texts,
        "texts_heap": texts - vector - key,
        "vector_index": vector,
        "texts_key": key,
        "entries": entries,
        "anchors": anchors,
        "fulltext": texts + entries + anchors,
        "captures": captures,
    }


# Part 2: queries with N documents -------------------------------------------------------------------

DEFINITIONS = (
    # (name, share of the entries, the rule's level or None: no rule)
    ("benchmark: yearly snapshot", 0.6, "readers"),
    ("benchmark: news sites", 0.2, "readers"),
    ("benchmark: elections", 0.1, "staff"),
    ("benchmark: no rule", 0.1, None),
)
CHUNK = 20_000  # documents generated, copied and inserted at a time
SECOND_ENTRY = 0.2  # the share of documents found in a second year (or harvest definition)
URL_REUSE = 0.3  # the share of documents that are a later version of a URL already there


@dataclass
class Archive:
    """What the loaded archive holds, for the queries and the report."""

    documents: int = 0
    entries: int = 0
    anchors: int = 0
    urls: int = 0
    domains: list[str] = field(default_factory=list)  # by size, largest first
    definitions: list[int] = field(default_factory=list)
    readable: list[int] = field(default_factory=list)  # those readers may read
    seconds: dict[str, float] = field(default_factory=dict)
    languages: dict[str, int] = field(default_factory=dict)


def setup_definitions(archive: Archive) -> dict[int, int]:
    """The harvest definitions, a job each, their access rules; definition id → job id."""
    from django.utils import timezone

    from harvest.choices import HarvestKind, JobStatus
    from harvest.models import HarvestRun, HarvestTemplate, Job
    from harvest.services.planning import definition_save
    from storage.services.access import access_rule_save

    template = HarvestTemplate.objects.get(name="default")
    jobs = {}
    for name, _share, level in DEFINITIONS:
        definition = definition_save(kind=HarvestKind.SNAPSHOT, name=name)
        run = HarvestRun.objects.create(harvest_definition=definition, number=1, scheduled_for=timezone.now())
        job = Job.objects.create(
            harvest_definition=definition,
            run=run,
            run_number=1,
            channel=definition.channel,
            queue=definition.channel.queue,
            status=JobStatus.DONE,
            template=template,
            template_version=template.version,
            template_settings=template.crawler_settings(),
        )
        jobs[definition.pk] = job.pk
        archive.definitions.append(definition.pk)
        if level is not None:
            access_rule_save(harvest_definition=definition, level=level)
        if level == "readers":
            archive.readable.append(definition.pk)
    return jobs


def _secondary_indexes(cursor, table: str) -> list[tuple[str, str]]:
    cursor.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname"
        " WHERE i.tablename = %s AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = c.oid)",
        [table],
    )
    return cursor.fetchall()


class Inserter:
    """Threads, each on its own connection, moving staged texts into storage_searchtext (the vectors
    computed by PostgreSQL) while the next texts are generated."""

    def __init__(self, connections: int):
        import psycopg
        from django.db import connection

        settings = connection.settings_dict
        self.arguments = {
            key: str(settings[name])
            for key, name in (("user", "USER"), ("password", "PASSWORD"), ("host", "HOST"), ("port", "PORT"))
            if settings[name]
        }
        self.arguments["dbname"] = settings["NAME"]
        self.psycopg = psycopg
        self.queue: queue.Queue = queue.Queue(maxsize=connections)
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(connections)]
        for thread in self.threads:
            thread.start()

    def _work(self) -> None:
        from storage.search import vector_sql

        columns = "digest, mime, language, title, headings, body, truncated, error, extracted_at"
        try:
            with self.psycopg.connect(autocommit=True, **self.arguments) as connection:
                while (stage := self.queue.get()) is not None:
                    connection.execute(
                        f"INSERT INTO storage_searchtext ({columns}, vector)"  # noqa: S608 (our names)
                        " SELECT digest, mime, language, title, headings, body, false, '', now(),"
                        f" {vector_sql()} FROM {stage}"  # as storage.search.PostgresBackend.store
                    )
                    connection.execute(f"DROP TABLE {stage}")
        except BaseException as error:  # reported by finish()
            self.errors.append(error)
            while self.queue.get() is not None:  # let the producer finish
                pass

    def put(self, stage: str) -> None:
        if self.errors:
            raise RuntimeError(f"inserting the texts failed: {self.errors[0]}")
        self.queue.put(stage)

    def finish(self) -> None:
        for _ in self.threads:
            self.queue.put(None)
        for thread in self.threads:
            thread.join()
        if self.errors:
            raise RuntimeError(f"inserting the texts failed: {self.errors[0]}") from self.errors[0]

    def abandon(self) -> None:
        """Stop the threads after an error here (the database is dropped with their connections)."""
        for _ in self.threads:
            try:
                self.queue.put_nowait(None)
            except queue.Full:
                break


def load_archive(count: int, *, connections: int, log) -> Archive:
    """``count`` documents in the full-text index, each with its entries and captures."""
    import numpy as np
    from django.db import connection

    from storage.models import WarcFile
    from storage.search import summary_sql
    from storage.warcindex import url_key

    archive = Archive(documents=count)
    empty_index()
    jobs = setup_definitions(archive)
    rng = random.Random(SEED + 2)  # noqa: S311 (test data, not secrets)
    numbers = np.random.default_rng(SEED + 2)
    corpus = Corpus(SEED)
    domains = [
        f"{rng.choice(SECTIONS)}-{number}.{rng.choice(TLDS)}" for number in range(max(20, count // 200))
    ]
    archive.domains = domains
    host_keys = [url_key(f"https://www.{domain}/").removesuffix("/") for domain in domains]
    domain_weights = list(itertools.accumulate(1 / (rank + 5) for rank in range(len(domains))))
    definition_weights = list(itertools.accumulate(share for _name, share, _level in DEFINITIONS))
    years = list(range(FIRST_YEAR, LAST_YEAR + 1))
    year_weights = list(itertools.accumulate(1 + index / 3 for index in range(len(years))))  # more lately
    url_domains = np.zeros(count + 1, dtype=np.int32)  # URL number → domain number
    site_urls: list[list[int]] = [[] for _ in domains]  # domain number → its URL numbers

    def path_of(url_number: int) -> str:
        return f"/{SECTIONS[url_number % len(SECTIONS)]}/page-{url_number}.html"

    files: dict[tuple[int, int], list] = {}  # (definition, year) → [WarcFile id, next offset]
    for definition in archive.definitions:
        for year in years:
            warc = WarcFile.objects.create(
                name=f"bench-{definition}-{year}.warc.gz",
                path=f"/srv/bench/{year}/bench-{definition}-{year}.warc.gz",
                origin=WarcFile.Origin.IMPORTED,
                created_at=datetime(year, 1, 1, tzinfo=UTC),
                closed_at=datetime(year, 12, 31, tzinfo=UTC),
                indexed_at=datetime(year, 12, 31, tzinfo=UTC),
            )
            files[(definition, year)] = [warc.pk, 0]
    with connection.cursor() as cursor:
        dropped = [
            (table, name, definition)
            for table in ("storage_searchentry", "storage_capture", "storage_searchanchor")
            for name, definition in _secondary_indexes(cursor, table)
        ]
        cursor.execute("SELECT pg_get_indexdef('storage_searchtext_vector'::regclass)")
        vector_index = cursor.fetchone()[0].replace(" ON ONLY ", " ON ")  # and every partition's
        for _table, name, _definition in dropped:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("DROP INDEX storage_searchtext_vector")
    log(f"Loading {count:,} documents ({connections} inserting connections)")
    started = time.perf_counter()
    inserter = Inserter(connections)
    urls = 0
    languages: Counter = Counter()
    stage_columns = "digest text, mime text, language text, title text, headings text, body text"
    entry_columns = (
        "urlkey, url, domain, digest, harvest_definition_id, year, mime, language, captures, first_capture,"
        " last_capture"
    )
    capture_columns = (
        'urlkey, timestamp, url, record_type, mime, status, digest, length, "offset", record_id,'
        " warc_file_id,"
        " job_id"
    )
    generating = copying = 0.0
    try:
        for chunk_number, start in enumerate(range(0, count, CHUNK)):
            size = min(CHUNK, count - start)
            moment = time.perf_counter()
            texts = corpus.texts(size)
            raw = numbers.bytes(32 * size)
            staged, entries, captures, anchors = [], [], [], []
            for offset, text in enumerate(texts):
                number = start + offset
                digest = digest_of(raw[32 * offset : 32 * offset + 32])
                languages[text.language] += 1
                staged.append(
                    (digest, "text/html", text.language, text.title, text.heading_text(), text.body())
                )
                if urls and rng.random() < URL_REUSE:
                    url_number = rng.randrange(urls)
                else:
                    url_number = urls
                    urls += 1
                    url_domains[url_number] = bisect.bisect(domain_weights, rng.random() * domain_weights[-1])
                    site_urls[int(url_domains[url_number])].append(url_number)
                domain_number = int(url_domains[url_number])
                domain = domains[domain_number]
                url, key = (
                    f"https://www.{domain}{path_of(url_number)}",
                    host_keys[domain_number] + path_of(url_number),
                )
                # Its links: the menu, and "read also" links to pages of its site.
                site = site_urls[domain_number]
                targets = [host_keys[domain_number] + path_of(rng.choice(site)) for _ in text.related]
                written = set()
                for target, anchor in text.anchors(host_keys[domain_number], targets):
                    if target != key and (target, anchor) not in written:
                        written.add((target, anchor))
                        anchors.append(f"{target}\t{anchor}\t{digest}\n")
                year = years[bisect.bisect(year_weights, rng.random() * year_weights[-1])]
                definition = archive.definitions[
                    bisect.bisect(definition_weights, rng.random() * definition_weights[-1])
                ]
                found = [(definition, year)]
                if rng.random() < SECOND_ENTRY:
                    later = min(LAST_YEAR, year + rng.randint(1, 3))
                    other = archive.definitions[rng.randrange(len(archive.definitions))]
                    if (other, later) != (definition, year):
                        found.append((other, later))
                for definition_id, entry_year in found:
                    when = datetime(entry_year, 1, 1, tzinfo=UTC) + timedelta(
                        seconds=rng.randrange(365 * 86400)
                    )
                    stamp = f"{when:%Y-%m-%d %H:%M:%S}+00"
                    entries.append(
                        f"{key}\t{url}\t{domain}\t{digest}\t{definition_id}\t{entry_year}\ttext/html\t"
                        f"{text.language}\t1\t{stamp}\t{stamp}\n"
                    )
                    warc = files[(definition_id, entry_year)]
                    length = 2000 + len(text.paragraphs) * 300
                    captures.append(
                        f"{key}\t{stamp}\t{url}\tresponse\ttext/html\t200\t{digest}\t{length}\t{warc[1]}\t"
                        f"<urn:uuid:{number:08x}-0000-4000-8000-{len(captures):012x}>\t{warc[0]}\t"
                        f"{jobs[definition_id]}\n"
                    )
                    warc[1] += length
            archive.entries += len(entries)
            archive.anchors += len(anchors)
            generated = time.perf_counter()
            generating += generated - moment
            stage = f"bench_fulltext_stage_{chunk_number}"
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE UNLOGGED TABLE {stage} ({stage_columns})")
                with cursor.cursor.copy(f"COPY {stage} FROM STDIN") as copy:
                    for row in staged:
                        copy.write_row(row)
                with cursor.cursor.copy(f"COPY storage_searchentry ({entry_columns}) FROM STDIN") as copy:
                    copy.write("".join(entries))
                with cursor.cursor.copy(f"COPY storage_capture ({capture_columns}) FROM STDIN") as copy:
                    copy.write("".join(captures))
                anchor_columns = "target_urlkey, text, source_digest"
                with cursor.cursor.copy(f"COPY storage_searchanchor ({anchor_columns}) FROM STDIN") as copy:
                    copy.write("".join(anchors))
            copying += time.perf_counter() - generated
            inserter.put(stage)
            if chunk_number % 10 == 9 or start + size == count:
                log(f"  {start + size:,} documents ({time.perf_counter() - started:.0f} s)")
    except BaseException:
        inserter.abandon()
        raise
    inserter.finish()
    archive.urls = urls
    archive.languages = dict(languages)
    archive.seconds["generating"] = generating
    archive.seconds["copying"] = copying
    archive.seconds["loading"] = time.perf_counter() - started
    log(f"  loaded in {archive.seconds['loading']:.0f} s; the entries' summaries")
    moment = time.perf_counter()
    with connection.cursor() as cursor:  # as PostgresBackend.add_entries for a text without one
        summaries = f"UPDATE storage_searchentry SET summary = {summary_sql('text.')}"  # noqa: S608 (our names)
        cursor.execute(
            summaries + " FROM storage_searchtext AS text WHERE text.digest = storage_searchentry.digest"
        )
        cursor.execute("VACUUM FULL storage_searchentry")  # the update wrote every row again
    archive.seconds["summaries"] = time.perf_counter() - moment
    log(f"  summaries in {archive.seconds['summaries']:.0f} s; building the indexes")
    moment = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        cursor.execute(vector_index)
        archive.seconds["vector index"] = time.perf_counter() - moment
        for _table, _name, definition in dropped:
            cursor.execute(definition)
        archive.seconds["indexes"] = time.perf_counter() - moment
        cursor.execute("RESET maintenance_work_mem")
    moment = time.perf_counter()
    with connection.cursor() as cursor:
        for table in (
            "storage_searchtext",
            "storage_searchentry",
            "storage_searchanchor",
            "storage_capture",
            "storage_warcfile",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")
    archive.seconds["vacuum analyze"] = time.perf_counter() - moment
    return archive


@dataclass
class Query:
    """One search of part 2."""

    label: str
    text: str
    filters: dict


@dataclass
class Measured:
    """A query's runs as one kind of viewer."""

    query: Query
    viewer: str
    latencies: list[float] = field(default_factory=list)
    sql: list[float] = field(default_factory=list)  # seconds in SQL of each run
    slowest: list[float] = field(default_factory=list)  # seconds of its slowest statement, each run
    statements: int = 0
    hits: int = 0
    capped: bool = False
    matching: int | None = None  # entries whose text matches (counted once, staff)
    plan: str = ""
    slowest_sql: tuple = ()

    def percentile(self, share: float, values: list[float] | None = None) -> float:
        """Nearest-rank percentile, in seconds."""
        ordered = sorted(self.latencies if values is None else values)
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def queries(archive: Archive) -> list[Query]:
    domain = archive.domains[min(9, len(archive.domains) - 1)]  # the 10th largest site
    return [
        Query("common word", COMMON_WORD, {}),
        Query("rare word", RARE_WORDS["fr"], {}),
        Query("phrase", f'"{PHRASE}"', {}),
        Query(f"common word, domain {domain}", COMMON_WORD, {"domain": domain}),
        Query("common word, year 2020", COMMON_WORD, {"year": 2020}),
    ]


class StatementLog:
    """Django's execute wrapper: the time of each SQL statement of a search."""

    def __init__(self):
        self.statements: list[tuple[float, str, object]] = []

    def __call__(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.statements.append((time.perf_counter() - started, sql, params))


def measure_queries(archive: Archive, *, runs: int, explain: bool, log) -> list[Measured]:
    """Each query ``runs`` times (after a warm-up of 2) as staff and as a reader."""
    from django.db import connection

    from storage import search
    from storage.access import Viewer
    from storage.selectors_search import SearchRequest, archive_search, searchable_entries

    results = []
    for query in queries(archive):
        parsed = search.parse_query(query.text)
        request = SearchRequest(query=parsed, sort="relevance", **query.filters)
        for kind in ("staff", "reader"):
            viewer = Viewer(kind)
            measured = Measured(query, kind)
            for turn in range(2 + runs):
                statements = StatementLog()
                started = time.perf_counter()
                with connection.execute_wrapper(statements):
                    found = archive_search(request, viewer)
                seconds = time.perf_counter() - started
                if turn < 2:
                    continue
                measured.latencies.append(seconds)
                measured.sql.append(sum(spent for spent, _sql, _params in statements.statements))
                slowest = max(statements.statements, key=lambda statement: statement[0])
                measured.slowest.append(slowest[0])
                measured.slowest_sql = slowest[1:]
                measured.statements = len(statements.statements)
            measured.hits, measured.capped = found.total, found.capped
            entries = searchable_entries(viewer)
            for name, value in query.filters.items():
                entries = entries.filter(**{name: value})
            measured.matching = search.backend().matching(entries, parsed).count()
            if explain or measured.percentile(0.95) * 1000 >= GOAL_P95_MS:
                measured.plan = explain_analyze(*measured.slowest_sql)
            results.append(measured)
            log(
                f"  {query.label} ({kind}): p50 {measured.percentile(0.5) * 1000:.1f} ms,"
                f" p95 {measured.percentile(0.95) * 1000:.1f} ms"
            )
    return results


def explain_analyze(sql: str, params) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}", params)
        return collapse_plan([row[0] for row in cursor.fetchall()])


def collapse_plan(lines: list[str], keep: int = 2) -> str:
    """A plan with each Append's children after the first ``keep`` (the 16 partitions) summed up in one
    line: how many, how many ran, their rows and the largest time of one."""
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        if not line.lstrip().startswith("->  Append") and not line.lstrip().startswith("->  Parallel Append"):
            continue
        depth = len(line) - len(line.lstrip())
        children: list[list[str]] = []
        while index < len(lines):
            current = lines[index]
            indent = len(current) - len(current.lstrip())
            if indent <= depth:
                break
            if indent == depth + 6 and current.lstrip().startswith("->"):
                children.append([])
            if children:
                children[-1].append(current)
            else:
                out.append(current)  # the Append's own lines (Buffers)
            index += 1
        for child in children[:keep]:
            out.extend(child)
        rest = children[keep:]
        if rest:
            heads = [child[0] for child in rest]
            ran = [head for head in heads if "never executed" not in head]
            rows = sum(int(part.split()[0]) for head in ran for part in head.split("rows=")[2:3])
            slowest = max(
                (float(head.split("actual time=")[1].split("..")[1].split()[0]) for head in ran), default=0.0
            )
            out.append(
                " " * (depth + 6) + f"->  … {len(rest)} more like these: {len(ran)} executed, {rows:,} rows,"
                f" the slowest {slowest:.1f} ms"
            )
    return "\n".join(out)


def statement_text(sql: str, params) -> str:
    """The statement with its parameters written in (for the report)."""
    import psycopg
    from django.db import connection

    return psycopg.ClientCursor(connection.connection).mogrify(sql, params)


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    from django.db import connection

    from benchmarks.environment import cpus, memory

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('server_version'), current_setting('shared_buffers'),"
            " current_setting('work_mem')"
        )
        version, buffers, work_mem = cursor.fetchone()
    return {
        "cpus": cpus(),
        "memory": memory(),
        "database": f"PostgreSQL {version}, shared_buffers {buffers}, work_mem {work_mem}",
        "python": platform.python_version(),
    }


def _mb(size: int) -> str:
    return f"{size / 1e6:,.1f}"


def _verdict(met: bool) -> str:
    return "PASS" if met else "MISS"


def report_indexing(result: IndexingResult, repeat: int) -> list[str]:
    warcs, contenders = result.warcs, result.contenders
    ours, peer = contenders["ours"].best, contenders["peer"].best
    built = "built by an earlier run" if warcs.reused else f"built in {warcs.build_seconds:.0f} s"
    generated = ", ".join(f"{language} {count:,}" for language, count in sorted(warcs.languages.items()))
    documents = result.extracted[0]
    machine = result.machine_cpu.get(ours, 0.0)
    cpus = os.cpu_count() or 1
    floor = (contenders["peer"].cpu + result.vectors_seconds + result.writing_seconds) / cpus
    lines = [
        "### 1. Indexing: `index_warcs` against extraction alone",
        "",
        f"- data: {len(warcs.files)} gzip WARC files, {_mb(warcs.size)} MB, {warcs.records:,} records:"
        f" {warcs.pages:,} HTML pages ({generated}; {_mb(warcs.html_bytes)} MB of HTML) with their requests,"
        f" pictures and style sheets ({_mb(warcs.other_bytes)} MB); {built}, in {warcs.directory}",
        "",
        f"| measured (best of {repeat}) | seconds | all runs | CPU s | documents/s | MB/s of WARC"
        " | time / extraction alone |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for contender in contenders.values():
        best = contender.best
        runs = ", ".join(f"{seconds:.2f}" for seconds, _ in contender.runs)
        lines.append(
            f"| {contender.label} | {best:.2f} | {runs} | {contender.cpu:.2f} | {documents / best:,.0f}"
            f" | {warcs.size / 1e6 / best:,.1f} | {best / peer:.2f} |"
        )
    found = ", ".join(f"{language or '(none)'} {count:,}" for language, count in result.languages.items())
    lines += [
        "",
        f"- index_warcs / extraction alone, same {result.workers} processes, time: **{ours / peer:.2f}**"
        f" (goal ≤ {GOAL_EXTRACTION}: {_verdict(ours / peer <= GOAL_EXTRACTION)})",
        f"- CPU of the best index_warcs run: the machine {machine:.2f} s, of which index_warcs' processes"
        f" {contenders['ours'].cpu:.2f} s and PostgreSQL (and the rest of the machine)"
        f" {machine - contenders['ours'].cpu:.2f} s; extraction alone {contenders['peer'].cpu:.2f} s",
        f"- PostgreSQL computing the vectors and summaries of the {result.texts:,} texts alone, one"
        f" statement writing nothing: {result.vectors_seconds:.2f} s; writing the texts with those vectors"
        f" into a table with a GIN index: {result.writing_seconds:.2f} s",
        f"- the floor on these {os.cpu_count()} CPUs, for any indexing that has PostgreSQL compute the"
        f" vectors and keep a GIN index beside the extraction: (extraction alone's CPU + those two) /"
        f" {os.cpu_count()} CPUs = {floor:.2f} s, **{floor / peer:.2f}** times extraction alone",
        f"- documents: {warcs.pages:,} pages; extraction alone {documents:,} ({result.extracted[1]} errors);"
        f" index_warcs read {result.documents_read:,}; texts in the index {result.texts:,}, entries"
        f" {result.entries:,}; languages detected: {found}",
        *(f"- PROBLEM: {problem}" for problem in result.problems),
        *(f"- index_warcs said (last run): {line}" for line in result.command_said),
        f"- load average (1 min) before / after: {result.load[0]:.1f} / {result.load[1]:.1f}"
        f" ({os.cpu_count()} CPUs)",
    ]
    return lines


def report_size(indexing: IndexingResult | None, archive: Archive | None, sizes: dict | None) -> list[str]:
    lines = [
        "### 3. Size of the full-text index",
        "",
        "| index | texts (heap, TOAST) MB | their GIN index MB | their primary key MB | entries MB"
        " | link anchors MB | full-text index MB | per document kB | against |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    if indexing is not None:
        size, warcs = indexing.sizes, indexing.warcs
        lines.append(
            f"| part 1: {indexing.texts:,} pages | {_mb(size['texts_heap'])} | {_mb(size['vector_index'])}"
            f" | {_mb(size['texts_key'])} | {_mb(size['entries'])} | {_mb(size['anchors'])}"
            f" | **{_mb(size['fulltext'])}**"
            f" | {size['fulltext'] / max(indexing.texts, 1) / 1e3:.1f}"
            f" | WARC {_mb(warcs.size)} MB: **{size['fulltext'] / warcs.size:.2f}**; their HTML"
            f" {_mb(warcs.html_bytes)} MB: {size['fulltext'] / warcs.html_bytes:.2f}; capture index"
            f" {_mb(size['captures'])} MB |"
        )
    if archive is not None and sizes is not None:
        per_million = sizes["fulltext"] / archive.documents * 1e6
        lines.append(
            f"| part 2: {archive.documents:,} documents | {_mb(sizes['texts_heap'])}"
            f" | {_mb(sizes['vector_index'])} | {_mb(sizes['texts_key'])} | {_mb(sizes['entries'])}"
            f" | {_mb(sizes['anchors'])}"
            f" | **{_mb(sizes['fulltext'])}** | {sizes['fulltext'] / archive.documents / 1e3:.1f}"
            f" | **{per_million / 1e9:,.2f} GB per million documents**; capture index"
            f" {_mb(sizes['captures'])} MB |"
        )
    return lines


def report_queries(archive: Archive, measured: list[Measured], runs: int, load: tuple) -> list[str]:
    seconds = archive.seconds
    readable = sum(share for _name, share, level in DEFINITIONS if level == "readers")
    languages = ", ".join(f"{language} {count:,}" for language, count in sorted(archive.languages.items()))
    lines = [
        f"### 2. Queries with {archive.documents:,} documents",
        "",
        f"- data: {archive.documents:,} texts ({languages}), {archive.entries:,} entries and as many"
        f" captures, {archive.anchors:,} link anchors, {archive.urls:,} URLs on {len(archive.domains):,}"
        f" sites, {FIRST_YEAR} to {LAST_YEAR}, {len(archive.definitions)} harvest definitions (readers may"
        f" read {len(archive.readable)}: {100 * readable:.0f} % of the entries)",
        f"- load: {seconds['loading']:.0f} s (generating the texts {seconds['generating']:.0f} s, COPY"
        f" {seconds['copying']:.0f} s, vectors computed by `INSERT … SELECT` alongside), GIN index"
        f" {seconds['vector index']:.0f} s, other indexes"
        f" {seconds['indexes'] - seconds['vector index']:.0f} s,"
        f" VACUUM ANALYZE {seconds['vacuum analyze']:.0f} s",
        f"- each query {runs} times after 2 warm-up runs, through `archive_search` (in process, a kept"
        " connection; no HTTP); *SQL* is the time in its statements, *slowest* its slowest statement",
        "",
        "| query | viewer | entries matching | hits (URLs) | p50 ms | p95 ms | max ms | SQL p50 ms"
        f" | slowest p50 ms | statements | p95 < {GOAL_P95_MS:.0f} ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for item in measured:
        p50, p95 = item.percentile(0.5) * 1000, item.percentile(0.95) * 1000
        hits = f"{item.hits:,}" + (" (capped)" if item.capped else "")
        lines.append(
            f"| {item.query.label} (`{item.query.text}`) | {item.viewer} | {item.matching:,} | {hits}"
            f" | {p50:.1f} | {p95:.1f} | {max(item.latencies) * 1000:.1f}"
            f" | {item.percentile(0.5, item.sql) * 1000:.1f}"
            f" | {item.percentile(0.5, item.slowest) * 1000:.1f}"
            f" | {item.statements} | {_verdict(p95 < GOAL_P95_MS)} |"
        )
    lines += [
        "",
        f"- load average (1 min) before / after: {load[0]:.1f} / {load[1]:.1f} ({os.cpu_count()} CPUs)",
    ]
    for item in measured:
        if item.plan:
            sql, params = item.slowest_sql
            lines += [
                "",
                f"EXPLAIN (ANALYZE, BUFFERS) of the slowest statement of {item.query.label}"
                f" as {item.viewer}:",
                "```",
                statement_text(sql, params)[:3000],
                "",
                item.plan,
                "```",
            ]
    return lines


def report_summary(indexing, archive, measured, sizes) -> list[str]:
    lines = ["### Goals", "", "| goal | measured | verdict |", "|---|---:|---|"]
    if indexing is not None:
        ratio = indexing.contenders["ours"].best / indexing.contenders["peer"].best
        lines.append(
            f"| index_warcs within {GOAL_EXTRACTION}x of extraction alone ({indexing.workers} processes each)"
            f" | {ratio:.2f}x | {_verdict(ratio <= GOAL_EXTRACTION)} |"
        )
    for item in measured or []:
        p95 = item.percentile(0.95) * 1000
        lines.append(
            f"| p95 < {GOAL_P95_MS:.0f} ms, {item.query.label}, {item.viewer},"
            f" {archive.documents:,} documents"
            f" | {p95:.1f} ms | {_verdict(p95 < GOAL_P95_MS)} |"
        )
    if indexing is not None:
        lines.append(
            "| full-text index / WARC files (part 1)"
            f" | {indexing.sizes['fulltext'] / indexing.warcs.size:.2f}"
            " | (no goal; reported) |"
        )
    if archive is not None and sizes is not None:
        lines.append(
            f"| full-text index per million documents (part 2) |"
            f" {sizes['fulltext'] / archive.documents * 1e6 / 1e9:.2f} GB | (no goal; reported) |"
        )
    return lines


# Running -----------------------------------------------------------------------------------------


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(PARTS), help="parts to run: indexing, queries")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="where the WARC files are kept")
    parser.add_argument("--pages", type=int, default=20_000, help="HTML pages in part 1's WARC files")
    parser.add_argument("--file-mb", type=int, default=10, help="part 1's WARC files are rolled at this size")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes of part 1, each")
    parser.add_argument("--repeat", type=int, default=2, help="runs of part 1 (the best is kept)")
    parser.add_argument("--documents", type=int, default=1_000_000, help="documents loaded for part 2")
    parser.add_argument(
        "--connections", type=int, default=2, help="connections computing vectors in the load"
    )
    parser.add_argument("--runs", type=int, default=30, help="runs of each query and viewer (part 2)")
    parser.add_argument(
        "--explain", action="store_true", help="EXPLAIN ANALYZE every query's slowest statement"
    )
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL,
        help="the PostgreSQL database to create, use and drop (it must not exist)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database at the end (with what part 2 loaded), for --reuse",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="measure part 2's queries on the database an earlier --keep run left (no load, no part 1)",
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny run to check that the script works")
    args = parser.parse_args(argv)
    if args.reuse:
        args.only = "queries"
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    parts = [part.strip() for part in args.only.split(",") if part.strip()]
    if not parts or set(parts) - set(PARTS):
        parser.error(f"--only: some of {', '.join(PARTS)}")
    if (
        min(args.pages, args.file_mb, args.workers, args.repeat, args.documents, args.runs, args.connections)
        < 1
    ):
        parser.error("sizes, --workers, --repeat, --runs and --connections must be positive")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    from benchmarks.environment import maintenance_connection, throwaway_database
    from benchmarks.indexing import run_timed

    maintenance_connection(args.database_url)  # PostgreSQL only: refuses another URL
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    problems = False
    with throwaway_database(args.database_url, log, keep=args.keep, reuse=args.reuse) as name:
        warcs = None
        if "indexing" in parts:
            warcs = warc_set(args.data, pages=args.pages, file_mb=args.file_mb, log=log)
        # As in production: DEBUG off (no query log kept in memory).
        env = {**os.environ, "DATABASE_URL": args.database_url, "DEBUG": "0", "PYTHONPATH": str(ROOT)}
        env.setdefault("SECRET_KEY", "benchmark-only")
        env.setdefault("ALLOWED_HOSTS", "localhost")
        env["DJANGO_SETTINGS_MODULE"] = "webarchive.settings"
        os.environ.update(
            {
                key: env[key]
                for key in ("DATABASE_URL", "DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_SETTINGS_MODULE")
            }
        )
        import django

        django.setup()
        # What is measured, imported now: a module being edited fails here, not after an hour of load.
        import storage.management.commands.index_warcs
        import storage.selectors_search  # noqa: F401

        log(f"Database {name}: migrating")
        run_timed([sys.executable, str(ROOT / "manage.py"), "migrate", "--no-input"], env=env)
        about = machine()
        indexing = archive = measured = sizes = None
        if warcs is not None:
            indexing = measure_indexing(warcs, workers=args.workers, repeat=args.repeat, env=env, log=log)
            problems = bool(indexing.problems)
        if "queries" in parts:
            kept = args.data / "archive.json"
            if args.reuse:
                archive = Archive(**json.loads(kept.read_text()))
                log(f"Reusing the {archive.documents:,} documents loaded by an earlier run")
            else:
                archive = load_archive(args.documents, connections=args.connections, log=log)
                if args.keep:
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    kept.write_text(json.dumps(asdict(archive)))
            sizes = index_sizes()
            load = (os.getloadavg()[0], 0.0)
            log(f"Measuring {len(queries(archive))} queries, {args.runs} runs each, as staff and as a reader")
            measured = measure_queries(archive, runs=args.runs, explain=args.explain, log=log)
            load = (load[0], os.getloadavg()[0])
        lines = ["## Full-text index: indexing, queries and size on PostgreSQL", ""]
        lines += [f"- {key}: {value}" for key, value in about.items()]
        if indexing is not None:
            lines += ["", *report_indexing(indexing, args.repeat)]
        if measured is not None:
            lines += ["", *report_queries(archive, measured, args.runs, load)]
        lines += ["", *report_size(indexing, archive, sizes)]
        lines += ["", *report_summary(indexing, archive, measured, sizes)]
        print("\n".join(lines), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
