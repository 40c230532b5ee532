"""The planning pages through HTTP: definitions, schedules, channels, mappings, the transfer, jobs.

The rules behind them are the services' (tests/harvest/test_services*.py);
here: each page renders for its users, forms persist what they should, bad
input is refused with a clear message at the field it concerns and changes
nothing, and the buttons (activate, run now, resubmit) do what they say.
"""

import re
from datetime import timedelta

import pytest
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from harvest.choices import EndKind, HarvestKind, JobStatus, Unit
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    DomainConfiguration,
    HarvestChannel,
    HarvestDefinition,
    Job,
    Schedule,
    TransferReport,
)
from harvest.services.domains import configuration_save
from harvest.services.jobs import job_transition
from harvest.services.launcher import launch_due
from harvest.services.planning import (
    collection_mapping_save,
    definition_configurations_change,
    definition_run_now,
    definition_save,
)
from harvest.services.transfer import transfer_collection
from selection.choices import Budget, Depth, Frequency, RecordStatus
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator(db):
    return UserFactory(roles=[Role.CURATOR])


@pytest.fixture
def engineer(db):
    return UserFactory(roles=[Role.ENGINEER])


@pytest.fixture
def as_curator(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def as_engineer(client, engineer):
    client.force_login(engineer)
    return client


def field_errors(response, field: str) -> list[str]:
    return list(response.context["form"].errors.get(field, []))


def page_text(response) -> str:
    """The page's text as people read it: inline tags dropped, others a space, spaces collapsed."""
    html = response.content.decode()
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    html = re.sub(r"</?(?:a|strong|span|em|code|b|i)\b[^>]*>", "", html)
    text = re.sub(r"<[^>]+>", " ", html)
    text = re.sub(r"\s+", " ", text)
    return text.replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")


def seen(client, url: str) -> int:
    """The version of the object the edit form showed (its hidden ``seen``), which the form sends back."""
    return client.get(url).context["form"]["seen"].value()


def schedule_data(**changes) -> dict:
    data = {
        "name": "nightly",
        "comments": "",
        "every": "1",
        "unit": Unit.DAY,
        "at_minute": "",
        "at_hour": "3",
        "at_weekday": "",
        "at_day": "",
        "start": "2030-01-01T00:00",
        "end_kind": EndKind.FOREVER,
        "max_runs": "",
        "end_date": "",
    }
    data.update(changes)
    return data


def selective_data(schedule, /, **changes) -> dict:
    channel = HarvestChannel.objects.get(is_snapshot=False, is_default=True)
    data = {
        "name": "news sites",
        "comments": "",
        "is_active": "on",
        "schedule": str(schedule.pk),
        "channel": str(channel.pk),
        "crawler_traps": "",
    }
    data.update(changes)
    return data


@pytest.fixture
def attached(make_domain, selective):
    """A selective definition with two domains' default configurations attached."""
    domains = [make_domain("bibliotheque.fr"), make_domain("archives.fr")]
    definition_configurations_change(
        definition=selective, add=[domain.default_configuration for domain in domains]
    )
    return selective


@pytest.fixture
def job(attached):
    """One job of a run of the selective definition (submitted, as the launcher leaves it)."""
    definition_run_now(definition=attached)
    launch_due()
    return Job.objects.get(harvest_definition=attached)


@pytest.fixture
def report(db, selective, curator):
    collection = CollectionFactory(name="Elections")
    collection_mapping_save(collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective)
    RecordFactory(collection=collection, url="https://www.mairie-exemple.fr/", status=RecordStatus.VALIDATED)
    return transfer_collection(collection=collection, user=curator)


# Every page renders, for the roles that plan, and only for them ---------------------------------


def planning_pages(selective, snapshot, schedule, report):
    channel = HarvestChannel.objects.first()
    budget = BudgetMapping.objects.first()
    return {
        "definition_list": reverse("harvest:definition_list"),
        "definition_list[selective]": reverse("harvest:definition_list") + "?kind=selective",
        "definition_list[snapshot]": reverse("harvest:definition_list") + "?kind=snapshot",
        "definition_create_selective": reverse("harvest:definition_create_selective"),
        "definition_create_snapshot": reverse("harvest:definition_create_snapshot"),
        "definition_detail[selective]": reverse("harvest:definition_detail", args=[selective.pk]),
        "definition_detail[snapshot]": reverse("harvest:definition_detail", args=[snapshot.pk]),
        "definition_edit[selective]": reverse("harvest:definition_edit", args=[selective.pk]),
        "definition_edit[snapshot]": reverse("harvest:definition_edit", args=[snapshot.pk]),
        "definition_configurations": reverse("harvest:definition_configurations", args=[selective.pk]),
        "schedule_list": reverse("harvest:schedule_list"),
        "schedule_create": reverse("harvest:schedule_create"),
        "schedule_detail": reverse("harvest:schedule_detail", args=[schedule.pk]),
        "schedule_edit": reverse("harvest:schedule_edit", args=[schedule.pk]),
        "channel_list": reverse("harvest:channel_list"),
        "channel_create": reverse("harvest:channel_create"),
        "channel_edit": reverse("harvest:channel_edit", args=[channel.pk]),
        "mapping_list": reverse("harvest:mapping_list"),
        "collection_mapping_create": reverse("harvest:collection_mapping_create"),
        "budget_mapping_create": reverse("harvest:budget_mapping_create"),
        "budget_mapping_edit": reverse("harvest:budget_mapping_edit", args=[budget.pk]),
        "transfer": reverse("harvest:transfer"),
        "transfer_detail": reverse("harvest:transfer_detail", args=[report.pk]),
    }


PAGE_KEYS = [
    "definition_list",
    "definition_list[selective]",
    "definition_list[snapshot]",
    "definition_create_selective",
    "definition_create_snapshot",
    "definition_detail[selective]",
    "definition_detail[snapshot]",
    "definition_edit[selective]",
    "definition_edit[snapshot]",
    "definition_configurations",
    "schedule_list",
    "schedule_create",
    "schedule_detail",
    "schedule_edit",
    "channel_list",
    "channel_create",
    "channel_edit",
    "mapping_list",
    "collection_mapping_create",
    "budget_mapping_create",
    "budget_mapping_edit",
    "transfer",
    "transfer_detail",
]


@pytest.mark.parametrize("key", PAGE_KEYS)
def test_each_planning_page_renders_for_a_curator(as_curator, selective, snapshot, schedule, report, key):
    url = planning_pages(selective, snapshot, schedule, report)[key]
    response = as_curator.get(url)
    assert response.status_code == 200, url
    assert b"<h1" in response.content


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER])
def test_librarians_and_managers_may_not_open_planning_pages(
    client, selective, snapshot, schedule, report, role
):
    client.force_login(UserFactory(roles=[role]))
    for key, url in planning_pages(selective, snapshot, schedule, report).items():
        assert client.get(url).status_code == 403, key


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER])
def test_librarians_and_managers_may_not_post_on_planning_pages(client, selective, schedule, role):
    client.force_login(UserFactory(roles=[role]))
    before = HarvestDefinition.objects.get(pk=selective.pk)
    targets = [
        reverse("harvest:definition_activate", args=[selective.pk]),
        reverse("harvest:definition_run_now", args=[selective.pk]),
        reverse("harvest:definition_edit", args=[selective.pk]),
    ]
    for url in targets:
        assert client.post(url, {"is_active": "false", "name": "taken over"}).status_code == 403, url
    assert client.post(reverse("harvest:schedule_create"), schedule_data()).status_code == 403
    after = HarvestDefinition.objects.get(pk=selective.pk)
    assert (after.name, after.is_active, after.next_date) == (before.name, before.is_active, before.next_date)
    assert not Schedule.objects.filter(name="nightly").exists()


