"""How often sites change: estimates on crafted capture histories, suggestions inside the collection's
bounds, acceptance one by one and in bulk, automatic following, time-boxed boosts, and the pages."""

from __future__ import annotations

import datetime
import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from harvest.models import Job
from selection.choices import Frequency
from selection.services import collection_update
from selection.services_frequency import (
    boosts_revert,
    record_accept_suggestion,
    record_boost,
    record_boost_cancel,
)
from storage.models import Capture, ChangeEstimate, WarcFile
from storage.services.change_rates import change_estimates_refresh, change_rate
from storage.warcindex import url_key
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

START = datetime.datetime(2026, 1, 1, 12, tzinfo=datetime.UTC)


def _base_job():
    from harvest.services.domains import domain_create
    from harvest.services.launcher import definition_launch
    from harvest.services.planning import (
        definition_configurations_change,
        definition_run_now,
        definition_save,
        schedule_save,
    )

    schedule = schedule_save(name=f"s-{uuid.uuid4().hex[:8]}", kind="once")
    definition = definition_save(kind="selective", name=f"hd-{uuid.uuid4().hex[:8]}", schedule=schedule)
    configuration = domain_create(name=f"d{uuid.uuid4().hex[:10]}.fr").default_configuration
    definition_configurations_change(definition=definition, add=[configuration])
    definition_run_now(definition=definition)
    return definition_launch(definition_id=definition.pk).jobs.get()


@pytest.fixture
def jobs():
    """Make n jobs (copies of one launched job: the estimate only needs distinct crawls)."""
    made = []

    def make(n: int) -> list[Job]:
        if not made:
            made.append(_base_job())
        while len(made) < n:
            job = Job.objects.get(pk=made[0].pk)
            job.pk = None
            job._state.adding = True
            job.save()
            made.append(job)
        return made[:n]

    return make


def capture_history(url: str, visits: list[tuple[Job, datetime.datetime, str]]) -> None:
    """One capture per visit: digest "revisit", "304", "404" or a payload digest."""
    warc = WarcFile.objects.create(name=f"{uuid.uuid4().hex}.warc.gz", path="/nowhere", created_at=START)
    rows = []
    for index, (job, moment, digest) in enumerate(visits):
        kind, status = "response", 200
        if digest == "revisit":
            kind, digest = "revisit", "sha1:SAME"
        elif digest in ("304", "404"):
            status, digest = int(digest), "sha1:ERROR"
        rows.append(
            Capture(
                urlkey=url_key(url),
                timestamp=moment,
                url=url,
                record_type=kind,
                status=status,
                digest=digest,
                length=1,
                offset=index,
                warc_file=warc,
                job=job,
            )
        )
    Capture.objects.bulk_create(rows)


def history(url, jobs, days, digests):
    capture_history(
        url,
        [
            (job, START + timedelta(days=d), digest)
            for job, d, digest in zip(jobs, days, digests, strict=True)
        ],
    )


def estimate_of(record) -> ChangeEstimate:
    return ChangeEstimate.objects.get(record=record)


# The estimator -------------------------------------------------------------------------------


def test_the_estimator_is_cho_and_garcia_molinas():
    assert change_rate(visits=10, changes=0, mean_interval_days=1) == 0
    assert change_rate(visits=9, changes=9, mean_interval_days=1) == pytest.approx(2.944, abs=1e-3)
    assert change_rate(visits=0, changes=0, mean_interval_days=1) == 0


def test_an_unchanged_page_gets_no_change_and_the_least_frequent_bound(jobs):
    record = RecordFactory(url="http://still.example.org/", frequency=Frequency.MONTHLY)
    history(record.url, jobs(5), [0, 7, 14, 21, 28], ["sha1:A"] * 5)
    change_estimates_refresh(now=START)
    estimate = estimate_of(record)
    assert (estimate.visits, estimate.changes, estimate.rate_per_day) == (4, 0, 0)
    assert estimate.mean_interval_days == pytest.approx(7)
    assert estimate.suggested_frequency == Frequency.ANNUAL
    assert estimate.confidence == "medium"
    assert [visit["changed"] for visit in estimate.evidence] == [None, False, False, False, False]


def test_a_page_changing_every_day_gets_daily_with_high_confidence(jobs):
    record = RecordFactory(url="http://daily.example.org/")
    history(record.url, jobs(10), range(10), [f"sha1:{n}" for n in range(10)])
    change_estimates_refresh(now=START)
    estimate = estimate_of(record)
    assert (estimate.visits, estimate.changes) == (9, 9)
    assert estimate.suggested_frequency == Frequency.DAILY
    assert estimate.confidence == "high"
    assert [visit["job"] for visit in estimate.evidence] == [job.pk for job in jobs(10)]


