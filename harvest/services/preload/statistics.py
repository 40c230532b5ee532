"""A run's statistics, kept on the run when it is done and downloadable as CSV: per source, for the
run, and per top-level domain."""

from __future__ import annotations

from collections.abc import Iterator

from django.db import connection

from harvest.models import PreloadDomain, PreloadRun
from harvest.services.preload import audit


def preload_statistics(run: PreloadRun) -> dict:
    """Domains per source and new per source, DNS failures, redirects found, domains per TLD, inactive,
    known domains whose seed list gained URLs."""
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
    counts["seeds_updated"] = audit.stage_counts(run, PreloadRun.Stage.LOAD)["seeds_updated"]
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
    for key in (
        "total",
        "new",
        "dns_failed",
        "redirects",
        "inactive_existing",
        "new_excluded",
        "seeds_updated",
    ):
        if key in stats:
            yield ["run", key, stats[key], "", "", ""]
    for tld, count in stats.get("tlds", {}).items():
        yield ["tld", tld, count, "", "", ""]