def test_job_pages_render_for_an_engineer(as_engineer, job):
    response = as_engineer.get(reverse("harvest:job_list"))
    assert response.status_code == 200
    assert job.get_absolute_url().encode() in response.content
    response = as_engineer.get(job.get_absolute_url())
    assert response.status_code == 200
    text = page_text(response)
    assert "bibliotheque.fr" in text and "archives.fr" in text
    assert f"{job.template}, version {job.template_version}" in text


def test_curators_read_jobs_but_may_not_resubmit_them(as_curator, job):
    assert as_curator.get(reverse("harvest:job_list")).status_code == 200
    page = page_text(as_curator.get(job.get_absolute_url()))
    assert str(job) in page and "Resubmit" not in page
    assert as_curator.post(reverse("harvest:job_resubmit", kwargs={"pk": job.pk})).status_code == 403


# Schedules ------------------------------------------------------------------------------------


def test_a_curator_creates_a_schedule_and_sees_its_next_five_runs_in_local_time(as_curator, settings):
    settings.TIME_ZONE = "Europe/Paris"
    response = as_curator.post(reverse("harvest:schedule_create"), schedule_data())
    schedule = Schedule.objects.get(name="nightly")
    assert response.status_code == 302
    assert response["Location"] == schedule.get_absolute_url()
    assert (schedule.unit, schedule.every, schedule.at_hour, schedule.end_kind) == ("day", 1, 3, "forever")
    assert timezone.localtime(schedule.start).strftime("%Y-%m-%d %H:%M") == "2030-01-01 00:00"

    response = as_curator.get(schedule.get_absolute_url())
    runs = re.findall(r"<li>(2030-\d\d-\d\d \d\d:\d\d)", response.content.decode())
    assert runs == [f"2030-01-0{day} 03:00" for day in range(1, 6)]
    assert "In the site's time zone (Europe/Paris)." in page_text(response)


