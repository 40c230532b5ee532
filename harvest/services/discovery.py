"""Discovered sites: the external links of ended site crawls folded into candidates by registered
domain, and curators' decisions on them (propose as a record, add as a domain, dismiss, undo).

Folding is set-based: a batch of ended site crawls is read in one query, aggregated in memory by
(candidate, linking site), and written with a few bulk statements, whatever the number of links.
"""

from __future__ import annotations

import re
from collections import defaultdict
from urllib.parse import urlsplit

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import SiteState
from harvest.models import (
    DiscoveredLink,
    DiscoveredSite,
    DiscoveryAction,
    DiscoveryBlock,
    DiscoveryDecision,
    DiscoveryFold,
    Domain,
    ExternalLink,
    JobConfiguration,
)
from harvest.models.discovery import SAMPLE_KEPT
from harvest.services.domains import domain_create
from harvest.validators import is_address
from selection.models import Collection, Record, Theme
from selection.services import record_propose
from selection.urlcheck import check_url
from webarchive.permissions import CHANGE, can
from webarchive.urlnorm import registered_domain

FOLD_BATCH = 200  # site crawls folded per transaction
BLOCK_PATTERNS_MAX = 1000  # blacklist entries: each is one condition of the queue's query
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


def _tld(domain: str) -> str:
    if is_address(domain):
        return ""
    return domain.rsplit(".", 1)[-1] if "." in domain else ""


def _candidate(url: str) -> str | None:
    """The registered domain an external URL belongs to (an address is its own), or None (a bare name)."""
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return None
    if not host or ("." not in host and not is_address(host)):
        return None
    domain = registered_domain(host)
    return domain if len(domain) <= 255 else None


def discovered_sites_fold(*, batch: int = FOLD_BATCH) -> int:
    """Fold the external links of every ended site crawl not yet counted; returns how many were."""
    total = 0
    while True:
        folded = _fold_batch(batch)
        total += folded
        if folded < batch:
            return total


@transaction.atomic
def _fold_batch(batch: int) -> int:
    entries = list(
        JobConfiguration.objects.filter(state=SiteState.ENDED, discovery_fold__isnull=True)
        .order_by("pk")
        .values_list("pk", "domain_id", "domain__name", "ended_at")[:batch]
    )
    if not entries:
        return 0
    # Marked first: a fold running at the same time fails on these rows and takes them next time.
    DiscoveryFold.objects.bulk_create([DiscoveryFold(entry_id=pk) for pk, *_rest in entries])
    now = timezone.now()
    own = {
        pk: (domain_id, registered_domain(name), ended_at or now) for pk, domain_id, name, ended_at in entries
    }
    edges: dict[tuple[str, int], dict] = {}
    links = ExternalLink.objects.filter(entry_id__in=list(own)).values_list(
        "entry_id", "url", "count", "sources"
    )
    for entry_id, url, count, sources in links.iterator(chunk_size=2000):
        domain = _candidate(url)
        source_domain_id, source_registered, seen = own[entry_id]
        if domain is None or domain == source_registered:
            continue
        edge = edges.setdefault(
            (domain, source_domain_id), {"count": 0, "pages": [], "urls": [], "first": seen, "last": seen}
        )
        edge["count"] += count
        edge["first"], edge["last"] = min(edge["first"], seen), max(edge["last"], seen)
        if len(edge["urls"]) < SAMPLE_KEPT and url not in edge["urls"]:
            edge["urls"].append(url[:2000])
        for page in sources or ():
            if len(edge["pages"]) < SAMPLE_KEPT and page not in edge["pages"]:
                edge["pages"].append(str(page)[:2000])
    if edges:
        _write_edges(edges)
    return len(entries)


