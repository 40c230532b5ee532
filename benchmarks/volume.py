"""The volume database: 3,000,000 domains, 50,000 records, a snapshot run and selective runs, on PostgreSQL.

    .venv/bin/python benchmarks/volume.py [--database-url URL] [--rebuild] [--domains N] [--records N]

Builds, and keeps, the database that the load test (benchmarks/load.py) and the page measurements
run against: what a national library holds after a few years (issues 29 and 30).

1. the migrations, then ``--domains`` domains (default 3,000,000) by the preload benchmark's
   generated lists and its run of the preload service (``benchmarks.preload``), and earlier
   harvests for a fifth of them with ``VACUUM ANALYZE`` (``benchmarks.job_generation``);
2. ``--records`` selection records (default 50,000) in 20 collections, bulk-created through the
   models: URLs of the loaded domains, themes, keywords, statuses, URL checks, dates spread over
   ten years; people of every role, among them the load test's accounts (``load.py``);
3. a snapshot definition launched over every domain (``definition_launch``, as the job generation
   benchmark times it: about 100 s at 3,000,000 domains) and three selective definitions whose
   configurations are chosen directly (the domains of validated records; not the records→
   configurations transfer, which is issue 29's business), each launched;
4. most jobs ended with plausible per-site figures (URLs, bytes, errors, revisits, stop reasons, a
   report by MIME type and status) written set-based (one ``UPDATE … FROM (SELECT …)``), their
   earlier-harvest rows by one ``INSERT … SELECT``; a handful of jobs left started with sites
   queued, running and ended, so that the engineers' polling pages have work;
5. the statistics of every ended job by the project's own command (``compute_statistics --all``),
   then ``VACUUM ANALYZE``.

The database is named by ``--database-url`` (default
``postgres://postgres@127.0.0.1:5432/webarchive_volume``) and kept; an existing one is refused
unless ``--rebuild`` (dropped and built again). Each stage's time is printed; nothing holds the
domains in memory (the loaders stream). ``--smoke`` is 3,000 domains and 300 records.
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
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != ROOT / "benchmarks"]
if str(ROOT) not in sys.path:  # the project (and benchmarks.*), when run as a script
    sys.path.insert(0, str(ROOT))
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/webarchive_volume"
COLLECTIONS = 20
KEYWORDS = 120
SEED = 2026  # the generated selection is random, but the same in every build
# The load test's accounts (benchmarks/load.py): as many of each role as it simulates people.
LOAD_PASSWORD = "load-test-only"  # noqa: S105 (a benchmark database's accounts, never production)
LOAD_PEOPLE = {"librarian": 24, "curator": 12, "engineer": 8, "manager": 6}
RUNNING_SNAPSHOT_JOBS = 3  # jobs of the snapshot left running; and one of each selective definition
COLLECTION_NAMES = [
    "News and press",
    "Science and research",
    "Elections 2027",
    "Regional heritage",
    "Literature and publishing",
    "Blogs and personal sites",
    "Music and performing arts",
    "Sports",
    "Local government",
    "Associations",
    "Museums and libraries",
    "Education",
    "Health",
    "Economy and business",
    "Religion",
    "Cinema and television",
    "Comics and illustration",
    "Environment",
    "Overseas territories",
    "Video games",
]
THEMES = ["Général", "Presse", "Institutions", "Personnes", "Événements"]
WORDS = [
    "presse",
    "régional",
    "politique",
    "culture",
    "sciences",
    "patrimoine",
    "jeunesse",
    "sport",
    "musique",
    "élection",
    "blog",
    "revue",
    "association",
    "musée",
    "université",
    "commune",
]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Timings:
    """Each build stage's seconds, printed as it ends and in a table at the end."""

    def __init__(self):
        self.stages: list[tuple[str, float, str]] = []

    def run(self, name: str, function, *args, **kwargs):
        log(f"{name} …")
        started = time.perf_counter()
        note = function(*args, **kwargs)
        seconds = time.perf_counter() - started
        self.stages.append((name, seconds, str(note or "")))
        log(f"  {name}: {seconds:,.1f} s {note or ''}")
        return note

    def table(self) -> str:
        lines = ["| build stage | seconds | what |", "|---|---:|---|"]
        lines += [f"| {name} | {seconds:,.1f} | {note} |" for name, seconds, note in self.stages]
        total = sum(seconds for _name, seconds, _note in self.stages)
        lines.append(f"| **whole build** | **{total:,.1f}** | |")
        return "\n".join(lines)