def test_a_schedule_of_n_runs_shows_n_runs_at_most(as_curator):
    as_curator.post(
        reverse("harvest:schedule_create"),
        schedule_data(end_kind=EndKind.RUNS, max_runs="2", unit=Unit.WEEK, at_weekday="4"),
    )
    schedule = Schedule.objects.get(name="nightly")
    response = as_curator.get(schedule.get_absolute_url())
    # 2030-01-04 is a Friday (weekday 4).
    assert re.findall(r"<li>(2030-\d\d-\d\d \d\d:\d\d)", response.content.decode()) == [
        "2030-01-04 03:00",
        "2030-01-11 03:00",
    ]
    assert "runs 2 times in all" in page_text(response)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"end_kind": EndKind.RUNS}, "max_runs", "Give the number of runs."),
        ({"end_kind": EndKind.UNTIL}, "end_date", "Give the date the schedule ends."),
        (
            {"end_kind": EndKind.UNTIL, "end_date": "2029-12-31T00:00"},
            "end_date",
            "The end must come after the start.",
        ),
        ({"at_weekday": "2"}, "at_weekday", "Not used with a period in days."),
        ({"unit": Unit.HOUR, "at_hour": "4"}, "at_hour", "Not used with a period in hours."),
        ({"every": "0"}, "every", "Ensure this value is greater than or equal to 1."),
        ({"start": "next tuesday"}, "start", "Enter a valid date/time."),
    ],
)
def test_a_bad_schedule_is_refused_at_its_field_and_nothing_is_saved(as_curator, changes, field, message):
    response = as_curator.post(reverse("harvest:schedule_create"), schedule_data(**changes))
    assert response.status_code == 200
    assert field_errors(response, field) == [message]
    assert message in page_text(response)
    assert not Schedule.objects.exists()


def test_a_schedule_name_is_unique_whatever_the_case(as_curator, schedule):
    response = as_curator.post(reverse("harvest:schedule_create"), schedule_data(name=schedule.name.upper()))
    assert field_errors(response, "name") == ["A schedule with this name already exists."]
    assert Schedule.objects.count() == 1


def test_editing_a_schedule_moves_the_next_run_of_its_definitions(as_curator, selective, schedule):
    url = reverse("harvest:schedule_edit", args=[schedule.pk])
    data = schedule_data(
        name=schedule.name, start="2031-06-01T00:00", at_hour="5", seen=seen(as_curator, url)
    )
    response = as_curator.post(url, data)
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert schedule.at_hour == 5
    selective.refresh_from_db()
    assert timezone.localtime(selective.next_date).strftime("%Y-%m-%d %H:%M") == "2031-06-01 05:00"
    page = page_text(as_curator.get(schedule.get_absolute_url()))
    assert f"{selective.name} — next run 2031-06-01 05:00" in page


def test_a_refused_schedule_edit_changes_nothing(as_curator, schedule):
    before = Schedule.objects.get(pk=schedule.pk)
    url = reverse("harvest:schedule_edit", args=[schedule.pk])
    data = schedule_data(name="renamed", at_weekday="1", seen=seen(as_curator, url))
    response = as_curator.post(url, data)
    assert field_errors(response, "at_weekday") == ["Not used with a period in days."]
    schedule.refresh_from_db()
    assert (schedule.name, schedule.at_weekday, schedule.updated_at) == (before.name, None, before.updated_at)


# Harvest definitions --------------------------------------------------------------------------


def test_a_curator_creates_a_selective_definition(as_curator, schedule):
    response = as_curator.post(reverse("harvest:definition_create_selective"), selective_data(schedule))
    definition = HarvestDefinition.objects.get(name="news sites")
    assert response.status_code == 302
    assert response["Location"] == definition.get_absolute_url()
    assert definition.kind == HarvestKind.SELECTIVE
    assert definition.schedule == schedule
    assert definition.channel.name == "Selective"
    assert definition.next_date == schedule.next_run(timezone.now())

    page = page_text(as_curator.get(definition.get_absolute_url()))
    assert "The harvest definition “news sites” was created." in page
    for run in schedule.runs(definition.next_date, count=5):
        assert timezone.localtime(run).strftime("%Y-%m-%d %H:%M") in page


def test_the_channel_of_a_new_definition_is_the_default_of_its_kind(as_curator):
    response = as_curator.get(reverse("harvest:definition_create_snapshot"))
    form = response.context["form"]
    assert form.fields["channel"].initial == HarvestChannel.objects.get(is_snapshot=True, is_default=True)
    assert set(form.fields["channel"].queryset) == set(HarvestChannel.objects.filter(is_snapshot=True))
    assert "schedule" not in form.fields


def test_a_curator_creates_a_snapshot_definition_continuing_another(as_curator, snapshot):
    channel = HarvestChannel.objects.get(is_snapshot=True)
    data = {
        "name": "broad 2030",
        "is_active": "on",
        "channel": str(channel.pk),
        "max_objects_per_domain": "5000",
        "max_bytes_per_domain": "-1",
        "max_job_seconds": "86400",
        "continue_from": str(snapshot.pk),
        "crawler_traps": r"/calendar/\d+",
    }
    response = as_curator.post(reverse("harvest:definition_create_snapshot"), data)
    assert response.status_code == 302
    definition = HarvestDefinition.objects.get(name="broad 2030")
    assert definition.kind == HarvestKind.SNAPSHOT
    assert (definition.max_objects_per_domain, definition.max_bytes_per_domain) == (5000, -1)
    assert definition.continue_from == snapshot
    assert definition.schedule is None and definition.next_date is None


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "SELECTIVE-test"}, "name", "A harvest definition with this name already exists."),
        ({"schedule": ""}, "schedule", "A selective harvest needs a schedule."),
        ({"name": ""}, "name", "This field is required."),
        ({"crawler_traps": "(unclosed"}, "crawler_traps", None),
        (
            {"crawler_traps": "/print/\n/(\\d+)/\\1/"},
            "crawler_traps",
            "Line 2: “/(\\d+)/\\1/” cannot be used: back-references (\\1, (?P=name)) are not supported: "
            "patterns are RE2 regular expressions, which run in time proportional to the text, and this "
            "feature needs a backtracking engine that can take exponential time.",
        ),
    ],
)
def test_a_bad_selective_definition_is_refused_and_nothing_is_saved(
    as_curator, schedule, selective, changes, field, message
):
    count = HarvestDefinition.objects.count()
    response = as_curator.post(
        reverse("harvest:definition_create_selective"), selective_data(schedule, **changes)
    )
    assert response.status_code == 200
    errors = field_errors(response, field)
    assert errors, response.context["form"].errors
    if message is not None:
        assert errors == [message]
    for error in errors:
        assert error in page_text(response)
    assert HarvestDefinition.objects.count() == count


