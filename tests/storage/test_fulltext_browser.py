"""The text a browser capture stores (``urn:text:<page>``) is searchable under the page's URL: words only
a script puts on the page are found, and the hit opens the page's own capture."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from harvest.crawler.browser import BrowserPool, chromium_executable
from storage import search
from storage.access import Viewer
from storage.selectors_search import SearchRequest, archive_search
from tests.components import require_component
from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite, scripted

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    require_component("chromium", chromium_executable() is not None, "browser capture renders in chromium")
    pool = BrowserPool(size=1, grace_seconds=2)
    try:
        with TestSite(port=0, seed=3, pages=10, hosts=1) as site:
            root = tmp_path_factory.mktemp("rendered")
            result = crawl(root, [site.url("/js/")], browsers=pool, render="seeds", depth_policy="page")
            result.site = site
    finally:
        pool.close()
    return result


def test_words_a_script_wrote_on_the_page_find_the_page(db, rendered):
    shell = rendered.responses()[rendered.site.url("/js/")]["body"].decode()
    words = "lighthouse volunteers"
    assert "lighthouse" in scripted.article_titles()[4].lower() and "lighthouse" not in shell.lower()
    call_command("index_warcs", *(str(info.path) for info in rendered.files), "--workers", "1", verbosity=0)

    results = archive_search(SearchRequest(query=search.parse_query(words)), Viewer("staff"))
    assert [hit.url for hit in results.hits] == [rendered.site.url("/js/")]
    hit = results.hits[0]
    assert "<mark>lighthouse</mark>" in str(hit.snippet_html).lower()
    assert hit.capture.url == rendered.site.url("/js/") and hit.capture.record_type == "response"
