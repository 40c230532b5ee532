"""Fixtures of the access side: the crawl of the test website (tests/archive_fixtures.py), indexed."""

from __future__ import annotations

import pytest

from storage.services.indexing import warc_file_index


@pytest.fixture
def indexed_site(db, crawled_site, warc_paths):
    """The crawl's files indexed into the capture index: the list of their WarcFile rows."""
    return [warc_file_index(path=path).warc_file for path in warc_paths]