def test_a_snapshot_cannot_continue_itself(as_curator, snapshot):
    data = {
        "name": snapshot.name,
        "is_active": "on",
        "channel": str(snapshot.channel_id),
        "max_objects_per_domain": "-1",
        "max_bytes_per_domain": "-1",
        "max_job_seconds": "0",
        "continue_from": str(snapshot.pk),
    }
    url = reverse("harvest:definition_edit", args=[snapshot.pk])
    response = as_curator.post(url, {**data, "seen": seen(as_curator, url)})
    assert response.status_code == 200
    assert field_errors(response, "continue_from")  # not among the choices: itself
    snapshot.refresh_from_db()
    assert snapshot.continue_from is None


def test_a_curator_edits_a_definition(as_curator, selective, schedule):
    url = reverse("harvest:definition_edit", args=[selective.pk])
    data = selective_data(schedule, name="renamed", comments="Local news.", crawler_traps=r"\?page=\d{3,}")
    response = as_curator.post(url, {**data, "seen": seen(as_curator, url)})
    assert response.status_code == 302
    selective.refresh_from_db()
    assert (selective.name, selective.comments, selective.crawler_traps) == (
        "renamed",
        "Local news.",
        r"\?page=\d{3,}",
    )
    history = page_text(as_curator.get(selective.get_absolute_url()))
    assert "Name: selective-test → renamed" in history


def test_an_edit_does_not_overwrite_a_change_made_since_the_form_was_shown(as_curator, selective, schedule):
    url = reverse("harvest:definition_edit", args=[selective.pk])
    token = seen(as_curator, url)
    definition_save(definition=selective, comments="Changed by a colleague meanwhile.")
    data = selective_data(schedule, name="mine", comments="Mine.", seen=token)
    response = as_curator.post(url, data)
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "Someone else changed this harvest definition while you were editing it: comments changed to "
        "“Changed by a colleague meanwhile.” by someone. Your changes were not saved; reload the harvest "
        "definition and make them again."
    ]
    selective.refresh_from_db()
    assert (selective.name, selective.comments) == ("selective-test", "Changed by a colleague meanwhile.")
    # Reloaded, the form carries the new version and the edit goes through.
    data["seen"] = seen(as_curator, url)
    assert as_curator.post(url, data).status_code == 302
    selective.refresh_from_db()
    assert selective.comments == "Mine."


def test_a_schedule_edit_does_not_overwrite_a_change_made_since_the_form_was_shown(as_curator, schedule):
    url = reverse("harvest:schedule_edit", args=[schedule.pk])
    token = seen(as_curator, url)
    # Someone else saves in the meantime: their save raises the version, as every save does.
    Schedule.objects.filter(pk=schedule.pk).update(at_hour=4, version=F("version") + 1)
    response = as_curator.post(url, schedule_data(name=schedule.name, at_hour="6", seen=token))
    assert "Someone else changed this schedule while you were editing it" in page_text(response)
    schedule.refresh_from_db()
    assert (schedule.at_hour, schedule.version) == (4, token + 1)


def test_deactivating_and_activating_a_definition(as_curator, selective):
    url = reverse("harvest:definition_activate", args=[selective.pk])
    response = as_curator.post(url, {"is_active": "false"}, follow=True)
    assert "“selective-test” is inactive: it will not run." in page_text(response)
    selective.refresh_from_db()
    assert not selective.is_active
    assert HarvestDefinition.objects.filter(pk=selective.pk).exists()  # deactivated, never deleted
    page = page_text(as_curator.get(selective.get_absolute_url()))
    assert "None: the harvest definition is inactive." in page

    response = as_curator.post(url, {"is_active": "true"}, follow=True)
    assert "“selective-test” is active." in page_text(response)
    selective.refresh_from_db()
    assert selective.is_active
    assert selective.next_date is not None


def test_activate_without_saying_which_changes_nothing(as_curator, selective):
    response = as_curator.post(reverse("harvest:definition_activate", args=[selective.pk]), follow=True)
    assert "Say whether to activate or to deactivate the harvest definition." in page_text(response)
    selective.refresh_from_db()
    assert selective.is_active


