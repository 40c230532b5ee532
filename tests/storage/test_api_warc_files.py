"""The archive's files through the REST API: read-only, filterable, for the roles of the Access area."""

import pytest
from django.urls import reverse

from storage.models import WarcFile
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def test_every_role_lists_the_archive_s_files_with_their_checksums(as_role, indexed_site, warc_paths):
    body = as_role(Role.LIBRARIAN).get(reverse("api:warcfile-list")).json()
    assert body["count"] == len(warc_paths)
    [first] = [row for row in body["results"] if row["name"] == warc_paths[0].name]
    assert first["size"] == warc_paths[0].stat().st_size and len(first["sha256"]) == 64
    assert (first["origin"], first["is_open"], first["job"]) == ("imported", False, None)
    assert first["indexed_at"] is not None


def test_files_filter_by_origin_and_name_and_bad_filters_are_refused(as_role, indexed_site, warc_paths):
    client = as_role(Role.MANAGER)
    listing = reverse("api:warcfile-list")
    assert client.get(listing, {"origin": "crawled"}).json()["count"] == 0
    assert client.get(listing, {"name": warc_paths[0].name}).json()["count"] == 1
    refused = client.get(listing, {"origin": "stolen"})
    assert refused.status_code == 400 and "origin" in refused.json()


def test_files_cannot_be_written_through_the_api(as_role, indexed_site):
    client = as_role(Role.ENGINEER)
    warc = WarcFile.objects.first()
    detail = reverse("api:warcfile-detail", kwargs={"pk": warc.pk})
    assert client.post(reverse("api:warcfile-list"), {}, content_type="application/json").status_code == 405
    assert client.patch(detail, {"path": "/elsewhere"}, content_type="application/json").status_code == 405
    assert client.delete(detail).status_code == 405
    warc.refresh_from_db()
    assert warc.path != "/elsewhere"
