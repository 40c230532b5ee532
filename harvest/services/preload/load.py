"""Stage 5, loading: the run's domains into the database, by ranges of ids, each range in one
transaction that also marks it loaded on the run (and writes its audit step), several ranges side
by side on PostgreSQL. New live domains are created in a few set-based statements, their seeds
``http(s)://(www.)name/`` and the URLs the sources gave; the seed list of a known live domain's
default configuration gains the URLs the sources gave that it lacks (with a history row each);
known domains without a DNS answer are made inactive, and those a preload made inactive that
answer again are made active again."""

from __future__ import annotations

import itertools
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F, OuterRef, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import Domain, DomainConfiguration, PreloadDomain, PreloadRun, PreloadStep, SeedList
from harvest.models.domains import DEFAULT_CONFIGURATION, DEFAULT_SEED_LIST, UNLIMITED
from harvest.services.domains import default_template
from harvest.services.preload import audit, bulk
from harvest.services.preload import progress as progress_
from webarchive.dbstats import analyze

LOAD_BATCH = 50_000  # ids per range: domains created per statement set (and transaction)
BATCH_TABLE = "preload_batch"
SEED_TABLE = "preload_seed"  # the range's seed URLs, one a row (from the merged newline-joined lists)
KNOWN_TABLE = "preload_known_seeds"  # the seed lists of known domains gaining URLs, and those URLs


def stage_load(run: PreloadRun, progress) -> None:
    """Load the ranges of ids not loaded yet, each in its own transaction; on PostgreSQL several
    at once, on as many connections as ``PRELOAD_CONNECTIONS`` (the database does the work, and
    on more than one core). Then analyse the tables it filled: the snapshot launch that follows
    plans its queries over them."""
    _load_ranges(run, progress)
    through = DomainConfiguration.seed_lists.through
    analyze(Domain, Domain.history.model, SeedList, DomainConfiguration, through)


def _load_ranges(run: PreloadRun, progress) -> None:
    staged = PreloadDomain._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id / %s, COUNT(*) FROM {staged} WHERE run_id = %s GROUP BY id / %s",  # noqa: S608
            [LOAD_BATCH, run.pk, LOAD_BATCH],
        )
        sizes = dict(cursor.fetchall())
    done = set(run.loaded_batches)
    todo = sorted(set(sizes) - done)
    run.total = sum(sizes.values())
    run.done = run.total - sum(sizes[batch] for batch in todo)
    template = default_template().pk
    user_id = audit.acting_user_id(run)
    workers = bulk.side_by_side(settings.PRELOAD_CONNECTIONS)
    if workers == 1 or len(todo) < 2:
        for batch in todo:
            _load_batch(run, batch, template, user_id)
            progress_.advance(run, sizes[batch], progress)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="preload-load") as pool:
        waiting, running = iter(todo), {}
        try:
            for batch in itertools.islice(waiting, workers):
                running[pool.submit(bulk.in_thread, _load_batch, run, batch, template, user_id)] = batch
            while running:
                finished, _pending = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    batch = running.pop(future)
                    future.result()
                    progress_.advance(
                        run, sizes[batch], progress
                    )  # may stop the run: no new range is started
                    for following in itertools.islice(waiting, 1):
                        running[
                            pool.submit(bulk.in_thread, _load_batch, run, following, template, user_id)
                        ] = following
        finally:
            wait(running)  # ranges under way end (each commits or rolls back whole)


