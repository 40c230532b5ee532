"""The launcher: due definitions become runs and jobs, split by NetarchiveSuite's rules."""

import threading
from datetime import timedelta

import pytest
from django.db import close_old_connections, connection
from django.utils import timezone

from harvest.choices import JobStatus, StopReason
from harvest.models import HarvestDefinition, HarvestRun, Job, JobConfiguration
from harvest.services.domains import configuration_save, domain_set_alias, domain_update, seed_list_save
from harvest.services.jobs import harvest_info_record, job_transition
from harvest.services.launcher import Candidate, SplitRules, definition_launch, launch_due, split
from harvest.services.planning import (
    definition_configurations_change,
    definition_run_now,
    definition_save,
    schedule_save,
    template_save,
    trap_list_save,
)

pytestmark = pytest.mark.django_db


def candidate(pk, expected, *, domain=None, template=1):
    return Candidate(pk, domain or pk, template, expected, -1, -1, 0, "")


def groups(cands, **rules):
    options = {"max_domains": 1000, "max_objects": 10**9, "max_ratio": 100.0, **rules}
    return [[c.configuration_id for c in group] for group in split(iter(cands), SplitRules(**options))]


# Splitting, on crafted candidates -----------------------------------------------------------------


def test_a_job_holds_one_template():
    cands = [candidate(1, 50, template=1), candidate(2, 40, template=1), candidate(3, 30, template=2)]
    assert groups(cands) == [[1, 2], [3]]


def test_a_domain_is_in_a_job_once():
    cands = [candidate(1, 50, domain=7), candidate(2, 40, domain=7), candidate(3, 30, domain=8)]
    assert groups(cands) == [[1, 3], [2]]


def test_the_size_ratio_caps_a_job():
    cands = [candidate(i, size) for i, size in enumerate([10_000, 5_000, 100, 99, 50, 1], start=1)]
    assert groups(cands, max_ratio=100) == [[1, 2, 3], [4, 5, 6]]
    assert groups(cands, max_ratio=2) == [[1, 2], [3, 4, 5], [6]]


def test_the_domain_count_caps_a_job():
    cands = [candidate(i, 100) for i in range(1, 8)]
    assert groups(cands, max_domains=3) == [[1, 2, 3], [4, 5, 6], [7]]


def test_the_expected_objects_cap_a_job():
    cands = [candidate(1, 600), candidate(2, 500), candidate(3, 400), candidate(4, 100)]
    assert groups(cands, max_objects=1000) == [[1, 3], [2, 4]]


def test_a_candidate_larger_than_the_object_cap_gets_a_job_of_its_own():
    assert groups([candidate(1, 5000), candidate(2, 10)], max_objects=1000, max_ratio=1000) == [[1], [2]]


