"""Extra seeds for the next run of a definition (URLs missed in replay): added by curators, given by the
launcher to the jobs of the run it creates, then marked with that run."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import Domain, HarvestDefinition, HarvestRun, JobConfiguration, NextRunAddition
from webarchive.urlnorm import InvalidURL, normalise_url

ADDITIONS_MAX = 1000  # URLs one click may add; and waiting URLs one run takes at most


@transaction.atomic
def next_run_additions_add(
    *, definition: HarvestDefinition, urls: list[tuple[Domain, str]], user, reason: str = ""
) -> list[NextRunAddition]:
    """Add ``(domain, URL)`` pairs as extra seeds of ``definition``'s next run; URLs already waiting are
    skipped. Returns the rows added (who and when are on each row)."""
    if not urls:
        raise ValidationError(_("Choose at least one URL to add to the next run."))
    if len(urls) > ADDITIONS_MAX:
        raise ValidationError(
            _("At most %(max)d URLs can be added at once.") % {"max": ADDITIONS_MAX}, code="too_many"
        )
    if not definition.is_active:
        raise ValidationError(_("This definition is not active: it has no next run."), code="inactive")
    waiting = set(
        NextRunAddition.objects.filter(definition=definition, consumed_by__isnull=True).values_list(
            "url", flat=True
        )
    )
    now = timezone.now()
    added = []
    for domain, url in urls:
        try:
            url = normalise_url(url)
        except InvalidURL:
            continue  # a missed URL that cannot be crawled (data:, javascript:…) is not a seed
        if url in waiting:
            continue
        waiting.add(url)
        addition = NextRunAddition(
            definition=definition, domain=domain, url=url, reason=reason[:200], added_by=user, added_at=now
        )
        addition.full_clean(validate_constraints=False)
        added.append(addition)
    return NextRunAddition.objects.bulk_create(added)


def next_run_additions_feed(*, definition: HarvestDefinition, run: HarvestRun) -> int:
    """Give a just-launched run the URLs waiting for it, as extra seeds of the jobs of their domains, and
    mark them with the run; URLs of domains the run does not crawl stay waiting. Returns how many."""
    entries = JobConfiguration.objects.filter(job__run=run)
    waiting = list(
        NextRunAddition.objects.filter(
            definition=definition,
            consumed_by__isnull=True,
            domain_id__in=Subquery(entries.values("domain_id")),
        )
        .order_by("added_at", "pk")
        .values_list("pk", "domain_id", "url")[:ADDITIONS_MAX]
    )
    if not waiting:
        return 0
    by_domain: dict[int, list[str]] = {}
    for _pk, domain_id, url in waiting:
        by_domain.setdefault(domain_id, []).append(url)
    changed = []
    for entry in entries.filter(domain_id__in=list(by_domain)).only("pk", "seeds", "domain_id"):
        entry.seeds = "\n".join(dict.fromkeys([*entry.seed_urls, *by_domain[entry.domain_id]]))
        changed.append(entry)
    JobConfiguration.objects.bulk_update(changed, ["seeds"], batch_size=500)
    NextRunAddition.objects.filter(pk__in=[pk for pk, _domain, _url in waiting]).update(consumed_by=run)
    return len(waiting)


def next_run_additions(definition: HarvestDefinition, *, limit: int = 200) -> list[NextRunAddition]:
    """The definition's additions, waiting ones first, with who added them and the run that got them."""
    return list(
        NextRunAddition.objects.filter(definition=definition)
        .select_related("domain", "added_by", "consumed_by")
        .order_by(F("consumed_by").asc(nulls_first=True), "-added_at", "-pk")[:limit]
    )