def test_the_definition_list_has_a_tab_per_kind(as_curator, attached, snapshot):
    response = as_curator.get(reverse("harvest:definition_list") + "?kind=selective")
    rows = response.context["object_list"]
    assert list(rows) == [attached]
    assert rows[0].configuration_count == 2
    text = page_text(response)
    assert "selective-test" in text and "snapshot-test" not in text
    response = as_curator.get(reverse("harvest:definition_list") + "?kind=snapshot")
    assert list(response.context["object_list"]) == [snapshot]
    assert "all domains" in page_text(response)


def test_run_now_then_the_launcher_makes_the_jobs_shown_on_the_pages(client, curator, engineer, attached):
    client.force_login(curator)
    response = client.post(reverse("harvest:definition_run_now", args=[attached.pk]), follow=True)
    assert "“selective-test” is due now: the launcher makes its jobs within a minute." in page_text(response)
    attached.refresh_from_db()
    assert attached.next_date <= timezone.now()

    runs = launch_due()
    assert [run.harvest_definition for run in runs] == [attached]
    jobs = list(Job.objects.filter(harvest_definition=attached))
    assert jobs and all(job.status == JobStatus.SUBMITTED for job in jobs)

    page = page_text(client.get(attached.get_absolute_url()))
    for job in jobs:
        assert f"{job} — Submitted" in page
    content = client.get(attached.get_absolute_url()).content.decode()
    for job in jobs:
        assert job.get_absolute_url() in content  # curators read jobs too

    client.force_login(engineer)
    response = client.get(reverse("harvest:job_list") + f"?harvest_definition={attached.pk}")
    assert list(response.context["object_list"]) == sorted(jobs, key=lambda job: -job.pk)
    response = client.get(reverse("harvest:job_list") + f"?domain=archives.fr&status={JobStatus.DONE}")
    assert list(response.context["object_list"]) == []


def test_run_now_refuses_an_inactive_definition(as_curator, selective):
    definition_save(definition=selective, is_active=False)
    response = as_curator.post(reverse("harvest:definition_run_now", args=[selective.pk]), follow=True)
    assert "selective-test is inactive; activate it first." in page_text(response)
    selective.refresh_from_db()
    assert selective.next_date is None or selective.next_date > timezone.now()


# Configurations of a selective definition -----------------------------------------------------


def test_attaching_configurations_by_domain_and_name(as_curator, selective, make_domain, template):
    domain = make_domain("exemple.fr")
    deep = configuration_save(
        domain=domain, name="deep", template=template, max_objects=100, seed_lists=domain.seed_lists.all()
    )
    url = reverse("harvest:definition_configurations", args=[selective.pk])

    response = as_curator.post(url, {"domain": "EXEMPLE.fr", "configuration": ""}, follow=True)
    assert "exemple.fr / defaultconfig attached." in page_text(response)
    response = as_curator.post(url, {"domain": "exemple.fr", "configuration": "deep"}, follow=True)
    assert "exemple.fr / deep attached." in page_text(response)
    assert set(selective.configurations.all()) == {domain.default_configuration, deep}
    assert "100" in page_text(as_curator.get(selective.get_absolute_url()))


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"domain": "nowhere.fr"}, "domain", "There is no domain nowhere.fr."),
        (
            {"domain": "exemple.fr", "configuration": "missing"},
            "configuration",
            "exemple.fr has no configuration named “missing”; it has: defaultconfig.",
        ),
        (
            {"domain": "exemple.fr", "configuration": "defaultconfig"},
            None,
            "exemple.fr / defaultconfig is already attached.",
        ),
    ],
)
def test_attaching_an_unknown_configuration_is_refused(
    as_curator, selective, make_domain, data, field, message
):
    domain = make_domain("exemple.fr")
    definition_configurations_change(definition=selective, add=[domain.default_configuration])
    response = as_curator.post(reverse("harvest:definition_configurations", args=[selective.pk]), data)
    assert response.status_code == 200
    errors = response.context["form"].errors.get(field or "__all__")
    assert errors == [message]
    assert message in page_text(response)
    assert list(selective.configurations.all()) == [domain.default_configuration]


def test_detaching_the_selected_configurations(as_curator, attached):
    url = reverse("harvest:definition_configurations", args=[attached.pk])
    first, second = attached.configurations.order_by("domain__name")
    response = as_curator.post(url, {"detach": "1", "configurations": [str(first.pk)]}, follow=True)
    assert f"1 configuration(s) detached: {first}." in page_text(response)
    assert list(attached.configurations.all()) == [second]
    assert DomainConfiguration.objects.filter(pk=first.pk).exists()  # detached, not deleted

    response = as_curator.post(url, {"detach": "1"}, follow=True)
    assert "Select the configurations to detach." in page_text(response)
    assert list(attached.configurations.all()) == [second]


def test_a_snapshot_has_no_configuration_page(as_curator, snapshot):
    url = reverse("harvest:definition_configurations", args=[snapshot.pk])
    response = as_curator.get(url, follow=True)
    assert "A snapshot harvest takes every domain; it has no configuration list." in page_text(response)
    assert response.redirect_chain[-1][0] == snapshot.get_absolute_url()


# Channels -------------------------------------------------------------------------------------


