"""Benchmark: the CSV export of the records, against PostgreSQL writing the same rows as CSV itself.

    .venv/bin/python benchmarks/export.py [--records N] [--keywords N] [--runs N] [--database-url URL]

Builds ``--records`` selection records (default 50,000, what a national library's selection holds)
in 20 collections, each with ``--keywords`` keywords (default 2), in a throwaway PostgreSQL database
(created, migrated and dropped by the script); then, ``--runs`` times in turns (default 3, the best
kept):

- **ours**: ``selection.csvio.records_csv_stream`` over every record, read to its end, as the export
  page streams it (the header, the rows, their cells escaped by the application's CSV writer);
- **peer**: ``COPY (SELECT …) TO STDOUT WITH CSV`` of the same columns (the names of the related
  rows, the keywords aggregated, the dates in the site's time zone) read to its end through
  psycopg: what the database does alone, the limit.

It prints the seconds, the microseconds per record (goal: well under 50) and the ratio as Markdown;
the numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_export_{pid}"
GOAL_MICROSECONDS = 50.0
COLLECTIONS = 20

PEER = """COPY (
    SELECT r.id, c.name, r.url, replace(r.supplementary_urls, E'\\n', ' '), responsible.username,
        r.budget, r.frequency, r.depth, CASE WHEN r.needs_browser THEN 'yes' ELSE 'no' END, t.name,
        (SELECT string_agg(k.name, '; ' ORDER BY k.name) FROM selection_record_keywords rk
            JOIN selection_keyword k ON k.id = rk.keyword_id WHERE rk.record_id = r.id),
        r.content_notes, r.technical_notes, CASE WHEN r.is_active THEN 'yes' ELSE 'no' END, r.status,
        r.status_reason, r.check_status,
        to_char(r.checked_at AT TIME ZONE %(zone)s, 'YYYY-MM-DD HH24:MI:SS'),
        to_char(r.created_at AT TIME ZONE %(zone)s, 'YYYY-MM-DD HH24:MI:SS'), creator.username,
        to_char(r.modified_at AT TIME ZONE %(zone)s, 'YYYY-MM-DD HH24:MI:SS'), modifier.username
    FROM selection_record r
    JOIN selection_collection c ON c.id = r.collection_id
    JOIN selection_theme t ON t.id = r.theme_id
    JOIN auth_user responsible ON responsible.id = r.responsible_id
    JOIN auth_user creator ON creator.id = r.created_by_id
    JOIN auth_user modifier ON modifier.id = r.modified_by_id
    ORDER BY r.id
) TO STDOUT WITH (FORMAT csv, HEADER true)"""


def build(records: int, keywords: int, log) -> None:
    """One record made through the factories, copied by SQL to ``records`` in 20 collections (each
    copy its own URL), each with ``keywords`` keywords."""
    from django.db import connection

    from selection.models import Keyword
    from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
    from webarchive.permissions import Role

    started = time.perf_counter()
    librarian = UserFactory(username="louise", roles=[Role.LIBRARIAN])
    collections = [CollectionFactory(name=f"Collection {number:02}") for number in range(COLLECTIONS)]
    themes = [ThemeFactory(collection=collection, name="Presse") for collection in collections]
    model = RecordFactory(
        collection=collections[0],
        theme=themes[0],
        url="https://site-0.example.org/",
        responsible=librarian,
        supplementary_urls="https://site-0.example.org/plan\nhttps://site-0.example.org/flux",
        content_notes="Le site d'un quotidien régional, avec ses suppléments.",
    )
    model.keywords.set([Keyword.objects.create(name=f"mot-clé {number}") for number in range(keywords)])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'selection_record'"
            " AND column_name NOT IN ('id', 'url', 'url_key', 'host', 'registered_domain', 'collection_id',"
            " 'theme_id') ORDER BY ordinal_position"
        )
        kept = [row[0] for row in cursor.fetchall()]
        columns = ", ".join(kept)
        copied = ", ".join(f"r.{column}" for column in kept)
        # Each copy: its own host, in collection n % 20, with that collection's first theme.
        cursor.execute(
            f"""INSERT INTO selection_record (url, url_key, host, registered_domain, collection_id,
                theme_id, {columns})
            SELECT 'https://site-' || n || '.example.org/', 'org,example,site-' || n || ')/',
                'site-' || n || '.example.org', 'example.org', c.id,
                (SELECT min(t.id) FROM selection_theme t WHERE t.collection_id = c.id), {copied}
            FROM generate_series(1, %s) AS n
            JOIN selection_record r ON r.id = %s
            JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS position FROM selection_collection)
                AS c ON c.position = n %% {COLLECTIONS}""",  # noqa: S608 (our names and numbers)
            [records - 1, model.pk],
        )
        cursor.execute(
            """INSERT INTO selection_record_keywords (record_id, keyword_id)
            SELECT r.id, rk.keyword_id FROM selection_record r
            CROSS JOIN (SELECT keyword_id FROM selection_record_keywords WHERE record_id = %s) AS rk
            WHERE r.id <> %s""",
            [model.pk, model.pk],
        )
        cursor.execute("ANALYZE")
    log(f"  {records:,} records built in {time.perf_counter() - started:.1f} s")


def ours() -> tuple[float, int, int]:
    """Seconds, bytes and lines of the export read to its end."""
    from selection.csvio import records_csv_stream
    from selection.models import Record

    started = time.perf_counter()
    size = lines = 0
    for chunk in records_csv_stream(Record.objects.all()):
        size += len(chunk.encode())
        lines += chunk.count("\r\n")
    return time.perf_counter() - started, size, lines


def peer() -> tuple[float, int, int]:
    """Seconds, bytes and lines of PostgreSQL's own CSV of the same columns, read to its end."""
    from django.db import connection
    from django.utils import timezone

    started = time.perf_counter()
    size = lines = 0
    with connection.cursor() as cursor:
        statement = PEER.replace("%(zone)s", "'" + timezone.get_current_timezone_name() + "'")
        with cursor.cursor.copy(statement) as copy:
            for block in copy:
                size += len(block)
                lines += bytes(block).count(b"\n")
    return time.perf_counter() - started, size, lines


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000, help="records exported")
    parser.add_argument("--keywords", type=int, default=2, help="keywords of each record")
    parser.add_argument("--runs", type=int, default=3, help="runs of each, in turns (the best kept)")
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL.format(pid=os.getpid()),
        help="the throwaway PostgreSQL database to create, use and drop (it must not exist)",
    )
    args = parser.parse_args(argv)
    if args.records < 1 or args.keywords < 0 or args.runs < 1:
        parser.error("--records and --runs must be positive, --keywords 0 or more")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)

    from benchmarks.environment import cpus, memory, throwaway_database

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with throwaway_database(args.database_url, allow_sqlite=False) as name:
        os.environ["DATABASE_URL"] = args.database_url
        os.environ["DEBUG"] = "0"  # as in production: no query log kept in memory
        os.environ.setdefault("SECRET_KEY", "benchmark-only")
        os.environ.setdefault("ALLOWED_HOSTS", "localhost")
        os.environ["DJANGO_SETTINGS_MODULE"] = "webarchive.settings"
        import django
        from django.core.management import call_command
        from django.db import connection

        django.setup()
        log(f"Database {name}: migrating")
        call_command("migrate", verbosity=0)
        build(args.records, args.keywords, log)
        runs: dict[str, list[tuple[float, int, int]]] = {"ours": [], "peer": []}
        for turn in range(1, args.runs + 1):
            runs["ours"].append(ours())
            runs["peer"].append(peer())
            log(f"  turn {turn}: ours {runs['ours'][-1][0]:.2f} s, peer {runs['peer'][-1][0]:.2f} s")
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
    best = {key: min(values) for key, values in runs.items()}
    per_record = {key: best[key][0] / args.records * 1e6 for key in best}
    labels = {
        "ours": "`records_csv_stream` (the export page's stream), read to its end",
        "peer": "PostgreSQL alone: `COPY (SELECT …) TO STDOUT WITH CSV`, the same columns",
    }
    lines = [
        "## CSV export of the records",
        "",
        f"- cpus: {cpus()}; memory: {memory()}; PostgreSQL {version}",
        f"- {args.records:,} records in {COLLECTIONS} collections, {args.keywords} keywords each",
        "",
        f"| measured (best of {args.runs}) | seconds | all runs | µs per record | MB | lines | time / peer |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for key in ("ours", "peer"):
        seconds, size, count = best[key]
        all_runs = ", ".join(f"{run[0]:.2f}" for run in runs[key])
        lines.append(
            f"| {labels[key]} | {seconds:.2f} | {all_runs} | {per_record[key]:.1f} | {size / 1e6:.1f}"
            f" | {count:,} | {seconds / best['peer'][0]:.2f} |"
        )
    met = per_record["ours"] < GOAL_MICROSECONDS
    lines += [
        "",
        f"- per record: **{per_record['ours']:.1f} µs** (goal: well under {GOAL_MICROSECONDS:.0f}:"
        f" {'PASS' if met else 'MISS'}); PostgreSQL alone {per_record['peer']:.1f} µs",
    ]
    print("\n".join(lines))
    return 0 if best["ours"][2] == best["peer"][2] else 1


if __name__ == "__main__":
    sys.exit(main())
