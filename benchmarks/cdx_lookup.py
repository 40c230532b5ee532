"""Benchmark: CDX lookups (exact URL, closest to a date) with 10,000,000 captures in PostgreSQL.

    .venv/bin/python benchmarks/cdx_lookup.py [--captures N] [--queries N] [--database-url URL]
        [--reload] [--drop] [--profile] [--smoke]

The database (``bench_cdx`` on 127.0.0.1:5432 by default) is created by the
script, migrated, marked as its own (a comment on the database: a database
without it is never touched) and kept for the next runs. It is filled by COPY
with ``--captures`` synthetic captures (default 10,000,000): thousands of
hosts with their pages, harvested twice a year from 2012 to 2025 by snapshot
harvests, news sites also every week, in the order a crawler would have
written them; keys are the ``surt`` library's (checked on a sample of every
harvest), a revisit for a share of them, a few WARC files per harvest. The
load goes harvest by harvest, each committed with a note of its progress,
so an interrupted load resumes; a complete one is reused unless ``--reload``.
After it: the indexes (dropped during the load), VACUUM ANALYZE.

Then ``--queries`` lookups (default 1,000) of captures sampled from the table
(so popular URLs are asked more, as in replay), each at a random date, as
pywb's remote index source sends them
(``/cdx?url=…&closest=…&sort=closest&limit=100``), with the replay account's
token as HTTP Basic, measured:

1. through HTTP, first pass: a gunicorn process (2 workers) on 127.0.0.1 with
   the database URL as given, so the settings' defaults (kept database
   connections: CONN_MAX_AGE 60 s, checked before each request's first use),
   from the request to the last byte of the answer;
2. in this process, the same queries through ``storage.cdx`` and the access
   rules, as the view runs them (``CdxQuery.from_params`` then each line of
   ``storage.access.replay_cdx_lines``), on a kept connection;
3. in this process, ``storage.cdx`` alone (``captures_lookup``, each line as
   ``CdxQuery.line`` writes it), what the view answered before the access
   rules: 2 minus 3 is what the access rules cost;
4. in this process, through Django's whole stack (middleware, authentication,
   view) with its test client: 4 minus 2 is what Django adds to the query;
5. through HTTP again (all cached now): 5 minus 4 is what gunicorn and HTTP
   add;
6. through HTTP with ``conn_max_age=0`` added to the database URL: a new
   database connection per request (Django's own default).

Every answer is checked (the same in every pass but 3, which has no access
rule in its lines but the same captures, all captures up to the limit, the
closest first). It prints p50, p95, p99 and max of each, against
the goal p95 < 20 ms; ``--profile`` adds the SQL of one request and a
cProfile of the requests in process. Numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import math
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_cdx"
MARK = "benchmarks/cdx_lookup.py"  # the comment on the databases this script created
GUNICORN = Path(sys.executable).with_name("gunicorn")
GOAL_P95_MS = 20.0
CLOSEST_LIMIT = 100  # what pywb's remote index source adds to a closest query
SEED = 20120101
FIRST_YEAR, LAST_YEAR = 2012, 2025
CAPTURES_PER_HOST = 490  # hosts = captures / this + 10: about 5 % more than asked (the load stops at it)
FILES_PER_HARVEST = 4
SMOKE = {"captures": 10_000, "queries": 50}

TLDS = ("fr", "fr", "fr", "fr", "com", "org", "net", "eu", "be", "info")
# Words of the synthetic host names and paths.
WORDS = (  # noqa: SIM905 (easier to read as one text)
    "atelier bibliotheque musee theatre mairie ecole lycee festival cinema jardin port marche velo"
    " montagne riviere foret vigne ferme moulin abbaye chateau village quartier region maison cuisine"
    " recette sport rugby football basket voile danse musique orchestre chorale radio journal gazette"
    " presse photo archive histoire memoire patrimoine science nature climat energie transport gare"
    " route ville campagne ocean plage ile phare"
).split(" ")
SECTIONS = (
    "actualites",
    "agenda",
    "blog",
    "culture",
    "sport",
    "economie",
    "dossiers",
    "archives",
    "produits",
    "services",
    "contact",
    "a-propos",
)
PAGE_KINDS = (
    # (share of 20, path template, MIME type); {s} section, {w} word, {j} page number
    (11, "/{s}/{w}-{j}.html", "text/html"),
    (3, "/{s}/index.php?id={j}&lang=fr", "text/html"),
    (4, "/images/{w}-{j}.jpg", "image/jpeg"),
    (1, "/static/{w}-{j}.css", "text/css"),
    (1, "/static/{w}-{j}.js", "application/javascript"),
)
_KIND_OF = [kind for kind, (share, _, _) in enumerate(PAGE_KINDS) for _ in range(share)]


# The synthetic archive ---------------------------------------------------------------------------


@dataclass
class Host:
    """A web site of the synthetic archive."""

    name: str
    scheme: str
    key: str  # the SURT of its root without the final "/": "fr,example)"
    pages: int
    news: bool  # harvested every week as well


def hosts(captures: int) -> list[Host]:
    """The sites, the same for every run with the same number of captures."""
    from storage.warcindex import url_key

    rng = random.Random(SEED)  # noqa: S311 (test data, not secrets)
    found = []
    for number in range(captures // CAPTURES_PER_HOST + 10):
        word = rng.choice(WORDS)
        name = f"{rng.choice(('www.', 'www.', '', 'blog.', 'site.'))}{word}-{number}.{rng.choice(TLDS)}"
        scheme = "https" if rng.random() < 0.6 else "http"
        key = url_key(f"{scheme}://{name}/").removesuffix("/")
        pages = int(min(3000, max(3, rng.lognormvariate(3.0, 1.0))))
        found.append(Host(name, scheme, key, pages, news=rng.random() < 0.01))
    return found


def page(host_number: int, number: int) -> tuple[str, str]:
    """Path and MIME type of page ``number`` of a host (page 0 is its home page)."""
    if number == 0:
        return "/", "text/html"
    _share, template, mime = PAGE_KINDS[_KIND_OF[(host_number * 31 + number * 17) % len(_KIND_OF)]]
    section = SECTIONS[(host_number + number) % len(SECTIONS)]
    word = WORDS[(host_number * 7 + number * 13) % len(WORDS)]
    return template.format(s=section, w=word, j=number), mime


def harvests() -> list[tuple[str, datetime]]:
    """The harvests, in time order: a snapshot each January and July; each is one step of the load."""
    return [
        (f"snapshot {year}-{month:02d}", datetime(year, month, 1, tzinfo=UTC))
        for year in range(FIRST_YEAR, LAST_YEAR + 1)
        for month in (1, 7)
    ]


@dataclass
class Harvest:
    """One harvest's captures as COPY lines (text format, made as they are read), and its WARC files."""

    number: int
    start: datetime
    sites: list[Host]
    digests: list[str]
    file_ids: list[int]
    sizes: list[int] = field(default_factory=list)  # of each WARC file, as far as the lines were read
    records: list[int] = field(default_factory=list)
    checked: list[tuple[str, str]] = field(default_factory=list)  # (url, key) pairs to check

    def lines(self):
        """The captures in the order a crawler writes them.

        Each host is harvested (with a probability) during the harvest's four weeks, a share of its
        pages each time, its home page always; news sites also every week, home page and sections.
        A capture's digest is one of a pool (content that did not change); a share are revisits.
        """
        rng = random.Random(SEED * 1000 + self.number)  # noqa: S311 (test data, not secrets)
        slots = len(self.file_ids)
        self.sizes, self.records = [0] * slots, [0] * slots
        offsets, records = self.sizes, self.records
        for host_number, host in enumerate(self.sites):
            visits = []
            if rng.random() < 0.8:
                count = max(1, int(host.pages * rng.uniform(0.3, 1.0)))
                chosen = [0, *rng.sample(range(1, host.pages), min(count, host.pages - 1))]
                visits.append((self.start + timedelta(seconds=rng.randrange(28 * 86400)), chosen))
            if host.news:
                sections = list(range(min(host.pages, 6)))
                for week in range(26):
                    visits.append(
                        (self.start + timedelta(days=7 * week, seconds=rng.randrange(86400)), sections)
                    )
            slot = host_number % slots
            for moment, chosen in visits:
                for order, number_of_page in enumerate(chosen):
                    path, mime = page(host_number, number_of_page)
                    when = moment + timedelta(seconds=2 * order)
                    revisit = self.number > 0 and rng.random() < 0.25
                    status = 200 if rng.random() < 0.95 else rng.choice((301, 302, 404))
                    length = rng.randrange(400, 1200) if revisit else rng.randrange(400, 60_000)
                    url = f"{host.scheme}://{host.name}{path}"
                    key = host.key + path
                    if len(self.checked) < 200 and rng.random() < 0.01:
                        self.checked.append((url, key))
                    record_id = f"<urn:uuid:{self.number:08x}-{slot:04x}-4000-8000-{records[slot]:012x}>"
                    record_type, mime = ("revisit", "warc/revisit") if revisit else ("response", mime)
                    yield (
                        f"{key}\t{when:%Y-%m-%d %H:%M:%S}+00\t{url}\t{record_type}\t{mime}\t{status}\t"
                        f"{rng.choice(self.digests)}\t{length}\t{offsets[slot]}\t{record_id}\t"
                        f"{self.file_ids[slot]}\t\\N\n"
                    )
                    offsets[slot] += length
                    records[slot] += 2  # the response and its request