# The database ------------------------------------------------------------------------------------


def create_database(url: str, *, rebuild: bool) -> str:
    """Create the database ``url`` names; an existing one is refused, or dropped first with ``rebuild``."""
    import psycopg
    from psycopg import sql

    from benchmarks.environment import maintenance_connection

    server, name = maintenance_connection(url)
    with psycopg.connect(**server, autocommit=True) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if exists and not rebuild:
            raise SystemExit(f"The database {name} exists; give --rebuild to drop it and build it again.")
        if exists:
            log(f"Dropping the database {name} (--rebuild)")
            connection.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return name


def django_setup(url: str) -> None:
    """Django on ``url`` as in production (DEBUG off: no query log kept in memory)."""
    os.environ.update({"DATABASE_URL": url, "DEBUG": "0", "DJANGO_SETTINGS_MODULE": "webarchive.settings"})
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("ALLOWED_HOSTS", "localhost,127.0.0.1")
    # Tasks the services enqueue (launch_due, …) go to a broker of the build's own, read by nobody.
    os.environ.setdefault("WEBARCHIVE_VAR_DIR", str(ROOT / "var" / "bench" / "volume"))
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    import django

    django.setup()


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


# Domains -----------------------------------------------------------------------------------------


def load_domains(domains: int, data: Path) -> str:
    """The preload benchmark's lists, run through the preload service (its snapshot: "bench-broad")."""
    from benchmarks import preload

    paths = preload.generate(data, domains, log)
    _total, _stages, run = preload.ours(paths, log)
    return f"{run.statistics['new']:,} domains"


def load_history() -> str:
    from benchmarks import job_generation

    step = job_generation.load_history(0.2)
    return f"{step.rows:,} earlier harvests"


def analyse() -> str:
    from benchmarks import job_generation

    job_generation.analyse()
    return ""


# Selection ---------------------------------------------------------------------------------------


def people() -> str:
    """The load test's accounts, of each role (password ``LOAD_PASSWORD``): see :func:`accounts_ensure`."""
    return f"{accounts_ensure(LOAD_PEOPLE)} accounts"