def test_a_page_changing_every_week_visited_daily_gets_weekly(jobs):
    record = RecordFactory(url="http://weekly.example.org/")
    history(record.url, jobs(15), range(15), [f"sha1:{day // 7}" for day in range(15)])
    change_estimates_refresh(now=START)
    estimate = estimate_of(record)
    assert (estimate.visits, estimate.changes) == (14, 2)
    assert 5 < estimate.interval_days < 9
    assert estimate.suggested_frequency == Frequency.WEEKLY


def test_irregular_visits_count_revisits_and_304s_as_unchanged_and_skip_errors(jobs):
    record = RecordFactory(url="http://irregular.example.org/")
    made = jobs(7)
    # Days 0, 1, 5, 6, 20, 30, 31: A, revisit, 304, B (a change), 404 (skipped), B, C (a change).
    history(
        record.url,
        made,
        [0, 1, 5, 6, 20, 30, 31],
        ["sha1:A", "revisit", "304", "sha1:B", "404", "sha1:B", "sha1:C"],
    )
    # Two captures in one crawl are one visit: the second is not compared.
    capture_history(record.url, [(made[6], START + timedelta(days=31, hours=1), "sha1:D")])
    change_estimates_refresh(now=START)
    estimate = estimate_of(record)
    assert (estimate.visits, estimate.changes) == (5, 2)
    assert estimate.mean_interval_days == pytest.approx(31 / 5)
    assert [visit["changed"] for visit in estimate.evidence] == [None, False, False, True, False, True]


def test_one_visit_gives_no_estimate(jobs):
    record = RecordFactory(url="http://once.example.org/")
    history(record.url, jobs(1), [0], ["sha1:A"])
    assert change_estimates_refresh(now=START)["records"] == 0
    assert not ChangeEstimate.objects.filter(record=record).exists()


def test_a_domain_changes_when_any_of_its_pages_did(jobs):
    from harvest.services.domains import domain_create

    domain = domain_create(name="changing.fr")
    made = jobs(4)
    history("http://changing.fr/", made, [0, 7, 14, 21], ["sha1:A"] * 4)
    history("http://www.changing.fr/news", made, [0, 7, 14, 21], ["sha1:1", "sha1:1", "sha1:2", "sha1:3"])
    change_estimates_refresh(now=START)
    estimate = ChangeEstimate.objects.get(domain=domain)
    assert (estimate.visits, estimate.changes) == (3, 2)
    assert [visit["job"] for visit in estimate.evidence] == [job.pk for job in made]


# Bounds -------------------------------------------------------------------------------------------


def test_suggestions_stay_inside_the_collections_bounds(jobs):
    collection = CollectionFactory(
        frequency_most_often=Frequency.WEEKLY, frequency_least_often=Frequency.MONTHLY
    )
    daily = RecordFactory(collection=collection, url="http://fast.example.org/")
    still = RecordFactory(collection=collection, url="http://slow.example.org/")
    made = jobs(6)
    history(daily.url, made, range(6), [f"sha1:{n}" for n in range(6)])
    history(still.url, made, range(6), ["sha1:A"] * 6)
    change_estimates_refresh(now=START)
    assert estimate_of(daily).suggested_frequency == Frequency.WEEKLY
    assert estimate_of(still).suggested_frequency == Frequency.MONTHLY


def test_bounds_the_wrong_way_round_are_refused_and_nothing_changes():
    curator = UserFactory(roles=[Role.CURATOR])
    collection = CollectionFactory()
    with pytest.raises(ValidationError) as refusal:
        collection_update(
            collection=collection,
            user=curator,
            expected_version=collection.version,
            frequency_most_often=Frequency.ANNUAL,
            frequency_least_often=Frequency.DAILY,
        )
    assert "cannot be more frequent" in str(refusal.value)
    collection.refresh_from_db()
    assert (collection.frequency_most_often, collection.frequency_least_often) == ("daily", "annual")


def test_the_collection_form_edits_the_bounds(client):
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    collection = CollectionFactory()
    data = {
        "name": collection.name,
        "kind": collection.kind,
        "default_budget": collection.default_budget,
        "default_frequency": collection.default_frequency,
        "default_depth": collection.default_depth,
        "frequency_most_often": "annual",
        "frequency_least_often": "daily",
        "seen": collection.version,
        "is_active": "on",
    }
    page = client.post(reverse("selection:collection_edit", args=[collection.pk]), data)
    assert page.status_code == 200
    assert "cannot be more frequent" in page.content.decode()
    data.update(frequency_most_often="weekly", frequency_least_often="twice-yearly", follow_suggestions="on")
    assert client.post(reverse("selection:collection_edit", args=[collection.pk]), data).status_code == 302
    collection.refresh_from_db()
    assert (collection.frequency_most_often, collection.frequency_least_often) == ("weekly", "twice-yearly")
    assert collection.follow_suggestions