def test_a_curator_creates_a_default_channel_and_edits_it(as_curator, channels):
    data = {"name": "Urgent", "queue": "crawl-high", "is_snapshot": "", "is_default": "on", "comments": ""}
    response = as_curator.post(reverse("harvest:channel_create"), data)
    assert response.status_code == 302
    urgent = HarvestChannel.objects.get(name="Urgent")
    assert urgent.is_default and not urgent.is_snapshot
    assert not HarvestChannel.objects.get(name="Selective").is_default  # the default moved

    url = reverse("harvest:channel_edit", args=[urgent.pk])
    data.update(queue="crawl-low", comments="For emergencies.", seen=seen(as_curator, url))
    response = as_curator.post(url, data)
    assert response.status_code == 302
    urgent.refresh_from_db()
    assert (urgent.queue, urgent.comments) == ("crawl-low", "For emergencies.")
    # A channel has no page of its own: its name in the list opens its edit form.
    listing = as_curator.get(reverse("harvest:channel_list"))
    assert f'<a href="{url}">Urgent</a>' in listing.content.decode()
    assert "For emergencies." in page_text(listing)


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "selective"}, "name", "A channel with this name already exists."),
        (
            {"queue": "crawl-nowhere"},
            "queue",
            "Select a valid choice. crawl-nowhere is not one of the available choices.",
        ),
    ],
)
def test_a_bad_channel_is_refused(as_curator, channels, changes, field, message):
    data = {"name": "Urgent", "queue": "crawl-high", "is_default": "on", **changes}
    response = as_curator.post(reverse("harvest:channel_create"), data)
    assert field_errors(response, field) == [message]
    assert HarvestChannel.objects.count() == len(channels)
    assert HarvestChannel.objects.get(name="Selective").is_default


# Mappings -------------------------------------------------------------------------------------


def test_the_mapping_page_shows_both_tables(as_curator, selective):
    collection = CollectionFactory(name="Elections")
    collection_mapping_save(collection=collection, frequency=Frequency.WEEKLY, harvest_definition=selective)
    response = as_curator.get(reverse("harvest:mapping_list"))
    text = page_text(response)
    assert "Elections Weekly selective-test" in text
    rows = response.context["budget_rows"]
    assert [budget for budget, _label, _cells in rows] == Budget.values
    cells = dict(rows[0][2])
    assert cells[Depth.HOST].template.name == "selective-host"
    assert cells[Depth.HOST].max_objects == 10_000


def test_a_curator_maps_a_collection_and_withdraws_the_mapping(as_curator, selective):
    collection = CollectionFactory()
    data = {"collection": collection.pk, "frequency": Frequency.MONTHLY, "harvest_definition": selective.pk}
    response = as_curator.post(reverse("harvest:collection_mapping_create"), data)
    assert response.status_code == 302
    mapping = CollectionMapping.objects.get()
    assert (mapping.collection, mapping.frequency, mapping.harvest_definition) == (
        collection,
        Frequency.MONTHLY,
        selective,
    )
    response = as_curator.post(reverse("harvest:collection_mapping_delete", args=[mapping.pk]), follow=True)
    assert "Mapping withdrawn" in page_text(response)
    assert not CollectionMapping.objects.exists()


def test_a_collection_cannot_be_mapped_to_a_snapshot(as_curator, snapshot):
    collection = CollectionFactory()
    data = {"collection": collection.pk, "frequency": Frequency.MONTHLY, "harvest_definition": snapshot.pk}
    response = as_curator.post(reverse("harvest:collection_mapping_create"), data)
    assert field_errors(response, "harvest_definition") == [
        "Choose a selective harvest definition: records are transferred to selective harvests only."
    ]
    assert not CollectionMapping.objects.exists()


def test_a_collection_and_frequency_are_mapped_once(as_curator, selective, schedule):
    other = definition_save(kind=HarvestKind.SELECTIVE, name="other", schedule=schedule)
    collection = CollectionFactory()
    collection_mapping_save(collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective)
    data = {"collection": collection.pk, "frequency": Frequency.MONTHLY, "harvest_definition": other.pk}
    response = as_curator.post(reverse("harvest:collection_mapping_create"), data)
    assert response.status_code == 200
    assert "This collection and frequency are already mapped." in page_text(response)
    assert CollectionMapping.objects.get().harvest_definition == selective


def test_budget_mappings_are_edited_withdrawn_and_created(as_curator, template):
    mapping = BudgetMapping.objects.get(budget=Budget.LARGE, depth=Depth.DOMAIN)
    data = {
        "budget": Budget.LARGE,
        "depth": Depth.DOMAIN,
        "template": template.pk,
        "max_objects": "2000000",
        "max_bytes": str(50 * 2**30),
    }
    response = as_curator.post(reverse("harvest:budget_mapping_edit", args=[mapping.pk]), data)
    assert response.status_code == 302
    mapping.refresh_from_db()
    assert (mapping.template, mapping.max_objects, mapping.max_bytes) == (template, 2_000_000, 50 * 2**30)

    # The grid's cell is taken: a second mapping for it is refused.
    response = as_curator.post(reverse("harvest:budget_mapping_create"), data)
    assert "This budget and depth are already mapped." in page_text(response)
    assert BudgetMapping.objects.filter(budget=Budget.LARGE, depth=Depth.DOMAIN).count() == 1

    as_curator.post(reverse("harvest:budget_mapping_delete", args=[mapping.pk]))
    assert not BudgetMapping.objects.filter(pk=mapping.pk).exists()
    grid = page_text(as_curator.get(reverse("harvest:mapping_list")))
    assert "not mapped: records are skipped" in grid

    response = as_curator.post(reverse("harvest:budget_mapping_create"), data)
    assert response.status_code == 302
    assert BudgetMapping.objects.get(budget=Budget.LARGE, depth=Depth.DOMAIN).max_objects == 2_000_000


