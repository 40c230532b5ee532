"""This deployment's address guard policy, from the settings (the guard itself: :mod:`webarchive.netguard`).

Every server-side fetch of a user's or a site's URL — the online check of a record, a site crawl, the
broad crawl's redirect discovery and DNS checks — goes through the policy made here, so a setting
changes them all at once.
"""

from __future__ import annotations

from django.conf import settings

from webarchive.netguard import AddressPolicy


def address_policy(*, allow_private: bool | None = None, allowed_networks=()) -> AddressPolicy:
    """The guard's policy: loopback, private, link-local and metadata addresses refused unless
    ``WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES`` (or ``allow_private``) allows them; ``allowed_networks``
    are let through whatever the rule (a preload run's own nameservers)."""
    if allow_private is None:
        allow_private = settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES
    return AddressPolicy(allow_private=bool(allow_private), allowed_networks=tuple(allowed_networks))