# Accepting ----------------------------------------------------------------------------------------


def measured_daily(jobs, **record_fields):
    record = RecordFactory(frequency=Frequency.MONTHLY, **record_fields)
    history(record.url, jobs(6), range(6), [f"sha1:{n}" for n in range(6)])
    return record


def test_a_curator_accepts_a_suggestion_from_the_record_page_and_it_is_in_the_history(client, jobs):
    record = measured_daily(jobs)
    change_estimates_refresh(now=START)
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    url = reverse("storage:record_accept_suggestion", args=[record.pk])
    assert client.post(url, {"version": record.version}).status_code == 403
    curator = UserFactory(roles=[Role.CURATOR])
    client.force_login(curator)
    page = client.get(record.get_absolute_url())
    assert "Changes about 2 times a day" in page.content.decode()
    assert 'id="accept-suggestion"' in page.content.decode()
    assert client.post(url, {"version": record.version - 1}).status_code == 302  # stale: refused
    record.refresh_from_db()
    assert record.frequency == Frequency.MONTHLY
    client.post(url, {"version": record.version})
    record.refresh_from_db()
    assert record.frequency == Frequency.DAILY
    last = record.history.first()
    assert (last.history_user, last.history_change_reason) == (curator, "Suggested frequency accepted.")


def test_bulk_acceptance_changes_the_selected_records_only(client, jobs):
    collection = CollectionFactory()
    one = measured_daily(jobs, collection=collection)
    two = measured_daily(jobs, collection=collection)
    three = measured_daily(jobs, collection=collection)
    change_estimates_refresh(now=START)
    url = reverse("storage:collection_suggestions", args=[collection.pk])
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    assert client.get(url).status_code == 403
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    page = client.get(url)
    assert [e.record_id for e in page.context["estimates"]] == sorted(
        [one.pk, two.pk, three.pk], key=lambda pk: next(r.url for r in (one, two, three) if r.pk == pk)
    )
    data = {"record": [one.pk, two.pk], f"version_{one.pk}": one.version, f"version_{two.pk}": two.version}
    assert client.post(url, data).status_code == 302
    frequencies = {r.pk: r.frequency for r in type(one).objects.filter(pk__in=[one.pk, two.pk, three.pk])}
    assert frequencies == {one.pk: "daily", two.pk: "daily", three.pk: "monthly"}
    assert [e.record_id for e in client.get(url).context["estimates"]] == [three.pk]


def test_bulk_acceptance_over_a_stale_version_changes_nothing(client, jobs):
    collection = CollectionFactory()
    one = measured_daily(jobs, collection=collection)
    two = measured_daily(jobs, collection=collection)
    change_estimates_refresh(now=START)
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    url = reverse("storage:collection_suggestions", args=[collection.pk])
    data = {
        "record": [one.pk, two.pk],
        f"version_{one.pk}": one.version,
        f"version_{two.pk}": two.version,
    }
    type(two).objects.filter(pk=two.pk).update(version=two.version + 1)  # saved by someone meanwhile
    page = client.post(url, data, follow=True)
    assert "Someone else changed this record while you were editing it" in page.content.decode()
    assert set(type(one).objects.filter(pk__in=[one.pk, two.pk]).values_list("frequency", flat=True)) == {
        "monthly"
    }
    # Nothing selected: refused with a message.
    page = client.post(url, {}, follow=True)
    assert "Choose at least one record." in page.content.decode()


def test_a_collection_that_follows_suggestions_gets_them_automatically(jobs):
    followed = CollectionFactory(follow_suggestions=True)
    record = measured_daily(jobs, collection=followed)
    other = measured_daily(jobs)
    result = change_estimates_refresh(now=START)
    assert result["followed"] == 1
    record.refresh_from_db()
    other.refresh_from_db()
    assert (record.frequency, other.frequency) == ("daily", "monthly")
    assert record.history.first().history_change_reason == "Suggested frequency followed automatically."
    # Measured again: nothing more to follow.
    assert change_estimates_refresh(now=START)["followed"] == 0


