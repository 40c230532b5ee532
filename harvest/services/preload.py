"""Broad-crawl preparation (NAS_preload inside the application): domain lists into a snapshot harvest.

A :class:`~harvest.models.PreloadRun` goes through five stages, each resumable:

1. **ingest** — every source (a file of domains or URLs, a CSV column, the librarians' validated
   records) is read line by line; each line is normalised (harvest.preload.sources) to its
   registered domain (lower case, punycode, scheme, path and ``www.`` stripped; a URL is kept as
   a seed) or reported with its line number and reason. A source is read in one transaction: an
   interrupted one is read again.
2. **merge** — one SQL statement groups the accepted lines by domain, remembering every source
   (and seed), and marks which domains the database does not know yet.
3. **DNS check** — every domain is resolved (harvest.preload.dns) in batches; each batch's
   results are written before the next, so an interruption loses at most a batch.
4. **redirect discovery** — live domains are asked for ``http://domain/`` and
   ``http://www.domain/`` (harvest.preload.redirects); a redirect to a registered domain no source
   gave, and the database does not know, adds it, tagged "redirect from X".
5. **load** — new live domains are created in bulk with their seeds and default configuration
   (a batch and its "loaded" marks in one transaction); existing domains without a DNS answer are
   made inactive (so the snapshot leaves them out), and those a preload made inactive that answer
   again are made active again.

Memory stays bounded: files and tables are streamed, batches are a few thousand rows.
"""

from __future__ import annotations

import csv
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, Max, OuterRef, Q, Subquery
from django.utils import timezone
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
from harvest.preload.sources import SourceLine, csv_columns, file_lines, normalise_entry
from harvest.services.domains import batches, default_template
from webarchive.permissions import ADD, CHANGE, require

logger = logging.getLogger(__name__)

SELECTION_SOURCE = "selection"
BATCH = 5000
INVALID_KEPT = 1000  # invalid lines kept per source (all are counted)
SOURCE_NAME = re.compile(r"^[\w .()'-]{1,100}$")
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
                    % {"path": spec.path, "column": spec.column, "columns": ", ".join(columns) or _("none")}
                )
    paths = [str(Path(spec.path).resolve()) for spec in sources]
    if len(set(paths)) != len(paths):
        errors.setdefault("sources", []).append(_("A file is given twice."))
    if not sources and not include_selection:
        errors.setdefault("sources", []).append(_("Give at least one list, or take the librarians' records."))
    nameservers = [line.strip() for line in nameservers if line.strip()]
    if nameservers:
        from harvest.preload.dns import parse_nameserver

        for text in nameservers:
            try:
                parse_nameserver(text)
            except ValueError as error:
                errors.setdefault("nameservers", []).append(str(error))
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
        PreloadRun.objects.filter(pk=run.pk).update(state=PreloadRun.State.FAILED, error=str(error)[:2000])
    else:
        PreloadRun.objects.filter(pk=run.pk).update(state=PreloadRun.State.DONE, ended_at=timezone.now())
    run.refresh_from_db()
    return run


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
    """Read one source into entries (all or nothing: an interrupted source is read again)."""
    PreloadEntry.objects.filter(source=source).delete()
    PreloadInvalidLine.objects.filter(source=source).delete()
    lines = accepted = invalid = 0
    invalid_rows: list[PreloadInvalidLine] = []

    def entries() -> Iterator[tuple]:
        nonlocal lines, accepted, invalid
        for line in source_lines(source):
            lines += 1
            try:
                name, seed = normalise_entry(line.text)
            except ValueError as error:
                invalid += 1
                if len(invalid_rows) < INVALID_KEPT:
                    invalid_rows.append(
                        PreloadInvalidLine(
                            source=source, line=line.number, text=line.text[:500], reason=str(error)[:500]
                        )
                    )
                continue
            accepted += 1
            yield (run.pk, source.pk, name, seed)

    _insert_entries(entries())
    PreloadInvalidLine.objects.bulk_create(invalid_rows, batch_size=1000)
    source.lines, source.accepted, source.invalid, source.ingested = lines, accepted, invalid, True
    source.save(update_fields=["lines", "accepted", "invalid", "ingested"])


COPY_BATCH = 100_000


def _insert_entries(rows: Iterator[tuple]) -> None:
    """COPY on PostgreSQL (the database's own bulk path), batched INSERTs elsewhere.

    Rows are gathered a batch at a time before each COPY: a source read from the database (the
    librarians' records) queries it between batches, which it cannot do while a COPY is open."""
    if connection.vendor == "postgresql":
        table = PreloadEntry._meta.db_table
        for batch in batches(rows, COPY_BATCH):
            with (
                connection.cursor() as cursor,
                cursor.copy(f"COPY {table} (run_id, source_id, name, seed) FROM STDIN") as copy,
            ):
                for row in batch:
                    copy.write_row(row)
        return
    for batch in batches(rows, BATCH):
        PreloadEntry.objects.bulk_create(
            [PreloadEntry(run_id=r, source_id=s, name=n, seed=seed) for r, s, n, seed in batch],
            batch_size=BATCH,
        )


