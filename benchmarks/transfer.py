"""Benchmark: the transfer from selection to planning of 50,000 records in 20 collections, on PostgreSQL.

    .venv/bin/python benchmarks/transfer.py [--records N] [--domains N] [--changed F] [--database-url URL]

Builds a throwaway PostgreSQL database (created, migrated and dropped by the script) holding
``--domains`` existing domains (default 1,000,000, each with its default seed list and
configuration, loaded by COPY as ``benchmarks/job_generation.py`` does) and ``--records`` validated
records (default 50,000) in 20 collections of uneven sizes (the largest about a seventh of all),
three quarters of their registered domains new, the others among the existing ones, several
records to a domain for some; frequencies and budgets varied, a few sites needing a browser, about
1 % of the records without a mapped definition (skipped). Then it times, collection by collection
with ``transfer_collection`` as a curator:

1. **first**: everything is new: domains, seed lists, configurations, their history;
2. **second**: nothing changed (it must write no row but its reports);
3. **third**: after ``--changed`` of the records (default 1 %) were changed: half got a
   supplementary URL (their seed list changes), half a new depth (a new configuration; the old one
   updated or detached);

and the **peer**, in the same run and on the same database: the configuration rows of the first
transfer (seed lists, configurations, their links and attachments) written again by one
``INSERT … SELECT`` each, without reading, comparing or history, rolled back: the physical limit.

It prints the seconds, rows and ratios as Markdown; the numbers go in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # the project (and benchmarks.environment), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_transfer_{pid}"
COLLECTIONS = 20
GOAL_SECONDS = 60.0
SEED = 20261127  # the records are random, but the same in every run


def build(records: int, domains: int, log):
    """The collections, their mappings and ``records`` validated records; returns the collections
    and the curator."""
    from django.db import connection
    from django.utils import timezone

    from benchmarks.job_generation import load_domains_copy
    from harvest.models import BudgetMapping, Domain
    from harvest.services.planning import (
        budget_mapping_save,
        collection_mapping_save,
        definition_save,
        schedule_save,
        template_save,
    )
    from selection.choices import Budget, Depth, Frequency, RecordStatus
    from selection.models import Record
    from tests.factories import CollectionFactory, ThemeFactory, UserFactory
    from webarchive.permissions import Role

    started = time.perf_counter()
    if domains:
        step = load_domains_copy(domains)
        log(f"  {step.rows:,} existing domains by COPY in {step.seconds:.1f} s")
    curator = UserFactory(username="claire", roles=[Role.CURATOR])
    librarian = UserFactory(username="louise", roles=[Role.LIBRARIAN])
    schedule = schedule_save(name="benchmark: daily at 3", start=timezone.now(), unit="day", at_hour=3)
    definitions = {
        frequency: definition_save(kind="selective", name=f"benchmark {frequency}", schedule=schedule)
        for frequency in (Frequency.DAILY, Frequency.WEEKLY, Frequency.MONTHLY, Frequency.ANNUAL)
    }
    rendered = template_save(name="benchmark-rendered", depth_policy="host", render="all")
    for mapping in BudgetMapping.objects.all():
        budget_mapping_save(mapping=mapping, browser_template=rendered)
    weights = [1 / (n + 1) ** 0.8 for n in range(COLLECTIONS)]
    sizes = [int(records * w / sum(weights)) for w in weights]
    sizes[0] += records - sum(sizes)
    rng = random.Random(SEED)  # noqa: S311 (reproducible data, not secrets)
    budgets, depths = list(Budget.values), list(Depth.values)
    frequencies = [Frequency.WEEKLY, Frequency.MONTHLY, Frequency.MONTHLY, Frequency.ANNUAL, Frequency.DAILY]
    new_pool = max(1, int(records * 0.6))  # new domains drawn from here: some get several records
    collections = []
    number = 0
    for index, size in enumerate(sizes):
        collection = CollectionFactory(name=f"Collection {index:02}")
        collections.append(collection)
        theme = ThemeFactory(collection=collection, name="Presse")
        for frequency in definitions:
            collection_mapping_save(
                collection=collection, frequency=frequency, harvest_definition=definitions[frequency]
            )
        rows = []
        for _ in range(size):
            number += 1
            if domains and rng.random() < 0.25:
                domain = f"bench-{rng.randrange(domains):07d}.fr"
            else:
                domain = f"new-{rng.randrange(new_pool):07d}.fr"
            host = f"{rng.choice(['www', 'www', 'blog', 'actu'])}.{domain}"
            url = f"https://{host}/rubrique-{number}/"
            # About 1 % with a frequency no definition is mapped to (skipped, with the reason).
            frequency = Frequency.ONCE if rng.random() < 0.01 else rng.choice(frequencies)
            rows.append(
                Record(
                    collection=collection,
                    url=url,
                    url_key=f"{host},rubrique-{number})/",
                    host=host,
                    registered_domain=domain,
                    supplementary_urls=f"https://{host}/sitemap.xml" if rng.random() < 0.2 else "",
                    theme=theme,
                    responsible=librarian,
                    created_by=librarian,
                    modified_by=librarian,
                    budget=rng.choice(budgets),
                    depth=rng.choice(depths),
                    frequency=frequency,
                    needs_browser=rng.random() < 0.03,
                    status=RecordStatus.VALIDATED,
                )
            )
        Record.objects.bulk_create(rows, batch_size=5000)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    log(
        f"  {records:,} records in {COLLECTIONS} collections ({sizes[0]:,} to {sizes[-1]:,}) over"
        f" {Domain.objects.count():,} existing domains, built in {time.perf_counter() - started:.1f} s"
    )
    return collections, curator


def transfer_all(collections, curator) -> dict:
    """Every collection transferred, one transaction each: the seconds and the reports' totals."""
    from harvest.models import Domain, DomainConfiguration, SeedList
    from harvest.services.transfer import transfer_collection

    history = sum(model.history.count() for model in (Domain, SeedList, DomainConfiguration))
    started = time.perf_counter()
    totals = dict.fromkeys(("created", "updated", "unchanged", "detached", "skipped", "domains_created"), 0)
    slowest = (0.0, "")
    for collection in collections:
        began = time.perf_counter()
        report = transfer_collection(collection=collection, user=curator)
        slowest = max(
            slowest,
            (
                time.perf_counter() - began,
                f"{collection.name} ({report.created + report.updated + report.unchanged:,} configurations)",
            ),
        )
        for key in totals:
            totals[key] += len(report.details[key]) if key == "domains_created" else getattr(report, key)
    totals["seconds"] = time.perf_counter() - started
    totals["history"] = (
        sum(model.history.count() for model in (Domain, SeedList, DomainConfiguration)) - history
    )
    totals["slowest"] = slowest
    return totals