def test_a_budget_mapping_gets_a_template_for_sites_that_need_a_browser(as_curator, template, curator):
    mapping = BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.HOST)
    edit = reverse("harvest:budget_mapping_edit", args=[mapping.pk])
    form = as_curator.get(edit).context["form"]
    assert form["browser_template"].help_text == (
        "Used instead for records whose site needs a browser; it should render pages."
    )
    grid = page_text(as_curator.get(reverse("harvest:mapping_list")))
    assert "needs a browser: not mapped: skipped" in grid
    data = {
        "budget": Budget.SMALL,
        "depth": Depth.HOST,
        "template": mapping.template_id,
        "browser_template": template.pk,
        "max_objects": "10000",
        "max_bytes": "-1",
    }
    response = as_curator.post(edit, data)
    assert response.status_code == 302
    mapping.refresh_from_db()
    assert mapping.browser_template == template
    assert mapping.history.first().history_user == curator
    # The template does not render pages: the grid says so.
    grid = page_text(as_curator.get(reverse("harvest:mapping_list")))
    assert f"needs a browser: {template} (does not render pages)" in grid

    response = as_curator.post(edit, {**data, "browser_template": "999999"})
    assert field_errors(response, "browser_template") == [
        "Select a valid choice. That choice is not one of the available choices."
    ]
    response = as_curator.post(edit, {**data, "browser_template": ""})
    mapping.refresh_from_db()
    assert mapping.browser_template is None


def test_a_budget_mapping_limit_below_minus_one_is_refused(as_curator, template):
    mapping = BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.PAGE)
    data = {
        "budget": Budget.SMALL,
        "depth": Depth.PAGE,
        "template": template.pk,
        "max_objects": "-5",
        "max_bytes": "-1",
    }
    response = as_curator.post(reverse("harvest:budget_mapping_edit", args=[mapping.pk]), data)
    assert "A limit is a number of 0 or more, or -1 for no limit." in page_text(response)
    assert BudgetMapping.objects.get(pk=mapping.pk).max_objects == 10_000


# The transfer ---------------------------------------------------------------------------------


@pytest.fixture
def elections(selective):
    """A collection mapped (monthly) to the selective definition, with validated and other records."""
    collection = CollectionFactory(name="Elections 2030")
    collection_mapping_save(collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective)
    RecordFactory(collection=collection, url="https://www.mairie-a.fr/", status=RecordStatus.VALIDATED)
    RecordFactory(collection=collection, url="https://www.mairie-b.fr/", status=RecordStatus.VALIDATED)
    RecordFactory(collection=collection, url="https://www.mairie-c.fr/", status=RecordStatus.PROPOSED)
    return collection


def test_a_curator_runs_the_transfer_of_a_collection_and_reads_the_report(as_curator, selective, elections):
    weekly = RecordFactory(
        collection=elections,
        url="https://www.journal.fr/",
        frequency=Frequency.WEEKLY,
        status=RecordStatus.VALIDATED,
    )
    response = as_curator.post(reverse("harvest:transfer"), {"collection": elections.pk})
    report = TransferReport.objects.get()
    assert response.status_code == 302
    assert response["Location"] == report.get_absolute_url()
    assert (report.created, report.skipped) == (2, 1)

    response = as_curator.get(report.get_absolute_url())
    text = page_text(response)
    assert "2 created" in text and "1 record skipped" in text
    name = "elections-2030_monthly_small_host"
    assert f"mairie-a.fr {name} selective-test" in text
    assert f"mairie-b.fr {name} selective-test" in text
    assert "mairie-c.fr" not in text  # only proposed
    skipped = reverse("selection:record_detail", args=[weekly.pk])
    assert f'<a href="{skipped}"' in response.content.decode()
    assert "No harvest definition is mapped to this collection for the frequency “Weekly”" in text
    assert {str(c) for c in selective.configurations.all()} == {
        f"mairie-a.fr / {name}",
        f"mairie-b.fr / {name}",
    }

    # The transfer page lists it; a second run changes nothing.
    page = as_curator.get(reverse("harvest:transfer"))
    assert report.get_absolute_url().encode() in page.content
    as_curator.post(reverse("harvest:transfer"), {"collection": elections.pk})
    again = TransferReport.objects.first()
    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)


