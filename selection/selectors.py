"""Reads on the selection side that are more than a filter."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q
from django.urls import reverse
from django.utils.translation import gettext as _

from selection.choices import Budget, Depth, Frequency, RecordStatus
from selection.models import Collection, CompatibilityRule, Record
from webarchive.permissions import VALIDATE, VIEW, Role, can
from webarchive.urlnorm import registered_domain, url_host, url_key

SIMILAR_LIMIT = 20


def home_cards(user, roles) -> list[dict]:
    """The selection side's cards on the home page."""
    if not can(user, VIEW, Record):
        return []
    cards = []
    records = reverse("selection:record_list")
    if Role.LIBRARIAN in roles:
        mine = Record.objects.filter(responsible=user)
        cards.append(
            {
                "title": _("Your records"),
                "count": mine.count(),
                "text": _("Records you are responsible for; %(n)d rejected.")
                % {"n": mine.filter(status=RecordStatus.REJECTED).count()},
                "url": f"{records}?responsible=me",
            }
        )
        cards.append(
            {
                "title": _("Your collections"),
                "count": user.collections.filter(is_active=True).count(),
                "text": _("Active collections you may propose URLs into."),
                "url": f"{reverse('selection:collection_list')}?member=me&is_active=true",
            }
        )
    if can(user, VALIDATE, Record):
        cards.append(
            {
                "title": _("Awaiting validation"),
                "count": Record.objects.filter(status=RecordStatus.PROPOSED).count(),
                "text": _("Proposed records to validate or reject."),
                "url": reverse("selection:validation_queue"),
            }
        )
    if roles & {Role.ENGINEER, Role.MANAGER}:
        cards.append(
            {
                "title": _("Validated records"),
                "count": Record.objects.filter(status=RecordStatus.VALIDATED, is_active=True).count(),
                "text": _("Active, validated records ready to be harvested."),
                "url": f"{records}?status=validated&is_active=true",
            }
        )
    return cards


# Duplicates -------------------------------------------------------------------------------------


@dataclass
class Duplicates:
    """Records that already hold a URL, or one like it."""

    same: list[Record] = field(default_factory=list)  # the same URL (http/https, www., slash ignored)
    same_host: list[Record] = field(default_factory=list)
    same_domain: list[Record] = field(default_factory=list)

    def in_collection(self, collection: Collection | None) -> list[Record]:
        return [r for r in self.same if collection is not None and r.collection_id == collection.pk]

    @property
    def any(self) -> bool:
        return bool(self.same or self.same_host or self.same_domain)


def record_duplicates(url: str, *, exclude_pk: int | None = None) -> Duplicates:
    """The records with the same URL, and those on the same host or registered domain."""
    key = url_key(url)
    host = url_host(url)
    domain = registered_domain(host)
    records = Record.objects.select_related("collection", "responsible")
    if exclude_pk is not None:
        records = records.exclude(pk=exclude_pk)
    same = list(records.filter(url_key=key).order_by("collection__name"))
    same_ids = [r.pk for r in same]
    bare_host = host.removeprefix("www.")
    same_host = list(
        records.filter(host__in=[bare_host, f"www.{bare_host}"])
        .exclude(pk__in=same_ids)
        .order_by("url")[:SIMILAR_LIMIT]
    )
    seen = same_ids + [r.pk for r in same_host]
    same_domain = list(
        records.filter(registered_domain=domain).exclude(pk__in=seen).order_by("url")[:SIMILAR_LIMIT]
    )
    return Duplicates(same=same, same_host=same_host, same_domain=same_domain)


# Compatibility of technical settings ----------------------------------------------------------


def incompatibility(
    budget: str, frequency: str, depth: str, *, rules: list[CompatibilityRule] | None = None
) -> CompatibilityRule | None:
    """The first rule that forbids this combination, or None when it may be used.

    Callers checking many combinations pass the ``rules`` they loaded once.
    """
    for rule in CompatibilityRule.objects.all() if rules is None else rules:
        if rule.matches(budget, frequency, depth):
            return rule
    return None


def _combination(budget: str, frequency: str, depth: str) -> Q:
    """The records whose settings a rule on these values (empty: any) matches."""
    q = Q()
    for name, value in (("budget", budget), ("frequency", frequency), ("depth", depth)):
        if value:
            q &= Q(**{name: value})
    return q


def records_forbidden_by(budget: str = "", frequency: str = "", depth: str = ""):
    """The existing records a rule forbidding this combination would catch (to show before it is made)."""
    return Record.objects.filter(_combination(budget, frequency, depth)).select_related("collection")


def records_breaking_rules():
    """The records whose settings a rule made after them forbids: curators fix them (their other
    edits are never blocked, see selection.services.record_update)."""
    rules = list(CompatibilityRule.objects.all())
    if not rules:
        return Record.objects.none()
    q = Q()
    for rule in rules:
        q |= _combination(rule.budget, rule.frequency, rule.depth)
    return Record.objects.filter(q).select_related("collection")


def compatibility_matrix() -> dict:
    """Every combination and whether it may be used, for forms to grey out impossible values.

    ``{"forbidden": ["large|daily|host", …], "rules": [{"budget": …, …, "label": …}]}``
    """
    rules = list(CompatibilityRule.objects.all())
    forbidden = [
        f"{b}|{f}|{d}"
        for b in Budget.values
        for f in Frequency.values
        for d in Depth.values
        if any(rule.matches(b, f, d) for rule in rules)
    ]
    return {
        "forbidden": forbidden,
        "rules": [
            {
                "budget": r.budget,
                "frequency": r.frequency,
                "depth": r.depth,
                "label": str(r),
                "reason": r.reason,
            }
            for r in rules
        ],
    }


def budget_ranges() -> dict[str, str]:
    """Each budget's range of URLs, from the configured thresholds."""
    from django.conf import settings

    small, medium = settings.SELECTION_BUDGET_SMALL_MAX, settings.SELECTION_BUDGET_MEDIUM_MAX
    return {
        Budget.SMALL: _("fewer than %(n)s URLs") % {"n": f"{small:,}"},
        Budget.MEDIUM: _("%(a)s to %(b)s URLs") % {"a": f"{small:,}", "b": f"{medium:,}"},
        Budget.LARGE: _("more than %(n)s URLs") % {"n": f"{medium:,}"},
    }