def test_splitting_streams_without_reading_ahead():
    seen = []

    def stream():
        for i in range(1, 10):
            seen.append(i)
            yield candidate(i, 1000 // i)

    jobs = split(stream(), SplitRules(max_domains=3, max_objects=10**9, max_ratio=100))
    first = next(jobs)
    assert [c.configuration_id for c in first] == [1, 2, 3]
    assert seen == [1, 2, 3]


def first_fit(cands, rules):
    """The rules walked plainly: each candidate into the first open job that takes it (the split's
    definition, against which its heaps are checked)."""
    jobs, open_jobs = [], []
    for c in cands:
        size = max(c.expected, 1)
        if open_jobs and open_jobs[0]["template"] != c.template_id:
            jobs += [job["ids"] for job in open_jobs]
            open_jobs = []
        for job in list(open_jobs):
            if job["largest"] / size > rules.max_ratio:
                open_jobs.remove(job)
                jobs.append(job["ids"])
        chosen = next(
            (
                job
                for job in open_jobs
                if c.domain_id not in job["domains"] and job["total"] + c.expected <= rules.max_objects
            ),
            None,
        )
        if chosen is None:
            chosen = {"template": c.template_id, "largest": size, "total": 0, "domains": set(), "ids": []}
            open_jobs.append(chosen)
        chosen["ids"].append(c.configuration_id)
        chosen["domains"].add(c.domain_id)
        chosen["total"] += c.expected
        if len(chosen["ids"]) >= rules.max_domains:
            open_jobs.remove(chosen)
            jobs.append(chosen["ids"])
    return jobs + [job["ids"] for job in open_jobs]


@pytest.mark.parametrize("seed", range(20))
def test_the_split_is_first_fit_on_generated_candidates(seed):
    import random

    rng = random.Random(seed)
    rules = SplitRules(
        max_domains=rng.choice([3, 10, 1000]),
        max_objects=rng.choice([500, 5_000, 10**9]),
        max_ratio=rng.choice([2.0, 10.0, 100.0]),
    )
    cands = []
    for template in (1, 2):
        sizes = sorted(
            (rng.choice([0, 1, 7, rng.randint(1, 8_000)]) for _ in range(rng.randint(0, 300))), reverse=True
        )
        # Few domains, so that a domain is often already in the job that has room.
        cands += [
            candidate(len(cands) + i, size, domain=rng.randint(1, 40), template=template)
            for i, size in enumerate(sizes)
        ]
    got = [[c.configuration_id for c in job] for job in split(iter(cands), rules)]
    assert got == first_fit(cands, rules)
    assert sorted(i for job in got for i in job) == [c.configuration_id for c in cands]


# Jobs from the database -----------------------------------------------------------------------------


@pytest.fixture
def domains(make_domain):
    return [make_domain(f"site{i}.fr") for i in range(6)]


def history(definition, domain, objects, stop=StopReason.COMPLETED):
    """An earlier harvest of a domain (a finished job of another run)."""
    run = HarvestRun.objects.create(
        harvest_definition=definition, number=HarvestRun.objects.count() + 1000, scheduled_for=timezone.now()
    )
    job = Job.objects.create(
        harvest_definition=definition,
        run=run,
        run_number=run.number,
        channel=definition.channel,
        queue="crawl-low",
        template=domain.default_configuration.template,
        template_version=1,
        template_settings={},
    )
    return harvest_info_record(
        job=job,
        configuration=domain.default_configuration,
        object_count=objects,
        byte_count=0,
        stop_reason=stop,
    )


def launch(definition):
    definition_run_now(definition=definition)
    return definition_launch(definition_id=definition.pk)


def test_snapshot_takes_active_non_alias_domains_with_expected_sizes(snapshot, domains, settings):
    settings.HARVEST_DEFAULT_EXPECTED_OBJECTS = 500
    settings.HARVEST_JOB_MAX_SIZE_RATIO = 20
    old = HarvestDefinition.objects.create(name="old", kind="snapshot", channel=snapshot.channel)
    history(old, domains[0], 20_000)  # completed: the expectation
    history(old, domains[1], 90, StopReason.OBJECT_LIMIT)
    history(old, domains[1], 3_000, StopReason.BYTE_LIMIT)  # none completed: the largest
    history(old, domains[2], 7_000)
    history(old, domains[2], 40)  # the most recent completed one wins
    domain_set_alias(domain=domains[3], alias_of=domains[4])
    domain_update(domain=domains[5], is_active=False)
    run = launch(snapshot)
    entries = JobConfiguration.objects.filter(job__run=run).select_related("domain")
    expected = {e.domain.name: e.expected_objects for e in entries}
    assert expected == {"site0.fr": 20_000, "site1.fr": 3_000, "site2.fr": 40, "site4.fr": 500}
    # Ratio 20: 20,000 and 3,000 together; 500 would be 40 times smaller than 20,000: a new job, with 40.
    jobs = [sorted(e.domain.name for e in entries.filter(job=job)) for job in run.jobs.order_by("pk")]
    assert jobs == [["site0.fr", "site1.fr"], ["site2.fr", "site4.fr"]]
    assert all(job.status == JobStatus.SUBMITTED and job.submitted_at for job in run.jobs.all())
    assert all(job.queue == "crawl-low" for job in run.jobs.all())


def test_snapshot_limits_cap_configurations_and_expectations(snapshot, domains):
    domains[0].default_configuration.max_objects = 100
    configuration_save(configuration=domains[0].default_configuration, max_objects=100)
    snapshot = definition_save(definition=snapshot, max_objects_per_domain=1000, max_bytes_per_domain=10**6)
    run = launch(snapshot)
    entry = JobConfiguration.objects.get(job__run=run, domain=domains[0])
    assert (entry.max_objects, entry.max_bytes, entry.expected_objects) == (100, 10**6, 100)
    other = JobConfiguration.objects.get(job__run=run, domain=domains[1])
    assert (other.max_objects, other.expected_objects) == (1000, 1000)


def test_jobs_freeze_template_settings_seeds_and_traps(selective, domains, template):
    template_save(template=template, obey_robots=False)  # version 2
    configuration = configuration_save(
        domain=domains[0],
        name="deep",
        template=template,
        seed_lists=[
            seed_list_save(domain=domains[0], name="s", seeds="http://site0.fr/a\nhttp://SITE0.fr/a")
        ],
        max_objects=77,
    )
    domain_update(domain=domains[0], crawler_traps=".*/agenda/.*")
    trap_list_save(name="calendars", traps=r".*\d{4}/\d{2}/\d{2}.*")
    trap_list_save(name="off", traps=".*off.*", is_active=False)
    selective = definition_save(definition=selective, crawler_traps=".*sessionid.*")
    definition_configurations_change(definition=selective, add=[configuration])
    run = launch(selective)
    (job,) = run.jobs.all()
    template_save(template=template, obey_robots=True)  # later edits do not change the job
    job.refresh_from_db()
    assert job.template_version == 2 and job.template_settings["obey_robots"] is False
    assert job.template_settings["template"] == template.name
    assert job.crawler_traps == [r".*\d{4}/\d{2}/\d{2}.*", ".*sessionid.*"]
    entry = job.configurations.get()
    assert entry.seed_urls == ["http://site0.fr/a"]
    assert (entry.max_objects, entry.crawler_traps) == (77, ".*/agenda/.*")


def test_selective_entries_take_every_seed_list_and_their_domain_s_history(
    selective, domains, template, settings
):
    settings.HARVEST_DEFAULT_EXPECTED_OBJECTS = 100
    history(selective, domains[0], 300, StopReason.OBJECT_LIMIT)
    history(selective, domains[0], 80)  # completed, though smaller: the expectation
    lists = [
        seed_list_save(domain=domains[0], name="a", seeds="http://site0.fr/a"),
        seed_list_save(
            domain=domains[0], name="b", seeds="http://site0.fr/b\n# a comment\nhttp://site0.fr/a"
        ),
    ]
    both = configuration_save(domain=domains[0], name="both", template=template, seed_lists=lists)
    capped = configuration_save(
        domain=domains[0], name="capped", template=template, seed_lists=lists[:1], max_objects=50
    )
    definition_configurations_change(definition=selective, add=[both, domains[1].default_configuration])
    run = launch(selective)
    entries = {
        e.configuration.name + "@" + e.domain.name: e for e in JobConfiguration.objects.filter(job__run=run)
    }
    assert {name: e.expected_objects for name, e in entries.items()} == {
        "both@site0.fr": 80,
        "defaultconfig@site1.fr": 100,  # no history: HARVEST_DEFAULT_EXPECTED_OBJECTS
    }
    assert sorted(entries["both@site0.fr"].seed_urls) == ["http://site0.fr/a", "http://site0.fr/b"]
    definition_configurations_change(definition=selective, remove=[both], add=[capped])
    definition_run_now(definition=selective)
    run = definition_launch(definition_id=selective.pk)
    entry = JobConfiguration.objects.get(job__run=run, domain=domains[0])
    assert (entry.expected_objects, entry.max_objects, entry.seed_urls) == (50, 50, ["http://site0.fr/a"])


def test_selective_jobs_split_by_template_and_domain(selective, domains, template):
    extra = configuration_save(
        domain=domains[0],
        name="second",
        template=domains[0].default_configuration.template,
        seed_lists=list(domains[0].seed_lists.all()),
    )
    other_template = configuration_save(
        domain=domains[1], name="t", template=template, seed_lists=list(domains[1].seed_lists.all())
    )
    definition_configurations_change(
        definition=selective,
        add=[domains[0].default_configuration, extra, domains[2].default_configuration, other_template],
    )
    run = launch(selective)
    contents = sorted(
        sorted(f"{e.domain.name}/{e.configuration.name}" for e in job.configurations.all())
        for job in run.jobs.all()
    )
    assert contents == [
        ["site0.fr/defaultconfig", "site2.fr/defaultconfig"],
        ["site0.fr/second"],
        ["site1.fr/t"],
    ]
    for job in run.jobs.all():
        assert {e.configuration.template_id for e in job.configurations.all()} == {job.template_id}


def test_continue_from_takes_the_domains_stopped_at_harvest_limits(snapshot, domains):
    run = launch(snapshot)
    job = run.jobs.first()
    reasons = [
        StopReason.OBJECT_LIMIT,
        StopReason.COMPLETED,
        StopReason.BYTE_LIMIT,
        StopReason.CONFIG_OBJECT_LIMIT,
    ]
    for domain, reason in zip(domains, reasons, strict=False):
        harvest_info_record(
            job=job,
            configuration=domain.default_configuration,
            object_count=10,
            byte_count=1,
            stop_reason=reason,
        )
    follow_up = definition_save(kind="snapshot", name="follow-up", continue_from=snapshot)
    entries = JobConfiguration.objects.filter(job__run=launch(follow_up))
    assert sorted(e.domain.name for e in entries) == ["site0.fr", "site2.fr"]


def test_a_run_is_launched_once_and_the_next_date_follows_the_schedule(domains):
    start = timezone.now() - timedelta(days=10)
    schedule = schedule_save(name="daily", start=start, unit="day")
    definition = definition_save(kind="selective", name="daily-run", schedule=schedule)
    definition_configurations_change(definition=definition, add=[domains[0].default_configuration])
    HarvestDefinition.objects.filter(pk=definition.pk).update(
        next_date=timezone.now() - timedelta(days=3, hours=1)
    )
    (run,) = launch_due()
    assert run.number == 1 and run.missed == 3  # four due dates: the last is launched, three skipped
    definition.refresh_from_db()
    assert definition.runs_done == 1 and definition.next_date > timezone.now()
    assert definition.next_date - timezone.now() <= timedelta(days=1)
    assert launch_due() == []
    assert Job.objects.filter(harvest_definition=definition).count() == 1


def test_a_schedule_of_n_runs_stops_after_them(domains):
    schedule = schedule_save(
        name="twice", start=timezone.now() - timedelta(days=5), unit="day", end_kind="runs", max_runs=2
    )
    definition = definition_save(kind="selective", name="twice", schedule=schedule)
    for _ in range(2):
        HarvestDefinition.objects.filter(pk=definition.pk).update(next_date=timezone.now())
        assert len(launch_due()) == 1
    definition.refresh_from_db()
    assert definition.runs_done == 2 and definition.next_date is None


def test_inactive_definitions_are_not_launched(snapshot, domains):
    definition_run_now(definition=snapshot)
    definition_save(definition=snapshot, is_active=False)
    assert launch_due() == []


def test_a_snapshot_runs_once_per_run_now(snapshot, domains):
    launch(snapshot)
    snapshot.refresh_from_db()
    assert snapshot.next_date is None and snapshot.runs_done == 1
    assert launch_due() == []


def test_the_launch_transfers_mapped_collections_first(selective):
    from harvest.services.planning import collection_mapping_save
    from selection.choices import RecordStatus
    from tests.factories import CollectionFactory, RecordFactory

    collection = CollectionFactory(name="News")
    collection_mapping_save(collection=collection, frequency="monthly", harvest_definition=selective)
    RecordFactory(collection=collection, url="http://journal.fr/", status=RecordStatus.VALIDATED)
    run = launch(selective)
    assert [e.domain.name for e in JobConfiguration.objects.filter(job__run=run)] == ["journal.fr"]
    assert selective.transfer_reports.count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_launchers_at_once_produce_one_set_of_jobs(make_domain):
    if connection.vendor == "sqlite" and connection.settings_dict["NAME"].startswith("file:memorydb"):
        pytest.skip("an in-memory SQLite database is not shared between threads")
    from django.apps import apps

    from harvest.defaults import planning_defaults_ensure

    planning_defaults_ensure(apps)  # an earlier transactional test may have flushed them
    for i in range(20):
        make_domain(f"d{i}.fr")
    snapshot = definition_save(kind="snapshot", name="concurrent")
    definition_run_now(definition=snapshot)
    barrier = threading.Barrier(2)
    results, errors = [], []

    def run():
        try:
            barrier.wait()
            results.append(launch_due())
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert sorted(len(r) for r in results) == [0, 1]
    assert HarvestRun.objects.filter(harvest_definition=snapshot).count() == 1
    assert JobConfiguration.objects.filter(job__harvest_definition=snapshot).count() == 20


def _waiting_for_a_lock(backend_pid: int) -> bool:
    """Whether another connection's backend is waiting for a lock now (PostgreSQL's own view)."""
    from django.db import connections

    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [backend_pid])
        row = cursor.fetchone()
    return row is not None and row[0] == "Lock"


