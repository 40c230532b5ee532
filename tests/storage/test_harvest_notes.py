"""Harvest notes and the last harvests on a record's page: the service, what librarians see, who may.

Jobs are made by the launcher and their sites ended by the services the crawl workers call.
"""

import re
from datetime import UTC, timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from harvest.models import JobConfiguration
from harvest.services.domains import domain_create
from harvest.services.planning import definition_configurations_change, definition_save, schedule_save
from storage.models import HarvestNote
from storage.replay import replay_url
from storage.services.quality import harvest_note_add, harvest_note_add_to_site
from tests.access import assert_page_access, user_for
from tests.factories import CollectionFactory, RecordFactory
from tests.harvest.sitecrawls import end, entry_of, launch
from webarchive.permissions import STAFF_ROLES, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def definition(db):
    schedule = schedule_save(name="daily", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3)
    definition = definition_save(kind="selective", name="news-monthly", schedule=schedule)
    definition_configurations_change(
        definition=definition,
        add=[domain_create(name="lemonde.fr").default_configuration],
    )
    return definition


@pytest.fixture
def record(db):
    return RecordFactory(url="http://www.lemonde.fr/politique/", collection=CollectionFactory(name="News"))


@pytest.fixture
def job(definition):
    job = launch(definition)
    end(job, "lemonde.fr", "object-limit", urls_done=1200, bytes=3_000_000)
    return job


def harvest_rows(html: str) -> list[str]:
    return re.findall(r'<tr class="record-harvest" data-job="(\d+)">', html)


# The service -----------------------------------------------------------------------------------


def test_a_curator_attaches_a_note_to_a_record(record, job):
    curator = user_for(Role.CURATOR)
    note = harvest_note_add(record=record, job=job, user=curator, text="  Budget too small.  ")
    assert (note.record, note.job, note.author, note.text) == (record, job, curator, "Budget too small.")


@pytest.mark.parametrize(
    ("text", "message"),
    [("", "Write the note: an empty note is not saved."), ("y" * 2001, "at most 2000 characters")],
)
def test_a_bad_note_is_refused_at_its_field_and_nothing_is_saved(record, job, text, message):
    with pytest.raises(ValidationError) as refused:
        harvest_note_add(record=record, job=job, user=user_for(Role.CURATOR), text=text)
    assert message in " ".join(refused.value.message_dict["text"])
    with pytest.raises(ValidationError) as refused:
        harvest_note_add_to_site(entry=entry_of(job, "lemonde.fr"), user=user_for(Role.CURATOR), text=text)
    assert message in " ".join(refused.value.message_dict["text"])
    assert not HarvestNote.objects.exists()


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.ENGINEER, Role.MANAGER, None])
def test_only_curators_write_notes(record, job, role):
    with pytest.raises(PermissionDenied):
        harvest_note_add(record=record, job=job, user=user_for(role), text="No.")
    with pytest.raises(PermissionDenied):
        harvest_note_add_to_site(entry=entry_of(job, "lemonde.fr"), user=user_for(role), text="No.")
    assert not HarvestNote.objects.exists()


def test_a_site_note_is_one_bulk_write_whatever_the_number_of_records(job, django_assert_max_num_queries):
    records = [RecordFactory(url=f"http://s{n}.lemonde.fr/") for n in range(30)]
    curator = user_for(Role.CURATOR)
    curator.get_all_permissions()  # the permission cache, filled once per request in real use
    entry = entry_of(job, "lemonde.fr")
    with django_assert_max_num_queries(12):
        notes = harvest_note_add_to_site(entry=entry, user=curator, text="Cut.")
    assert len(notes) == 30
    assert set(HarvestNote.objects.values_list("record_id", flat=True)) == {r.pk for r in records}
    assert HarvestNote.objects.values("created_at").distinct().count() == 1  # one note, shown once


# The record's page -----------------------------------------------------------------------------


def test_the_record_page_shows_the_last_harvests_with_replay_links(client, settings, record, definition, job):
    settings.REPLAY_URL = "http://replay.example/"
    later = launch(definition)
    end(later, "lemonde.fr", "completed", urls_done=800, bytes=2_000_000)
    launch(definition)  # a third job, still running: not a harvest yet
    client.force_login(user_for(Role.LIBRARIAN))
    html = client.get(record.get_absolute_url()).content.decode()
    assert harvest_rows(html) == [str(later.pk), str(job.pk)]  # newest first, ended only
    section = html[html.index('id="record-harvests"') :]
    assert "Configuration object limit reached" in section and "Completed" in section
    assert '<td class="text-end">1,200</td>' in section and "2.9\xa0MB" in section  # filesizeformat: nbsp
    started = JobConfiguration.objects.get(job=later, domain__name="lemonde.fr").started_at
    stamp = started.astimezone(UTC).strftime("%Y%m%d%H%M%S")
    assert f'href="{replay_url("http://www.lemonde.fr/politique/", stamp)}"' in section
    assert 'href="/harvest/jobs/' not in section  # a librarian does not open job pages


def test_the_record_page_shows_at_most_ten_harvests(client, record, definition):
    jobs = []
    for _ in range(11):
        jobs.append(launch(definition))
        end(jobs[-1], "lemonde.fr", "completed", urls_done=1, bytes=1)
    client.force_login(user_for(Role.CURATOR))
    rows = harvest_rows(client.get(record.get_absolute_url()).content.decode())
    assert rows == [str(j.pk) for j in reversed(jobs[1:])]


def test_a_record_never_harvested_says_so(client, record):
    client.force_login(user_for(Role.LIBRARIAN))
    html = client.get(record.get_absolute_url()).content.decode()
    assert "Not harvested yet." in html and "None." in html[html.index('id="record-harvest-notes"') :]


def test_a_note_written_on_the_quality_view_reaches_the_record_page(client, record, job):
    curator = user_for(Role.CURATOR)
    client.force_login(curator)
    entry = entry_of(job, "lemonde.fr")
    url = f"/harvest/jobs/{job.pk}/quality/sites/{entry.pk}/notes/"
    assert (
        client.post(
            url, {f"site-{entry.pk}-text": "The archives stop in 2019: raise the budget."}
        ).status_code
        == 302
    )
    librarian = user_for(Role.LIBRARIAN)
    record.collection.members.add(librarian)
    client.force_login(librarian)
    html = client.get(record.get_absolute_url()).content.decode()
    notes = html[html.index('id="record-harvest-notes"') :]
    assert "The archives stop in 2019: raise the budget." in notes
    assert curator.username in notes and str(job) in notes
    other = RecordFactory(url="http://other.fr/")
    assert "raise the budget" not in client.get(other.get_absolute_url()).content.decode()


def test_everyone_who_reads_records_reads_their_harvests_and_notes(client, record, job):
    harvest_note_add(record=record, job=job, user=user_for(Role.CURATOR), text="Seen by all readers.")
    # Everyone with a staff role consults the selection (members write, everyone reads): anonymous users
    # go to the login page, a user with no role and readers (Access only) are refused.
    assert_page_access(client, record.get_absolute_url(), STAFF_ROLES)
    for role in STAFF_ROLES:
        client.force_login(user_for(role))  # a member of no collection
        html = client.get(record.get_absolute_url()).content.decode()
        assert "Seen by all readers." in html and harvest_rows(html) == [str(job.pk)], role
        assert (f'href="/harvest/jobs/{job.pk}/quality/"' in html) is (role != Role.LIBRARIAN), role
