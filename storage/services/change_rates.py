"""How often pages change, measured from successive captures of the same URL (Cho & Garcia-Molina).

Each crawl (job) that captured a URL is one visit. A visit saw a change when its payload digest
differs from the previous visit's; a revisit record or a 304 saw none. With n compared visits at a
mean interval of I days and X of them seeing a change, the rate is -ln((n - X + 0.5) / (n + 0.5)) / I
changes a day (the estimator for changes observed only at discrete visits). A domain's visits are
its site crawls: one saw a change when any of its URLs did.

Computed for every record and domain at once, in one pass over the captures ordered by key and
time, and stored (ChangeEstimate); pages only read it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from harvest.models import Domain
from selection.choices import SUGGESTABLE_FREQUENCIES, Frequency
from selection.models import Record
from selection.services_frequency import records_follow_suggestions
from storage.models import Capture, ChangeEstimate, Confidence
from storage.warcindex import url_key
from webarchive.urlnorm import registered_domain, url_host

EVIDENCE_KEPT = 30  # the newest visits kept as the evidence of an estimate
DAY = 86400.0
# The longest interval between changes each frequency is suggested for (days), most frequent first.
SUGGESTION_LIMITS = [
    (3, Frequency.DAILY),
    (15, Frequency.WEEKLY),
    (75, Frequency.MONTHLY),
    (250, Frequency.TWICE_YEARLY),
]


def change_rate(*, visits: int, changes: int, mean_interval_days: float) -> float:
    """Changes per day from ``visits`` compared visits, ``changes`` of which saw a change."""
    if visits <= 0 or mean_interval_days <= 0:
        return 0.0
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / mean_interval_days


def confidence(visits: int) -> str:
    if visits >= 8:
        return Confidence.HIGH
    if visits >= 3:
        return Confidence.MEDIUM
    return Confidence.LOW


def frequency_for(rate_per_day: float) -> str:
    """The frequency that follows a page changing ``rate_per_day`` times a day (before any bounds)."""
    if rate_per_day <= 0:
        return Frequency.ANNUAL
    interval = 1 / rate_per_day
    for limit, frequency in SUGGESTION_LIMITS:
        if interval <= limit:
            return frequency
    return Frequency.ANNUAL


assert {f for _, f in SUGGESTION_LIMITS} | {Frequency.ANNUAL} <= {v for v, _ in SUGGESTABLE_FREQUENCIES}


def _visits():
    """(urlkey, url, [(job id, time, digest or None when its record says unchanged)]) for each URL,
    one visit per job, streamed in key order (the whole archive is never held at once)."""
    rows = (
        Capture.objects.filter(
            record_type__in=[Capture.RecordType.RESPONSE, Capture.RecordType.REVISIT], job__isnull=False
        )
        .order_by("urlkey", "timestamp", "pk")
        .values_list("urlkey", "url", "job_id", "timestamp", "record_type", "status", "digest")
    )
    current, current_url, seen = None, "", []
    for key, url, job_id, moment, kind, status, digest in rows.iterator(chunk_size=5000):
        if key != current:
            if seen:
                yield current, current_url, seen
            current, current_url, seen = key, url, []
        if seen and seen[-1][0] == job_id:
            continue  # one visit per crawl: its first capture
        unchanged = kind == Capture.RecordType.REVISIT or status == 304
        if status is not None and status >= 400 and not unchanged:
            continue  # an error says nothing of the page's content
        seen.append((job_id, moment, None if unchanged else digest))
    if seen:
        yield current, current_url, seen


def _compare(visits: list) -> list[dict]:
    """The visits with whether each saw a change since the one before (the first: None)."""
    out = []
    last_digest = None
    for index, (job_id, moment, digest) in enumerate(visits):
        changed = None
        if index:
            changed = digest is not None and last_digest is not None and digest != last_digest
        if digest is not None:
            last_digest = digest
        out.append({"job": job_id, "date": moment.isoformat(), "changed": changed})
    return out


def _estimate(compared: list[dict], moments: list[datetime]) -> dict | None:
    if len(compared) < 2:
        return None
    n = len(compared) - 1
    x = sum(1 for visit in compared[1:] if visit["changed"])
    interval = (moments[-1] - moments[0]).total_seconds() / DAY / n
    if interval <= 0:
        return None
    return {
        "visits": n,
        "changes": x,
        "mean_interval_days": interval,
        "rate_per_day": change_rate(visits=n, changes=x, mean_interval_days=interval),
        "confidence": confidence(n),
        "evidence": compared[-EVIDENCE_KEPT:],
    }


@transaction.atomic
def change_estimates_refresh(*, now: datetime | None = None, follow: bool = True) -> dict:
    """Measure every record's and every domain's change rate again; collections that follow suggestions
    get them. Returns how many estimates of each kind were stored and how many records followed."""
    now = now or timezone.now()
    records = list(
        Record.objects.select_related("collection").only(
            "pk",
            "url",
            "frequency",
            "boost_until",
            "collection__frequency_most_often",
            "collection__frequency_least_often",
            "collection__follow_suggestions",
        )
    )
    by_key: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_key[url_key(record.url)].append(record)
    record_rows = []
    follow_up = []
    # A domain's visit per crawl: changed when any of its URLs changed at that crawl.
    per_domain: dict[str, dict[int, dict]] = defaultdict(dict)
    for key, url, seen in _visits():
        compared = _compare(seen)
        if key in by_key:
            estimate = _estimate(compared, [moment for _job, moment, _digest in seen])
            for record in by_key[key] if estimate is not None else ():
                suggested = record.collection.clamp_frequency(frequency_for(estimate["rate_per_day"]))
                record_rows.append(
                    ChangeEstimate(record=record, suggested_frequency=suggested, computed_at=now, **estimate)
                )
                collection = record.collection
                if (
                    collection.follow_suggestions
                    and suggested != record.frequency
                    and record.boost_until is None
                ):
                    follow_up.append((record.pk, suggested))
        crawls = per_domain[registered_domain(url_host(url))]
        for visit in compared:
            entry = crawls.setdefault(
                visit["job"], {"job": visit["job"], "date": visit["date"], "changed": None}
            )
            entry["date"] = min(entry["date"], visit["date"])
            if visit["changed"]:
                entry["changed"] = True
    domains = dict(Domain.objects.filter(name__in=list(per_domain)).values_list("name", "pk"))
    domain_rows = []
    for name, crawls in per_domain.items():
        if name not in domains:
            continue
        ordered = sorted(crawls.values(), key=lambda entry: entry["date"])
        compared = [
            dict(entry, changed=bool(entry["changed"]) if i else None) for i, entry in enumerate(ordered)
        ]
        estimate = _estimate(compared, [datetime.fromisoformat(entry["date"]) for entry in ordered])
        if estimate is None:
            continue
        domain_rows.append(
            ChangeEstimate(
                domain_id=domains[name],
                suggested_frequency=frequency_for(estimate["rate_per_day"]),
                computed_at=now,
                **estimate,
            )
        )
    ChangeEstimate.objects.all().delete()
    ChangeEstimate.objects.bulk_create(record_rows + domain_rows, batch_size=1000)
    followed = records_follow_suggestions(suggestions=follow_up) if follow else 0
    return {"records": len(record_rows), "domains": len(domain_rows), "followed": followed}
