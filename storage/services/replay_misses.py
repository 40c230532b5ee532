"""URLs missed in replay: recorded from the replay gate's reports, added by curators to the next run.

The replay gate (storage/replay_gate.py, in pywb's process) sees pywb answer 404 to a capture's address
and reports it, after the answer, to ``replay_misses`` (signed with the gate's key): the address asked
for, its ``Referer`` (the replayed page that asked) and ``Sec-Fetch-Dest`` (what the browser wanted it
for). Everything in a report is hostile: lengths are cut, and a page records at most
REPLAY_MISSES_PER_PAGE distinct URLs.
"""

from __future__ import annotations

import datetime
import hashlib
import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import Domain, HarvestDefinition, NextRunAddition
from harvest.services.additions import next_run_additions_add
from storage.models import Capture, MissKind, ReplayMiss
from storage.models_misses import MISS_URL_MAX
from webarchive.urlnorm import registered_domain

REPLAY_MISSES_PER_PAGE = 500
# pywb's address of a capture: http(s)://replay/<collection>/<timestamp><modifier>/<URL>
_PYWB_ADDRESS = re.compile(r"^https?://[^/]+/[^/]+/(\d{1,14})([a-z]{2}_)?/(https?://.+)$", re.IGNORECASE)
_DESTINATIONS = {
    "document": MissKind.PAGE,
    "iframe": MissKind.PAGE,
    "frame": MissKind.PAGE,
    "image": MissKind.IMAGE,
    "script": MissKind.SCRIPT,
    "style": MissKind.STYLESHEET,
    "font": MissKind.FONT,
    "audio": MissKind.MEDIA,
    "video": MissKind.MEDIA,
    "track": MissKind.MEDIA,
}
# pywb's modifiers, for a browser that sends no Sec-Fetch-Dest.
_MODIFIERS = {
    "im_": MissKind.IMAGE,
    "js_": MissKind.SCRIPT,
    "cs_": MissKind.STYLESHEET,
    "mp_": MissKind.PAGE,
    "if_": MissKind.PAGE,
    "fr_": MissKind.PAGE,
}


def miss_kind(destination: str, modifier: str) -> str:
    """page, image, script…: from the browser's Sec-Fetch-Dest, else from pywb's modifier."""
    kind = _DESTINATIONS.get(destination.lower()) or _MODIFIERS.get(modifier.lower())
    if kind is None and not destination and not modifier:
        kind = MissKind.PAGE
    return kind or MissKind.OTHER


def _stamp_time(stamp: str) -> datetime.datetime:
    stamp = (stamp + "00000101000000"[len(stamp) :])[:14]
    try:
        moment = datetime.datetime.strptime(stamp, "%Y%m%d%H%M%S")
    except ValueError:
        moment = datetime.datetime(int(stamp[:4]) or 1, 1, 1)
    return moment.replace(tzinfo=datetime.UTC)


def _job_of(page_url: str, stamp: str) -> int | None:
    """The job whose capture of the page is the closest to ``stamp`` (what pywb showed)."""
    moment = _stamp_time(stamp)
    captures = Capture.objects.filter(url=page_url, job__isnull=False)
    before = captures.filter(timestamp__lte=moment).order_by("-timestamp").values_list("job_id", flat=True)
    after = captures.filter(timestamp__gt=moment).order_by("timestamp").values_list("job_id", flat=True)
    return before.first() or after.first()


def replay_miss_record(
    *, url: str, stamp: str, modifier: str = "", referer: str = "", destination: str = "", now=None
) -> ReplayMiss | None:
    """Count one URL pywb did not find, for the page that asked for it (one row per page and URL);
    None when the report is not a capture's address or the page has too many misses already."""
    url = url[:MISS_URL_MAX]
    if urlsplit(url).scheme.lower() not in ("http", "https") or not urlsplit(url).hostname:
        return None
    stamp = stamp[:14] if stamp.isdigit() else ""
    page = _PYWB_ADDRESS.match(referer[: MISS_URL_MAX + 200])
    if page:
        page_stamp, page_url = page.group(1), page.group(3)[:MISS_URL_MAX]
    else:  # the page itself was missed (opened directly, no referring page)
        page_stamp, page_url = stamp, url
    now = now or timezone.now()
    key = hashlib.sha256(f"{page_url}\n{page_stamp}\n{url}".encode()).hexdigest()
    if ReplayMiss.objects.filter(key=key).update(count=F("count") + 1, last_seen=now):
        return ReplayMiss.objects.get(key=key)
    if ReplayMiss.objects.filter(page_url=page_url, page_stamp=page_stamp).count() >= REPLAY_MISSES_PER_PAGE:
        return None
    miss = ReplayMiss(
        key=key,
        page_url=page_url,
        page_stamp=page_stamp,
        url=url,
        host=(urlsplit(url).hostname or "")[:255],
        kind=miss_kind(destination[:20], modifier[:3]),
        job_id=_job_of(page_url, page_stamp),
        first_seen=now,
        last_seen=now,
    )
    try:
        with transaction.atomic():
            miss.save()
    except IntegrityError:  # the same miss reported at the same moment
        ReplayMiss.objects.filter(key=key).update(count=F("count") + 1, last_seen=now)
        return ReplayMiss.objects.get(key=key)
    return miss


def _domain_for(miss: ReplayMiss) -> Domain | None:
    """The domain whose crawl should fetch a missed URL: its own, if planned; else the browsed page's."""
    names = [registered_domain(miss.host), registered_domain(urlsplit(miss.page_url).hostname or "")]
    found = {domain.name: domain for domain in Domain.objects.filter(name__in=names)}
    for name in names:
        if name in found:
            return found[name]
    return None


@transaction.atomic
def replay_misses_add_to_next_run(
    *, definition: HarvestDefinition, miss_ids: list[int], user, as_rules: bool = False
) -> list:
    """Add misses (of jobs of ``definition``) to its next run, as extra seeds or (``as_rules``) as accept
    rules of their folders; refuses an empty choice and misses of other definitions' jobs, changing
    nothing."""
    miss_ids = sorted(set(miss_ids))
    if not miss_ids:
        raise ValidationError(_("Choose at least one missed URL to add to the next run."), code="empty")
    misses = list(
        ReplayMiss.objects.filter(pk__in=miss_ids, job__harvest_definition=definition).order_by("pk")
    )
    if len(misses) != len(miss_ids):
        raise ValidationError(
            _("Some of the chosen URLs were not missed in a replay of this definition's jobs."),
            code="foreign",
        )
    urls = []
    for miss in misses:
        domain = _domain_for(miss)
        if domain is not None:
            urls.append((domain, miss.url))
    if not urls:
        raise ValidationError(
            _("None of the chosen URLs belongs to a domain the archive plans."), code="no_domain"
        )
    return next_run_additions_add(
        definition=definition,
        urls=urls,
        user=user,
        reason=_("missed in replay"),
        kind=NextRunAddition.Kind.RULE if as_rules else NextRunAddition.Kind.SEED,
    )
