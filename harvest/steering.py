"""The crawl worker's side of steering: what the rows say (harvest.services.steering), applied to the
site crawls of this process each time their progress is written.

A site paused is paused in place (``SiteHandle.pause``): it leaves the engine's heap and costs only
the memory of its frontier until resumed; its politeness, counters and queue are kept. Rules added
to its job are given to the crawl, which drops the queued URLs they match; a budget lowered below
what the site has done stops it with that limit's stop reason.
"""

from __future__ import annotations

import logging

from harvest.services.steering import site_crawls_steering, site_rules

logger = logging.getLogger(__name__)


def steer_sites(sites) -> None:
    """Apply their rows' steering to running sites (``harvest.worker.RunningSite``), one query for all
    (and one more per site whose job has new rules)."""
    if not sites:
        return
    steering = site_crawls_steering(site.entry_id for site in sites)
    for site in sites:
        wanted = steering.get(site.entry_id)
        if wanted is not None:
            steer_site(site, wanted)


def steer_site(site, wanted) -> None:
    handle, crawl = site.handle, site.crawl
    if wanted.rules_serial != site.rules_serial:
        reject, traps = site_rules(site.entry_id)
        new_reject = [rule for rule in reject if rule not in crawl.settings.reject_rules]
        new_traps = [rule for rule in traps if rule not in crawl.settings.crawler_traps]
        if new_reject or new_traps:
            crawl.settings.reject_rules.extend(new_reject)
            crawl.settings.crawler_traps.extend(new_traps)
            crawl.add_rules(reject=new_reject, traps=new_traps)
            handle.steer()
            logger.info("%s: %d rules added while it runs", crawl.site, len(new_reject) + len(new_traps))
        site.rules_serial = wanted.rules_serial
    settings = crawl.settings
    if (wanted.max_objects, wanted.max_bytes) != (settings.max_objects, settings.max_bytes):
        reached = crawl.set_budget(max_objects=wanted.max_objects, max_bytes=wanted.max_bytes)
        if reached:
            handle.stop(reached)
    if wanted.paused and not handle.paused:
        handle.pause()
    elif not wanted.paused and handle.paused:
        handle.resume()
