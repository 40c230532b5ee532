"""The engineer monitoring page and the failure explanations (harvest.monitoring).

Explanations are checked on real failures wherever the machine can make them: site crawls of
this process against a closed port, a port that never answers, TLS spoken to a plain HTTP server,
the address guard, the test website's robots.txt, 404 and 500 pages, a crawler fault, the
watchdog and an operator stop. A DNS failure needs a name server, so it is the crawl log line
the crawler writes for a real ``socket.gaierror``. The worker test runs a real Celery worker on
RabbitMQ (PostgreSQL only, as the other worker tests).
"""

from __future__ import annotations

import re
import socket
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from harvest import monitoring
from harvest.choices import JobFailure, JobStatus, StopReason
from harvest.crawler.crawllog import ERROR_STATUS, NO_ANSWER, error_annotation, log_line
from harvest.crawler.fetch import classify_error
from harvest.crawler.outcomes import FetchError
from harvest.crawler.site import SiteCrawl
from harvest.models import BrokerSnapshot, Job, JobConfiguration
from harvest.services.crawls import job_stop, jobs_fail_stalled, site_crawl_begin
from harvest.services.monitoring import broker_snapshot_take
from harvest.worker import run_site_crawl
from storage.services.nodes import node_create
from tests.crawl_worker import BROKER_URL, _reset_pools, wait_for
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.sitecrawls import end
from webarchive.permissions import Role
from webarchive.tasks import spool_queue


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2
    settings.HARVEST_CONNECT_TIMEOUT = 1.0
    settings.HARVEST_READ_TIMEOUT = 1.0


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) but never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # nothing listens once it is closed


def crawl(seed: str, **template_fields) -> tuple[Job, JobConfiguration]:
    """One site crawl of ``seed``, run in this process to its end."""
    job = job_for_sites([("127.0.0.1", seed)], **template_fields)
    entry = job.configurations.get()
    run_site_crawl(entry.pk)
    job.refresh_from_db()
    entry.refresh_from_db()
    return job, entry


def explained(entry: JobConfiguration) -> monitoring.Explanation:
    explanation = monitoring.explain_site_failure(entry)
    assert explanation is not None, (entry.stop_reason, entry.error, entry.report)
    assert explanation.title and explanation.action  # never an empty explanation
    return explanation


# Explanations of real failures --------------------------------------------------------------


@pytest.mark.django_db
def test_a_closed_port_is_a_refused_connection():
    _job, entry = crawl(f"http://127.0.0.1:{closed_port()}/")
    assert entry.stop_reason == StopReason.FAILED
    explanation = explained(entry)
    assert explanation.cause == "connection-refused"
    assert "refused the connection" in explanation.title
    assert "connection refused" in explanation.detail


@pytest.mark.django_db
def test_a_server_that_never_answers_is_a_timeout(silent_port):
    _job, entry = crawl(f"http://127.0.0.1:{silent_port}/")
    explanation = explained(entry)
    assert explanation.cause == "timeout"
    assert "did not answer in time" in explanation.title


@pytest.mark.django_db
def test_the_address_guard_refusing_a_loopback_address(settings, testsite):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = False
    _job, entry = crawl(testsite.url("/ok"))
    explanation = explained(entry)
    assert explanation.cause == "address-refused"
    assert "private or local address" in explanation.title
    assert "loopback" in explanation.detail  # the guard's own reason, kept as recorded


@pytest.mark.django_db
def test_https_to_a_plain_http_server_is_a_tls_error(testsite):
    _job, entry = crawl(testsite.url("/ok").replace("http://", "https://"))
    explanation = explained(entry)
    assert explanation.cause == "tls"
    assert "TLS error" in explanation.detail


