"""The crawler's news mode alone (plain Python, no database): the known pages are not fetched again,
the new ones are listed in the report, the front page is always fetched."""

from __future__ import annotations

import pytest

from harvest.crawler.urls import fingerprint
from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite

NEWS = {"depth_policy": "clicks", "clicks": 1, "extract_sitemaps": False, "news": True}


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=7, pages=5) as site:
        yield site


def test_known_pages_are_skipped_and_new_ones_reported(site, tmp_path):
    site.news_edition = 10
    front = site.url("/news/")
    articles = [site.url(f"/news/article/{number}") for number in (10, 11, 12)]
    known = frozenset({fingerprint(articles[0]), fingerprint(articles[1]), fingerprint(front)})

    result = crawl(tmp_path, [front], known_pages=known, **NEWS)
    report = result.crawl.report()
    assert front in result.fetched  # a seed, whatever the known pages say
    assert articles[2] in result.fetched and not set(articles[:2]) & set(result.fetched)
    assert not any(url.endswith("/comments") for url in result.fetched)  # two clicks away
    assert report["new_pages"] == [articles[2], site.url("/news/about")]
    assert report["known_pages_skipped"] == 2


def test_without_news_the_report_is_as_before(site, tmp_path):
    site.news_edition = 10
    result = crawl(tmp_path, [site.url("/news/")], depth_policy="clicks", clicks=1, extract_sitemaps=False)
    assert "new_pages" not in result.crawl.report()
    assert site.url("/news/article/10") in result.fetched
