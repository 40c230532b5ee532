"""Broad-crawl preparation (NAS_preload inside the application): domain lists into a snapshot harvest.

A :class:`~harvest.models.PreloadRun` goes through five stages, each resumable:

1. **ingest** — every source (a file of domains or URLs, a CSV column, the librarians' validated
   records) is read line by line; each line is normalised (harvest.preload.sources) to its
   registered domain (lower case, punycode, scheme, path and ``www.`` stripped; a URL is kept as
   a seed) or reported with its line number and reason. A large list is read by several
   processes (harvest.preload.normaliser). A source is read in one transaction: an interrupted
   one is read again.
2. **merge** — one SQL statement groups the accepted lines by domain, remembering every source
   (and seed), and marks which domains the database does not know yet.
3. **DNS check** — every domain is resolved (harvest.preload.dns) in batches; each batch's
   results are written before the next, so an interruption loses at most a batch.
4. **redirect discovery** — live domains are asked for ``http://domain/`` and
   ``http://www.domain/`` (harvest.preload.redirects); a redirect to a registered domain no source
   gave, and the database does not know, adds it, tagged "redirect from X".
5. **load** — new live domains are created in bulk with their seeds and default configuration
   (a range of domains and its "loaded" mark on the run in one transaction, several ranges side by
   side on PostgreSQL); existing domains without a DNS answer are
   made inactive (so the snapshot leaves them out), and those a preload made inactive that answer
   again are made active again.

Memory stays bounded: files and tables are streamed, batches are a few thousand rows.
"""

from __future__ import annotations

import csv
import itertools
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from harvest.choices import HarvestKind
from harvest.models import (
    Domain,
    DomainConfiguration,
    HarvestDefinition,
    PreloadDomain,
    PreloadEntry,
    PreloadInvalidLine,
    PreloadRun,
    PreloadSource,
    SeedList,
)
from harvest.models.domains import DEFAULT_CONFIGURATION, DEFAULT_SEED_LIST, UNLIMITED
from harvest.preload.limits import (
    nameserver_policy,
    nameserver_problem,
    remove_uploads,
    store_uploads,
    upload_folder,
)
from harvest.preload.normaliser import PartsReader, rows_from_copy_text
from harvest.preload.sources import SourceLine, Tally, csv_columns, file_lines, normalised, printable
from harvest.services.domains import batches, default_template
from webarchive.permissions import ADD, CHANGE, require

logger = logging.getLogger(__name__)

SELECTION_SOURCE = "selection"
BATCH = 5000
INVALID_KEPT = 1000  # invalid lines kept per source (all are counted)
SOURCE_NAME = re.compile(r"^[\w .()'-]{1,100}$")
MAX_NAMESERVERS = 10
STAGES = [
    PreloadRun.Stage.INGEST,
    PreloadRun.Stage.MERGE,
    PreloadRun.Stage.DNS,
    PreloadRun.Stage.REDIRECTS,
    PreloadRun.Stage.LOAD,
]


class Stopped(Exception):
    """An engineer asked the run to stop: it stops between two batches, resumable."""


# Sources -------------------------------------------------------------------------------------


def source_lines(source: PreloadSource) -> Iterator[SourceLine]:
    """The meaningful lines of a source: its file's, or the URLs of the librarians' validated records."""
    if source.path:
        yield from file_lines(source.path, column=source.column)
        return
    from selection.choices import RecordStatus
    from selection.models import Record

    urls = Record.objects.filter(status=RecordStatus.VALIDATED, is_active=True).values_list("pk", "url")
    for pk, url in urls.order_by("pk").iterator(chunk_size=BATCH):
        yield SourceLine(pk, url)


# Creating a run ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceSpec:
    name: str
    path: str = ""
    column: str = ""