@pytest.mark.django_db
def test_robots_txt_forbidding_the_seed(testsite):
    _job, entry = crawl(testsite.url("/site/private/0.html"), depth_policy="page")
    assert entry.stop_reason == StopReason.COMPLETED  # the crawl itself went well…
    explanation = explained(entry)  # …but collected nothing of the site
    assert explanation.cause == "robots"
    assert "robots.txt forbids" in explanation.title


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "status", "words"),
    [("/site/missing.html", 404, "does not exist"), ("/error", 500, "server error")],
)
def test_a_seed_answering_an_http_error(testsite, path, status, words):
    _job, entry = crawl(testsite.url(path), depth_policy="page")
    explanation = explained(entry)
    assert explanation.cause == "seed-http"
    assert f"HTTP {status}" in explanation.title
    assert words in explanation.title


@pytest.mark.django_db
def test_a_good_crawl_has_nothing_to_explain(testsite):
    _job, entry = crawl(testsite.url("/ok"), depth_policy="page")
    assert entry.stop_reason == StopReason.COMPLETED
    assert monitoring.explain_site_failure(entry) is None


@pytest.mark.django_db
def test_a_fault_inside_the_crawler_fails_the_job_and_says_it_is_ours(testsite, monkeypatch):
    def broken(self, candidate, exchange):
        raise RuntimeError("a bug in link extraction")

    monkeypatch.setattr(SiteCrawl, "_queue_links", broken)
    job, entry = crawl(testsite.url("/ok"))
    assert job.status == JobStatus.FAILED and job.failure == JobFailure.CRAWLER_BROKEN
    site = explained(entry)
    assert site.cause == "crawler-broken"
    assert "RuntimeError: a bug in link extraction" in site.detail
    explanation = monitoring.explain_job_failure(job)
    assert explanation.cause == "crawler-broken"
    assert "not of the websites" in explanation.title


@pytest.mark.django_db
def test_a_job_whose_metadata_cannot_be_written_on_a_full_disk(testsite, monkeypatch):
    def disk_full(job):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("harvest.worker.write_job_metadata", disk_full)
    job, _entry = crawl(testsite.url("/ok"), depth_policy="page")
    assert job.status == JobStatus.FAILED and job.failure == JobFailure.METADATA_NO_SPACE
    explanation = monitoring.explain_job_failure(job)
    assert explanation.cause == "metadata"
    assert "disk is full" in explanation.title
    assert "No space left" in explanation.detail


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("number", "words", "title"),
    [
        (28, "Aucun espace disponible sur le périphérique", "disk is full"),
        (13, "Permission non accordée", "may not write there"),
        (5, "Erreur d'entrée/sortie", "could not be written at its end"),
    ],
)
def test_the_metadata_failure_is_read_from_its_code_whatever_the_workers_language(
    testsite, monkeypatch, number, words, title
):
    """A worker running in French writes French errors: the explanation comes from the code."""

    def fails(job):
        raise OSError(number, words)

    monkeypatch.setattr("harvest.worker.write_job_metadata", fails)
    job, _entry = crawl(testsite.url("/ok"), depth_policy="page")
    Job.objects.filter(pk=job.pk).update(errors=f"Les métadonnées du job n'ont pu être écrites : {words}")
    job.refresh_from_db()
    explanation = monitoring.explain_job_failure(job)
    assert explanation.cause == "metadata" and title in explanation.title


@pytest.mark.django_db
def test_a_job_failed_before_the_codes_is_explained_from_its_words():
    job = job_for_sites([("127.0.0.1", "http://127.0.0.1:9/")])
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED,
        errors="The job's metadata could not be written: [Errno 13] Permission denied",
        failure="",
    )
    job.refresh_from_db()
    assert "may not write there" in monitoring.explain_job_failure(job).title