@pytest.mark.django_db(transaction=True)
def test_a_configuration_is_not_deleted_while_a_launch_writes_its_entries(make_domain, template, monkeypatch):
    """The database does not check a job entry's configuration key: the launch and the deletion
    take one lock instead, so the deletion waits for the launch, then sees its entries and refuses."""
    if connection.vendor != "postgresql":
        pytest.skip("the lock is PostgreSQL's; SQLite lets one transaction write at a time")
    from django.apps import apps
    from django.core.exceptions import ValidationError

    from harvest.defaults import planning_defaults_ensure
    from harvest.models import DomainConfiguration
    from harvest.services import launcher
    from harvest.services.domains import configuration_delete

    planning_defaults_ensure(apps)  # an earlier transactional test may have flushed them
    domain = make_domain("late.fr")
    extra = configuration_save(
        domain=domain, name="extra", template=template, seed_lists=list(domain.seed_lists.all())
    )
    selective = definition_save(
        kind="selective",
        name="racing",
        schedule=schedule_save(name="hourly", start=timezone.now() - timedelta(days=1), unit="hour"),
    )
    definition_configurations_change(definition=selective, add=[extra])
    definition_run_now(definition=selective)
    written, proceed = threading.Event(), threading.Event()
    backends, errors = {}, []
    write = launcher._JobWriter.write

    def write_then_wait(self, group):
        job = write(self, group)
        written.set()  # the entry is written, not yet committed
        assert proceed.wait(60)
        return job

    monkeypatch.setattr(launcher._JobWriter, "write", write_then_wait)

    def in_thread(work):
        def run():
            try:
                work()
            except Exception as error:  # reported below
                errors.append(error)
            finally:
                close_old_connections()
                connection.close()

        return threading.Thread(target=run)

    def launching():
        definition_launch(definition_id=selective.pk)

    def deleting():
        connection.ensure_connection()
        backends["deleting"] = connection.connection.info.backend_pid
        configuration_delete(configuration=DomainConfiguration.objects.get(pk=extra.pk))

    launch_thread = in_thread(launching)
    launch_thread.start()
    assert written.wait(60)
    definition_configurations_change(definition=selective, remove=[extra])  # no longer in the definition
    delete_thread = in_thread(deleting)
    delete_thread.start()
    for _ in range(600):  # until PostgreSQL says the deletion waits for the lock (at most 60 s)
        if backends.get("deleting") and _waiting_for_a_lock(backends["deleting"]):
            break
        if not delete_thread.is_alive():
            pytest.fail(f"the deletion did not wait for the launch: {errors or 'it deleted'}")
        threading.Event().wait(0.1)
    else:
        pytest.fail("the deletion did not wait for the launch")
    proceed.set()
    launch_thread.join(60)
    delete_thread.join(60)
    assert len(errors) == 1 and isinstance(errors[0], ValidationError)
    assert "has been harvested" in str(errors[0])
    entry = JobConfiguration.objects.get(job__harvest_definition=selective)
    assert entry.configuration_id == extra.pk and DomainConfiguration.objects.filter(pk=extra.pk).exists()


