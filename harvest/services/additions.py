"""Extra seeds for the next run of a definition (URLs missed in replay): added by curators, given by the
launcher to the jobs of the run it creates, then marked with that run."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import Domain, HarvestDefinition, HarvestRun, Job, JobConfiguration, NextRunAddition
from webarchive.urlnorm import InvalidURL, normalise_url

ADDITIONS_MAX = 1000  # URLs one click may add; and waiting URLs one run takes at most


def folder_rule(url: str) -> str:
    """The accept rule that brings ``url``'s folder on its host into scope, whatever the scheme:
    ``^https?://cdn\\.example\\.org/static/img/`` for ``https://cdn.example.org/static/img/logo.png``.
    Built from the parsed URL and escaped, so nothing of the (crawled) URL acts as a pattern."""
    parts = urlsplit(url)
    folder = parts.path[: parts.path.rfind("/") + 1] or "/"
    return f"^https?://{re.escape(parts.netloc.lower())}{re.escape(folder)}"


@transaction.atomic
def next_run_additions_add(
    *,
    definition: HarvestDefinition,
    urls: list[tuple[Domain, str]],
    user,
    reason: str = "",
    kind: str = NextRunAddition.Kind.SEED,
) -> list[NextRunAddition]:
    """Add ``(domain, URL)`` pairs to ``definition``'s next run: as extra seeds, or (``kind`` rule) as the
    accept rules of their folders (:func:`folder_rule`). What is already waiting is skipped. Returns the
    rows added (who and when are on each row)."""
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
        if kind == NextRunAddition.Kind.RULE:
            url = folder_rule(url)
        if url in waiting:
            continue
        waiting.add(url)
        addition = NextRunAddition(
            definition=definition,
            domain=domain,
            kind=kind,
            url=url,
            reason=reason[:200],
            added_by=user,
            added_at=now,
        )
        addition.full_clean(validate_constraints=False)
        added.append(addition)
    return NextRunAddition.objects.bulk_create(added)


def next_run_additions_feed(*, definition: HarvestDefinition, run: HarvestRun) -> int:
    """Give a just-launched run what waits for it, and mark it with the run: URLs as extra seeds of the
    sites of their domains, accept rules to the frozen settings of the jobs that crawl their domains.
    What belongs to a domain the run does not crawl stays waiting. Returns how many were given."""
    entries = JobConfiguration.objects.filter(job__run=run)
    waiting = list(
        NextRunAddition.objects.filter(
            definition=definition,
            consumed_by__isnull=True,
            domain_id__in=Subquery(entries.values("domain_id")),
        )
        .order_by("added_at", "pk")
        .values_list("pk", "domain_id", "url", "kind")[:ADDITIONS_MAX]
    )
    if not waiting:
        return 0
    by_domain: dict[int, list[str]] = {}
    rules_by_domain: dict[int, list[str]] = {}
    for _pk, domain_id, url, kind in waiting:
        target = rules_by_domain if kind == NextRunAddition.Kind.RULE else by_domain
        target.setdefault(domain_id, []).append(url)
    if rules_by_domain:
        _give_rules(run, rules_by_domain)
    run_seeds_add(run=run, seeds_by_domain=by_domain)
    NextRunAddition.objects.filter(pk__in=[pk for pk, *_rest in waiting]).update(consumed_by=run)
    return len(waiting)


def run_seeds_add(*, run: HarvestRun, seeds_by_domain: dict[int, list[str]]) -> None:
    """Add URLs to the seeds of a just-launched run's site crawls of their domains (by domain id), each
    seed once, in bulk (replay misses, news articles)."""
    if not seeds_by_domain:
        return
    entries = JobConfiguration.objects.filter(job__run=run, domain_id__in=list(seeds_by_domain))
    changed = []
    for entry in entries.only("pk", "seeds", "domain_id"):
        entry.seeds = "\n".join(dict.fromkeys([*entry.seed_urls, *seeds_by_domain[entry.domain_id]]))
        changed.append(entry)
    JobConfiguration.objects.bulk_update(changed, ["seeds"], batch_size=500)


def _give_rules(run: HarvestRun, rules_by_domain: dict[int, list[str]]) -> None:
    """Add the accept rules to the frozen settings of the run's jobs that crawl their domains."""
    domains_of_job: dict[int, set[int]] = {}
    pairs = JobConfiguration.objects.filter(job__run=run, domain_id__in=list(rules_by_domain))
    for job_id, domain_id in pairs.values_list("job_id", "domain_id"):
        domains_of_job.setdefault(job_id, set()).add(domain_id)
    jobs = list(Job.objects.filter(pk__in=list(domains_of_job)).only("pk", "template_settings"))
    for job in jobs:
        rules = [rule for domain_id in sorted(domains_of_job[job.pk]) for rule in rules_by_domain[domain_id]]
        settings = dict(job.template_settings or {})
        settings["accept_rules"] = list(dict.fromkeys([*settings.get("accept_rules", []), *rules]))
        job.template_settings = settings
    Job.objects.bulk_update(jobs, ["template_settings"], batch_size=500)


def next_run_additions(definition: HarvestDefinition, *, limit: int = 200) -> list[NextRunAddition]:
    """The definition's additions, waiting ones first, with who added them and the run that got them."""
    return list(
        NextRunAddition.objects.filter(definition=definition)
        .select_related("domain", "added_by", "consumed_by")
        .order_by(F("consumed_by").asc(nulls_first=True), "-added_at", "-pk")[:limit]
    )