# 2. Merge


@transaction.atomic
def stage_merge(run: PreloadRun, progress) -> None:
    """Group the entries by domain (sources and seeds kept), and mark the domains not known yet."""
    PreloadDomain.objects.filter(run=run).delete()
    entry, source, target = (
        PreloadEntry._meta.db_table,
        PreloadSource._meta.db_table,
        PreloadDomain._meta.db_table,
    )
    if connection.vendor == "postgresql":
        sources = "string_agg(DISTINCT s.name, ',' ORDER BY s.name)"
        seeds = "coalesce(string_agg(DISTINCT nullif(e.seed, ''), E'\\n' ORDER BY nullif(e.seed, '')), '')"
        grouped = f"{entry} e JOIN {source} s ON s.id = e.source_id WHERE e.run_id = %s"
        grouped += " GROUP BY e.run_id, e.name"
    else:
        # SQLite (3.40) has no ORDER BY inside an aggregate: concatenate rows already distinct and sorted.
        seeds = (
            f"coalesce((SELECT group_concat(x.seed, char(10)) FROM (SELECT DISTINCT seed FROM {entry}"  # noqa: S608
            " WHERE run_id = e.run_id AND name = e.name AND seed != '' ORDER BY seed) x), '')"
        )
        grouped = (
            f"(SELECT DISTINCT e.run_id, e.name, s.name AS sname FROM {entry} e JOIN {source} s"  # noqa: S608
            " ON s.id = e.source_id WHERE e.run_id = %s ORDER BY e.name, s.name) e"
            " GROUP BY e.run_id, e.name"
        )
        sources = "group_concat(e.sname, ',')"
    # Known or new, and (without a DNS check) taken as live, in the same statement: no second pass
    # over millions of rows.
    dns = PreloadDomain.Dns.PENDING if run.check_dns else PreloadDomain.Dns.SKIPPED
    domains = Domain._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {target}
                (run_id, name, sources, seeds, domain_id, is_new, dns, dns_detail, redirect_from,
                 redirects_checked, loaded)
            SELECT g.run_id, g.name, g.sources, g.seeds, d.id, d.id IS NULL, %s, '', '', %s, %s
            FROM (SELECT e.run_id, e.name, {sources} AS sources, {seeds} AS seeds FROM {grouped}) g
            LEFT JOIN {domains} d ON d.name = g.name
            """,  # noqa: S608 (table names from the models, values as parameters)
            [dns, False, False, run.pk],
        )
    total = PreloadDomain.objects.filter(run=run).count()
    _advance(run, total, progress, total=total)


# 3. DNS


def stage_dns(run: PreloadRun, progress) -> None:
    pending = PreloadDomain.objects.filter(run=run, dns=PreloadDomain.Dns.PENDING)
    if not run.check_dns:
        pending.update(dns=PreloadDomain.Dns.SKIPPED)
        return
    from harvest.preload.dns import DnsSettings, check_domains, parse_nameserver

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
        for result in check_domains([name for _pk, name in batch], dns_settings):
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

LOAD_BATCH = 50_000  # domains created per statement set (and transaction)


def stage_load(run: PreloadRun, progress) -> None:
    todo = PreloadDomain.objects.filter(run=run, loaded=False)
    run.stage_total = todo.count()
    template = default_template()
    while ids := list(todo.order_by("pk").values_list("pk", flat=True)[:LOAD_BATCH]):
        with transaction.atomic():
            _load_batch(run, ids[0], ids[-1], template.pk)
        _advance(run, len(ids), progress)


def usable_dns() -> tuple[str, str]:
    return (PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED)


def _load_batch(run: PreloadRun, first: int, last: int, template_id: int) -> None:
    """Create the new live domains of one range of the run in a few set-based statements, with
    what ``domains_create_bulk`` gives each (a history row, the default seed list — the seeds a
    source gave, else http(s)://(www.)name/ — and the default configuration), then update the
    known ones' activity from their DNS result, and mark the range loaded."""
    now = timezone.now()
    stamp = connection.ops.adapt_datetimefield_value(now)
    staged = PreloadDomain._meta.db_table
    domains, seeds_table = Domain._meta.db_table, SeedList._meta.db_table
    configurations = DomainConfiguration._meta.db_table
    through = DomainConfiguration.seed_lists.through._meta.db_table
    key = [run.pk, first, last]
    in_range = "p.run_id = %s AND p.id BETWEEN %s AND %s AND NOT p.loaded"
    # A domain created since the merge (elsewhere, or by this range before an interruption) is known now.
    PreloadDomain.objects.filter(run=run, pk__gte=first, pk__lte=last, loaded=False, is_new=True).filter(
        name__in=Domain.objects.values("name")
    ).update(is_new=False)
    created = f"p.is_new AND p.dns IN ('{PreloadDomain.Dns.LIVE}', '{PreloadDomain.Dns.SKIPPED}')"
    # The rows this batch creates come after the highest id so far: reading them by id range, the
    # statements below stay as fast with millions of domains as with none.
    before = Domain.objects.aggregate(top=Max("pk"))["top"] or 0
    new_domain = (
        f"{domains} d JOIN {staged} p ON p.name = d.name AND {in_range} AND {created} AND d.id > {before:d}"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {domains} (name, comments, crawler_traps, is_active, created_at, updated_at)
            SELECT p.name, '', '', %s, %s, %s FROM {staged} p WHERE {in_range} AND {created}""",  # noqa: S608
            [True, stamp, stamp, *key],
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
            SELECT {", ".join(values.get(column, f"d.{column}") for column in columns)} FROM {new_domain}""",  # noqa: S608
            [stamp, *key],
        )
        default = "'http://' || d.name || '/' || %s || 'https://' || d.name || '/' || %s"
        default += " || 'http://www.' || d.name || '/' || %s || 'https://www.' || d.name || '/'"
        cursor.execute(
            f"""INSERT INTO {seeds_table} (domain_id, name, seeds, comments, updated_at)
            SELECT d.id, %s, CASE WHEN p.seeds <> '' THEN p.seeds ELSE {default} END, '', %s
            FROM {new_domain}""",  # noqa: S608
            [DEFAULT_SEED_LIST, "\n", "\n", "\n", stamp, *key],
        )
        cursor.execute(
            f"""INSERT INTO {configurations}
                (domain_id, name, template_id, max_objects, max_bytes, max_request_rate, comments, updated_at)
            SELECT d.id, %s, %s, %s, %s, 0, '', %s FROM {new_domain}""",  # noqa: S608
            [DEFAULT_CONFIGURATION, template_id, UNLIMITED, UNLIMITED, stamp, *key],
        )
        cursor.execute(
            f"""INSERT INTO {through} (domainconfiguration_id, seedlist_id)
            SELECT c.id, s.id FROM {new_domain}
            JOIN {configurations} c ON c.domain_id = d.id AND c.name = %s
            JOIN {seeds_table} s ON s.domain_id = d.id AND s.name = %s""",  # noqa: S608
            [*key, DEFAULT_CONFIGURATION, DEFAULT_SEED_LIST],
        )
    new = PreloadDomain.objects.filter(
        run=run, pk__gte=first, pk__lte=last, loaded=False, is_new=True, dns__in=usable_dns()
    )
    Domain.objects.filter(
        pk__gt=before, name__in=new.values("name"), default_configuration__isnull=True
    ).update(
        default_configuration=Subquery(
            DomainConfiguration.objects.filter(domain=OuterRef("pk"), name=DEFAULT_CONFIGURATION).values(
                "pk"
            )[:1]
        )
    )
    batch = PreloadDomain.objects.filter(run=run, pk__gte=first, pk__lte=last, loaded=False)
    known = batch.filter(is_new=False)
    Domain.objects.filter(
        name__in=known.filter(dns=PreloadDomain.Dns.FAILED).values("name"), is_active=True
    ).update(is_active=False, dns_failed_at=now)
    Domain.objects.filter(
        name__in=known.filter(dns=PreloadDomain.Dns.LIVE).values("name"), dns_failed_at__isnull=False
    ).update(is_active=True, dns_failed_at=None)
    batch.update(loaded=True)


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
    domains = PreloadDomain.objects.filter(run=run)
    per_source = {
        name: {"lines": 0, "invalid": 0, "domains": 0, "new": 0}
        for name in run.sources.order_by("name").values_list("name", flat=True)
    }
    for name, lines, invalid in run.sources.values_list("name", "lines", "invalid"):
        per_source[name]["lines"] += lines
        per_source[name]["invalid"] += invalid
    entry, source, staged = (
        PreloadEntry._meta.db_table,
        PreloadSource._meta.db_table,
        PreloadDomain._meta.db_table,
    )
    with connection.cursor() as cursor:  # one pass over the entries, whatever the number of sources
        cursor.execute(
            f"""SELECT s.name, COUNT(DISTINCT e.name), COUNT(DISTINCT CASE WHEN p.is_new THEN e.name END)
            FROM {entry} e JOIN {source} s ON s.id = e.source_id
            JOIN {staged} p ON p.run_id = e.run_id AND p.name = e.name
            WHERE e.run_id = %s GROUP BY s.name""",  # noqa: S608
            [run.pk],
        )
        for name, count, new in cursor.fetchall():
            per_source[name].update(domains=count, new=new)
    tlds: dict[str, int] = {}
    for name in domains.values_list("name", flat=True).iterator(chunk_size=BATCH):
        tld = name.rsplit(".", 1)[-1]
        tlds[tld] = tlds.get(tld, 0) + 1
    counts = domains.aggregate(
        total=Count("pk"),
        new=Count("pk", filter=Q(is_new=True)),
        dns_failed=Count("pk", filter=Q(dns=PreloadDomain.Dns.FAILED)),
        redirects=Count("pk", filter=~Q(redirect_from="")),
        inactive_existing=Count("pk", filter=Q(dns=PreloadDomain.Dns.FAILED, is_new=False)),
        new_excluded=Count("pk", filter=Q(dns=PreloadDomain.Dns.FAILED, is_new=True)),
    )
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