def digest_pool(count: int = 4096) -> list[str]:
    """Payload digests as the crawler writes them ("sha256:" and 52 base32 characters)."""
    rng = random.Random(SEED)  # noqa: S311 (test data, not secrets)
    return ["sha256:" + base64.b32encode(rng.randbytes(32)).decode().rstrip("=") for _ in range(count)]


# Loading -----------------------------------------------------------------------------------------

COPY_COLUMNS = (
    'urlkey, timestamp, url, record_type, mime, status, digest, length, "offset", record_id, warc_file_id,'
    " job_id"
)


def _progress(cursor) -> tuple[int | None, int, bool]:
    """(captures asked, harvests loaded, indexes built) of the load so far."""
    cursor.execute("CREATE TABLE IF NOT EXISTS bench_cdx_load (key text PRIMARY KEY, value bigint NOT NULL)")
    cursor.execute("SELECT key, value FROM bench_cdx_load")
    state = dict(cursor.fetchall())
    return state.get("captures"), int(state.get("harvests", 0)), bool(state.get("indexed", 0))


def _note(cursor, key: str, value: int) -> None:
    cursor.execute(
        "INSERT INTO bench_cdx_load (key, value) VALUES (%s, %s)"
        " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
        [key, value],
    )


def load(captures: int, *, reload: bool, log) -> dict:
    """Fill the database with ``captures`` captures (resuming an interrupted load); what it did."""
    from django.db import connection, transaction

    from storage.models import WarcFile

    with connection.cursor() as cursor:
        asked, done, indexed = _progress(cursor)
        if asked is not None and asked != captures and not reload:
            raise SystemExit(
                f"The database holds a load of {asked:,} captures, not {captures:,}: add --reload"
                " to load it again."
            )
        if reload or asked is None:
            log("Emptying the capture index")
            cursor.execute(
                "TRUNCATE storage_capture, storage_warcfile, bench_cdx_load RESTART IDENTITY CASCADE"
            )
            _note(cursor, "captures", captures)
            done, indexed = 0, False
        if indexed:
            cursor.execute("SELECT count(*) FROM storage_capture")
            return {"reused": True, "rows": cursor.fetchone()[0]}
        _drop_indexes(cursor)
    sites = hosts(captures)
    digests = digest_pool()
    loaded = _loaded(connection)
    started = time.perf_counter()
    for number, (name, start) in enumerate(harvests()):
        if number < done:
            continue
        if loaded >= captures:
            break
        with transaction.atomic():
            files = WarcFile.objects.bulk_create(
                WarcFile(
                    name=f"bench-{start:%Y%m}-{slot:02d}.warc.gz",
                    path=f"/srv/bench/{start:%Y}/bench-{start:%Y%m}-{slot:02d}.warc.gz",
                    origin=WarcFile.Origin.IMPORTED,
                    created_at=start,
                    closed_at=start + timedelta(days=28),
                    indexed_at=start + timedelta(days=28),
                )
                for slot in range(FILES_PER_HARVEST)
            )
            harvest = Harvest(number, start, sites, digests, [file.pk for file in files])
            lines = itertools.islice(harvest.lines(), captures - loaded)
            copied = 0
            with connection.cursor() as cursor:
                with cursor.cursor.copy(f"COPY storage_capture ({COPY_COLUMNS}) FROM STDIN") as copy:
                    while block := list(itertools.islice(lines, 5000)):
                        copy.write("".join(block))
                        copied += len(block)
                _check_keys(harvest.checked)
                for file, size, records in zip(files, harvest.sizes, harvest.records, strict=True):
                    file.size, file.records = size, records
                WarcFile.objects.bulk_update(files, ["size", "records"])
                _note(cursor, "harvests", number + 1)
        loaded += copied
        log(f"  {name}: {copied:,} captures ({loaded:,} in all, {time.perf_counter() - started:.0f} s)")
    seconds = time.perf_counter() - started
    if loaded < captures:
        raise SystemExit(f"The synthetic archive has only {loaded:,} captures; ask for fewer.")
    log("Building the indexes, VACUUM ANALYZE")
    index_started = time.perf_counter()
    with connection.cursor() as cursor:
        _build_indexes(cursor)
        _note(cursor, "indexed", 1)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE storage_capture")
        cursor.execute("VACUUM ANALYZE storage_warcfile")
    return {
        "reused": False,
        "rows": loaded,
        "copy_seconds": seconds,
        "index_seconds": time.perf_counter() - index_started,
    }