@pytest.mark.django_db
def test_a_stalled_job_failed_by_the_watchdog(settings):
    settings.HARVEST_STALL_SECONDS = 600
    job = job_for_sites([("127.0.0.1", "http://127.0.0.1:9/")])
    entry = job.configurations.get()
    site_crawl_begin(entry_id=entry.pk, worker="gone")
    jobs_fail_stalled(now=timezone.now() + timedelta(seconds=601))
    job.refresh_from_db()
    entry.refresh_from_db()
    assert job.failure == JobFailure.STALLED and entry.report["error_code"] == JobFailure.STALLED
    assert monitoring.explain_job_failure(job).cause == "stalled"
    assert "worker" in monitoring.explain_job_failure(job).action
    assert explained(entry).cause == "stalled"
    # Written by a worker in French, the errors say other words: the codes still decide.
    Job.objects.filter(pk=job.pk).update(errors="Aucun site de ce job n'a progressé depuis 10 minutes.")
    JobConfiguration.objects.filter(pk=entry.pk).update(error="Arrêté par le chien de garde.")
    job.refresh_from_db()
    entry.refresh_from_db()
    assert monitoring.explain_job_failure(job).cause == "stalled"
    assert explained(entry).cause == "stalled"


@pytest.mark.django_db
def test_an_operator_stop_and_a_time_limit_are_explained_but_not_as_errors():
    job = job_for_sites([("127.0.0.1", "http://127.0.0.1:9/"), ("127.0.0.3", "http://127.0.0.3:9/")])
    end(job, "127.0.0.3", "time-limit", urls_done=5)
    job_stop(job=job)
    job.refresh_from_db()
    stopped = explained(job.configurations.get(domain__name="127.0.0.1"))
    assert (stopped.cause, stopped.severity) == ("operator", monitoring.INFO)
    limited = explained(job.configurations.get(domain__name="127.0.0.3"))
    assert (limited.cause, limited.severity) == ("time-limit", monitoring.WARNING)
    assert monitoring.explain_job_failure(job).cause == "operator"


@pytest.mark.django_db
def seed_line(site: str, status: int, annotation: str) -> str:
    """The crawl log line of a seed of ``site`` that got no answer."""
    return log_line(
        when=timezone.now(),
        status=status,
        size=0,
        url=f"http://{site}/",
        hop_path="",
        via="",
        mime="",
        duration=0.0,
        digest="",
        site=site,
        annotations=[annotation],
    )


@pytest.mark.django_db
def test_a_dns_failure_from_the_crawl_log_line_the_crawler_writes():
    job = job_for_sites([("no-such-name-4b1c.fr", "http://no-such-name-4b1c.fr/")])
    end(job, "no-such-name-4b1c.fr", "failed", errors=1, error="No seed could be fetched.")
    entry = job.configurations.get()
    code, reason = classify_error(socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    assert code == FetchError.DNS
    line = seed_line("no-such-name-4b1c.fr", ERROR_STATUS[code], error_annotation(code, reason))
    explanation = monitoring.explain_site_failure(entry, [line])
    assert explanation.cause == "dns"
    assert "Name or service not known" in explanation.detail
    # Without its log, the site still gets an explanation, with the raw error.
    fallback = monitoring.explain_site_failure(entry, [])
    assert fallback.cause == "no-seed"
    assert "No seed could be fetched." in fallback.detail


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("status", "annotation", "cause"),
    [
        # Written before the codes: the status says what it can, the words are only shown.
        (NO_ANSWER["dns"], "error:DNS_lookup_failed:_Name_or_service_not_known", "dns"),
        (NO_ANSWER["refused"], "error:address_refused:_127.0.0.1_is_a_loopback_address", "address-refused"),
        (NO_ANSWER["timeout"], "error:connection_timed_out", "timeout"),
        (NO_ANSWER["connect"], "error:connection_refused", "connection"),
        (NO_ANSWER["broken"], "error:TLS_error:_wrong_version_number", "connection"),
        # The code decides, not the words (which are the workers' and may change).
        (NO_ANSWER["connect"], "error:connection-refused:connexion_refusée", "connection-refused"),
        (NO_ANSWER["broken"], "error:tls:échec_de_la_poignée_de_main", "tls"),
        (NO_ANSWER["broken"], "error:reset:address_refused_dns_timed_out", "connection"),
    ],
)
def test_old_and_new_crawl_log_lines(status, annotation, cause):
    job = job_for_sites([("old-log.fr", "http://old-log.fr/")])
    end(job, "old-log.fr", "failed", errors=1, error="No seed could be fetched.")
    explanation = monitoring.explain_site_failure(
        job.configurations.get(), [seed_line("old-log.fr", status, annotation)]
    )
    assert explanation.cause == cause
    assert annotation.split(":")[-1].replace("_", " ") in explanation.detail