def change(records: int, share: float) -> int:
    """Change ``share`` of the validated records: half get a supplementary URL, half a new depth."""
    from selection.choices import Depth, RecordStatus
    from selection.models import Record

    rng = random.Random(SEED + 1)  # noqa: S311
    pks = list(Record.objects.filter(status=RecordStatus.VALIDATED).values_list("pk", flat=True))
    chosen = rng.sample(pks, max(1, int(records * share)))
    half = len(chosen) // 2
    changed = []
    for record in Record.objects.filter(pk__in=chosen[:half]):
        record.supplementary_urls = f"https://{record.host}/flux.xml"
        changed.append(record)
    Record.objects.bulk_update(changed, ["supplementary_urls"])
    changed = []
    depths = list(Depth.values)
    for record in Record.objects.filter(pk__in=chosen[half:]):
        record.depth = rng.choice([d for d in depths if d != record.depth])
        changed.append(record)
    Record.objects.bulk_update(changed, ["depth"])
    return len(chosen)


def peer() -> dict:
    """The transfer's rows written again by one INSERT … SELECT each (rolled back): the limit."""
    from django.db import connection, transaction

    statements = [
        # seed lists and configurations under another name, their links, their attachments
        """INSERT INTO harvest_seedlist (domain_id, name, seeds, comments, updated_at, version)
        SELECT domain_id, name || '~', seeds, comments, now(), 1 FROM harvest_seedlist s
        WHERE EXISTS (SELECT 1 FROM harvest_domainconfiguration c
            WHERE c.domain_id = s.domain_id AND c.name = s.name AND c.source_collection_id IS NOT NULL)""",
        """INSERT INTO harvest_domainconfiguration (domain_id, name, template_id, max_objects, max_bytes,
            max_request_rate, comments, source_collection_id, updated_at, version)
        SELECT domain_id, name || '~', template_id, max_objects, max_bytes, max_request_rate, comments,
            source_collection_id, now(), 1
        FROM harvest_domainconfiguration WHERE source_collection_id IS NOT NULL""",
        """INSERT INTO harvest_domainconfiguration_seed_lists (domainconfiguration_id, seedlist_id)
        SELECT c.id, s.id FROM harvest_domainconfiguration c
        JOIN harvest_seedlist s ON s.domain_id = c.domain_id AND s.name = c.name
        WHERE c.name LIKE '%%~'""",
        """INSERT INTO harvest_harvestdefinition_configurations (harvestdefinition_id, domainconfiguration_id)
        SELECT a.harvestdefinition_id, copy.id FROM harvest_harvestdefinition_configurations a
        JOIN harvest_domainconfiguration c ON c.id = a.domainconfiguration_id
        JOIN harvest_domainconfiguration copy ON copy.domain_id = c.domain_id AND copy.name = c.name || '~'
        WHERE c.source_collection_id IS NOT NULL""",
    ]
    rows = []
    started = time.perf_counter()
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
                rows.append(cursor.rowcount)
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the foreign keys checked, as at a commit
            seconds = time.perf_counter() - started
            raise _RollBack
    except _RollBack:
        pass
    return {"seconds": seconds, "rows": rows}


