"""News definitions: front pages crawled every few minutes, one click deep, new pages only, whose new
articles become seeds of a deeper definition's next run (docs/curation.md, "Frequent shallow crawls
for news": the UK Web Archive's continuous crawl of news sites, in our job model).

What a news definition has captured is its :class:`~harvest.models.NewsArticle` rows (at most
HARVEST_NEWS_KNOWN_MAX, the most recent): the crawler gets their fingerprints as a set of integers
and does not queue a link to one of them again; the front pages, the seeds, are always fetched.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import DedupPolicy, DepthPolicy, HarvestKind, Unit
from harvest.crawler.urls import fingerprint
from harvest.models import HarvestDefinition, HarvestRun, JobConfiguration, NewsArticle, Schedule
from harvest.services.additions import run_seeds_add

MAX_URL = 2000  # longer URLs are not remembered (the unique index holds the URL)
# What a news job's frozen template says, whatever its configurations' template: the front page and
# the pages it links to within the site, no sitemap (it would list the whole site), deduplicated.
NEWS_SETTINGS = {"depth_policy": DepthPolicy.CLICKS.value, "clicks": 1, "extract_sitemaps": False}
_UNIT_MINUTES = {Unit.MINUTE: 1, Unit.HOUR: 60, Unit.DAY: 1440, Unit.WEEK: 10080, Unit.MONTH: 40320}


def schedule_minutes(schedule: Schedule) -> int:
    """The shortest time between two runs of a schedule, in minutes (a month counts as 28 days)."""
    return schedule.every * _UNIT_MINUTES[Unit(schedule.unit)]


def news_check(*, definition: HarvestDefinition, fields: dict) -> None:
    """Refuse news settings that cannot work (ValidationError by field): a news definition that runs
    less than HARVEST_NEWS_MIN_MINUTES apart, or feeds a definition that is not another scheduled,
    active, selective, non-news one."""
    news = fields.get("news", definition.news)
    feeds = fields.get("news_feeds", definition.news_feeds if definition.news_feeds_id else None)
    schedule = fields.get("schedule", definition.schedule if definition.schedule_id else None)
    # What is checked of the deeper definition and the schedule is checked when they are chosen: a
    # news definition whose deeper one was deactivated since can still be saved (deactivated, say).
    feeds_chosen = "news_feeds" in fields and getattr(feeds, "pk", None) != definition.news_feeds_id
    schedule_chosen = not definition.news or getattr(schedule, "pk", None) != definition.schedule_id
    errors = {}
    if (news or feeds is not None) and definition.kind != HarvestKind.SELECTIVE:
        errors["news"] = _("Only a selective harvest can crawl news front pages.")
    elif feeds is not None and not news:
        errors["news_feeds"] = _("Only a news definition feeds articles to another definition.")
    elif feeds is not None:
        if definition.pk and feeds.pk == definition.pk:
            errors["news_feeds"] = _("A news definition cannot feed its articles to itself.")
        elif not feeds_chosen:
            pass
        elif feeds.kind != HarvestKind.SELECTIVE:
            errors["news_feeds"] = _(
                "Articles are fed to a selective definition only: %(name)s is a snapshot."
            ) % {"name": feeds}
        elif feeds.news:
            errors["news_feeds"] = _(
                "%(name)s crawls news front pages itself: feed the articles to a deeper definition."
            ) % {"name": feeds}
        elif not feeds.is_active or feeds.next_date is None:
            errors["news_feeds"] = _(
                "%(name)s is not scheduled to run (inactive, or its schedule has ended)."
            ) % {"name": feeds}
    if news and not definition.news and definition.pk and definition.news_sources.exists():
        errors["news"] = _(
            "News definitions feed their articles to this one: it cannot crawl news front pages itself."
        )
    if (
        news
        and schedule_chosen
        and schedule is not None
        and schedule_minutes(schedule) < settings.HARVEST_NEWS_MIN_MINUTES
    ):
        errors["schedule"] = _(
            "A news definition runs at most every %(minimum)d minutes: each run must end, and what it found "
            "be recorded, before the next one starts, and a news site is not asked more often than that."
        ) % {"minimum": settings.HARVEST_NEWS_MIN_MINUTES}
    if errors:
        raise ValidationError(errors)


def news_schedule_check(*, schedule: Schedule) -> None:
    """Refuse a schedule change that makes an active news definition run too often."""
    if schedule_minutes(schedule) >= settings.HARVEST_NEWS_MIN_MINUTES:
        return
    names = list(
        schedule.harvest_definitions.filter(news=True, is_active=True).values_list("name", flat=True)
    )
    if names:
        raise ValidationError(
            {
                "every": _(
                    "News definitions use this schedule (%(names)s): they run at most every "
                    "%(minimum)d minutes."
                )
                % {"names": ", ".join(names), "minimum": settings.HARVEST_NEWS_MIN_MINUTES}
            }
        )


# The jobs of a news definition ------------------------------------------------------------------


def news_template_settings(definition: HarvestDefinition, crawler_settings: dict) -> dict:
    """The settings a job of ``definition`` freezes: a news definition's are made shallow and deduplicated."""
    if not definition.news:
        return crawler_settings
    frozen = {**crawler_settings, **NEWS_SETTINGS, "news": True}
    if frozen.get("dedup", DedupPolicy.OFF) == DedupPolicy.OFF:
        frozen["dedup"] = DedupPolicy.SAME_DEFINITION.value
    return frozen


