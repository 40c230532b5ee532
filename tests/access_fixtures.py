"""An archive with captures under every access rule, for the access tests.

Each *case* is one host (``http://open.fr/``…) captured by a job of its own harvest definition,
written as a real WARC file (two pages: ``/`` and ``/page``) and indexed, so that the pages, the CDX
API, ``/warcs/`` and a real pywb all read the same captures. The rules are made through the services,
as a curator makes them:

| case | covered by | readable by |
|---|---|---|
| open | a collection's rule: open | everyone (anonymous visitors when the site allows them) |
| readers | a collection's rule: readers | readers and staff |
| room | a collection's rule: reading room | readers in a reading room, and staff |
| staff | a collection's rule: staff only | staff |
| embargoed | a collection's rule: open, embargoed until next year | staff (until then) |
| embargo-over | a collection's rule: open, embargoed until yesterday | everyone |
| definition | its harvest definition's rule: readers | readers and staff |
| mixed | two collections: staff only and open (the most open decides) | everyone |
| norule | nothing | staff (closed by default) |
| imported | nothing (an imported file, no job) | staff |

and ``http://open.fr/secret`` is under an exclusion (``EXCLUDED``): staff only while it is in force.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from io import BytesIO
from pathlib import Path

import pytest
from django.utils import timezone
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from harvest.services.planning import collection_mapping_save
from selection.choices import Frequency
from storage.models import Capture
from storage.models_access import AccessLevel, ExclusionKind
from storage.services.access import access_rule_save, exclusion_create
from storage.services.indexing import warc_file_index
from tests.factories import CollectionFactory
from tests.harvest.crawljobs import job_for_sites

CAPTURED_AT = datetime(2024, 3, 15, 9, 30, tzinfo=UTC)
STAMP = CAPTURED_AT.strftime("%Y%m%d%H%M%S")
EXCLUDED = "http://open.fr/secret"

# case -> the kinds of viewer who may read it (storage.access profiles): "public" (anonymous
# visitors), "reader", "reader-room", "staff".
EVERYONE = {"public", "reader", "reader-room", "staff"}
READERS = {"reader", "reader-room", "staff"}
CASES: dict[str, set[str]] = {
    "open": EVERYONE,
    "readers": READERS,
    "room": {"reader-room", "staff"},
    "staff": {"staff"},
    "embargoed": {"staff"},
    "embargo-over": EVERYONE,
    "definition": READERS,
    "mixed": EVERYONE,
    "norule": {"staff"},
    "imported": {"staff"},
}


def page_body(case: str, path: str) -> bytes:
    return (
        f"<!doctype html><html><head><title>{case} {path}</title></head>"
        f"<body><h1>Case {case}, page {path}</h1><a href='/page'>next</a></body></html>"
    ).encode()


def write_warc(path: Path, urls: list[tuple[str, bytes]], when: datetime = CAPTURED_AT) -> Path:
    """A WARC file of response records, one per (URL, HTML body), gzip per record."""
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.1")
        for url, body in urls:
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            record = writer.create_warc_record(
                url,
                "response",
                payload=BytesIO(body),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": when.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
            writer.write_record(record)
    return path


def case_url(case: str, path: str = "/") -> str:
    return f"http://{case}.fr{path}"


@dataclass
class AccessArchive:
    """The archive the access tests read: captures by case, the rules, the exclusion."""

    captures: dict[str, Capture] = field(default_factory=dict)  # case -> the capture of its "/"
    excluded: Capture | None = None
    collections: dict = field(default_factory=dict)
    rules: dict = field(default_factory=dict)
    exclusion: object = None

    def readable(self, profile: str) -> set[str]:
        """The cases the profile may read."""
        return {case for case, profiles in CASES.items() if profile in profiles}


def _collection_rule(name: str, definition, level: str, **fields):
    collection = CollectionFactory(name=f"Access {name}")
    collection_mapping_save(collection=collection, frequency=Frequency.WEEKLY, harvest_definition=definition)
    return collection, access_rule_save(collection=collection, level=level, **fields)


def build_access_archive(directory: Path) -> AccessArchive:
    """Write, index and cover with rules the captures of every case (see the module's table)."""
    archive = AccessArchive()
    directory.mkdir(parents=True, exist_ok=True)
    today = timezone.localdate()
    for case in CASES:
        pages = [
            (case_url(case, "/"), page_body(case, "/")),
            (case_url(case, "/page"), page_body(case, "/page")),
        ]
        if case == "open":
            pages.append((EXCLUDED, page_body(case, "/secret")))
        path = write_warc(directory / f"access-{case}.warc.gz", pages)
        job = None if case == "imported" else job_for_sites([(f"{case}.fr", case_url(case))])
        warc_file_index(path=path, job_id=job.pk if job else None)
        archive.captures[case] = Capture.objects.get(url=case_url(case, "/"))
        if job is None:
            continue
        definition = job.harvest_definition
        if case in ("open", "readers", "room", "staff"):
            level = {"open": AccessLevel.OPEN, "readers": AccessLevel.READERS}.get(case) or {
                "room": AccessLevel.READING_ROOM,
                "staff": AccessLevel.STAFF,
            }[case]
            archive.collections[case], archive.rules[case] = _collection_rule(case, definition, level)
        elif case == "embargoed":
            archive.collections[case], archive.rules[case] = _collection_rule(
                case, definition, AccessLevel.OPEN, embargo_until=today + timedelta(days=365)
            )
        elif case == "embargo-over":
            archive.collections[case], archive.rules[case] = _collection_rule(
                case, definition, AccessLevel.OPEN, embargo_until=today - timedelta(days=1)
            )
        elif case == "definition":
            archive.rules[case] = access_rule_save(harvest_definition=definition, level=AccessLevel.READERS)
        elif case == "mixed":
            _collection_rule("mixed-staff", definition, AccessLevel.STAFF)
            archive.collections[case], archive.rules[case] = _collection_rule(
                case, definition, AccessLevel.OPEN
            )
    archive.excluded = Capture.objects.get(url=EXCLUDED)
    archive.exclusion = exclusion_create(
        kind=ExclusionKind.URL, target=EXCLUDED, reason="A take-down request", requested_by="A person"
    )
    return archive


@pytest.fixture
def access_archive(db, tmp_path, settings) -> AccessArchive:
    """The archive of every case; reading rooms are 10.1.0.0/16; anonymous reading allowed."""
    settings.ACCESS_READING_ROOMS = ["10.1.0.0/16"]
    settings.ACCESS_ANONYMOUS = True
    return build_access_archive(tmp_path / "access-warcs")