def test_the_command_measures_and_the_domain_page_shows_it(client, jobs):
    from harvest.services.domains import domain_create

    domain = domain_create(name="shown.fr")
    history("http://shown.fr/", jobs(3), [0, 3, 6], ["sha1:A", "sha1:B", "sha1:C"])
    call_command("change_rates")
    assert ChangeEstimate.objects.filter(domain=domain).exists()
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    page = client.get(reverse("harvest:domain_detail", args=[domain.pk])).content.decode()
    # Two changes in two visits three days apart: about every 2 days (the estimator allows for
    # changes between visits).
    assert "Changes about every 2 days" in page
    assert f'href="{reverse("harvest:job_detail", args=[jobs(1)[0].pk])}"' in page


# Boosts -------------------------------------------------------------------------------------------


def test_a_boost_changes_the_frequency_now_and_reverts_on_its_date():
    curator = UserFactory(roles=[Role.CURATOR])
    record = RecordFactory(frequency=Frequency.MONTHLY)
    today = datetime.date(2026, 6, 1)
    until = datetime.date(2026, 6, 30)
    record_boost(record=record, user=curator, frequency="daily", until=until, today=today)
    record.refresh_from_db()
    assert (record.frequency, record.boost_until, record.boost_return_frequency) == (
        "daily",
        until,
        "monthly",
    )
    assert boosts_revert(today=datetime.date(2026, 6, 29)) == 0
    assert boosts_revert(today=until) == 1
    record.refresh_from_db()
    assert (record.frequency, record.boost_until, record.boost_return_frequency) == ("monthly", None, "")
    reasons = list(record.history.values_list("history_change_reason", flat=True)[:2])
    assert reasons == [
        "The boost ended: frequency back automatically.",
        "Boosted until 2026-06-30, then back to Monthly.",
    ]
    assert boosts_revert(today=until) == 0  # idempotent


def test_a_boost_can_be_cancelled():
    curator = UserFactory(roles=[Role.CURATOR])
    record = RecordFactory(frequency=Frequency.ANNUAL)
    record_boost(
        record=record, user=curator, frequency="weekly", until=timezone.localdate() + timedelta(days=9)
    )
    record_boost_cancel(record=record, user=curator)
    record.refresh_from_db()
    assert (record.frequency, record.boost_until) == ("annual", None)
    with pytest.raises(ValidationError, match="not boosted"):
        record_boost_cancel(record=record, user=curator)


@pytest.mark.parametrize(
    ("frequency", "days", "message"),
    [
        ("daily", -1, "The end of the boost must be after today."),
        ("daily", 0, "The end of the boost must be after today."),
        ("monthly", 10, "The record is already harvested at this frequency."),
        ("hourly", 10, "Choose the frequency of the boost."),
    ],
)
def test_bad_boosts_are_refused_and_change_nothing(client, frequency, days, message):
    record = RecordFactory(frequency=Frequency.MONTHLY)
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    until = (timezone.localdate() + timedelta(days=days)).isoformat()
    page = client.post(
        reverse("storage:record_boost", args=[record.pk]),
        {"frequency": frequency, "until": until, "version": record.version},
        follow=True,
    )
    assert message in page.content.decode()
    record.refresh_from_db()
    assert (record.frequency, record.boost_until, record.version) == ("monthly", None, 1)


def test_boosting_from_the_page_is_for_curators_and_accepting_is_refused_while_boosted(client, jobs):
    record = measured_daily(jobs)
    change_estimates_refresh(now=START)
    url = reverse("storage:record_boost", args=[record.pk])
    until = (timezone.localdate() + timedelta(days=30)).isoformat()
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    assert client.post(url, {"frequency": "weekly", "until": until}).status_code == 403
    with pytest.raises(PermissionDenied):
        record_boost(record=record, user=UserFactory(roles=[Role.LIBRARIAN]), frequency="weekly", until=None)
    client.force_login(UserFactory(roles=[Role.CURATOR]))
    assert client.post(url, {"frequency": "weekly", "until": "not a date"}, follow=True).status_code == 200
    client.post(url, {"frequency": "weekly", "until": until, "version": record.version})
    record.refresh_from_db()
    assert record.frequency == "weekly"
    page = client.get(record.get_absolute_url()).content.decode()
    assert 'id="cancel-boost"' in page and 'id="accept-suggestion"' not in page
    with pytest.raises(ValidationError, match="cancel the boost first"):
        record_accept_suggestion(record=record, user=UserFactory(roles=[Role.CURATOR]), suggested="daily")
    client.post(reverse("storage:record_boost_cancel", args=[record.pk]), {"version": record.version})
    record.refresh_from_db()
    assert (record.frequency, record.boost_until) == ("monthly", None)
