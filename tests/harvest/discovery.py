"""Discovered sites and decisions made for the access tests of their pages (no crawl runs)."""

from __future__ import annotations

import uuid

from django.urls import reverse
from django.utils import timezone

from harvest.models import DiscoveredSite, DiscoveryAction, DiscoveryBlock, DiscoveryDecision
from tests.factories import CollectionFactory, UserFactory


def discovered_site() -> DiscoveredSite:
    now = timezone.now()
    name = f"found-{uuid.uuid4().hex[:10]}.org"
    return DiscoveredSite.objects.create(
        registered_domain=name, tld="org", site_count=1, link_count=1, first_seen=now, last_seen=now
    )


def action_url(action: str) -> str:
    """The URL of an action on a fresh candidate of a fresh collection."""
    return reverse("harvest:discovery_action", args=[CollectionFactory().pk, discovered_site().pk, action])


def dismissal() -> DiscoveryDecision:
    return DiscoveryDecision.objects.create(
        collection=CollectionFactory(),
        registered_domain=discovered_site().registered_domain,
        action=DiscoveryAction.DISMISSED,
        decided_by=UserFactory(),
    )


def block() -> DiscoveryBlock:
    return DiscoveryBlock.objects.create(pattern=f"b{uuid.uuid4().hex[:10]}.org", created_by=UserFactory())