def test_the_transfer_of_a_definition_takes_its_mapped_collections(as_curator, selective, elections):
    response = as_curator.post(reverse("harvest:transfer"), {"harvest_definition": selective.pk}, follow=True)
    report = TransferReport.objects.get()
    assert response.redirect_chain[-1][0] == report.get_absolute_url()
    assert report.harvest_definition == selective and report.collection == elections
    assert "The transfer for “selective-test” ran: 1 collection(s)." in page_text(response)
    # The report is also listed on the definition's page.
    assert report.get_absolute_url().encode() in as_curator.get(selective.get_absolute_url()).content


@pytest.mark.parametrize(
    ("target", "field", "message"),
    [
        ("nothing", "__all__", "Choose a collection or a harvest definition."),
        ("both", "__all__", "Choose a collection or a harvest definition, not both."),
        (
            "snapshot",
            "harvest_definition",
            "Choose a selective harvest definition: records are transferred to selective harvests only.",
        ),
    ],
)
def test_a_transfer_without_a_clear_target_is_refused(
    as_curator, selective, snapshot, elections, target, field, message
):
    data = {
        "nothing": {},
        "both": {"collection": elections.pk, "harvest_definition": selective.pk},
        "snapshot": {"harvest_definition": snapshot.pk},
    }[target]
    response = as_curator.post(reverse("harvest:transfer"), data)
    assert response.status_code == 200
    assert response.context["form"].errors[field] == [message]
    assert message in page_text(response)
    assert not TransferReport.objects.exists()
    assert not selective.configurations.exists()


def test_the_transfer_of_a_definition_no_collection_is_mapped_to_is_refused(as_curator, selective):
    response = as_curator.post(reverse("harvest:transfer"), {"harvest_definition": selective.pk})
    message = "No collection is mapped to “selective-test”: map one under “Mappings from selection”."
    assert field_errors(response, "harvest_definition") == [message]
    assert not TransferReport.objects.exists()


# Jobs -----------------------------------------------------------------------------------------


def test_an_engineer_resubmits_a_failed_job(as_engineer, job, engineer):
    job_transition(job=job, status=JobStatus.STARTED)
    job_transition(job=job, status=JobStatus.FAILED, error="The worker died.")
    response = as_engineer.post(reverse("harvest:job_resubmit", args=[job.pk]), follow=True)
    job.refresh_from_db()
    copy = job.resubmitted_as
    assert job.status == JobStatus.RESUBMITTED
    assert copy.status == JobStatus.SUBMITTED
    assert response.redirect_chain[-1][0] == copy.get_absolute_url()
    text = page_text(response)
    assert f"{job} was resubmitted as {copy}." in text
    assert f"Resubmission of {job}" in text
    assert list(copy.configurations.values_list("domain__name", flat=True).order_by("domain__name")) == [
        "archives.fr",
        "bibliotheque.fr",
    ]
    original = page_text(as_engineer.get(job.get_absolute_url()))
    assert f"Resubmitted as {copy}" in original
    assert "The worker died." in original


def test_a_curator_may_not_resubmit_a_job(as_curator, job):
    job_transition(job=job, status=JobStatus.STARTED)
    job_transition(job=job, status=JobStatus.FAILED)
    response = as_curator.post(reverse("harvest:job_resubmit", args=[job.pk]))
    assert response.status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and job.resubmitted_as is None
    assert Job.objects.count() == 1


def test_a_done_job_cannot_be_resubmitted(as_engineer, job):
    job_transition(job=job, status=JobStatus.STARTED)
    job_transition(job=job, status=JobStatus.DONE)
    page = as_engineer.get(job.get_absolute_url())
    assert b"Resubmit" not in page.content  # no button where it cannot work
    response = as_engineer.post(reverse("harvest:job_resubmit", args=[job.pk]), follow=True)
    assert response.redirect_chain[-1][0] == job.get_absolute_url()
    assert "A job that is done cannot become resubmitted." in page_text(response)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE and job.resubmitted_as is None
    assert Job.objects.count() == 1


def test_the_job_list_filters_by_status_and_id_range(as_engineer, job):
    job_transition(job=job, status=JobStatus.STARTED)
    url = reverse("harvest:job_list")
    assert list(as_engineer.get(url, {"status": JobStatus.STARTED}).context["object_list"]) == [job]
    assert list(as_engineer.get(url, {"status": JobStatus.FAILED}).context["object_list"]) == []
    assert list(as_engineer.get(url, {"id_min": job.pk + 1}).context["object_list"]) == []
    yesterday = (timezone.localdate() - timedelta(days=1)).isoformat()
    assert list(as_engineer.get(url, {"created_before": yesterday}).context["object_list"]) == []


def test_a_definitions_configurations_are_paged_in_domain_name_order(as_curator, make_domain, selective):
    names = [f"ordered-{n:02d}.fr" for n in range(60, 0, -1)]  # 60: more than a page, made in reverse
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in names]
    )
    for url in (
        reverse("harvest:definition_detail", args=[selective.pk]),
        reverse("harvest:definition_configurations", args=[selective.pk]),
    ):
        pages = [page_text(as_curator.get(url, {"page": page})) for page in (1, 2)]
        shown = [re.findall(r"ordered-\d{2}\.fr", text) for text in pages]
        assert [list(dict.fromkeys(found)) for found in shown] == [sorted(names)[:50], sorted(names)[50:]]
