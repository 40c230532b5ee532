"""The figures of the reports that only the site crawls give: domains counted once across jobs.

A sum of job statistics counts a domain crawled by two jobs twice; these functions read the site
crawls (:class:`~harvest.models.JobConfiguration`) behind a queryset of job statistics instead, and
count each domain once, in the size class of all its URLs. A broad crawl has millions of site
crawls, so the reports read them from :class:`~harvest.models.PeriodStatistics`, computed from
these when a job's statistics are (harvest.services.period_statistics), and call them directly only
for selections no period row describes (one collection, a run, dates, a kind of crawl…).
"""

from __future__ import annotations

from django.db.models import Count, F, Sum
from django.db.models.functions import ExtractMonth, ExtractYear

from harvest.models import JobConfiguration
from harvest.services.statistics import size_class, size_classes

# A group's fields, read from a site crawl instead of its job's statistics (same values).
SITE_FIELDS = {
    "year": ExtractYear("job__ended_at"),
    "month": ExtractMonth("job__ended_at"),
    "kind": F("job__harvest_definition__kind"),
    "harvest_definition": F("job__harvest_definition"),
    "harvest_definition__name": F("job__harvest_definition__name"),
    "run": F("job__run"),
    "run__number": F("job__run__number"),
    "job": F("job"),
    "ended_at": F("job__ended_at"),
    "collection": F("configuration__source_collection"),
    "collection__name": F("configuration__source_collection__name"),
}


def sites_of(statistics):
    """The site crawls behind these statistics (a collection's share: only the sites selected in it)."""
    sites = JobConfiguration.objects.filter(job__in=statistics.values("job"))
    if statistics.filter(collection__isnull=False).exists():
        sites = sites.filter(configuration__source_collection__in=statistics.values("collection"))
    return sites


def domains_harvested(statistics) -> int:
    """The distinct domains that yielded URLs in these statistics' site crawls."""
    return sites_of(statistics).filter(urls_done__gt=0).aggregate(n=Count("domain", distinct=True))["n"]


def domains_in_collections(statistics) -> int:
    """The distinct domains that yielded URLs in the sites of these statistics selected in any
    collection: what the collections' shares of the same jobs count together."""
    sites = sites_of(statistics).filter(urls_done__gt=0, configuration__source_collection__isnull=False)
    return sites.aggregate(n=Count("domain", distinct=True))["n"]


def domains_by_group(statistics, fields: tuple[str, ...]) -> dict[tuple, int]:
    """Distinct domains harvested per group (the values of ``fields``, as in the statistics' rows)."""
    sites = (
        sites_of(statistics)
        .filter(urls_done__gt=0)
        .annotate(**{f"group_{field}": SITE_FIELDS[field] for field in fields})
        .values(*(f"group_{field}" for field in fields))
        .annotate(n=Count("domain", distinct=True))
        .order_by()
    )
    return {tuple(row[f"group_{field}"] for field in fields): row["n"] for row in sites}


def domain_sizes(statistics, bounds: list[int] | None = None) -> list[dict]:
    """Domains by size class: each domain harvested (URLs > 0) counted once, in the class of all the
    URLs it yielded in these statistics (empty classes left out, smallest first)."""
    classes = {
        label: {"key": label, "urls": 0, "bytes": 0, "domains": 0} for label, _most in size_classes(bounds)
    }
    domains = (
        sites_of(statistics)
        .values("domain")
        .annotate(urls=Sum("urls_done"), bytes=Sum("bytes_done"))
        .filter(urls__gt=0)
        .values_list("urls", "bytes")
    )
    for urls, size in domains.iterator(chunk_size=10_000):
        row = classes[size_class(urls, bounds)]
        row["urls"] += urls
        row["bytes"] += size or 0
        row["domains"] += 1
    return [row for row in classes.values() if row["domains"]]


def top_domains(statistics, *, by: str = "urls", limit: int = 20) -> list[dict]:
    """The domains that yielded the most URLs (or bytes) in these statistics."""
    order = "-bytes" if by == "bytes" else "-urls"
    rows = (
        sites_of(statistics)
        .values("domain__name")
        .annotate(urls=Sum("urls_done"), bytes=Sum("bytes_done"), jobs=Count("job", distinct=True))
        .filter(urls__gt=0)
        .order_by(order, "domain__name")[:limit]
    )
    return [{**row, "label": row["domain__name"]} for row in rows]