@pytest.mark.django_db
def test_a_seed_fetch_cut_by_the_time_limit_is_the_time_limit_not_a_network_failure():
    job = job_for_sites([("slow.fr", "http://slow.fr/")])
    end(job, "slow.fr", "time-limit", errors=1)
    line = seed_line(
        "slow.fr", ERROR_STATUS[FetchError.INTERRUPTED], error_annotation(FetchError.INTERRUPTED, "deadline")
    )
    explanation = monitoring.explain_site_failure(job.configurations.get(), [line])
    assert (explanation.cause, explanation.severity) == ("time-limit", monitoring.WARNING)


@pytest.mark.django_db
def test_every_url_failing_and_an_unknown_error():
    job = job_for_sites([("127.0.0.1", "http://127.0.0.1:9/"), ("127.0.0.3", "http://127.0.0.3:9/")])
    end(job, "127.0.0.1", urls_done=3, errors=3)
    JobConfiguration.objects.filter(job=job, domain__name="127.0.0.1").update(
        report={"status_codes": {"403": 1, "503": 2}, "broken": False}
    )
    end(job, "127.0.0.3", "failed", error="Quantum flux in the frobnicator")
    every = monitoring.explain_site_failure(job.configurations.get(domain__name="127.0.0.1"), [])
    assert every.cause == "all-failed"
    assert "503: 2" in every.detail
    unknown = monitoring.explain_site_failure(job.configurations.get(domain__name="127.0.0.3"), [])
    assert unknown.cause == "unknown"
    assert unknown.title and unknown.action
    assert unknown.detail == "Quantum flux in the frobnicator"


@pytest.mark.django_db
def test_failures_of_the_last_day_only():
    job = job_for_sites([("127.0.0.1", f"http://127.0.0.1:{closed_port()}/")])
    run_site_crawl(job.configurations.get().pk)
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED, errors="Something broke", ended_at=timezone.now()
    )
    old = job_for_sites([("127.0.0.3", "http://127.0.0.3:9/")])
    end(old, "127.0.0.3", "failed", error="old news")
    JobConfiguration.objects.filter(job=old).update(ended_at=timezone.now() - timedelta(days=2))
    failures = monitoring.recent_failures()
    assert [failed.pk for failed, _ in failures.jobs] == [job.pk]
    assert failures.jobs[0][1].detail == "Something broke"
    assert [(entry.job_id, explanation.cause) for entry, explanation in failures.sites] == [
        (job.pk, "connection-refused")
    ]
    assert failures.site_count == 1


@pytest.mark.django_db
def test_failed_sites_are_counted_up_to_a_bound(as_role, monkeypatch):
    """A day of thousands of failed sites costs the page what a quiet day costs: counted up to
    FAILED_SITES_COUNTED, then "more than"."""
    from harvest.monitoring import failures as failure_module

    hosts = ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]
    job = job_for_sites([(host, f"http://{host}:9/") for host in hosts])
    for host in hosts[:3]:
        end(job, host, "failed", error="refused")
    monkeypatch.setattr(failure_module, "FAILED_SITES_COUNTED", 3)
    failures = monitoring.recent_failures()
    assert (failures.site_count, failures.more_sites, len(failures.sites)) == (3, False, 3)
    end(job, hosts[3], "failed", error="refused")
    failures = monitoring.recent_failures()
    assert (failures.site_count, failures.more_sites, len(failures.sites)) == (3, True, 4)
    html = as_role(Role.ENGINEER).get(URL).content.decode()
    assert "More than 3 site crawls failed in the last 24 hours" in html
    assert "The last 4 are listed" not in html  # every one of them is


# The page -----------------------------------------------------------------------------------


URL = "/harvest/monitoring/"


