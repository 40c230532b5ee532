"""A crawl of the test website as WARC files, shared by the session's tests (imported by tests/conftest.py).

Crawled once per session; the website is stopped once crawled, so that what is replayed afterwards
can only come from the archive. Tests must not modify these files: ``copy_warcs`` gives copies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite


@pytest.fixture(scope="session")
def crawled_site(tmp_path_factory):
    """A crawl of a 30-page test website on 2 hosts: ``.files``, ``.truth`` (its URLs), ``.site``.

    The website is stopped once crawled: what is replayed afterwards can only come from the archive.
    Tests must not modify these files; copy them (``copy_warcs``) to change them.
    """
    root = tmp_path_factory.mktemp("crawled-site")
    with TestSite(port=0, seed=4, pages=30, hosts=2, large_file_bytes=50_000) as site:
        result = crawl(root, [site.url("/site/")])
        truth = sorted(site.ground_truth(policy="host"))
    result.truth = truth
    result.site = site
    return result


@pytest.fixture
def warc_paths(crawled_site) -> list[Path]:
    return [Path(info.path) for info in crawled_site.files]


@pytest.fixture
def copy_warcs(tmp_path, warc_paths):
    """Copies of the crawl's WARC files in a fresh directory (for tests that change or move them)."""

    def copy(directory: str = "copies") -> list[Path]:
        target = tmp_path / directory
        target.mkdir(exist_ok=True)
        return [Path(shutil.copy2(path, target / path.name)) for path in warc_paths]

    return copy