@transaction.atomic
def preload_create(
    *,
    harvest_definition: HarvestDefinition,
    sources: list[SourceSpec],
    check_dns: bool = True,
    find_redirects: bool = True,
    include_selection: bool = True,
    nameservers: Iterable[str] = (),
    dns_timeout: float = 2.0,
    dns_retries: int = 1,
    user=None,
) -> PreloadRun:
    """A new run with its sources, checked: a snapshot definition, readable files, known columns."""
    require(user, ADD, PreloadRun)
    errors: dict[str, list[str]] = {}
    if harvest_definition.kind != HarvestKind.SNAPSHOT:
        errors.setdefault("harvest_definition", []).append(
            _("%(name)s is a selective harvest: choose a snapshot harvest definition.")
            % {"name": harvest_definition.name}
        )
    names = [spec.name.strip() for spec in sources]
    for spec, name in zip(sources, names, strict=True):
        if not SOURCE_NAME.match(name):
            errors.setdefault("sources", []).append(
                _("“%(name)s” is not a source name: up to 100 letters, digits, spaces and - _ . ( ) '.")
                % {"name": name}
            )
        elif name == SELECTION_SOURCE and include_selection:
            errors.setdefault("sources", []).append(
                _("“selection” is the name of the librarians' records; give the list another name.")
            )
        path = Path(spec.path)
        if not path.is_file():
            errors.setdefault("sources", []).append(
                _("%(path)s is not a readable file.") % {"path": spec.path}
            )
        elif spec.column:
            try:
                columns = csv_columns(str(path))
            except csv.Error:
                columns = []
            if spec.column not in columns:
                errors.setdefault("sources", []).append(
                    _("%(path)s has no column “%(column)s” (its columns: %(columns)s).")
                    % {
                        "path": spec.path,
                        "column": printable(spec.column),
                        "columns": printable(", ".join(columns)) or _("none"),
                    }
                )
    paths = [str(Path(spec.path).resolve()) for spec in sources]
    if len(set(paths)) != len(paths):
        errors.setdefault("sources", []).append(_("A file is given twice."))
    if not sources and not include_selection:
        errors.setdefault("sources", []).append(_("Give at least one list, or take the librarians' records."))
    nameservers = [line.strip() for line in nameservers if line.strip()]
    if len(nameservers) > MAX_NAMESERVERS:
        errors.setdefault("nameservers", []).append(
            _("Give at most %(max)d nameservers.") % {"max": MAX_NAMESERVERS}
        )
    elif nameservers:
        policy = nameserver_policy()
        for text in nameservers:
            problem = nameserver_problem(text, policy)
            if problem:
                errors.setdefault("nameservers", []).append(problem)
    if dns_timeout <= 0:
        errors.setdefault("dns_timeout", []).append(_("Give a timeout of more than 0 seconds."))
    if errors:
        raise ValidationError(errors)
    run = PreloadRun.objects.create(
        harvest_definition=harvest_definition,
        check_dns=check_dns,
        find_redirects=find_redirects,
        include_selection=include_selection,
        nameservers="\n".join(nameservers),
        dns_timeout=dns_timeout,
        dns_retries=dns_retries,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    for spec, name in zip(sources, names, strict=True):
        PreloadSource.objects.create(
            run=run, name=name, path=str(Path(spec.path).resolve()), column=spec.column
        )
    if include_selection:
        PreloadSource.objects.create(run=run, name=SELECTION_SOURCE)
    return run


@dataclass(frozen=True)
class UploadedSource:
    """A source given as uploaded files (Django ``UploadedFile``), as on the page."""

    name: str
    files: list
    column: str = ""


def preload_create_from_uploads(
    *, harvest_definition: HarvestDefinition, uploads: list[UploadedSource], user=None, **options
) -> PreloadRun:
    """A new run from uploaded lists, kept in a folder of their own under ``PRELOAD_UPLOAD_DIR``.

    Refused (ValidationError, nothing kept) when the lists hold more than
    ``PRELOAD_MAX_UPLOAD_BYTES`` together, or when ``preload_create`` refuses the run."""
    require(user, ADD, PreloadRun)
    folder = upload_folder()
    stored = store_uploads([upload for source in uploads for upload in source.files], folder)
    paths = iter(stored)
    sources = [
        SourceSpec(name=source.name, path=str(next(paths)), column=source.column)
        for source in uploads
        for _upload in source.files
    ]
    try:
        return preload_create(harvest_definition=harvest_definition, sources=sources, user=user, **options)
    except BaseException:
        remove_uploads(stored, folder)
        raise


# Running -------------------------------------------------------------------------------------


def preload_run(run_id: int, *, progress: Callable[[PreloadRun], None] | None = None) -> PreloadRun:
    """Run (or resume) a preparation to its end from the stage it is at. Idempotent."""
    with transaction.atomic():
        run = PreloadRun.objects.select_for_update().get(pk=run_id)
        if run.state == PreloadRun.State.DONE:
            return run
        run.state, run.error, run.stop_requested = PreloadRun.State.RUNNING, "", False
        run.started_at = run.started_at or timezone.now()
        run.save(update_fields=["state", "error", "stop_requested", "started_at"])
    try:
        for stage in STAGES[STAGES.index(run.stage) :] if run.stage in STAGES else []:
            _begin(run, stage)
            STAGE_FUNCTIONS[stage](run, progress or (lambda run: None))
            if stage == PreloadRun.Stage.LOAD:
                run.statistics = preload_statistics(run)
            run.stage = STAGES[STAGES.index(stage) + 1] if stage != STAGES[-1] else PreloadRun.Stage.DONE
            run.save(update_fields=["stage", "statistics"])
    except Stopped:
        PreloadRun.objects.filter(pk=run.pk).update(state=PreloadRun.State.STOPPED)
    except Exception as error:
        logger.exception("preload run %s failed in stage %s", run.pk, run.stage)
        PreloadRun.objects.filter(pk=run.pk).update(
            state=PreloadRun.State.FAILED,
            error=_storable(str(error))[:2000],
        )
    else:
        PreloadRun.objects.filter(pk=run.pk).update(state=PreloadRun.State.DONE, ended_at=timezone.now())
    run.refresh_from_db()
    return run


def _storable(text: str) -> str:
    """``text`` as any database stores it: no NUL (PostgreSQL), no lone surrogate (UTF-8)."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def preload_stop(*, run: PreloadRun, user=None) -> PreloadRun:
    """Ask a running preparation to stop after its current batch (it can be resumed)."""
    require(user, CHANGE, PreloadRun)
    PreloadRun.objects.filter(
        pk=run.pk, state__in=[PreloadRun.State.QUEUED, PreloadRun.State.RUNNING]
    ).update(stop_requested=True)
    run.refresh_from_db()
    return run


def _begin(run: PreloadRun, stage: str) -> None:
    run.stage = stage
    run.stage_done, run.stage_total, run.stage_started_at = 0, 0, timezone.now()
    run.save(update_fields=["stage", "stage_done", "stage_total", "stage_started_at"])


def _advance(run: PreloadRun, done: int, progress, *, total: int | None = None) -> None:
    """Record progress after a batch, and stop here if an engineer asked."""
    run.stage_done += done
    if total is not None:
        run.stage_total = total
    PreloadRun.objects.filter(pk=run.pk).update(stage_done=run.stage_done, stage_total=run.stage_total)
    progress(run)
    if PreloadRun.objects.filter(pk=run.pk, stop_requested=True).exists():
        raise Stopped


# 1. Ingest


def stage_ingest(run: PreloadRun, progress) -> None:
    sources = list(run.sources.all())
    run.stage_total = len(sources)
    for source in sources:
        if not source.ingested:
            ingest_source(run, source)
        _advance(run, 1, progress)


@transaction.atomic
def ingest_source(run: PreloadRun, source: PreloadSource) -> None:
    """Read one source into entries (all or nothing: an interrupted source is read again).

    A large list is read by several processes (harvest.preload.normaliser), whose rows go
    straight to ``COPY``; a small one, a CSV column and the librarians' records in this process."""
    PreloadEntry.objects.filter(source=source).delete()
    PreloadInvalidLine.objects.filter(source=source).delete()
    if _read_in_parts(source):
        reader = PartsReader(
            source.path,
            run_id=run.pk,
            source_id=source.pk,
            processes=settings.PRELOAD_PROCESSES,
            keep=INVALID_KEPT,
            language=translation.get_language(),
        )
        _copy_blocks(reader)
        tally = reader.tally
    else:
        tally = Tally()
        entries = normalised(source_lines(source), tally, keep=INVALID_KEPT)
        _insert_entries((run.pk, source.pk, name, seed) for name, seed in entries)
    PreloadInvalidLine.objects.bulk_create(
        [
            PreloadInvalidLine(source=source, line=line, text=text, reason=reason)
            for line, text, reason in tally.kept
        ],
        batch_size=1000,
    )
    source.lines, source.accepted, source.invalid, source.ingested = (
        tally.lines,
        tally.accepted,
        tally.invalid,
        True,
    )
    source.save(update_fields=["lines", "accepted", "invalid", "ingested"])


def _read_in_parts(source: PreloadSource) -> bool:
    """A list (not a CSV column) large enough to be worth several processes, when there are several."""
    return bool(
        source.path
        and not source.column
        and settings.PRELOAD_PROCESSES > 1
        and Path(source.path).stat().st_size >= settings.PRELOAD_PARALLEL_BYTES
    )


COPY_BATCH = 100_000
ENTRY_COLUMNS = "(run_id, source_id, name, seed)"


def _insert_entries(rows: Iterator[tuple]) -> None:
    """COPY on PostgreSQL (the database's own bulk path), batched INSERTs elsewhere.

    Rows are gathered a batch at a time before each COPY: a source read from the database (the
    librarians' records) queries it between batches, which it cannot do while a COPY is open."""
    if connection.vendor == "postgresql":
        table = PreloadEntry._meta.db_table
        for batch in batches(rows, COPY_BATCH):
            with (
                connection.cursor() as cursor,
                cursor.copy(f"COPY {table} {ENTRY_COLUMNS} FROM STDIN") as copy,
            ):
                for row in batch:
                    copy.write_row(row)
        return
    for batch in batches(rows, BATCH):
        PreloadEntry.objects.bulk_create(
            [PreloadEntry(run_id=r, source_id=s, name=n, seed=seed) for r, s, n, seed in batch],
            batch_size=BATCH,
        )


def _copy_blocks(blocks: Iterable[bytes]) -> None:
    """Blocks of entries in ``COPY`` text format: passed as they are to ``COPY`` on PostgreSQL."""
    if connection.vendor == "postgresql":
        table = PreloadEntry._meta.db_table
        with connection.cursor() as cursor, cursor.copy(f"COPY {table} {ENTRY_COLUMNS} FROM STDIN") as copy:
            for block in blocks:
                copy.write(block)
        return
    _insert_entries(row for block in blocks for row in rows_from_copy_text(block))


# 2. Merge


def stage_merge(run: PreloadRun, progress) -> None:
    """Group the entries by domain (sources and seeds kept), and mark the domains not known yet.

    One statement over the entries, which have no index: a sort of millions of rows is what the
    database does fastest, and every domain is marked known or new (and, without a DNS check,
    live) as it is written, with no second pass. On PostgreSQL the names are cut into ranges for
    ``PRELOAD_CONNECTIONS`` connections, each merging its range in its own transaction (a resumed
    merge merges every range again: each replaces the run's rows in its range)."""
    shares = _name_ranges(run, _side_by_side(settings.PRELOAD_CONNECTIONS))
    if len(shares) == 1:
        _merge_part(run, *shares[0])
    else:
        with ThreadPoolExecutor(max_workers=len(shares), thread_name_prefix="preload-merge") as pool:
            for future in [pool.submit(_in_thread, _merge_part, run, *share) for share in shares]:
                future.result()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # the next stages read by ranges of ids: let the planner know
            cursor.execute(f"ANALYZE {PreloadDomain._meta.db_table}")
    total = PreloadDomain.objects.filter(run=run).count()
    _advance(run, total, progress, total=total)


def _side_by_side(connections: int) -> int:
    """How many connections may work at once: one on SQLite (one writer), and one inside a
    transaction (other connections would not see its rows)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return 1
    return max(1, connections)


def _in_thread(function, *args) -> None:
    try:
        function(*args)
    finally:
        connection.close()  # this thread's own connection


MERGE_SAMPLE = 200_000  # names sampled to cut the merge into ranges of about the same size


def _name_ranges(run: PreloadRun, parts: int) -> list[tuple[str | None, str | None]]:
    """Ranges of names ``[low, high)`` (None: unbounded) for ``parts`` connections, cut where a
    sample of the entries puts the same number of names in each (each connection then writes its
    own part of the name index, not the same pages as the others)."""
    if parts == 1:
        return [(None, None)]
    lines = sum(run.sources.values_list("accepted", flat=True))
    percent = min(100.0, max(0.01, 100.0 * MERGE_SAMPLE / max(lines, 1)))
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT percentile_disc(%s) WITHIN GROUP (ORDER BY name)
            FROM {PreloadEntry._meta.db_table} TABLESAMPLE SYSTEM (%s) WHERE run_id = %s""",  # noqa: S608
            [[index / parts for index in range(1, parts)], percent, run.pk],
        )
        cuts = sorted({cut for cut in cursor.fetchone()[0] or [] if cut})
    bounds = [None, *cuts, None]
    return list(itertools.pairwise(bounds))