def _write_edges(edges: dict[tuple[str, int], dict]) -> None:
    per_site: dict[str, list] = defaultdict(list)
    for (domain, _source), edge in edges.items():
        per_site[domain].append(edge)
    DiscoveredSite.objects.bulk_create(
        [
            DiscoveredSite(
                registered_domain=domain,
                tld=_tld(domain),
                first_seen=min(edge["first"] for edge in found),
                last_seen=max(edge["last"] for edge in found),
            )
            for domain, found in per_site.items()
        ],
        ignore_conflicts=True,
    )
    sites = dict(
        DiscoveredSite.objects.filter(registered_domain__in=list(per_site)).values_list(
            "registered_domain", "pk"
        )
    )
    existing = {
        (link.site_id, link.source_domain_id): link
        for link in DiscoveredLink.objects.select_for_update().filter(
            site_id__in=list(sites.values()), source_domain_id__in={source for _domain, source in edges}
        )
    }
    new, changed = [], []
    for (domain, source), edge in edges.items():
        link = existing.get((sites[domain], source))
        if link is None:
            new.append(
                DiscoveredLink(
                    site_id=sites[domain],
                    source_domain_id=source,
                    link_count=edge["count"],
                    source_pages=edge["pages"],
                    urls=edge["urls"],
                    first_seen=edge["first"],
                    last_seen=edge["last"],
                )
            )
            continue
        link.link_count += edge["count"]
        link.source_pages = list(dict.fromkeys([*link.source_pages, *edge["pages"]]))[:SAMPLE_KEPT]
        link.urls = list(dict.fromkeys([*link.urls, *edge["urls"]]))[:SAMPLE_KEPT]
        link.first_seen = min(link.first_seen, edge["first"])
        link.last_seen = max(link.last_seen, edge["last"])
        changed.append(link)
    DiscoveredLink.objects.bulk_create(new, batch_size=2000)
    DiscoveredLink.objects.bulk_update(
        changed, ["link_count", "source_pages", "urls", "first_seen", "last_seen"], batch_size=2000
    )
    # The candidates' totals, from their links, in one statement.
    of_site = DiscoveredLink.objects.filter(site=OuterRef("pk")).values("site")
    DiscoveredSite.objects.filter(pk__in=list(sites.values())).update(
        site_count=Coalesce(Subquery(of_site.annotate(n=Count("pk")).values("n")), 0),
        link_count=Coalesce(Subquery(of_site.annotate(n=Sum("link_count")).values("n")), 0),
        first_seen=Subquery(
            DiscoveredLink.objects.filter(site=OuterRef("pk")).order_by("first_seen").values("first_seen")[:1]
        ),
        last_seen=Subquery(
            DiscoveredLink.objects.filter(site=OuterRef("pk")).order_by("-last_seen").values("last_seen")[:1]
        ),
    )


# Curators' decisions --------------------------------------------------------------------------


def _require_curator(user) -> None:
    if not can(user, CHANGE, Collection):
        raise PermissionDenied(_("Only curators may decide on discovered sites."))


def block_pattern_normalise(pattern: str) -> str:
    """``Example.COM`` → ``example.com``; ``*.gov`` kept as a suffix; anything else is refused."""
    pattern = (pattern or "").strip().lower().rstrip(".")
    wildcard = pattern.startswith("*.")
    labels = (pattern[2:] if wildcard else pattern).split(".")
    if (
        not pattern
        or len(pattern) > 255
        or not all(_LABEL.match(label) for label in labels)
        or (not wildcard and len(labels) < 2)
    ):
        raise ValidationError(
            {
                "pattern": _(
                    "Give a domain (example.com) or every domain under a suffix (*.example.com, *.gov)."
                )
            }
        )
    return pattern


@transaction.atomic
def discovery_block_add(*, user, pattern: str, reason: str = "") -> DiscoveryBlock:
    """Blacklist a domain or a suffix: it is never proposed in any collection's queue."""
    _require_curator(user)
    pattern = block_pattern_normalise(pattern)
    if DiscoveryBlock.objects.filter(pattern=pattern).exists():
        raise ValidationError({"pattern": _("%(pattern)s is already blacklisted.") % {"pattern": pattern}})
    if DiscoveryBlock.objects.count() >= BLOCK_PATTERNS_MAX:
        raise ValidationError(
            {"pattern": _("The blacklist holds at most %(max)d entries.") % {"max": BLOCK_PATTERNS_MAX}}
        )
    block = DiscoveryBlock(pattern=pattern, reason=(reason or "").strip()[:500], created_by=user)
    block.full_clean()
    block.save()
    return block