def accounts_ensure(counts: dict[str, int]) -> int:
    """``load-<role>-NN`` accounts with exactly their role and the password ``LOAD_PASSWORD``, created or
    corrected where missing or different; how many were. The password is hashed once for all (the
    hasher's full cost: the load test logs in with it), roles given by the permissions' own service."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password

    from webarchive.permissions import Role, user_roles, user_set_roles

    hashed, changed = None, 0
    for role, count in counts.items():
        for number in range(1, count + 1):
            user, created = get_user_model().objects.get_or_create(username=f"load-{role}-{number:02}")
            if created or not user.is_active or not user.check_password(LOAD_PASSWORD):
                hashed = hashed or make_password(LOAD_PASSWORD)
                user.password, user.is_active = hashed, True
                user.save(update_fields=["password", "is_active"])
                changed += 1
            if user_roles(user) != {Role(role)}:
                user_set_roles(user=user, roles={Role(role)})
                changed += not created
    return changed


def selection(records: int, domains: int) -> str:
    """Collections, themes, keywords and ``records`` records, bulk-created (history rows not written)."""
    from django.contrib.auth import get_user_model
    from django.db import connection, transaction
    from django.utils import timezone

    from benchmarks.preload import domain
    from selection.choices import Budget, CheckStatus, CollectionKind, Depth, Frequency, RecordStatus
    from selection.models import Collection, Keyword, Record, Theme
    from selection.urlcheck import UrlCheckResult
    from webarchive.urlnorm import registered_domain, url_host, url_key

    rng = random.Random(SEED)  # noqa: S311 (test data, not secrets)
    checked = timezone.now().isoformat()
    librarians = list(get_user_model().objects.filter(username__startswith="load-librarian-").order_by("pk"))
    curators = list(get_user_model().objects.filter(username__startswith="load-curator-").order_by("pk"))
    with transaction.atomic():
        collections = []
        for number, name in enumerate(COLLECTION_NAMES):
            collection = Collection.objects.create(
                name=name,
                description=f"{name}: the sites the library's selectors follow.",
                kind=[CollectionKind.DEPARTMENT, CollectionKind.PROJECT, CollectionKind.EVENT][number % 3],
            )
            # Each librarian works on two collections.
            collection.members.set(librarians[number % len(librarians) :: 10][:3] if librarians else [])
            collections.append(collection)
        themes = {
            collection.pk: [Theme.objects.create(collection=collection, name=name) for name in THEMES]
            for collection in collections
        }
        keywords = Keyword.objects.bulk_create(
            [Keyword(name=f"{WORDS[n % len(WORDS)]} {n // len(WORDS) + 1}") for n in range(KEYWORDS)]
        )
        statuses = [RecordStatus.VALIDATED] * 7 + [RecordStatus.PROPOSED] * 2 + [RecordStatus.REJECTED]
        checks = [CheckStatus.OK] * 8 + [CheckStatus.REDIRECT, CheckStatus.UNREACHABLE]
        batch, through = [], Record.keywords.through
        step = 59  # coprime with the domain counts used (3,000 and 3,000,000): distinct domains
        for index in range(records):
            name = domain((index * step) % domains)
            roll = rng.random()
            url = (
                f"https://www.{name}/"
                if roll < 0.5
                else f"http://{name}/"
                if roll < 0.8
                else f"https://{name}/rubrique-{index % 37}/"
            )
            host = url_host(url)
            collection = collections[index % COLLECTIONS]
            status = rng.choice(statuses)
            check = rng.choice(checks)
            batch.append(
                Record(
                    collection=collection,
                    url=url,
                    url_key=url_key(url),
                    host=host,
                    registered_domain=registered_domain(host),
                    supplementary_urls=f"https://{name}/plan-du-site\n" if roll < 0.3 else "",
                    responsible=rng.choice(librarians),
                    created_by=rng.choice(librarians),
                    modified_by=rng.choice(curators)
                    if status != RecordStatus.PROPOSED
                    else rng.choice(librarians),
                    budget=rng.choice(list(Budget)),
                    frequency=rng.choice(list(Frequency)),
                    depth=rng.choice([Depth.HOST, Depth.HOST, Depth.DOMAIN, Depth.PATH, Depth.PAGE_PLUS_1]),
                    needs_browser=rng.random() < 0.05,
                    theme=rng.choice(themes[collection.pk]),
                    content_notes=f"Site de {name.split('.')[0].replace('-', ' ')},"
                    f" suivi depuis {2015 + index % 11}.",
                    technical_notes="Calendrier infini sous /agenda/." if roll > 0.95 else "",
                    status=status,
                    status_reason="Hors du périmètre du dépôt légal."
                    if status == RecordStatus.REJECTED
                    else "",
                    check_status=check,
                    check_result=UrlCheckResult(
                        url=url,
                        status=check,
                        message="Checked when proposed.",
                        final_url=url,
                        checked_at=checked,
                    ).as_dict(),
                )
            )
            if len(batch) == 5000 or index == records - 1:
                created = Record.objects.bulk_create(batch)
                through.objects.bulk_create(
                    [
                        through(record_id=record.pk, keyword_id=keyword.pk)
                        for record in created
                        for keyword in rng.sample(keywords, rng.randint(1, 3))
                    ]
                )
                batch = []
        # Dates spread over ten years (set-based: auto_now_add wrote the build's time).
        with connection.cursor() as cursor:
            cursor.execute(
                """UPDATE selection_record SET
                    created_at = now() - (random() * 3650 || ' days')::interval,
                    checked_at = now() - (random() * 365 || ' days')::interval"""
            )
            cursor.execute(
                """UPDATE selection_record SET
                    modified_at = created_at
                        + (random() * extract(epoch FROM now() - created_at) || ' s')::interval,
                    status_changed_at = CASE WHEN status <> 'proposed'
                        THEN created_at + (random() * 30 || ' days')::interval END,
                    status_changed_by_id = CASE WHEN status <> 'proposed' THEN modified_by_id END"""
            )
    return f"{records:,} records, {COLLECTIONS} collections, {KEYWORDS} keywords"


# Harvest definitions and runs --------------------------------------------------------------------


SELECTIVE = [
    # name, collections whose validated records' domains it harvests, schedule
    ("News weekly", ["News and press", "Elections 2027"], ("Weekly", 7)),
    ("Science monthly", ["Science and research"], ("Monthly", 30)),
    ("Blogs twice a year", ["Blogs and personal sites"], ("Twice a year", 182)),
]


def selective_definitions() -> str:
    """Three selective definitions, their configurations the validated records' domains' defaults."""
    from harvest.choices import HarvestKind
    from harvest.models import Domain, HarvestDefinition
    from harvest.services.planning import definition_save, schedule_save
    from selection.choices import RecordStatus
    from selection.models import Record

    attached = 0
    for name, collections, (schedule_name, days) in SELECTIVE:
        schedule = schedule_save(name=schedule_name, every=days, unit="day")
        definition = definition_save(kind=HarvestKind.SELECTIVE, name=name, schedule=schedule)
        domains = Record.objects.filter(
            collection__name__in=collections, status=RecordStatus.VALIDATED
        ).values("registered_domain")
        ids = list(Domain.objects.filter(name__in=domains).values_list("default_configuration_id", flat=True))
        HarvestDefinition.configurations.through.objects.bulk_create(
            [
                HarvestDefinition.configurations.through(
                    harvestdefinition_id=definition.pk, domainconfiguration_id=pk
                )
                for pk in ids
            ]
        )
        attached += len(ids)
    return f"{len(SELECTIVE)} definitions, {attached:,} configurations"


def launch(name: str) -> str:
    """Launch one definition as the job generation benchmark does (``definition_launch``)."""
    from benchmarks.job_generation import Result
    from benchmarks.job_generation import launch as timed_launch
    from harvest.models import HarvestDefinition

    definition = HarvestDefinition.objects.get(name=name)
    result = Result(domains=0)
    timed_launch(result, definition)
    return f"{result.jobs:,} jobs, {result.job_configurations:,} sites"


def harvest_definitions_name() -> None:
    from harvest.models import HarvestDefinition

    HarvestDefinition.objects.filter(name="bench-broad").update(name="Broad crawl 2026")


# Ending the jobs ---------------------------------------------------------------------------------


# Each site's figures from two random draws: u, log-uniform URLs (1 to 20,000), and r, the outcome.
SITE_FIGURES = """
    state = 'ended', attempts = 1, worker = 'crawl-' || (jc.id %% 4) || '@crawler',
    started_at = j.started_at + (s.r * 3600 || ' s')::interval,
    ended_at = j.started_at + ((s.r * 3600 + 60 + s.u * 0.6) || ' s')::interval,
    progress_at = j.started_at + ((s.r * 3600 + 60 + s.u * 0.6) || ' s')::interval,
    urls_done = CASE WHEN s.r < 0.03 THEN 0 ELSE s.u END,
    urls_queued = CASE WHEN s.r < 0.70 THEN 0 ELSE (s.u * s.r)::bigint END,
    bytes_done = CASE WHEN s.r < 0.03 THEN 0 ELSE s.u * (20000 + (s.r * 60000)::bigint) END,
    error_count = CASE WHEN s.r < 0.03 THEN 1 ELSE (s.u * 0.02 * s.r)::bigint END,
    duplicates = (s.u * 0.1 * s.r)::bigint,
    duplicate_bytes = (s.u * 0.1 * s.r)::bigint * 15000,
    rate = CASE WHEN s.r < 0.03 THEN 0 ELSE 1.5 + s.r * 4 END,
    current_url = '',
    stop_reason = CASE
        WHEN s.r < 0.03 THEN 'failed' WHEN s.r < 0.70 THEN 'completed' WHEN s.r < 0.85 THEN 'object-limit'
        WHEN s.r < 0.92 THEN 'byte-limit' WHEN s.r < 0.97 THEN 'time-limit' ELSE 'config-object-limit' END,
    error = CASE WHEN s.r < 0.03 THEN 'DNS lookup failed: no address for the host' ELSE '' END,
    report = CASE WHEN s.r < 0.03 THEN '{}'::jsonb ELSE jsonb_build_object(
        'mime_types', jsonb_build_object(
            'text/html', jsonb_build_array((s.u * 0.55)::bigint, (s.u * 0.55)::bigint * 30000),
            'image/jpeg', jsonb_build_array((s.u * 0.25)::bigint, (s.u * 0.25)::bigint * 90000),
            'text/css', jsonb_build_array((s.u * 0.05)::bigint, (s.u * 0.05)::bigint * 8000),
            'application/javascript', jsonb_build_array((s.u * 0.08)::bigint, (s.u * 0.08)::bigint * 40000),
            'application/pdf', jsonb_build_array((s.u * 0.02)::bigint, (s.u * 0.02)::bigint * 400000),
            'image/png', jsonb_build_array(s.u - (s.u * 0.95)::bigint, (s.u - (s.u * 0.95)::bigint) * 20000)),
        'status_codes', jsonb_build_object(
            '200', (s.u * 0.9)::bigint, '301', (s.u * 0.05)::bigint, '404', s.u - (s.u * 0.95)::bigint),
        'status_bytes', jsonb_build_object(
            '200', (s.u * 0.9)::bigint * 40000, '301', (s.u * 0.05)::bigint * 300,
            '404', (s.u - (s.u * 0.95)::bigint) * 2000)) END
