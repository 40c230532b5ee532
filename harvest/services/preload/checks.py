"""Stages 3 and 4, the checks that ask the network: the DNS check (harvest.preload.dns) and the
redirect discovery (harvest.preload.redirects), each in batches whose results are written before
the next, so that an interruption loses at most a batch."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from harvest.models import Domain, PreloadDomain, PreloadRun
from harvest.preload.dns import DnsSettings, check_domains, parse_nameserver
from harvest.preload.limits import nameserver_policy
from harvest.preload.redirects import RedirectSettings, discover_redirects
from harvest.services.preload import progress as progress_


def stage_dns(run: PreloadRun, progress) -> None:
    """Resolve every domain not checked yet, a batch at a time (each batch's results written before
    the next)."""
    if not run.check_dns:
        return  # the merge marked every domain "not checked (taken as live)"
    pending = PreloadDomain.objects.filter(run=run, dns=PreloadDomain.Dns.PENDING)
    policy = nameserver_policy()  # again where the queries are sent: the settings may have changed

    dns_settings = DnsSettings(
        nameservers=tuple(parse_nameserver(text) for text in run.nameserver_list),
        timeout=run.dns_timeout,
        retries=run.dns_retries,
        concurrency=settings.PRELOAD_DNS_CONCURRENCY,
    )
    run.total = PreloadDomain.objects.filter(run=run).count()
    run.done = run.total - pending.count()
    last = 0
    while batch := list(
        pending.filter(pk__gt=last).order_by("pk").values_list("pk", "name")[: progress_.BATCH]
    ):
        last = batch[-1][0]
        ids = {name: pk for pk, name in batch}
        live, failed = [], {}
        for result in check_domains([name for _pk, name in batch], dns_settings, policy=policy):
            if result.live:
                live.append(ids[result.name])
            else:
                failed.setdefault(result.detail[:200], []).append(ids[result.name])
        with transaction.atomic():
            PreloadDomain.objects.filter(pk__in=live).update(dns=PreloadDomain.Dns.LIVE, dns_detail="")
            for detail, pks in failed.items():
                PreloadDomain.objects.filter(pk__in=pks).update(
                    dns=PreloadDomain.Dns.FAILED, dns_detail=detail
                )
        progress_.advance(run, len(batch), progress)


def stage_redirects(run: PreloadRun, progress) -> None:
    """Ask every live domain not asked yet where its home page redirects, a batch at a time."""
    live = [PreloadDomain.Dns.LIVE, PreloadDomain.Dns.SKIPPED]
    todo = PreloadDomain.objects.filter(run=run, dns__in=live, redirects_checked=False, redirect_from="")
    if not run.find_redirects:
        return
    redirect_settings = RedirectSettings(
        timeout=settings.PRELOAD_REDIRECT_TIMEOUT,
        concurrency=settings.PRELOAD_REDIRECT_CONCURRENCY,
        url_for=lambda host, template=settings.PRELOAD_REDIRECT_URL: template.format(host=host),
    )
    run.total = todo.count()
    last = 0
    while batch := list(
        todo.filter(pk__gt=last).order_by("pk").values_list("pk", "name")[: max(1, progress_.BATCH // 10)]
    ):
        last = batch[-1][0]
        found = {}
        for redirect in discover_redirects([name for _pk, name in batch], redirect_settings):
            found.setdefault(redirect.target, redirect.domain)
        with transaction.atomic():
            _add_redirect_targets(run, found)
            PreloadDomain.objects.filter(pk__in=[pk for pk, _name in batch]).update(redirects_checked=True)
        progress_.advance(run, len(batch), progress)


def _add_redirect_targets(run: PreloadRun, found: dict[str, str]) -> None:
    """Add each target no source gave and the database does not know, tagged "redirect from X"."""
    targets = set(found)
    targets -= set(PreloadDomain.objects.filter(run=run, name__in=targets).values_list("name", flat=True))
    targets -= set(Domain.objects.filter(name__in=targets).values_list("name", flat=True))
    PreloadDomain.objects.bulk_create(
        [
            PreloadDomain(
                run=run,
                name=name,
                sources=f"redirect from {found[name]}",
                redirect_from=found[name],
                is_new=True,
                dns=PreloadDomain.Dns.LIVE,  # it answered HTTP: it resolves
                redirects_checked=True,
            )
            for name in sorted(targets)
        ]
    )