def news_known_pages(definition_id: int) -> frozenset[int]:
    """The fingerprints of the pages a news definition captured (the most recent HARVEST_NEWS_KNOWN_MAX)."""
    urls = (
        NewsArticle.objects.filter(definition_id=definition_id)
        .order_by("-pk")
        .values_list("url", flat=True)[: settings.HARVEST_NEWS_KNOWN_MAX]
    )
    return frozenset(fingerprint(url) for url in urls.iterator(chunk_size=5000))


def news_site_settings(job) -> dict:
    """What a site crawl of ``job`` is told besides its template (SiteSettings keywords): nothing for a
    job that is not news, else the pages its definition captured before."""
    if not (job.template_settings or {}).get("news"):
        return {}
    return {"news": True, "known_pages": news_known_pages(job.harvest_definition_id)}


def news_articles_record(*, job, entry: JobConfiguration, urls) -> int:
    """Remember the new pages a site crawl of a news job captured (its report's ``new_pages``);
    returns how many were new to the definition. The oldest beyond HARVEST_NEWS_KNOWN_MAX go."""
    definition_id = job.harvest_definition_id
    if not urls:
        return 0
    now = timezone.now()
    rows = [
        NewsArticle(
            definition_id=definition_id,
            url=url,
            domain_id=entry.domain_id,
            found_by_id=job.run_id,
            found_at=now,
        )
        for url in dict.fromkeys(urls)
        if len(url) <= MAX_URL
    ]
    before = NewsArticle.objects.filter(definition_id=definition_id).count()
    NewsArticle.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
    kept = NewsArticle.objects.filter(definition_id=definition_id)
    total = kept.count()
    if total > settings.HARVEST_NEWS_KNOWN_MAX:
        cutoff = kept.order_by("-pk").values_list("pk", flat=True)[settings.HARVEST_NEWS_KNOWN_MAX]
        kept.filter(pk__lte=cutoff).delete()
    return total - before


def news_feed_run(*, definition: HarvestDefinition, run: HarvestRun) -> int:
    """Give a run of ``definition`` (just launched, its jobs written) the articles its news definitions
    found and no earlier run of it got, as extra seeds of the site crawls of their domains (at most
    HARVEST_NEWS_FEED_MAX, the oldest first); returns how many."""
    if not definition.is_selective or not definition.news_sources.exists():
        return 0
    entries = JobConfiguration.objects.filter(job__run=run)
    articles = list(
        NewsArticle.objects.filter(
            definition__news_feeds=definition,
            fed_to__isnull=True,
            domain_id__in=Subquery(entries.values("domain_id")),
        )
        .order_by("found_at", "pk")
        .values_list("pk", "domain_id", "url")[: settings.HARVEST_NEWS_FEED_MAX]
    )
    if not articles:
        return 0
    by_domain: dict[int, list[str]] = {}
    for _pk, domain_id, url in articles:
        by_domain.setdefault(domain_id, []).append(url)
    run_seeds_add(run=run, seeds_by_domain=by_domain)
    NewsArticle.objects.filter(pk__in=[pk for pk, _domain, _url in articles]).update(fed_to=run)
    return len(articles)


# Reads for the pages ------------------------------------------------------------------------------


def news_summary(definition: HarvestDefinition) -> dict:
    """What a definition's page shows of news: articles found (news) or received (deeper), the latest."""
    found = NewsArticle.objects.filter(definition=definition)
    received = NewsArticle.objects.filter(definition__news_feeds=definition)
    articles = found if definition.news else received
    totals = articles.aggregate(count=Count("pk"), fed=Count("fed_to"), last=Max("found_at"))
    return {
        "is_news": definition.news,
        "count": totals["count"],
        "fed": totals["fed"],
        "waiting": totals["count"] - totals["fed"],
        "last": totals["last"],
        "latest": list(
            articles.select_related("found_by", "fed_to", "definition", "domain").order_by(
                "-found_at", "-pk"
            )[:50]
        ),
        "sources": list(definition.news_sources.order_by("name")),
    }
