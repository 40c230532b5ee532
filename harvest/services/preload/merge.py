"""Stage 2, merging the sources: the accepted lines grouped by domain (every source and seed kept),
each domain marked known to the database or new, in one SQL statement (per range of names on
PostgreSQL, several connections side by side)."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.db import connection, transaction

from harvest.models import Domain, PreloadDomain, PreloadEntry, PreloadRun, PreloadSource
from harvest.services.preload import bulk
from harvest.services.preload import progress as progress_
from webarchive.dbstats import analyze


def stage_merge(run: PreloadRun, progress) -> None:
    """Group the entries by domain (sources and seeds kept), and mark the domains not known yet.

    One statement over the entries, which have no index: a sort of millions of rows is what the
    database does fastest, and every domain is marked known or new (and, without a DNS check,
    live) as it is written, with no second pass. On PostgreSQL the names are cut into ranges for
    ``PRELOAD_CONNECTIONS`` connections, each merging its range in its own transaction (a resumed
    merge merges every range again: each replaces the run's rows in its range)."""
    shares = _name_ranges(run, bulk.side_by_side(settings.PRELOAD_CONNECTIONS))
    if len(shares) == 1:
        _merge_part(run, *shares[0])
    else:
        with ThreadPoolExecutor(max_workers=len(shares), thread_name_prefix="preload-merge") as pool:
            for future in [pool.submit(bulk.in_thread, _merge_part, run, *share) for share in shares]:
                future.result()
    if connection.vendor == "postgresql":
        analyze(PreloadDomain)  # the next stages read by ranges of ids: let the planner know
    total = PreloadDomain.objects.filter(run=run).count()
    progress_.advance(run, total, progress, total=total)


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
        bulk.tune_for_bulk(cursor)
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