@transaction.atomic
def _merge_part(run: PreloadRun, low: str | None, high: str | None) -> None:
    """Merge the names in ``[low, high)`` (after taking out the run's rows there, if any)."""
    share = "(%s::text IS NULL OR {name} >= %s) AND (%s::text IS NULL OR {name} < %s)"
    bounds = [low, low, high, high]
    if connection.vendor != "postgresql":
        share, bounds = "1 = 1", []  # one range: every name
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {PreloadDomain._meta.db_table} WHERE run_id = %s"  # noqa: S608
            f" AND {share.format(name='name')}",
            [run.pk, *bounds],
        )
    entry, source, target = (
        PreloadEntry._meta.db_table,
        PreloadSource._meta.db_table,
        PreloadDomain._meta.db_table,
    )
    if connection.vendor == "postgresql":
        # Grouped in byte order ("C"): domain names are ASCII, and a sort of millions of names is a
        # third faster than in the database's language order (the join looks for equal names).
        grouped = f"""SELECT e.name COLLATE "C" AS name,
                string_agg(DISTINCT s.name, ',' ORDER BY s.name) AS sources,
                coalesce(string_agg(DISTINCT nullif(e.seed, ''), E'\\n' ORDER BY nullif(e.seed, '')), '')
                    AS seeds
            FROM {entry} e JOIN {source} s ON s.id = e.source_id
            WHERE e.run_id = %s AND {share.format(name="e.name")}
            GROUP BY 1"""  # noqa: S608
        parameters, name = [run.pk, *bounds], 'g.name COLLATE "default"'
    else:
        # SQLite has no ORDER BY inside an aggregate: concatenate rows already distinct and sorted.
        grouped = f"""SELECT g.name, g.sources, coalesce(k.seeds, '') AS seeds FROM
            (SELECT x.name, group_concat(x.sname, ',') AS sources FROM
                (SELECT DISTINCT e.name, s.name AS sname FROM {entry} e JOIN {source} s ON s.id = e.source_id
                 WHERE e.run_id = %s ORDER BY e.name, s.name) x GROUP BY x.name) g
            LEFT JOIN
            (SELECT y.name, group_concat(y.seed, char(10)) AS seeds FROM
                (SELECT DISTINCT name, seed FROM {entry} WHERE run_id = %s AND seed != ''
                 ORDER BY name, seed) y
             GROUP BY y.name) k ON k.name = g.name"""  # noqa: S608
        parameters, name = [run.pk, run.pk], "g.name"
    dns = PreloadDomain.Dns.PENDING if run.check_dns else PreloadDomain.Dns.SKIPPED
    with connection.cursor() as cursor:
        _tune_for_bulk(cursor)
        cursor.execute(
            f"""
            INSERT INTO {target}
                (run_id, name, sources, seeds, known_id, is_new, dns, dns_detail, redirect_from,
                 redirects_checked)
            SELECT %s, g.name, g.sources, g.seeds, d.id, d.id IS NULL, %s, '', '', %s
            FROM ({grouped}) g LEFT JOIN {Domain._meta.db_table} d ON d.name = {name}
            """,  # noqa: S608 (table names from the models, values as parameters)
            [run.pk, dns, False, *parameters],
        )