@transaction.atomic
def _load_batch(run: PreloadRun, batch: int, template_id: int, user_id: int | None) -> None:
    """Load one range of the run's domains (ids from ``batch * LOAD_BATCH``), in one transaction:
    create its new live domains, give the known ones their activity from the DNS result, mark
    the range loaded on the run and write its step in the run's audit trail (for ``user_id``)."""
    first, last = batch * LOAD_BATCH, (batch + 1) * LOAD_BATCH - 1
    now = timezone.now()
    in_range = PreloadDomain.objects.filter(run=run, pk__gte=first, pk__lte=last)
    with connection.cursor() as cursor:
        bulk.tune_for_bulk(cursor)
        _split_seeds(cursor, run, first, last)
    if connection.vendor == "postgresql":
        # A domain someone created since the merge makes the database refuse its name: only then
        # are the range's names looked up among the domains (millions of look-ups otherwise).
        try:
            with transaction.atomic():
                created = _create_new_domains(run, first, last, template_id, now, user_id)
        except IntegrityError:
            _mark_known_since_merge(in_range)
            created = _create_new_domains(run, first, last, template_id, now, user_id)
    else:
        _mark_known_since_merge(in_range)  # (on SQLite this first write also takes the write lock)
        created = _create_new_domains(run, first, last, template_id, now, user_id)
    seeds_updated = _add_seeds_to_known(run, first, last, now, user_id)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {SEED_TABLE}")
    known = in_range.filter(is_new=False)
    failed, answered = known.filter(dns=PreloadDomain.Dns.FAILED), known.filter(dns=PreloadDomain.Dns.LIVE)
    made_inactive = made_active = 0
    # Their versions raised: an edit form read before the load is refused, not saved over it.
    if failed.exists():
        made_inactive = Domain.objects.filter(pk__in=failed.values("known_id"), is_active=True).update(
            is_active=False, dns_failed_at=now, version=F("version") + 1
        )
    if answered.exists():
        made_active = Domain.objects.filter(
            pk__in=answered.values("known_id"), dns_failed_at__isnull=False
        ).update(is_active=True, dns_failed_at=None, version=F("version") + 1)
    # Ranges loaded side by side each add their mark: the run's row is locked for the update, after
    # the foreign keys are checked (the long part of a commit), so that it is held only briefly.
    # (Only in a transaction of its own: the setting would last to the end of an enclosing one.)
    if connection.vendor == "postgresql" and len(connection.atomic_blocks) == 1:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    loaded = PreloadRun.objects.select_for_update().values_list("loaded_batches", flat=True).get(pk=run.pk)
    PreloadRun.objects.filter(pk=run.pk).update(loaded_batches=sorted({*loaded, batch}))
    # The range's changes leave no history row per known domain (one statement changes thousands):
    # its step says how many, by whom, committed with them. (Written once the run's row is locked:
    # its reference to the run, checked before the lock, would make two ranges wait for each other.)
    audit.step_record(
        run=run,
        kind=PreloadStep.Kind.LOADED,
        stage=PreloadRun.Stage.LOAD,
        user_id=user_id,
        counts={
            "range": batch,
            "created": created,
            "made_inactive": made_inactive,
            "made_active": made_active,
            "seeds_updated": seeds_updated,
        },
    )


def _mark_known_since_merge(in_range) -> None:
    """Domains of the range someone created since the merge are known now (not created again, and
    loaded as the others known: their activity, their seed list)."""
    in_range.filter(is_new=True, name__in=Domain.objects.values("name")).update(
        is_new=False, known_id=Subquery(Domain.objects.filter(name=OuterRef("name")).values("pk")[:1])
    )


