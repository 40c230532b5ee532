"""Stage 5, loading: the run's domains into the database, by ranges of ids, each range in one
transaction that also marks it loaded on the run (and writes its audit step), several ranges side
by side on PostgreSQL. New live domains are created in a few set-based statements; known domains
without a DNS answer are made inactive, and those a preload made inactive that answer again are
made active again."""

from __future__ import annotations

import itertools
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from django.conf import settings
from django.db import IntegrityError, connection, transaction
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
    known = in_range.filter(is_new=False)
    failed, answered = known.filter(dns=PreloadDomain.Dns.FAILED), known.filter(dns=PreloadDomain.Dns.LIVE)
    made_inactive = made_active = 0
    if failed.exists():
        made_inactive = Domain.objects.filter(pk__in=failed.values("known_id"), is_active=True).update(
            is_active=False, dns_failed_at=now
        )
    if answered.exists():
        made_active = Domain.objects.filter(
            pk__in=answered.values("known_id"), dns_failed_at__isnull=False
        ).update(is_active=True, dns_failed_at=None)
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
        },
    )


def _mark_known_since_merge(in_range) -> None:
    """Domains of the range someone created since the merge are known now (not created again)."""
    in_range.filter(is_new=True, name__in=Domain.objects.values("name")).update(is_new=False)


def _create_new_domains(
    run: PreloadRun, first: int, last: int, template_id: int, now, user_id: int | None
) -> int:
    """Create the new live domains of a range in a few set-based statements with what
    ``domains_create_bulk`` gives each: a history row (naming ``user_id`` and the run), the default
    seed list (the seeds a source gave, else http(s)://(www.)name/) and the default configuration.
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
        created = cursor.rowcount
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
            "history_date": stamp,
            "history_change_reason": _("Preload run %(run)d") % {"run": run.pk},
            "history_type": "+",
            "history_user_id": user_id,
        }
        cursor.execute(
            f"""INSERT INTO {history._meta.db_table} ({", ".join(columns)})
            SELECT {", ".join("%s" if column in values else f"d.{column}" for column in columns)}
            FROM {BATCH_TABLE} b JOIN {domains} d ON d.id = b.domain_id""",  # noqa: S608
            [values[column] for column in columns if column in values],
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
    return created


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