def _tune_for_bulk(cursor) -> None:
    """For this transaction on PostgreSQL: sort in memory rather than on disk (the default 4 MB
    spills millions of rows), and do not wait for the disk at each commit (a batch lost in a
    crash is done again: the stage resumes from what is committed)."""
    if connection.vendor == "postgresql":
        cursor.execute("SET LOCAL work_mem = %s", [settings.PRELOAD_WORK_MEM])
        cursor.execute("SET LOCAL synchronous_commit = off")


# 3. DNS


def stage_dns(run: PreloadRun, progress) -> None:
    if not run.check_dns:
        return  # the merge marked every domain "not checked (taken as live)"
    pending = PreloadDomain.objects.filter(run=run, dns=PreloadDomain.Dns.PENDING)
    from harvest.preload.dns import DnsSettings, check_domains, parse_nameserver

    policy = nameserver_policy()  # again where the queries are sent: the settings may have changed

    dns_settings = DnsSettings(
        nameservers=tuple(parse_nameserver(text) for text in run.nameserver_list),
        timeout=run.dns_timeout,
        retries=run.dns_retries,
        concurrency=settings.PRELOAD_DNS_CONCURRENCY,
    )
    run.stage_total = PreloadDomain.objects.filter(run=run).count()
    run.stage_done = run.stage_total - pending.count()
    last = 0
    while batch := list(pending.filter(pk__gt=last).order_by("pk").values_list("pk", "name")[:BATCH]):
        last = batch[-1][0]
        ids = {name: pk for pk, name in batch}
        live, failed = [], {}
        for result in check_domains([name for _pk, name in batch], dns_settings, policy=policy):
            if result.live:
                live.append(ids[result.name])
            else:
                failed.setdefault(result.detail[:200], []).append(ids[result.name])
        with transaction.atomic():
            PreloadDomain.objects.filter(pk__in=live).update(dns=PreloadDomain.Dns.LIVE, dns_detail="")
            for detail, pks in failed.items():
                PreloadDomain.objects.filter(pk__in=pks).update(
                    dns=PreloadDomain.Dns.FAILED, dns_detail=detail
                )
        _advance(run, len(batch), progress)