"""


def _end_sites(cursor, where: str, params: list) -> int:
    """End the sites ``where`` selects with plausible figures, in one set-based statement."""
    cursor.execute(
        f"""UPDATE harvest_jobconfiguration jc SET {SITE_FIGURES}
        FROM (SELECT id, floor(exp(random() * ln(20000)))::bigint AS u, random() AS r
              FROM harvest_jobconfiguration WHERE {where}) s, harvest_job j
        WHERE jc.id = s.id AND j.id = jc.job_id""",  # noqa: S608 (our statements, values as parameters)
        params,
    )
    return cursor.rowcount


def end_jobs() -> str:
    """Most jobs ended (done, a few stopped or failed) with their sites' figures; a handful left running."""
    from django.db import connection, transaction
    from django.utils import timezone

    from harvest.models import HarvestDefinition, Job

    now = timezone.now()
    running = []
    launched = Job.objects.filter(status="submitted")
    for definition in HarvestDefinition.objects.filter(jobs__in=launched).distinct().order_by("pk"):
        jobs = list(
            launched.filter(harvest_definition=definition).order_by("-pk").values_list("pk", flat=True)
        )
        # Of the snapshot, one job at least ends whatever its number of jobs (a small database, --smoke,
        # may split it in three or fewer): the statistics and the pages of ended jobs need one.
        left = min(RUNNING_SNAPSHOT_JOBS, len(jobs) - 1) if definition.kind == "snapshot" else 1
        running += jobs[:left]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.2026)")
        # Snapshot jobs started 12 days ago, one after the other; selective ones last month.
        cursor.execute(
            """UPDATE harvest_job j SET
                submitted_at = base.started - interval '5 minutes', dispatched_at = base.started,
                started_at = base.started,
                ended_at = CASE WHEN j.id = ANY(%(running)s) THEN NULL
                    ELSE base.started + ((3 + random() * 30) || ' hours')::interval END,
                status = CASE WHEN j.id = ANY(%(running)s) THEN 'started'
                    WHEN j.id %% 97 = 5 THEN 'stopped' WHEN j.id %% 89 = 7 THEN 'failed' ELSE 'done' END,
                errors = CASE WHEN j.id %% 89 = 7 AND NOT j.id = ANY(%(running)s)
                    THEN 'The crawl worker stopped answering.' ELSE '' END
            FROM (SELECT j2.id, CASE WHEN j2.id = ANY(%(running)s) THEN %(now)s - interval '2 hours'
                        WHEN d.kind = 'snapshot' THEN %(now)s - interval '12 days'
                            + (row_number() OVER (PARTITION BY d.id ORDER BY j2.id) || ' hours')::interval
                        ELSE %(now)s - interval '35 days' END AS started
                  FROM harvest_job j2 JOIN harvest_harvestdefinition d ON d.id = j2.harvest_definition_id
                  WHERE j2.run_id IS NOT NULL AND j2.status = 'submitted') base
            WHERE j.id = base.id""",
            {"running": running, "now": now},
        )
        ended = _end_sites(
            cursor,
            "job_id <> ALL(%s) AND job_id IN (SELECT id FROM harvest_job WHERE ended_at IS NOT NULL)",
            [running],
        )
        # The running jobs: about 40 % of their sites ended, 8 running, the rest queued.
        _end_sites(cursor, "job_id = ANY(%s) AND id %% 5 < 2", [running])
        cursor.execute(
            """UPDATE harvest_jobconfiguration jc SET state = 'running', attempts = 1,
                worker = 'crawl-' || (jc.id %% 4) || '@crawler', started_at = %(now)s - interval '20 minutes',
                progress_at = %(now)s, urls_done = 50 + jc.id %% 900, urls_queued = 200 + jc.id %% 3000,
                bytes_done = (50 + jc.id %% 900) * 35000, error_count = jc.id %% 7, rate = 2.5,
                current_url = 'https://' || d.name || '/page-' || (jc.id %% 400) || '.html'
            FROM harvest_domain d
            WHERE d.id = jc.domain_id AND jc.id IN (
                SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY job_id ORDER BY id) AS n
                    FROM harvest_jobconfiguration WHERE job_id = ANY(%(running)s) AND state = 'queued') q
                WHERE q.n <= 8)""",
            {"running": running, "now": now},
        )
        # What each ended site yielded, as harvest_info_record writes it when a site ends.
        cursor.execute(
            """INSERT INTO harvest_harvestinfo (job_id, configuration_id, domain_id, object_count, byte_count,
                stop_reason, created_at)
            SELECT job_id, configuration_id, domain_id, urls_done, bytes_done, stop_reason, ended_at
            FROM harvest_jobconfiguration WHERE state = 'ended'"""
        )
        infos = cursor.rowcount
    return f"{ended:,} sites ended, {infos:,} harvest infos, running jobs {running}"