def _loaded(connection) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM storage_capture")
        return cursor.fetchone()[0]


def _check_keys(pairs: list[tuple[str, str]]) -> None:
    """The keys written are the surt library's (as pywb and index_warcs compute them)."""
    from storage.warcindex import url_key

    for url, key in pairs:
        if url_key(url) != key:
            raise RuntimeError(f"generated key {key!r} is not the SURT of {url} ({url_key(url)!r})")


def _drop_indexes(cursor) -> None:
    """Drop the capture table's secondary indexes for the load (kept aside to be built after)."""
    cursor.execute(
        "CREATE TABLE IF NOT EXISTS bench_cdx_index (name text PRIMARY KEY, definition text NOT NULL)"
    )
    cursor.execute(
        "INSERT INTO bench_cdx_index SELECT indexname, indexdef FROM pg_indexes"
        " WHERE tablename = 'storage_capture' AND indexname <> 'storage_capture_pkey'"
        " ON CONFLICT (name) DO NOTHING"
    )
    cursor.execute("SELECT name FROM bench_cdx_index")
    for (name,) in cursor.fetchall():
        cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def _build_indexes(cursor) -> None:
    cursor.execute("SET maintenance_work_mem = '1GB'")
    cursor.execute("SELECT name, definition FROM bench_cdx_index")
    for name, definition in cursor.fetchall():
        cursor.execute(f'DROP INDEX IF EXISTS "{name}"')  # a build interrupted half-way
        cursor.execute(definition)
    cursor.execute("DELETE FROM bench_cdx_index")