# 4. Redirects


def stage_redirects(run: PreloadRun, progress) -> None:
    live = [PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED]
    todo = PreloadDomain.objects.filter(run=run, dns__in=live, redirects_checked=False, redirect_from="")
    if not run.find_redirects:
        return
    from harvest.preload.redirects import RedirectSettings, discover_redirects

    redirect_settings = RedirectSettings(
        timeout=settings.PRELOAD_REDIRECT_TIMEOUT,
        concurrency=settings.PRELOAD_REDIRECT_CONCURRENCY,
        url_for=lambda host, template=settings.PRELOAD_REDIRECT_URL: template.format(host=host),
    )
    run.stage_total = todo.count()
    last = 0
    while batch := list(
        todo.filter(pk__gt=last).order_by("pk").values_list("pk", "name")[: max(1, BATCH // 10)]
    ):
        last = batch[-1][0]
        found = {}
        for redirect in discover_redirects([name for _pk, name in batch], redirect_settings):
            found.setdefault(redirect.target, redirect.domain)
        with transaction.atomic():
            _add_redirect_targets(run, found)
            PreloadDomain.objects.filter(pk__in=[pk for pk, _name in batch]).update(redirects_checked=True)
        _advance(run, len(batch), progress)


def _add_redirect_targets(run: PreloadRun, found: dict[str, str]) -> None:
    """Add each target no source gave and the database does not know, tagged "redirect from X"."""
    targets = set(found)
    targets -= set(PreloadDomain.objects.filter(run=run, name__in=targets).values_list("name", flat=True))
    targets -= set(Domain.objects.filter(name__in=targets).values_list("name", flat=True))
    PreloadDomain.objects.bulk_create(
        [
            PreloadDomain(
                run=run,
                name=name,
                sources=f"redirect from {found[name]}",
                redirect_from=found[name],
                is_new=True,
                dns=PreloadDomain.Dns.LIVE,  # it answered HTTP: it resolves
                redirects_checked=True,
            )
            for name in sorted(targets)
        ]
    )


# 5. Load

LOAD_BATCH = 50_000  # ids per range: domains created per statement set (and transaction)
BATCH_TABLE = "preload_batch"


def stage_load(run: PreloadRun, progress) -> None:
    """Load the ranges of ids not loaded yet, each in its own transaction; on PostgreSQL several
    at once, on as many connections as ``PRELOAD_CONNECTIONS`` (the database does the work, and
    on more than one core)."""
    staged = PreloadDomain._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id / %s, COUNT(*) FROM {staged} WHERE run_id = %s GROUP BY id / %s",  # noqa: S608
            [LOAD_BATCH, run.pk, LOAD_BATCH],
        )
        sizes = dict(cursor.fetchall())
    done = set(run.loaded_batches)
    todo = sorted(set(sizes) - done)
    run.stage_total = sum(sizes.values())
    run.stage_done = run.stage_total - sum(sizes[batch] for batch in todo)
    template = default_template().pk
    workers = _side_by_side(settings.PRELOAD_CONNECTIONS)
    if workers == 1 or len(todo) < 2:
        for batch in todo:
            _load_batch(run, batch, template)
            _advance(run, sizes[batch], progress)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preload-load") as pool:
        waiting, running = iter(todo), {}
        try:
            for batch in itertools.islice(waiting, workers):
                running[pool.submit(_in_thread, _load_batch, run, batch, template)] = batch
            while running:
                finished, _pending = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    batch = running.pop(future)
                    future.result()
                    _advance(run, sizes[batch], progress)  # may stop the run: no new range is started
                    for following in itertools.islice(waiting, 1):
                        running[pool.submit(_in_thread, _load_batch, run, following, template)] = following
        finally:
            wait(running)  # ranges under way end (each commits or rolls back whole)


@transaction.atomic
def _load_batch(run: PreloadRun, batch: int, template_id: int) -> None:
    """Load one range of the run's domains (ids from ``batch * LOAD_BATCH``), in one transaction:
    create its new live domains, give the known ones their activity from the DNS result, and
    mark the range loaded on the run."""
    first, last = batch * LOAD_BATCH, (batch + 1) * LOAD_BATCH - 1
    now = timezone.now()
    in_range = PreloadDomain.objects.filter(run=run, pk__gte=first, pk__lte=last)
    with connection.cursor() as cursor:
        _tune_for_bulk(cursor)
    if connection.vendor == "postgresql":
        # A domain someone created since the merge makes the database refuse its name: only then
        # are the range's names looked up among the domains (millions of look-ups otherwise).
        try:
            with transaction.atomic():
                _create_new_domains(run, first, last, template_id, now)
        except IntegrityError:
            _mark_known_since_merge(in_range)
            _create_new_domains(run, first, last, template_id, now)
    else:
        _mark_known_since_merge(in_range)  # (on SQLite this first write also takes the write lock)
        _create_new_domains(run, first, last, template_id, now)
    known = in_range.filter(is_new=False)
    failed, answered = known.filter(dns=PreloadDomain.Dns.FAILED), known.filter(dns=PreloadDomain.Dns.LIVE)
    if failed.exists():
        Domain.objects.filter(pk__in=failed.values("known_id"), is_active=True).update(
            is_active=False, dns_failed_at=now
        )
    if answered.exists():
        Domain.objects.filter(pk__in=answered.values("known_id"), dns_failed_at__isnull=False).update(
            is_active=True, dns_failed_at=None
        )
    # Ranges loaded side by side each add their mark: the run's row is locked for the update, after
    # the foreign keys are checked (the long part of a commit), so that it is held only briefly.
    # (Only in a transaction of its own: the setting would last to the end of an enclosing one.)
    if connection.vendor == "postgresql" and len(connection.atomic_blocks) == 1:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    loaded = PreloadRun.objects.select_for_update().values_list("loaded_batches", flat=True).get(pk=run.pk)
    PreloadRun.objects.filter(pk=run.pk).update(loaded_batches=sorted({*loaded, batch}))


def _mark_known_since_merge(in_range) -> None:
    """Domains of the range someone created since the merge are known now (not created again)."""
    in_range.filter(is_new=True, name__in=Domain.objects.values("name")).update(is_new=False)


def _create_new_domains(run: PreloadRun, first: int, last: int, template_id: int, now) -> None:
    """Create the new live domains of a range in a few set-based statements with what
    ``domains_create_bulk`` gives each: a history row, the default seed list (the seeds a source
    gave, else http(s)://(www.)name/) and the default configuration. Their ids are drawn first
    (into a temporary table), so each row is written once, already pointing at the others (the
    foreign keys are checked at commit)."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    staged = PreloadDomain._meta.db_table
    domains, seed_lists = Domain._meta.db_table, SeedList._meta.db_table
    configurations = DomainConfiguration._meta.db_table
    through = DomainConfiguration.seed_lists.through._meta.db_table
    live = (PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {BATCH_TABLE}")
        cursor.execute(
            f"""CREATE TEMPORARY TABLE {BATCH_TABLE} (name varchar(255), seeds text, domain_id bigint,
            seed_list_id bigint, configuration_id bigint)"""
        )
        cursor.execute(
            f"""INSERT INTO {BATCH_TABLE} (name, seeds, domain_id, seed_list_id, configuration_id)
            SELECT p.name, p.seeds, {_new_id(cursor, domains)}, {_new_id(cursor, seed_lists)},
                {_new_id(cursor, configurations)}
            FROM {staged} p WHERE p.run_id = %s AND p.id BETWEEN %s AND %s AND p.is_new
                AND p.dns IN (%s, %s)""",  # noqa: S608 (table names from the models, values as parameters)
            [run.pk, first, last, *live],
        )
        cursor.execute(
            f"""INSERT INTO {domains} (id, name, comments, crawler_traps, is_active, created_at,
                updated_at, default_configuration_id)
            SELECT domain_id, name, '', '', %s, %s, %s, configuration_id FROM {BATCH_TABLE}
            ORDER BY name""",  # noqa: S608 (in name order: the name index is written page by page)
            [True, stamp, stamp],
        )
        history = Domain.history.model
        columns = [field.column for field in history._meta.concrete_fields if field.column != "history_id"]
        values = {
            "history_date": "%s",
            "history_change_reason": "NULL",
            "history_type": "'+'",
            "history_user_id": "NULL",
        }
        cursor.execute(
            f"""INSERT INTO {history._meta.db_table} ({", ".join(columns)})
            SELECT {", ".join(values.get(column, f"d.{column}") for column in columns)}
            FROM {BATCH_TABLE} b JOIN {domains} d ON d.id = b.domain_id""",  # noqa: S608
            [stamp],
        )
        default = "'http://' || name || '/' || %s || 'https://' || name || '/' || %s"
        default += " || 'http://www.' || name || '/' || %s || 'https://www.' || name || '/'"
        cursor.execute(
            f"""INSERT INTO {seed_lists} (id, domain_id, name, seeds, comments, updated_at)
            SELECT seed_list_id, domain_id, %s, CASE WHEN seeds <> '' THEN seeds ELSE {default} END, '', %s
            FROM {BATCH_TABLE}""",  # noqa: S608
            [DEFAULT_SEED_LIST, "\n", "\n", "\n", stamp],
        )
        cursor.execute(
            f"""INSERT INTO {configurations} (id, domain_id, name, template_id, max_objects, max_bytes,
                max_request_rate, comments, updated_at)
            SELECT configuration_id, domain_id, %s, %s, %s, %s, 0, '', %s FROM {BATCH_TABLE}""",  # noqa: S608
            [DEFAULT_CONFIGURATION, template_id, UNLIMITED, UNLIMITED, stamp],
        )
        cursor.execute(
            f"""INSERT INTO {through} (domainconfiguration_id, seedlist_id)
            SELECT configuration_id, seed_list_id FROM {BATCH_TABLE}"""  # noqa: S608
        )
        cursor.execute(f"DROP TABLE {BATCH_TABLE}")


def _new_id(cursor, table: str) -> str:
    """An SQL expression giving each row selected from ``p`` a new id of ``table``: the table's
    own sequence on PostgreSQL; on SQLite (one writer at a time, this transaction holds the lock)
    the ids after the highest ever given."""
    if connection.vendor == "postgresql":
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        return f"nextval('{cursor.fetchone()[0]}'::regclass)"
    cursor.execute(
        f"""SELECT max(coalesce((SELECT max(id) FROM {table}), 0),
            coalesce((SELECT seq FROM sqlite_sequence WHERE name = %s), 0))""",  # noqa: S608
        [table],
    )
    return f"{cursor.fetchone()[0]:d} + row_number() OVER (ORDER BY p.id)"


STAGE_FUNCTIONS = {
    PreloadRun.Stage.INGEST: stage_ingest,
    PreloadRun.Stage.MERGE: stage_merge,
    PreloadRun.Stage.DNS: stage_dns,
    PreloadRun.Stage.REDIRECTS: stage_redirects,
    PreloadRun.Stage.LOAD: stage_load,
}


# Statistics ----------------------------------------------------------------------------------


def preload_statistics(run: PreloadRun) -> dict:
    """Domains per source and new per source, DNS failures, redirects found, domains per TLD, inactive."""
    per_source = {
        name: {"lines": 0, "invalid": 0, "domains": 0, "new": 0}
        for name in run.sources.order_by("name").values_list("name", flat=True)
    }
    for name, lines, invalid in run.sources.values_list("name", "lines", "invalid"):
        per_source[name]["lines"] += lines
        per_source[name]["invalid"] += invalid
    staged = PreloadDomain._meta.db_table
    # The last label of a name, in SQL both databases speak: rtrim() takes off every character
    # that is not a dot from the end.
    tld = "substr(name, length(rtrim(name, replace(name, '.', ''))) + 1)"
    counts = dict.fromkeys(
        ("total", "new", "dns_failed", "redirects", "inactive_existing", "new_excluded"), 0
    )
    tlds: dict[str, int] = {}
    failed = PreloadDomain.Dns.FAILED
    with connection.cursor() as cursor:
        # One pass over the run's domains, in few groups (one per combination of sources, result and TLD).
        cursor.execute(
            f"""SELECT sources, is_new, dns, redirect_from <> '', {tld}, COUNT(*) FROM {staged}
            WHERE run_id = %s GROUP BY 1, 2, 3, 4, 5""",  # noqa: S608
            [run.pk],
        )
        for names, is_new, dns, redirected, domain_tld, count in cursor.fetchall():
            counts["total"] += count
            counts["new"] += count if is_new else 0
            counts["dns_failed"] += count if dns == failed else 0
            counts["redirects"] += count if redirected else 0
            counts["inactive_existing"] += count if dns == failed and not is_new else 0
            counts["new_excluded"] += count if dns == failed and is_new else 0
            tlds[domain_tld] = tlds.get(domain_tld, 0) + count
            for name in [] if redirected else names.split(","):  # each domain counts for each source
                if name in per_source:
                    per_source[name]["domains"] += count
                    per_source[name]["new"] += count if is_new else 0
    return {
        **counts,
        "sources": per_source,
        "tlds": dict(sorted(tlds.items(), key=lambda item: (-item[1], item[0]))),
    }


def statistics_rows(run: PreloadRun) -> Iterator[list]:
    """The run's statistics as CSV rows: ``section,key,domains,new,lines,invalid``."""
    stats = run.statistics or {}
    yield ["section", "key", "domains", "new", "lines", "invalid"]
    for name, row in stats.get("sources", {}).items():
        yield ["source", name, row["domains"], row["new"], row["lines"], row["invalid"]]
    for key in ("total", "new", "dns_failed", "redirects", "inactive_existing", "new_excluded"):
        if key in stats:
            yield ["run", key, stats[key], "", "", ""]
    for tld, count in stats.get("tlds", {}).items():
        yield ["tld", tld, count, "", "", ""]