def test_the_url_and_its_name():
    assert reverse("harvest:monitoring") == URL


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_the_login_page(client):
    response = client.get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@pytest.mark.django_db
@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER, Role.CURATOR])
def test_other_roles_are_refused(as_role, role):
    assert as_role(role).get(URL).status_code == 403


@pytest.mark.django_db
def test_an_engineer_sees_the_failures_explained_and_the_storage(as_role, testsite):
    job, _entry = crawl(f"http://127.0.0.1:{closed_port()}/")
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED, errors="The disk caught fire", ended_at=timezone.now()
    )
    broker_snapshot_take()  # what the beat gathers in the background
    client = as_role(Role.ENGINEER)
    response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-job="{job.pk}"' in html
    assert "The disk caught fire" in html
    assert "refused the connection" in html
    assert 'id="no-storage-alert"' in html
    assert 'data-queue="crawl-high"' in html
    # Engineers find it first in Operations.
    assert 'href="/harvest/monitoring/"' in client.get("/operations/").content.decode()
    # The htmx poll gets the live part only.
    fragment = client.get(URL, headers={"HX-Request": "true"}).content.decode()
    assert fragment.startswith('\n<div id="monitoring-live"') or 'id="monitoring-live"' in fragment[:200]
    assert "<html" not in fragment


@pytest.mark.django_db
def test_a_broker_that_cannot_be_reached_is_a_message_not_an_error(as_role):
    from webarchive.celery import app

    saved = app.conf.broker_url, app.conf.broker_transport_options
    app.conf.broker_url = f"amqp://guest:guest@127.0.0.1:{closed_port()}//"
    app.conf.broker_transport_options = {}
    _reset_pools(app)
    try:
        health = monitoring.worker_health()
        assert not health.reachable and health.error
        broker_snapshot_take()
        response = as_role(Role.ENGINEER).get(URL)
    finally:
        app.conf.broker_url, app.conf.broker_transport_options = saved
        _reset_pools(app)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="broker-unreachable"' in html
    assert "The broker cannot be reached" in html
    assert 'id="queues-unknown"' in html


@pytest.mark.django_db
def test_the_page_never_asks_the_broker_itself_and_says_how_old_its_answer_is(
    as_role, monkeypatch, django_capture_on_commit_callbacks
):
    client = as_role(Role.ENGINEER)

    def no_asking(*args, **kwargs):
        raise AssertionError("the page asked the broker")

    # Never gathered: the page says so, and asks the beat's task for a gathering (it does not wait).
    with monkeypatch.context() as patch:
        patch.setattr("harvest.monitoring.workers.worker_health", no_asking)
        patch.setattr("harvest.monitoring.workers.queue_lengths", no_asking)
        with django_capture_on_commit_callbacks(execute=False) as sent:
            html = client.get(URL).content.decode()
    assert 'id="broker-not-gathered"' in html and len(sent) == 1
    # Gathered: shown with its age, and no new gathering is asked for.
    snapshot = broker_snapshot_take()
    with monkeypatch.context() as patch:
        patch.setattr("harvest.monitoring.workers.worker_health", no_asking)
        with django_capture_on_commit_callbacks(execute=False) as sent:
            html = client.get(URL).content.decode()
    assert re.search(r'id="broker-age">As the broker said \d+ s ago<', html) and sent == []
    # Old: said to be old, and a gathering is asked for.
    BrokerSnapshot.objects.filter(pk=snapshot.pk).update(taken_at=timezone.now() - timedelta(minutes=10))
    with django_capture_on_commit_callbacks(execute=False) as sent:
        html = client.get(URL).content.decode()
    assert "As the broker said 600 s ago — not gathered since" in html and len(sent) == 1