class _RollBack(Exception):
    pass


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000, help="validated records")
    parser.add_argument("--domains", type=int, default=1_000_000, help="existing domains")
    parser.add_argument(
        "--changed", type=float, default=0.01, help="share of records changed before the third"
    )
    parser.add_argument(
        "--database-url",
        default=DEFAULT_DATABASE_URL.format(pid=os.getpid()),
        help="the throwaway PostgreSQL database to create, use and drop (it must not exist)",
    )
    args = parser.parse_args(argv)
    if args.records < COLLECTIONS or args.domains < 0 or not 0 < args.changed <= 1:
        parser.error(f"--records at least {COLLECTIONS}, --domains 0 or more, --changed in (0, 1]")
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
        collections, curator = build(args.records, args.domains, log)
        runs = {}
        for label in ("first", "second"):
            load = os.getloadavg()[0]
            runs[label] = transfer_all(collections, curator)
            runs[label]["load"] = (load, os.getloadavg()[0])
            log(f"  {label}: {runs[label]['seconds']:.1f} s")
        limit = peer()
        log(f"  peer: {limit['seconds']:.1f} s")
        changed = change(args.records, args.changed)
        load = os.getloadavg()[0]
        runs["third"] = transfer_all(collections, curator)
        runs["third"]["load"] = (load, os.getloadavg()[0])
        log(f"  third: {runs['third']['seconds']:.1f} s")
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            version = cursor.fetchone()[0]
    labels = {
        "first": "first transfer (all new)",
        "second": "second (nothing changed)",
        "third": f"third (after {changed:,} records changed)",
    }
    peer_rows = sum(limit["rows"])
    lines = [
        "## Transfer from selection to planning",
        "",
        f"- cpus: {cpus()}; memory: {memory()}; PostgreSQL {version}",
        f"- {args.records:,} validated records in {COLLECTIONS} collections;"
        f" {args.domains:,} existing domains",
        "",
        "| measured | seconds | created | updated | unchanged | detached | skipped | domains created"
        " | history rows | slowest collection | load average | time / peer |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|",
    ]
    for key, label in labels.items():
        run = runs[key]
        lines.append(
            f"| {label} | {run['seconds']:.2f} | {run['created']:,} | {run['updated']:,}"
            f" | {run['unchanged']:,} | {run['detached']:,} | {run['skipped']:,}"
            f" | {run['domains_created']:,} | {run['history']:,}"
            f" | {run['slowest'][1]}: {run['slowest'][0]:.2f} s | {run['load'][0]:.1f} → {run['load'][1]:.1f}"
            f" | {run['seconds'] / limit['seconds']:.2f} |"
        )
    lines.append(
        f"| peer: `INSERT … SELECT` of the first's rows ({', '.join(f'{r:,}' for r in limit['rows'])}),"
        f" rolled back | {limit['seconds']:.2f} | {peer_rows:,} rows | | | | | | | | | 1.00 |"
    )
    met = runs["first"]["seconds"] < GOAL_SECONDS
    quiet = runs["second"]["created"] + runs["second"]["updated"] + runs["second"]["history"] == 0
    lines += [
        "",
        f"- first transfer: **{runs['first']['seconds']:.1f} s** for {args.records:,} records (goal: under"
        f" {GOAL_SECONDS:.0f} s: {'PASS' if met else 'MISS'})",
        f"- second: {'nothing written but the reports' if quiet else 'WROTE ROWS'}"
        f" ({runs['second']['seconds']:.2f} s)",
    ]
    print("\n".join(lines))
    return 0 if quiet else 1  # (the time is reported, not judged: the machine is shared)


if __name__ == "__main__":
    sys.exit(main())
