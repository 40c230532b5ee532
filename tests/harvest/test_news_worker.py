"""News runs on a real Celery worker and broker (PostgreSQL): the second run of a news definition,
after the front page changed, fetches the front page and only the new article. Deterministic: the
test waits on the rows the worker writes, not on time."""

from __future__ import annotations

from datetime import timedelta

from harvest.choices import JobStatus
from harvest.models import HarvestDefinition, Job, NewsArticle
from harvest.selectors import crawl_log_lines
from harvest.services.crawls import jobs_dispatch_submitted
from harvest.services.launcher import definition_launch
from tests.crawl_worker import wait_for
from tests.harvest.test_news import START, article, news_setup, site  # noqa: F401  (fixtures)


def run_on_worker(definition: HarvestDefinition, now, worker) -> Job:
    HarvestDefinition.objects.filter(pk=definition.pk).update(next_date=now)
    run = definition_launch(definition_id=definition.pk, now=now)
    jobs_dispatch_submitted()
    job = run.jobs.get()
    wait_for(
        lambda: (
            Job.objects.values_list("status", flat=True).get(pk=job.pk) in (JobStatus.DONE, JobStatus.FAILED)
        ),
        timeout=120,
        message=worker.logs(),
    )
    job.refresh_from_db()
    assert job.status == JobStatus.DONE, job.errors
    return job


def fetched(job: Job) -> set[str]:
    return {fields[3] for fields in (line.split() for line in crawl_log_lines(job.pk)) if int(fields[1]) > 0}


def test_a_news_definition_fetches_only_new_articles_on_a_real_worker(crawl_worker, site, news_setup):  # noqa: F811
    news, _deeper = news_setup
    crawl_worker.start()
    first = run_on_worker(news, START + timedelta(minutes=15), crawl_worker)
    assert {article(site, 1), article(site, 2), article(site, 3), site.url("/news/")} <= fetched(first)
    assert NewsArticle.objects.filter(found_by=first.run).count() == 4

    site.news_edition = 2
    second = run_on_worker(news, START + timedelta(minutes=30), crawl_worker)
    urls = fetched(second)
    assert site.url("/news/") in urls and article(site, 4) in urls
    assert not {article(site, 2), article(site, 3), site.url("/news/about")} & urls
    assert list(NewsArticle.objects.filter(found_by=second.run).values_list("url", flat=True)) == [
        article(site, 4)
    ]