@transaction.atomic
def discovery_block_remove(*, user, block: DiscoveryBlock) -> None:
    """Take a pattern off the blacklist: its domains may be proposed again."""
    _require_curator(user)
    block.delete()


def _decide(*, user, collection: Collection, site: DiscoveredSite, action: str, **links) -> DiscoveryDecision:
    decision = DiscoveryDecision(
        collection=collection,
        registered_domain=site.registered_domain,
        action=action,
        decided_by=user,
        **links,
    )
    decision.full_clean()
    try:
        with transaction.atomic():
            decision.save()
    except IntegrityError as error:
        raise ValidationError(_("This site was already decided on for this collection.")) from error
    return decision


def _undecided(collection: Collection, site: DiscoveredSite) -> None:
    if DiscoveryDecision.objects.filter(
        collection=collection, registered_domain=site.registered_domain, undone_at__isnull=True
    ).exists():
        raise ValidationError(_("This site was already decided on for this collection."))


@transaction.atomic
def discovered_site_dismiss(*, user, collection: Collection, site: DiscoveredSite) -> DiscoveryDecision:
    """Never show this site again in the collection's queue (until the dismissal is undone)."""
    _require_curator(user)
    _undecided(collection, site)
    return _decide(user=user, collection=collection, site=site, action=DiscoveryAction.DISMISSED)


@transaction.atomic
def discovery_decision_undo(*, user, decision: DiscoveryDecision) -> DiscoveryDecision:
    """Undo a dismissal: the site comes back to the queue; the dismissal stays, marked undone."""
    _require_curator(user)
    decision = DiscoveryDecision.objects.select_for_update().get(pk=decision.pk)
    if decision.action != DiscoveryAction.DISMISSED:
        raise ValidationError(_("Only a dismissal can be undone; a record or a domain has its own pages."))
    if decision.undone_at is not None:
        raise ValidationError(_("This dismissal was already undone."))
    decision.undone_by = user
    decision.undone_at = timezone.now()
    decision.save(update_fields=["undone_by", "undone_at"])
    return decision


@transaction.atomic
def discovered_site_propose(
    *,
    user,
    collection: Collection,
    site: DiscoveredSite,
    theme: Theme | None,
    url: str = "",
    check_override_reason: str = "",
    checker=check_url,
) -> Record:
    """Propose a discovered site into a collection as a record (selection's record_propose: checked
    online, de-duplicated, with history), and remember the decision."""
    _require_curator(user)
    _undecided(collection, site)
    if theme is None:
        raise ValidationError({"theme": _("Choose a theme of the collection.")})
    url = (url or "").strip() or site.url
    if _candidate(url) != site.registered_domain:
        raise ValidationError(
            {"url": _("The URL must be on %(domain)s.") % {"domain": site.registered_domain}}
        )
    record = record_propose(
        user=user,
        collection=collection,
        url=url,
        theme=theme,
        content_notes=_("Discovered: linked from %(count)d archived sites.") % {"count": site.site_count},
        check_override_reason=check_override_reason,
        checker=checker,
    )
    _decide(user=user, collection=collection, site=site, action=DiscoveryAction.PROPOSED, record=record)
    return record


@transaction.atomic
def discovered_site_add_domain(*, user, collection: Collection, site: DiscoveredSite) -> Domain:
    """Add a discovered site as a domain (harvest's domain_create): the next snapshot harvests it."""
    _require_curator(user)
    _undecided(collection, site)
    domain = domain_create(
        name=site.registered_domain,
        user=user,
        comments=_("Discovered: linked from %(count)d archived sites.") % {"count": site.site_count},
    )
    _decide(user=user, collection=collection, site=site, action=DiscoveryAction.DOMAIN_ADDED, domain=domain)
    return domain