def _create_new_domains(
    run: PreloadRun, first: int, last: int, template_id: int, now, user_id: int | None
) -> int:
    """Create the new live domains of a range in a few set-based statements with what
    ``domains_create_bulk`` gives each: a history row (naming ``user_id`` and the run), the default
    seed list (http(s)://(www.)name/, then the other URLs the sources gave, as NAS_preload does)
    and the default configuration.
    Their ids are drawn first (into a temporary table), so each row is written once, already
    pointing at the others (the foreign keys are checked at commit). Returns how many were created."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    staged = PreloadDomain._meta.db_table
    domains, seed_lists = Domain._meta.db_table, SeedList._meta.db_table
    configurations = DomainConfiguration._meta.db_table
    through = DomainConfiguration.seed_lists.through._meta.db_table
    live = (PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {BATCH_TABLE}")
        cursor.execute(
            f"""CREATE TEMPORARY TABLE {BATCH_TABLE} (preload_id bigint, name varchar(255), domain_id bigint,
            seed_list_id bigint, configuration_id bigint)"""
        )
        cursor.execute(
            f"""INSERT INTO {BATCH_TABLE} (preload_id, name, domain_id, seed_list_id, configuration_id)
            SELECT p.id, p.name, {_new_id(cursor, domains)}, {_new_id(cursor, seed_lists)},
                {_new_id(cursor, configurations)}
            FROM {staged} p WHERE p.run_id = %s AND p.id BETWEEN %s AND %s AND p.is_new
                AND p.dns IN (%s, %s)""",  # noqa: S608 (table names from the models, values as parameters)
            [run.pk, first, last, *live],
        )
        created = cursor.rowcount
        cursor.execute(
            f"""INSERT INTO {domains} (id, name, comments, crawler_traps, is_active, created_at,
                updated_at, default_configuration_id)
            SELECT domain_id, name, '', '', %s, %s, %s, configuration_id FROM {BATCH_TABLE}
            ORDER BY name""",  # noqa: S608 (in name order: the name index is written page by page)
            [True, stamp, stamp],
        )
        _write_history(
            cursor,
            Domain,
            f"FROM {BATCH_TABLE} b JOIN {domains} d ON d.id = b.domain_id",
            alias="d",
            kind="+",
            stamp=stamp,
            user_id=user_id,
            run=run,
        )
        # The defaults (as domains_create gives them), then the source's other URLs in their order.
        defaults = [
            f"'{scheme}://' || {host} || '/'"
            for host in ("b.name", "'www.' || b.name")
            for scheme in ("http", "https")
        ]
        extra = _joined_seeds(f"s.preload_id = b.preload_id AND s.url NOT IN ({', '.join(defaults)})")
        default = " || %s || ".join(defaults)
        cursor.execute(
            f"""INSERT INTO {seed_lists} (id, domain_id, name, seeds, comments, updated_at)
            SELECT b.seed_list_id, b.domain_id, %s, {default} || coalesce(%s || {extra}, ''), '', %s
            FROM {BATCH_TABLE} b""",  # noqa: S608
            [DEFAULT_SEED_LIST, "\n", "\n", "\n", "\n", stamp],
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
    return created


def _split_seeds(cursor, run: PreloadRun, first: int, last: int) -> None:
    """Write the seed URLs the sources gave the range's live domains into ``SEED_TABLE``, one a row
    with its place in the domain's list (the merge joined them by newlines, in order)."""
    live = (PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED)
    staged = PreloadDomain._meta.db_table
    cursor.execute(f"DROP TABLE IF EXISTS {SEED_TABLE}")
    cursor.execute(f"CREATE TEMPORARY TABLE {SEED_TABLE} (preload_id bigint, url text, position integer)")
    chosen = "p.run_id = %s AND p.id BETWEEN %s AND %s AND p.seeds <> '' AND p.dns IN (%s, %s)"
    if connection.vendor == "postgresql":
        cursor.execute(
            f"""INSERT INTO {SEED_TABLE} (preload_id, url, position)
            SELECT p.id, u.url, u.position FROM {staged} p
            CROSS JOIN LATERAL unnest(string_to_array(p.seeds, E'\\n')) WITH ORDINALITY AS u(url, position)
            WHERE {chosen} AND u.url <> ''""",  # noqa: S608
            [run.pk, first, last, *live],
        )
    else:
        # SQLite has no function to split a text: a recursive query takes off a line at a time.
        cursor.execute(
            f"""WITH RECURSIVE split(preload_id, rest, url, position) AS (
                SELECT p.id, p.seeds || char(10), '', 0 FROM {staged} p WHERE {chosen}
                UNION ALL
                SELECT preload_id, substr(rest, instr(rest, char(10)) + 1),
                    substr(rest, 1, instr(rest, char(10)) - 1), position + 1
                FROM split WHERE rest <> '')
            INSERT INTO {SEED_TABLE} (preload_id, url, position)
            SELECT preload_id, url, position FROM split WHERE position > 0 AND url <> ''""",  # noqa: S608
            [run.pk, first, last, *live],
        )
    cursor.execute(f"CREATE INDEX {SEED_TABLE}_preload ON {SEED_TABLE} (preload_id, position)")


def _joined_seeds(where: str) -> str:
    """SQL: the URLs of ``SEED_TABLE s`` matching ``where``, in their order, one a line (NULL: none)."""
    if connection.vendor == "postgresql":
        return f"(SELECT string_agg(s.url, E'\\n' ORDER BY s.position) FROM {SEED_TABLE} s WHERE {where})"  # noqa: S608
    # SQLite's group_concat takes the rows in the order the subquery gives them.
    return (
        f"(SELECT group_concat(url, char(10)) FROM"  # noqa: S608
        f" (SELECT s.url FROM {SEED_TABLE} s WHERE {where} ORDER BY s.position))"
    )


