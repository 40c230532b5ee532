"""Reads of the discovered sites: one collection's ranked queue, with its filters.

Ranking (docs/curation.md, "Discovered sites"): each linking site that is one of the collection's
own sites (the registered domain of one of its records) counts OWN_SITE_WEIGHT, each other archived
site OTHER_SITE_WEIGHT, and each link found one point, at most PAGES_COUNTED in all.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.db.models import Count, ExpressionWrapper, F, IntegerField, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce, Least

from harvest.models import DiscoveredLink, DiscoveredSite, DiscoveryBlock, DiscoveryDecision
from selection.models import Collection, Record

OWN_SITE_WEIGHT = 10
OTHER_SITE_WEIGHT = 3
PAGES_COUNTED = 30

# The language a site's TLD suggests: the crawler keeps no language per page, so the filter is by TLD.
LANGUAGE_TLDS: dict[str, tuple[str, ...]] = {
    "fr": ("fr", "be", "ch", "lu", "mc", "ca", "re", "gp", "mq", "nc", "pf", "sn", "ci"),
    "en": ("uk", "us", "ie", "au", "nz", "ca", "za"),
    "de": ("de", "at", "ch", "li"),
    "es": ("es", "mx", "ar", "co", "cl", "pe"),
    "it": ("it", "sm", "ch"),
    "nl": ("nl", "be"),
    "pt": ("pt", "br"),
}


def blocked() -> Q:
    """Q of the discovered sites the blacklist matches."""
    condition = Q(pk__in=[])
    exact, suffixes = [], []
    for pattern in DiscoveryBlock.objects.values_list("pattern", flat=True):
        if pattern.startswith("*."):
            suffixes.append(pattern[2:])
        else:
            exact.append(pattern)
    if exact:
        condition |= Q(registered_domain__in=exact)
    for suffix in suffixes:
        condition |= Q(registered_domain=suffix) | Q(registered_domain__endswith=f".{suffix}")
    return condition


def own_domains(collection: Collection) -> QuerySet:
    """The registered domains of the collection's records: its own sites."""
    return Record.objects.filter(collection=collection).values("registered_domain")


def discovery_queue(
    collection: Collection, *, tld: str = "", language: str = "", search: str = ""
) -> QuerySet[DiscoveredSite]:
    """The collection's candidates, best first: neither its records, nor decided on, nor blacklisted."""
    own = own_domains(collection)
    decided = DiscoveryDecision.objects.filter(collection=collection, undone_at__isnull=True).values(
        "registered_domain"
    )
    queryset = (
        DiscoveredSite.objects.exclude(registered_domain__in=own)
        .exclude(registered_domain__in=decided)
        .exclude(blocked())
    )
    if tld:
        queryset = queryset.filter(tld=tld)
    if language:
        queryset = queryset.filter(tld__in=LANGUAGE_TLDS.get(language, ()))
    if search:
        queryset = queryset.filter(registered_domain__contains=search)
    own_links = Q(links__source_domain__name__in=own)
    return (
        queryset.annotate(
            own_sites=Count("links", filter=own_links),
            own_links=Coalesce(Sum("links__link_count", filter=own_links), 0),
        )
        .annotate(
            score=ExpressionWrapper(
                F("own_sites") * OWN_SITE_WEIGHT
                + (F("site_count") - F("own_sites")) * OTHER_SITE_WEIGHT
                + Least(F("link_count"), Value(PAGES_COUNTED)),
                output_field=IntegerField(),
            )
        )
        .order_by("-score", "-site_count", "registered_domain")
    )


def linking(sites: list[DiscoveredSite], collection: Collection) -> dict[int, list[DiscoveredLink]]:
    """The links to each of these sites (one query), the collection's own sites first."""
    own = set(own_domains(collection).values_list("registered_domain", flat=True))
    found: dict[int, list[DiscoveredLink]] = {site.pk: [] for site in sites}
    for link in DiscoveredLink.objects.filter(site__in=sites).select_related("source_domain"):
        link.is_own = link.source_domain.name in own
        found[link.site_id].append(link)
    for links in found.values():
        links.sort(key=lambda link: (not link.is_own, -link.link_count))
    return found


def site_url(site: DiscoveredSite, links: list[DiscoveredLink] | None = None) -> str:
    """The address to check and propose: the origin of the most linked URL, else the domain's front page."""
    for link in links if links is not None else site.links.order_by("-link_count")[:1]:
        for url in link.urls[:1]:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc:
                return f"{parts.scheme}://{parts.netloc}/"
    return site.url


def decisions(collection: Collection) -> QuerySet[DiscoveryDecision]:
    """The collection's decisions, newest first (dismissals may be undone)."""
    return DiscoveryDecision.objects.filter(collection=collection).select_related(
        "decided_by", "undone_by", "record", "domain"
    )