# Measuring ---------------------------------------------------------------------------------------


@dataclass
class Lookup:
    """One query: the URL, the date, how many captures the URL has."""

    url: str
    closest: str
    captures: int = 0
    nearest: float | None = None  # seconds between the date and the URL's closest capture

    @property
    def params(self) -> dict[str, str]:
        # In the order pywb's remote index source writes them.
        return {"url": self.url, "closest": self.closest, "sort": "closest", "limit": str(CLOSEST_LIMIT)}


def sample_lookups(count: int, rows: int) -> list[Lookup]:
    """``count`` URLs of captures drawn at random (popular URLs more often), each with a random date."""
    from django.db import connection

    rng = random.Random(SEED)  # noqa: S311 (test data, not secrets)
    share = min(100.0, 100.0 * count * 3 / max(rows, 1))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT url FROM storage_capture TABLESAMPLE BERNOULLI ({share}) REPEATABLE ({SEED})"  # noqa: S608
        )
        urls = sorted(url for (url,) in cursor.fetchall())
    rng.shuffle(urls)
    span = int(
        (datetime(LAST_YEAR + 1, 1, 1, tzinfo=UTC) - datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)).total_seconds()
    )
    first = datetime(FIRST_YEAR, 1, 1, tzinfo=UTC)
    return [
        Lookup(url, f"{first + timedelta(seconds=rng.randrange(span)):%Y%m%d%H%M%S}")
        for url in (urls * (count // max(len(urls), 1) + 1))[:count]
    ]


def count_captures(lookups: list[Lookup]) -> None:
    """How many captures each URL asked has, and how far its closest one is (to check the answers)."""
    from django.db import connection

    from storage.warcindex import url_key

    with connection.cursor() as cursor:
        for lookup in lookups:
            moment = datetime.strptime(lookup.closest, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
            cursor.execute(
                "SELECT count(*), min(abs(extract(epoch FROM timestamp - %s)))"
                " FROM storage_capture WHERE urlkey = %s",
                [moment, url_key(lookup.url)],
            )
            lookup.captures, nearest = cursor.fetchone()
            lookup.nearest = None if nearest is None else float(nearest)


@dataclass
class Pass:
    """One pass over the queries: the latency of each (seconds) and the answers."""

    name: str
    latencies: list[float] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    same_answers: bool = True  # the same text as the first pass (else the same captures, key and time)

    def percentile(self, share: float) -> float:
        """The nearest-rank percentile: the smallest latency with ``share`` of them at or below it."""
        ordered = sorted(self.latencies)
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def in_process(lookups: list[Lookup], name: str) -> Pass:
    """The queries through storage.cdx in this process, as the view runs them for the replay account
    (staff's view, with each line's access rule), on a kept connection."""
    from django.http import QueryDict

    from storage.access import PROFILES, replay_cdx_lines
    from storage.cdx import CdxQuery

    result = Pass(name)
    for lookup in lookups:
        started = time.perf_counter()
        query = CdxQuery.from_params(QueryDict(urlencode(lookup.params)))
        answer = "".join(replay_cdx_lines(query, PROFILES["staff"]))
        result.latencies.append(time.perf_counter() - started)
        result.answers.append(answer)
    return result


def without_access_rules(lookups: list[Lookup], name: str) -> Pass:
    """The queries through storage.cdx alone (no access rule joined or written), on a kept connection:
    what the view answered before the access rules."""
    from django.http import QueryDict

    from storage.cdx import CdxQuery, captures_lookup

    result = Pass(name, same_answers=False)
    for lookup in lookups:
        started = time.perf_counter()
        query = CdxQuery.from_params(QueryDict(urlencode(lookup.params)))
        answer = "".join(query.line(capture) for capture in captures_lookup(query))
        result.latencies.append(time.perf_counter() - started)
        result.answers.append(answer)
    return result


def through_django(lookups: list[Lookup], token: str, name: str, *, profile=None) -> Pass:
    """The queries through Django's whole stack (middleware, authentication, view) with its test client,
    in this process on a kept connection: no HTTP server, no socket. Profiled if given a cProfile."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"replay:{token}".encode()).decode())
    b"".join(client.get("/cdx", Lookup("http://warm-up.invalid/", "2020").params).streaming_content)
    result = Pass(name)
    for lookup in lookups:
        if profile is not None:
            profile.enable()
        started = time.perf_counter()
        response = client.get("/cdx", lookup.params)
        answer = b"".join(response.streaming_content).decode()
        result.latencies.append(time.perf_counter() - started)
        if profile is not None:
            profile.disable()
        if response.status_code != 200:
            raise RuntimeError(f"/cdx {lookup.params}: HTTP {response.status_code}: {answer[:300]}")
        result.answers.append(answer)
    return result


def request_queries(lookup: Lookup, token: str) -> list[tuple[float, str]]:
    """The SQL statements of one /cdx request (as the test client makes it) and their times."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        through_django([lookup], token, "one")
    return [(float(query["time"]), query["sql"]) for query in queries.captured_queries]


def over_http(lookups: list[Lookup], base: str, token: str, name: str) -> Pass:
    """The queries as pywb sends them (HTTP Basic with the token), from the request to the last byte."""
    import requests

    session = requests.Session()
    session.auth = ("replay", token)
    result = Pass(name)
    for lookup in lookups:
        url = f"{base}/cdx?{urlencode(lookup.params)}"
        started = time.perf_counter()
        response = session.get(url, timeout=30)
        body = response.text
        result.latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {response.status_code}: {body[:300]}")
        result.answers.append(body)
    return result


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def web_server(database_url: str, *, workers: int, token: str, log):
    """gunicorn serving the application on 127.0.0.1 (DEBUG off) while the block runs; its base URL.

    Plain HTTP on 127.0.0.1, as pywb reaches the application on the same machine: the redirect to
    HTTPS (on by default with DEBUG off) is for requests that come through the TLS proxy.
    """
    import requests

    port = _free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "0", "ALLOWED_HOSTS": "127.0.0.1"}
    env.update({"SECURE_SSL_REDIRECT": "0", "PYTHONWARNINGS": "ignore::UserWarning"})
    env.setdefault("SECRET_KEY", "benchmark-only")
    command = [str(GUNICORN), "webarchive.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(workers), "--log-level", "warning"]
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile("w+") as errors:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stderr=errors)  # noqa: S603 (our application)
        try:
            deadline = time.monotonic() + 60
            while True:
                if server.poll() is not None:
                    errors.seek(0)
                    raise RuntimeError(f"gunicorn exited with {server.returncode}:\n{errors.read()[-3000:]}")
                with contextlib.suppress(requests.ConnectionError, requests.Timeout):  # still starting
                    answer = requests.get(f"{base}/cdx?url=x", timeout=5, allow_redirects=False)
                    if answer.status_code == 401:
                        break
                    raise RuntimeError(f"{base}/cdx without credentials: HTTP {answer.status_code}, not 401")
                if time.monotonic() > deadline:
                    raise RuntimeError("gunicorn did not answer within 60 s")
                time.sleep(0.2)
            log(f"  gunicorn ({workers} workers) on {base}")
            # Each worker finishes loading the application on its first requests: not part of the
            # measure. A URL without captures goes through everything else (token, permissions, query).
            warm_up = [Lookup("http://warm-up.invalid/", "2020")] * (workers * 3)
            over_http(warm_up, base, token, "warm-up")
            yield base
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@dataclass
class Result:
    """What a run measured."""

    captures: int
    loaded: dict
    lookups: list[Lookup]
    passes: list[Pass] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    load_average: tuple[float, float] = (0.0, 0.0)
    table_mb: float = 0.0
    index_mb: float = 0.0
    warc_files: int = 0
    profile: str = ""
    queries: tuple = ()  # (a lookup, the SQL statements of its request with their times)


def check(result: Result) -> None:
    """Every pass answered the same; each answer has min(limit, captures) lines, the closest first."""
    reference = result.passes[0].answers
    for measured in result.passes[1:]:
        if measured.same_answers:
            different = sum(a != b for a, b in zip(reference, measured.answers, strict=True))
        else:
            different = sum(
                _captures(a) != _captures(b) for a, b in zip(reference, measured.answers, strict=True)
            )
        if different:
            result.problems.append(
                f"{measured.name}: {different} answers differ from {result.passes[0].name}"
            )
    for lookup, answer in zip(result.lookups, reference, strict=True):
        lines = answer.splitlines()
        if len(lines) != min(CLOSEST_LIMIT, lookup.captures):
            result.problems.append(f"{lookup.url}: {len(lines)} lines for {lookup.captures} captures")
            continue
        moment = datetime.strptime(lookup.closest, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        first = datetime.strptime(lines[0].split(" ", 2)[1], "%Y%m%d%H%M%S").replace(tzinfo=UTC)
        if abs((first - moment).total_seconds()) != lookup.nearest:
            result.problems.append(f"{lookup.url} closest to {lookup.closest}: the first line is {lines[0]}")


def _captures(answer: str) -> list[str]:
    """The captures of a CDXJ answer, each as its key and time."""
    return [" ".join(line.split(" ", 2)[:2]) for line in answer.splitlines()]


def benchmark(args, log) -> Result:
    """Load (or reuse) the captures, then measure every pass."""
    from django.db import connection

    from storage.services.replay import replay_account_ensure

    log(f"Loading {args.captures:,} captures (reused if already there)")
    loaded = load(args.captures, reload=args.reload, log=log)
    log("  reused" if loaded["reused"] else f"  loaded in {loaded['copy_seconds']:.0f} s")
    token = replay_account_ensure()
    lookups = sample_lookups(args.queries, loaded["rows"])
    count_captures(lookups)
    result = Result(args.captures, loaded, lookups)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size('storage_capture'), pg_indexes_size('storage_capture'),"
            " (SELECT count(*) FROM storage_warcfile)"
        )
        table, indexes, result.warc_files = cursor.fetchone()
    result.table_mb, result.index_mb = table / 1e6, indexes / 1e6
    result.load_average = (os.getloadavg()[0], 0.0)
    per_request = args.database_url + ("&" if "?" in args.database_url else "?") + "conn_max_age=0"
    log(f"Measuring {len(lookups):,} lookups")
    with web_server(args.database_url, workers=args.workers, token=token, log=log) as base:
        result.passes.append(over_http(lookups, base, token, "HTTP, first pass"))
        log("  HTTP, first pass done")
        result.passes.append(in_process(lookups, "in process (storage.cdx)"))
        log("  in process done")
        result.passes.append(
            without_access_rules(lookups, "in process, storage.cdx without the access rules")
        )
        log("  in process without the access rules done")
        result.passes.append(through_django(lookups, token, "in process, whole Django stack (test client)"))
        log("  whole Django stack done")
        result.passes.append(over_http(lookups, base, token, "HTTP, second pass"))
        log("  HTTP, second pass done")
    with web_server(per_request, workers=args.workers, token=token, log=log) as base:
        result.passes.append(over_http(lookups, base, token, "HTTP, conn_max_age=0"))
        log("  HTTP, a connection per request, done")
    result.load_average = (result.load_average[0], os.getloadavg()[0])
    check(result)
    if args.profile:
        import cProfile
        import io
        import pstats

        log("Profiling the whole Django stack (cProfile)")
        profile = cProfile.Profile()
        through_django(lookups, token, "profiled", profile=profile)
        text = io.StringIO()
        stats = pstats.Stats(profile, stream=text)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(20)
        result.profile = text.getvalue()
        busiest = max(lookups, key=lambda lookup: lookup.captures)
        result.queries = (busiest, request_queries(busiest, token))
    return result


# Report ------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    """What the numbers were measured on."""
    from django.db import connection

    from benchmarks.environment import cpus, memory

    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version'), current_setting('shared_buffers')")
        version, buffers = cursor.fetchone()
    return {
        "cpus": cpus(),
        "memory": memory(),
        "database": f"PostgreSQL {version}, shared_buffers {buffers}",
        "python": platform.python_version(),
    }


def report(result: Result, about: dict[str, str]) -> str:
    """The results as Markdown (the format of docs/benchmarks.md)."""
    loaded = result.loaded
    how = (
        "reused from an earlier run"
        if loaded["reused"]
        else f"loaded by COPY in {loaded['copy_seconds']:.0f} s, indexes and VACUUM ANALYZE"
        f" {loaded['index_seconds']:.0f} s"
    )
    counts = sorted(lookup.captures for lookup in result.lookups)
    headline = result.passes[0].percentile(0.95) * 1000
    lines = [
        f"## CDX lookup: exact URL, closest to a date, {loaded['rows']:,} captures",
        "",
        *(f"- {key}: {value}" for key, value in about.items()),
        f"- data: {loaded['rows']:,} captures in {result.warc_files:,} WARC files; table"
        f" {result.table_mb:,.0f} MB, its indexes {result.index_mb:,.0f} MB; {how}",
        f"- {len(result.lookups):,} queries `/cdx?url=…&closest=…&sort=closest&limit={CLOSEST_LIMIT}` (HTTP"
        " Basic, the replay account's token); captures of the URLs asked: median"
        f" {statistics.median(counts):.0f}, 95th percentile {counts[int(len(counts) * 0.95) - 1]:,},"
        f" max {counts[-1]:,}",
        "",
        "| pass | p50 ms | p95 ms | p99 ms | max ms | mean ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for measured in result.passes:
        figures = [measured.percentile(share) for share in (0.5, 0.95, 0.99)]
        figures += [max(measured.latencies), statistics.mean(measured.latencies)]
        lines.append(f"| {measured.name} | " + " | ".join(f"{value * 1000:.1f}" for value in figures) + " |")
    verdict = "met" if headline < GOAL_P95_MS else "NOT met"
    by_name = {measured.name: measured for measured in result.passes}
    cdx, stack = by_name["in process (storage.cdx)"], by_name["in process, whole Django stack (test client)"]
    bare = by_name["in process, storage.cdx without the access rules"]
    second, per_request = by_name["HTTP, second pass"], by_name["HTTP, conn_max_age=0"]

    def added(share: float, more: Pass, less: Pass) -> str:
        return f"{(more.percentile(share) - less.percentile(share)) * 1000:+.1f} ms"

    lines += [
        "",
        "- medians, what each layer adds: the query and its lines (storage.cdx alone)"
        f" {bare.percentile(0.5) * 1000:.1f} ms; the access rules {added(0.5, cdx, bare)} (p95"
        f" {added(0.95, cdx, bare)}); Django's middleware, authentication and view {added(0.5, stack, cdx)};"
        f" gunicorn and HTTP, on a kept database connection, {added(0.5, second, stack)}; a new database"
        f" connection per request (conn_max_age=0) {added(0.5, per_request, second)} (p95"
        f" {added(0.95, per_request, second)})",
    ]
    lines += [
        "",
        f"- p95 through HTTP, first pass (the default settings): **{headline:.1f} ms** (goal <"
        f" {GOAL_P95_MS:.0f} ms: {verdict})",
        "- answers: "
        + ("the same in every pass, min(limit, captures) lines each" if not result.problems else "PROBLEMS"),
        *(f"  - {problem}" for problem in result.problems[:10]),
        f"- load average (1 min) before / after: {result.load_average[0]:.1f} / {result.load_average[1]:.1f}"
        f" ({os.cpu_count()} CPUs)",
    ]
    if result.queries:
        lookup, queries = result.queries
        lines += ["", f"SQL of one request ({lookup.url}, {lookup.captures} captures):", ""]
        lines += [f"- {seconds * 1000:.1f} ms: `{sql[:160]}`" for seconds, sql in queries]
    if result.profile:
        lines += ["", "Profile of the requests in process (cProfile; slows them):", "```"]
        lines += [result.profile.strip(), "```"]
    return "\n".join(lines)


# The database ------------------------------------------------------------------------------------


def _server(url: str) -> tuple[dict, str]:
    """Connection arguments for the server's maintenance database, and the database's name."""
    from benchmarks.environment import maintenance_connection

    return maintenance_connection(url)


def own_database(url: str, log) -> None:
    """Create the database and mark it as this script's; an existing one is used only if so marked."""
    import psycopg
    from psycopg import sql

    server, name = _server(url)
    with psycopg.connect(**server, autocommit=True) as connection:
        row = connection.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if row is None:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            connection.execute(
                sql.SQL("COMMENT ON DATABASE {} IS {}").format(sql.Identifier(name), sql.Literal(MARK))
            )
            log(f"Created the database {name}")
        elif row[0] != MARK:
            raise SystemExit(
                f"The database {name} exists and was not created by this benchmark: it is not touched."
                " Give another --database-url."
            )


def drop_database(url: str, log) -> None:
    """Drop the database (it is this script's: own_database checked)."""
    import psycopg
    from psycopg import sql

    if "django" in sys.modules:
        from django.db import connections

        connections.close_all()
    server, name = _server(url)
    with psycopg.connect(**server, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    log(f"Dropped the database {name}.")


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--captures", type=int, default=10_000_000, help="captures in the index")
    parser.add_argument("--queries", type=int, default=1000, help="lookups measured")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL,
        help="the PostgreSQL database (created by this script, or by an earlier run of it; kept)",
    )
    parser.add_argument("--reload", action="store_true", help="load the captures again even if there")
    parser.add_argument("--drop", action="store_true", help="drop the database at the end")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--profile", action="store_true", help="also profile the requests in process, print the top"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny run (10,000 captures, 50 queries) to check the script"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        for key, value in SMOKE.items():
            setattr(args, key, value)
    if min(args.captures, args.queries, args.workers) < 1:
        parser.error("--captures, --queries and --workers must be positive")
    if not GUNICORN.exists():
        parser.error(f"{GUNICORN} is needed (pip install gunicorn)")

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)
    own_database(args.database_url, log)
    try:
        os.environ["DATABASE_URL"] = args.database_url
        os.environ["DEBUG"] = "0"  # as in production: no query log kept in memory
        os.environ.setdefault("SECRET_KEY", "benchmark-only")
        os.environ["ALLOWED_HOSTS"] = "127.0.0.1,testserver"  # testserver: Django's test client
        os.environ["SECURE_SSL_REDIRECT"] = "0"  # see web_server
        os.environ["DJANGO_SETTINGS_MODULE"] = "webarchive.settings"
        sys.path.insert(0, str(ROOT))
        import django
        from django.core.management import call_command

        warnings.filterwarnings("ignore", message="No directory at")  # whitenoise: no collectstatic here

        django.setup()
        call_command("migrate", verbosity=0)
        result = benchmark(args, log)
        print(report(result, machine()))
    finally:
        if args.drop:
            drop_database(args.database_url, log)
    return 1 if result.problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        sys.exit(130)