# Job transitions -----------------------------------------------------------------------------------


def test_job_transitions_are_checked(snapshot, domains):
    from django.core.exceptions import ValidationError

    from harvest.services.jobs import JOB_TRANSITIONS, job_resubmit

    job = launch(snapshot).jobs.get()
    assert job.status == JobStatus.SUBMITTED
    with pytest.raises(ValidationError, match="A job that is submitted cannot become done") as excinfo:
        job_transition(job=job, status=JobStatus.DONE)
    assert excinfo.value.code == "illegal_transition"
    job.refresh_from_db()
    assert (job.status, job.ended_at) == (JobStatus.SUBMITTED, None)
    job = job_transition(job=job, status=JobStatus.STARTED)
    job = job_transition(job=job, status=JobStatus.FAILED, error="worker lost")
    assert job.errors == "worker lost" and job.ended_at
    copy_of = job_resubmit(job=job)
    job.refresh_from_db()
    assert job.status == JobStatus.RESUBMITTED and job.resubmitted_as == copy_of
    assert copy_of.status == JobStatus.SUBMITTED
    assert copy_of.configurations.count() == job.configurations.count() == len(domains)
    with pytest.raises(ValidationError):
        job_resubmit(job=job)  # already resubmitted
    done = job_transition(job=job_transition(job=copy_of, status=JobStatus.STARTED), status=JobStatus.DONE)
    with pytest.raises(ValidationError, match="A job that is done cannot become resubmitted"):
        job_resubmit(job=done)
    # Every status is in the table, and the table's terminal states have no way out.
    assert set(JOB_TRANSITIONS) == set(JobStatus.values)
    assert JOB_TRANSITIONS[JobStatus.DONE] == JOB_TRANSITIONS[JobStatus.RESUBMITTED] == frozenset()