def statistics() -> str:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("compute_statistics", "--all", stdout=out)
    return out.getvalue().strip()


def vacuum() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return ""


def summary() -> str:
    """What the database holds, counted."""
    from django.db import connection

    lines = ["| table | rows |", "|---|---:|"]
    with connection.cursor() as cursor:
        for table in (
            "harvest_domain",
            "selection_record",
            "selection_collection",
            "harvest_harvestdefinition",
            "harvest_job",
            "harvest_jobconfiguration",
            "harvest_harvestinfo",
            "harvest_jobstatistics",
            "harvest_statisticline",
        ):
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608 (our table names)
            lines.append(f"| {table} | {cursor.fetchone()[0]:,} |")
        cursor.execute("SELECT status, count(*) FROM harvest_job GROUP BY status ORDER BY status")
        jobs = ", ".join(f"{status} {count}" for status, count in cursor.fetchall())
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        size = cursor.fetchone()[0]
    return "\n".join([*lines, "", f"- jobs by status: {jobs}", f"- database size: {size}"])


def _stop(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL, help="the database to build (kept)")
    parser.add_argument("--rebuild", action="store_true", help="drop an existing database and build it again")
    parser.add_argument("--domains", type=int, default=3_000_000, help="domains (preload)")
    parser.add_argument("--records", type=int, default=50_000, help="selection records")
    parser.add_argument(
        "--data", type=Path, default=ROOT / "var" / "bench" / "preload", help="the preload lists"
    )
    parser.add_argument("--ready-file", type=Path, help="a file to touch once the database is built")
    parser.add_argument("--smoke", action="store_true", help="3,000 domains and 300 records")
    args = parser.parse_args(argv)
    if args.smoke:
        args.domains, args.records = 3000, 300
    if args.domains < 3000 or args.records < COLLECTIONS or args.records > args.domains:
        parser.error("--domains must be 3,000 or more, --records from 20 to the number of domains")
    if args.domains % 59 == 0:
        parser.error("--domains must not be a multiple of 59 (records take distinct domains)")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for stop in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop, _stop)

    timings = Timings()
    name = create_database(args.database_url, rebuild=args.rebuild)
    log(f"Database {name}")
    django_setup(args.database_url)
    timings.run("migrate", migrate)
    timings.run("domains (preload of 3 lists)", load_domains, args.domains, args.data)
    timings.run("earlier harvests (a fifth of the domains)", load_history)
    timings.run("VACUUM ANALYZE", analyse)
    timings.run("people (load test accounts)", people)
    timings.run("selection records", selection, args.records, args.domains)
    timings.run("selective definitions (configurations chosen directly)", selective_definitions)
    harvest_definitions_name()
    timings.run("snapshot launch (definition_launch)", launch, "Broad crawl 2026")
    for definition, _collections, _schedule in SELECTIVE:
        timings.run(f"launch of {definition!r}", launch, definition)
    timings.run("jobs ended, sites' figures (set-based)", end_jobs)
    timings.run("statistics (compute_statistics --all)", statistics)
    timings.run("VACUUM ANALYZE", vacuum)
    from benchmarks.environment import cpus, memory

    print(f"## Volume database {name}\n\n- machine: {cpus()} CPUs, {memory()}\n")
    print(timings.table())
    print()
    print(summary())
    if args.ready_file:
        args.ready_file.touch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
