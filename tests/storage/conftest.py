"""Fixtures of the storage tests: the crawl of the test website (tests/archive_fixtures.py), indexed;
the session's SeaweedFS server (tests/weed_server.py) and ``node_backend``, which runs a test once on
directory nodes and once on S3 nodes (its value goes to ``make_nodes(..., backend=...)``)."""

from __future__ import annotations

import pytest

from storage.services.indexing import warc_file_index
from tests.storage.storage_files import S3Nodes
from tests.weed_server import unique_bucket, weed_server  # noqa: F401  (the session's SeaweedFS server)


@pytest.fixture(params=["directory", "s3"])
def node_backend(request, settings):
    """The kind of node of the test: "directory", or the S3Nodes of a prefix of its own in the session's
    bucket (the profile ``test`` of STORAGE_S3_PROFILES reaches the session's server). One bucket for
    all: SeaweedFS gives each bucket volumes of its own, a few hundred of which fill a test server."""
    if request.param == "directory":
        return "directory"
    server = request.getfixturevalue("weed_server")
    settings.STORAGE_S3_PROFILES = {**settings.STORAGE_S3_PROFILES, "test": server.profile()}
    return S3Nodes(server=server, bucket=SHARED_BUCKET, prefix=unique_bucket("t"))


SHARED_BUCKET = "webarchive-tests"


@pytest.fixture
def indexed_site(db, crawled_site, warc_paths):
    """The crawl's files indexed into the capture index: the list of their WarcFile rows."""
    return [warc_file_index(path=path).warc_file for path in warc_paths]