def _add_seeds_to_known(run: PreloadRun, first: int, last: int, now, user_id: int | None) -> int:
    """Give the seed list of each known live domain's default configuration (its ``defaultseeds``
    one, else its first) the URLs the sources gave that it does not have yet, after its own lines,
    as NAS_preload updates the seed lists of the domains it knows: one statement for all, the
    version of each list raised (an editor's form read before is refused, not saved over it) and a
    history row each, naming ``user_id`` and the run. Returns how many lists gained URLs."""
    stamp = connection.ops.adapt_datetimefield_value(now)
    staged, domains = PreloadDomain._meta.db_table, Domain._meta.db_table
    seed_lists, through = SeedList._meta.db_table, DomainConfiguration.seed_lists.through._meta.db_table
    contains = "strpos" if connection.vendor == "postgresql" else "instr"
    # A URL is there when it is one of the list's lines (stored normalised, as the sources' are).
    missing = _joined_seeds(
        f"s.preload_id = {KNOWN_TABLE}.preload_id AND {contains}(%s || l.seeds || %s, %s || s.url || %s) = 0"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {KNOWN_TABLE}")
        cursor.execute(
            f"CREATE TEMPORARY TABLE {KNOWN_TABLE} (preload_id bigint, seed_list_id bigint, added text)"
        )
        cursor.execute(
            f"""INSERT INTO {KNOWN_TABLE} (preload_id, seed_list_id)
            SELECT p.id, (SELECT l.id FROM {through} t JOIN {seed_lists} l ON l.id = t.seedlist_id
                WHERE t.domainconfiguration_id = d.default_configuration_id
                ORDER BY CASE WHEN l.name = %s THEN 0 ELSE 1 END, l.id LIMIT 1)
            FROM {staged} p JOIN {domains} d ON d.id = p.known_id
            WHERE p.run_id = %s AND p.id BETWEEN %s AND %s AND NOT p.is_new
                AND p.id IN (SELECT preload_id FROM {SEED_TABLE})""",  # noqa: S608
            [DEFAULT_SEED_LIST, run.pk, first, last],
        )
        cursor.execute(
            f"""UPDATE {KNOWN_TABLE} SET added = (SELECT {missing} FROM {seed_lists} l
                WHERE l.id = {KNOWN_TABLE}.seed_list_id) WHERE seed_list_id IS NOT NULL""",  # noqa: S608
            ["\n", "\n", "\n", "\n"],
        )
        cursor.execute(f"DELETE FROM {KNOWN_TABLE} WHERE added IS NULL")  # noqa: S608
        # After the list's own lines (trailing newlines taken off first), in one write per list.
        cursor.execute(
            f"""UPDATE {seed_lists} SET seeds = rtrim(seeds, %s)
                || CASE WHEN rtrim(seeds, %s) = '' THEN '' ELSE %s END
                || (SELECT k.added FROM {KNOWN_TABLE} k WHERE k.seed_list_id = {seed_lists}.id),
                version = version + 1, updated_at = %s
            WHERE id IN (SELECT seed_list_id FROM {KNOWN_TABLE})""",  # noqa: S608
            ["\n", "\n", "\n", stamp],
        )
        updated = cursor.rowcount
        _write_history(
            cursor,
            SeedList,
            f"FROM {KNOWN_TABLE} k JOIN {seed_lists} l ON l.id = k.seed_list_id",
            alias="l",
            kind="~",
            stamp=stamp,
            user_id=user_id,
            run=run,
        )
        cursor.execute(f"DROP TABLE {KNOWN_TABLE}")
    return updated


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


def _write_history(cursor, model, rows: str, *, alias: str, kind: str, stamp, user_id, run) -> None:
    """One history row (``kind``: + created, ~ changed) for each row of ``model`` that ``rows`` (a FROM
    clause naming the model's table as ``alias``) selects, as the run's engineer made it."""
    history = model.history.model
    columns = [field.column for field in history._meta.concrete_fields if field.column != "history_id"]
    values = {
        "history_date": stamp,
        "history_change_reason": _("Preload run %(run)d") % {"run": run.pk},
        "history_type": kind,
        "history_user_id": user_id,
    }
    selected = ", ".join("%s" if column in values else f"{alias}.{column}" for column in columns)
    cursor.execute(
        f"INSERT INTO {history._meta.db_table} ({', '.join(columns)}) SELECT {selected} {rows}",
        [values[column] for column in columns if column in values],
    )