@pytest.mark.django_db
def test_queue_lengths_count_the_tasks_waiting_on_the_demo_broker(tmp_path):
    """The filesystem broker: a task sent to a storage node's queue that no worker consumes waits there."""
    from webarchive.celery import app

    node = node_create(name="mon-test-node", location="here", root=str(tmp_path / "node"), local_worker=True)
    before = {queue.name: queue.waiting for queue in monitoring.queue_lengths().queues}
    assert before[node.queue] == 0
    app.send_task("storage.nothing", queue=node.queue)
    try:
        after = {queue.name: queue for queue in monitoring.queue_lengths().queues}
        assert after[node.queue].waiting == 1
        assert after[node.queue].storage_nodes == ["mon-test-node"]
        assert after["crawl-high"].channels  # the default channels send there
    finally:
        with app.connection_for_write() as connection:
            connection.default_channel.queue_purge(node.queue)


@pytest.mark.django_db
def test_the_spool_queues_of_crawl_machines_with_files_to_ingest_are_listed(settings, as_role):
    """A crawl machine whose files wait in the ingest chain needs a worker on its queue: listed, with
    the machine; a machine whose files are all ingested is not; this machine's own always is."""
    from django.utils import timezone

    from storage.models import IngestStep, WarcFile

    settings.MACHINE_NAME = "web1"
    for name, machine, step in [
        ("a.warc.gz", "crawler9", IngestStep.INDEXED),
        ("b.warc.gz", "crawler8", IngestStep.CLEANED),
        ("c.warc.gz", "", IngestStep.REGISTERED),  # imported: any worker ingests it
    ]:
        WarcFile.objects.create(
            name=name, path=f"/spool/{name}", machine=machine, ingest_step=step, created_at=timezone.now()
        )
    queues = {queue.name: queue for queue in monitoring.known_queues()}
    assert queues["spool.crawler9"].machines == ["crawler9"]
    assert queues["spool.web1"].machines == ["web1"]
    assert "spool.crawler8" not in queues
    lengths = {queue.name: queue for queue in monitoring.queue_lengths().queues}
    assert lengths["spool.crawler9"].machines == ["crawler9"]
    broker_snapshot_take()
    html = as_role(Role.ENGINEER).get(URL).content.decode()
    row = re.search(r'<tr data-queue="spool.crawler9">(.*?)</tr>', html, re.S).group(1)
    assert "spool of the crawl machine: crawler9" in row


@pytest.mark.django_db
def test_the_job_page_explains_a_failed_job_and_its_sites(as_role):
    job, _entry = crawl(f"http://127.0.0.1:{closed_port()}/")
    Job.objects.filter(pk=job.pk).update(
        status=JobStatus.FAILED, errors="No site of this job made progress for 15 minutes"
    )
    html = as_role(Role.ENGINEER).get(job.get_absolute_url()).content.decode()
    assert 'id="job-failure"' in html
    assert 'data-cause="stalled"' in html
    assert 'data-cause="connection-refused"' in html


# A real worker ------------------------------------------------------------------------------


def test_a_real_worker_is_online_with_its_queues(crawl_worker, client):
    from tests.factories import UserFactory

    crawl_worker.start()
    health = wait_for(lambda: (lambda h: h if h.workers else None)(monitoring.worker_health()), timeout=30)
    assert health.reachable
    assert BROKER_URL.split("@")[-1] in health.broker
    [worker] = health.workers
    assert worker.name.startswith("test-")
    # The crawl queues are its site-crawl consumer's (harvest.consumer), and its concurrency is the
    # sites that consumer may hold at once (HARVEST_SITES_PER_WORKER), not its 8 task threads.
    # Beside those it was given, its machine's own queue (the ingest chains of the files it writes).
    assert set(worker.queues) == {"default", "crawl-high", "crawl-low", spool_queue()}
    assert worker.concurrency == 1000
    queues = monitoring.queue_lengths()
    assert queues.reachable
    assert {queue.name: queue.waiting for queue in queues.queues}["crawl-high"] == 0
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    broker_snapshot_take()  # the beat's task, gathered here at once
    html = client.get(URL).content.decode()
    assert f'data-worker="{worker.name}"' in html
    assert "As the broker said" in html
    crawl_worker.stop()
    assert monitoring.worker_health().workers == []
