"""The job pages through HTTP: running jobs and their live progress, a job's sites, stop, the crawl log
search, WARC files and external links, and a domain's harvest history.

Jobs are made by the launcher; their sites are moved through their states by the same services the
crawl workers call (site_crawl_begin, site_crawl_progress, site_crawl_end), so the pages read what a
real crawl would have written.
"""

import hashlib
import html
import re
from datetime import UTC, datetime
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from harvest.choices import JobStatus, SiteState, StopReason
from harvest.crawler.crawllog import CrawlLog, log_line
from harvest.models import HarvestInfo
from harvest.services.crawls import site_crawl_progress
from harvest.services.jobs import job_transition
from harvest.services.planning import (
    definition_configurations_change,
    definition_save,
)
from harvest.worker import crawl_log_file
from storage.models import WarcFile
from storage.services.indexing import warc_file_register
from tests.harvest.sitecrawls import DOMAINS, end, entry_of, launch, progress, run
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_engineer(as_role):
    return as_role(Role.ENGINEER)


@pytest.fixture
def as_curator(as_role):
    return as_role(Role.CURATOR)


@pytest.fixture
def attached(make_domain, selective):
    definition_configurations_change(
        definition=selective, add=[make_domain(name).default_configuration for name in DOMAINS]
    )
    return selective


@pytest.fixture
def job(attached):
    return launch(attached)


def page_text(response) -> str:
    return page_text_of(response.content.decode())


def page_text_of(html: str) -> str:
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    html = re.sub(r"</?(?:a|strong|span|em|code|b|i)\b[^>]*>", "", html)
    text = re.sub(r"<[^>]+>", " ", html)
    text = re.sub(r"\s+", " ", text)
    return text.replace("&#x27;", "'").replace("&quot;", '"').replace("&amp;", "&")


def bars(html: str, kind: str) -> list[tuple[int, int]]:
    """(done, total) of each progress bar of a kind ("urls" or "sites"), in page order."""
    found = re.findall(
        rf'class="progress-bar progress-{kind}[^"]*"[^>]*data-done="(\d+)" data-total="(\d+)"', html
    )
    return [(int(done), int(total)) for done, total in found]


def htmx_get(client, url, **params):
    return client.get(url, params, HTTP_HX_REQUEST="true")


# Running jobs -----------------------------------------------------------------------------------


def test_running_jobs_show_their_progress_summed_over_their_sites(as_engineer, attached, job):
    run(job, "alpha.fr", urls_done=40, urls_queued=60, bytes=2048, errors=2, rate=1.5)
    run(job, "beta.fr", urls_done=10, urls_queued=30, bytes=1024, errors=1, rate=0.5)
    waiting = launch(attached)  # submitted, nothing started
    finished = launch(attached)
    for domain in DOMAINS:
        end(finished, domain, urls_done=5)

    response = as_engineer.get(reverse("harvest:job_running"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="running-jobs"' in html
    rows = re.findall(r'<tr data-job="(\d+)">', html)
    assert rows == [str(job.pk), str(waiting.pk)]  # started first; the done job is not listed
    assert bars(html, "urls") == [(50, 140), (0, 0)]
    assert bars(html, "sites") == [(0, 3), (0, 3)]
    text = page_text(response)
    assert "2 / 1 / 0" in text and "0 / 3 / 0" in text  # sites running / queued / ended
    assert "2.0" in text and "3.0 KB" in text  # URLs/s of the running sites; bytes
    assert 'hx-trigger="every 3s"' in html
    assert html.count('class="btn btn-sm btn-outline-danger job-stop"') == 2


def test_the_running_table_body_is_an_htmx_fragment_that_stops_polling_when_nothing_runs(as_engineer, job):
    run(job, "alpha.fr", urls_done=7, urls_queued=3, rate=2.0)
    response = htmx_get(as_engineer, reverse("harvest:job_running"))
    assert response.status_code == 200
    html = response.content.decode().strip()
    assert html.startswith('<tbody id="running-jobs-rows"') and html.endswith("</tbody>")
    assert "<html" not in html and "main-nav" not in html
    assert 'hx-trigger="every 3s"' in html
    assert bars(html, "urls") == [(7, 10)]
    assert "HX-Request" in response["Vary"]

    end(job, "alpha.fr", urls_done=8)
    end(job, "beta.fr")
    end(job, "gamma.fr")
    html = htmx_get(as_engineer, reverse("harvest:job_running")).content.decode()
    assert "hx-trigger" not in html and "No job is submitted or running." in html


def test_curators_follow_running_jobs_but_get_no_stop_button(as_curator, job):
    run(job, "alpha.fr", urls_done=1)
    response = as_curator.get(reverse("harvest:job_running"))
    assert response.status_code == 200
    assert f'<tr data-job="{job.pk}">' in response.content.decode()
    assert b"job-stop" not in response.content
    assert b'id="job-stop"' not in as_curator.get(job.get_absolute_url()).content


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER])
def test_librarians_and_managers_see_no_job_pages(as_role, role, job):
    client = as_role(role)
    assert client.get(reverse("harvest:job_running")).status_code == 403
    assert htmx_get(client, reverse("harvest:job_running")).status_code == 403
    assert htmx_get(client, job.get_absolute_url()).status_code == 403
    assert client.post(reverse("harvest:job_stop", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.stop_requested_at is None


def test_the_running_jobs_page_is_in_the_operations_menu(as_engineer):
    page = as_engineer.get(reverse("area", kwargs={"area": "operations"}))
    assert reverse("harvest:job_running").encode() in page.content


# A job's sites ----------------------------------------------------------------------------------


def test_a_job_lists_its_sites_running_first_with_their_progress(as_engineer, job):
    end(job, "alpha.fr", "failed", urls_done=3, bytes=300, errors=3, error="DNS lookup failed")
    run(job, "gamma.fr", urls_done=20, urls_queued=80, bytes=5000, rate=4.0, current_url="http://gamma.fr/x")

    response = as_engineer.get(job.get_absolute_url())
    html = response.content.decode()
    assert 'id="job-sites"' in html and 'id="job-sites-live"' in html
    rows = re.findall(r'<tr data-domain="([^"]+)" data-state="([^"]+)">', html)
    assert rows == [("gamma.fr", "running"), ("beta.fr", "queued"), ("alpha.fr", "ended")]
    # The job's bars, then one per site.
    assert bars(html, "urls") == [(23, 103), (20, 100), (0, 0), (3, 3)]
    assert bars(html, "sites") == [(1, 3)]
    text = page_text(response)
    assert "http://gamma.fr/x" in text
    assert "Failed DNS lookup failed" in text  # the stop reason's label, then the error
    assert "1 running, 1 queued, 1 ended" in text
    assert "4.0 URLs/s" in text and "3 errors" in text
    assert 'hx-trigger="every 3s"' in html


def test_the_sites_fragment_comes_alone_and_stops_polling_when_the_job_ends(as_engineer, job):
    run(job, "alpha.fr", urls_done=2, urls_queued=2)
    response = htmx_get(as_engineer, job.get_absolute_url())
    html = response.content.decode()
    assert html.strip().startswith('<div id="job-sites-live"')
    assert "<html" not in html and "crawl-log" not in html and "template-settings" not in html
    assert 'id="job-stop"' in html  # the buttons, swapped out of band
    assert 'id="job-status" hx-swap-oob="true"' in html and "Started" in html
    assert 'hx-trigger="every 3s"' in html

    for domain in DOMAINS:
        end(job, domain, urls_done=2)
    html = htmx_get(as_engineer, job.get_absolute_url()).content.decode()
    assert "hx-trigger" not in html and 'id="job-stop"' not in html and "Done" in html


def test_a_big_job_pages_its_sites_and_sums_them_all(as_engineer, job, monkeypatch):
    monkeypatch.setattr("harvest.views.jobs.SITES_PER_PAGE", 2)
    run(job, "beta.fr", urls_done=10, urls_queued=10)
    end(job, "alpha.fr", urls_done=30)
    html = as_engineer.get(job.get_absolute_url()).content.decode()
    assert re.findall(r'data-domain="([^"]+)"', html) == ["beta.fr", "gamma.fr"]
    assert bars(html, "urls")[0] == (40, 50)  # the totals count every site, not only this page
    next_link = unescape(re.search(r'class="page-link site-page-next" href="\?([^"#]+)', html)[1])
    after = parse_qs(next_link)["sites_after"][0]
    html = as_engineer.get(job.get_absolute_url(), {"sites_after": after}).content.decode()
    assert re.findall(r'data-domain="([^"]+)"', html) == ["alpha.fr"]
    assert "site-page-next" not in html and "site-page-previous" in html
    # The fragment polls the page it shows.
    fragment = htmx_get(as_engineer, job.get_absolute_url(), sites_after=after).content.decode()
    assert re.findall(r'data-domain="([^"]+)"', fragment) == ["alpha.fr"]
    assert "sites_after=" in re.search(r'hx-get="([^"]+)"', fragment)[1]


def test_the_sites_fragment_costs_the_same_queries_for_a_bigger_job(as_engineer, make_domain, selective):
    def fragment_queries(job) -> int:
        for domain in list(job.configurations.values_list("domain__name", flat=True))[:2]:
            run(job, domain, urls_done=1, urls_queued=1)
        with CaptureQueriesContext(connection) as queries:
            assert htmx_get(as_engineer, job.get_absolute_url()).status_code == 200
        return len(queries)

    small = definition_save(kind="selective", name="small", schedule=selective.schedule)
    definition_configurations_change(definition=small, add=[make_domain("one.fr").default_configuration])
    big = definition_save(kind="selective", name="big", schedule=selective.schedule)
    names = [f"site{n}.fr" for n in range(12)]
    definition_configurations_change(
        definition=big, add=[make_domain(name).default_configuration for name in names]
    )
    assert fragment_queries(launch(small)) == fragment_queries(launch(big))


def test_sites_are_filtered_by_state_and_domain(as_engineer, job):
    run(job, "beta.fr", urls_done=1)
    page = as_engineer.get(job.get_absolute_url(), {"state": "queued"}).content.decode()
    assert re.findall(r'data-domain="([^"]+)"', page) == ["alpha.fr", "gamma.fr"]
    page = as_engineer.get(job.get_absolute_url(), {"domain": "GAM"}).content.decode()
    assert re.findall(r'data-domain="([^"]+)"', page) == ["gamma.fr"]
    response = as_engineer.get(job.get_absolute_url(), {"state": "sleeping"})
    assert response.status_code == 200
    assert re.findall(r'data-domain="([^"]+)"', response.content.decode()) == []
    assert "Select a valid choice. sleeping is not one of the available choices." in page_text(response)


# Stop -------------------------------------------------------------------------------------------


def test_an_engineer_stops_a_running_job(as_engineer, job):
    running = run(job, "alpha.fr", urls_done=12, urls_queued=50, bytes=4096)
    page = as_engineer.get(job.get_absolute_url()).content.decode()
    assert 'id="job-stop"' in page and "data-confirm=" in page

    response = as_engineer.post(reverse("harvest:job_stop", args=[job.pk]), follow=True)
    assert response.redirect_chain[-1][0] == job.get_absolute_url()
    text = page_text(response)
    assert f"{job} is stopping: its queued sites ended, its running sites stop within seconds." in text
    job.refresh_from_db()
    assert job.status == JobStatus.STARTED and job.stop_requested_at is not None
    states = dict(job.configurations.values_list("domain__name", "state"))
    assert states == {"alpha.fr": "running", "beta.fr": "ended", "gamma.fr": "ended"}
    assert set(job.configurations.filter(state="ended").values_list("stop_reason", flat=True)) == {"operator"}
    assert 'id="job-stop"' not in response.content.decode() and "stopping" in text
    # The running site hears it at its next report, and ends: that ends the job.
    assert site_crawl_progress(entry_id=running.pk, job_id=job.pk, progress=progress(urls_done=13)) is True
    assert end(job, "alpha.fr", "operator", urls_done=13, urls_queued=37, bytes=5000) is True
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED and job.ended_at is not None

    html = as_engineer.get(job.get_absolute_url()).content.decode()
    reasons = re.findall(r'<td class="site-stop-reason">([^<]+)', html)
    assert reasons == ["Stopped by an operator"] * 3
    # Its badge, its bars and its explanation say it was stopped, not done; and it can be resubmitted.
    assert re.search(r'class="badge fs-6 job-status-stopped text-bg-warning">Stopped<', html)
    assert ">Done<" not in html
    assert bars(html, "urls")[0] == (13, 50)  # 13 URLs done of the 50 it had when it stopped
    assert bars(html, "sites")[0] == (3, 3)
    assert "The job was stopped by an operator on" in page_text_of(html)
    assert 'id="job-resubmit"' in html and 'id="job-stop"' not in html
    response = as_engineer.post(reverse("harvest:job_resubmit", args=[job.pk]), follow=True)
    job.refresh_from_db()
    copy = job.resubmitted_as
    assert job.status == JobStatus.RESUBMITTED and copy.status == JobStatus.SUBMITTED
    assert response.redirect_chain[-1][0] == copy.get_absolute_url()
    assert f"{job} was resubmitted as {copy}." in page_text(response)
    assert sorted(copy.configurations.values_list("domain__name", flat=True)) == sorted(DOMAINS)


def test_stopping_a_job_whose_sites_all_wait_ends_it_at_once(as_engineer, job):
    response = as_engineer.post(reverse("harvest:job_stop", args=[job.pk]), follow=True)
    assert f"{job} was stopped." in page_text(response)
    job.refresh_from_db()
    assert job.status == JobStatus.STOPPED
    assert HarvestInfo.objects.filter(job=job, stop_reason=StopReason.OPERATOR).count() == 3


def test_a_done_job_cannot_be_stopped(as_engineer, job):
    for domain in DOMAINS:
        end(job, domain)
    job.refresh_from_db()
    assert job.status == JobStatus.DONE
    assert b'id="job-stop"' not in as_engineer.get(job.get_absolute_url()).content
    response = as_engineer.post(reverse("harvest:job_stop", args=[job.pk]), follow=True)
    assert "Only a submitted or running job can be stopped; this one is done." in page_text(response)
    job.refresh_from_db()
    assert job.stop_requested_at is None


def test_a_curator_may_not_stop_a_job(as_curator, job):
    run(job, "alpha.fr")
    assert as_curator.post(reverse("harvest:job_stop", args=[job.pk])).status_code == 403
    job.refresh_from_db()
    assert job.stop_requested_at is None
    assert job.configurations.filter(state=SiteState.QUEUED).count() == 2


def test_stop_from_the_running_jobs_page_goes_back_there_and_not_elsewhere(as_engineer, attached, job):
    other = launch(attached)
    url = reverse("harvest:job_stop", args=[job.pk])
    response = as_engineer.post(url, {"next": reverse("harvest:job_running")})
    assert response["Location"] == reverse("harvest:job_running")
    response = as_engineer.post(
        reverse("harvest:job_stop", args=[other.pk]), {"next": "https://evil.example/"}
    )
    assert response["Location"] == other.get_absolute_url()


def test_a_failed_job_keeps_its_resubmit_button(as_engineer, job):
    job_transition(job=job, status=JobStatus.STARTED)
    job_transition(job=job, status=JobStatus.FAILED, error="The worker died.")
    html = as_engineer.get(job.get_absolute_url()).content.decode()
    assert 'id="job-resubmit"' in html and 'id="job-stop"' not in html


def test_an_unknown_job_is_a_404(as_engineer):
    assert as_engineer.get(reverse("harvest:job_detail", args=[999999])).status_code == 404
    assert as_engineer.post(reverse("harvest:job_stop", args=[999999])).status_code == 404


# Crawl log --------------------------------------------------------------------------------------


def write_crawl_log(job, lines):
    """Lines (status, url, site) in the job's crawl log, as a crawl process of this machine writes them."""
    with CrawlLog(crawl_log_file(job.pk)) as crawl_log:
        for status, url, site in lines:
            crawl_log.write(
                log_line(
                    when=datetime(2026, 3, 1, 12, 0, tzinfo=UTC),
                    status=status,
                    size=100,
                    url=url,
                    hop_path="L",
                    via=f"http://{site}/",
                    mime="text/html",
                    duration=0.01,
                    digest="sha256:ABC",
                    site=site,
                )
            )


def log_lines(response) -> list[str]:
    match = re.search(r'<pre[^>]*id="crawl-log-lines">(.*?)</pre>', response.content.decode(), re.S)
    return match[1].splitlines() if match else []


def test_the_crawl_log_is_searched_by_domain_and_pattern(as_curator, job):
    write_crawl_log(
        job,
        [
            (200, "http://alpha.fr/", "alpha.fr"),
            (404, "http://alpha.fr/missing.pdf", "alpha.fr"),
            (200, "http://beta.fr/doc.pdf", "beta.fr"),
        ],
    )
    url = job.get_absolute_url()
    lines = log_lines(as_curator.get(url, {"log_domain": "alpha.fr", "log_pattern": ""}))
    assert [line.split()[3] for line in lines] == ["http://alpha.fr/", "http://alpha.fr/missing.pdf"]
    lines = log_lines(as_curator.get(url, {"log_domain": "", "log_pattern": r"\.pdf "}))
    assert [line.split()[3] for line in lines] == ["http://alpha.fr/missing.pdf", "http://beta.fr/doc.pdf"]
    lines = log_lines(as_curator.get(url, {"log_domain": " Beta.FR ", "log_pattern": r"\.pdf"}))
    assert [line.split()[3] for line in lines] == ["http://beta.fr/doc.pdf"]
    response = as_curator.get(url, {"log_domain": "gamma.fr", "log_pattern": ""})
    assert log_lines(response) == [] and "No line of the crawl log matches." in page_text(response)
    # The domains of the job are offered.
    assert all(f'<option value="{domain}">' in response.content.decode() for domain in DOMAINS)


def test_a_bad_regular_expression_is_explained_not_a_crash(as_curator, job):
    write_crawl_log(job, [(200, "http://alpha.fr/", "alpha.fr")])
    response = as_curator.get(job.get_absolute_url(), {"log_domain": "", "log_pattern": "(unclosed"})
    assert response.status_code == 400  # the job page, with the search saying what is wrong
    text = page_text(response)
    assert "“(unclosed” is not a valid regular expression: missing ): (unclosed." in text
    assert log_lines(response) == []


# Ordinary crawl log lines, and a URL a backtracking engine takes hours over with these patterns.
ORDINARY_LINES = [(200, f"http://alpha.fr/section/page-{n}.html", "alpha.fr") for n in range(50)]
LONG_LINE = (404, "http://beta.fr/" + "a" * 60, "beta.fr")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"(\S+)+!", []),  # ordinary lines are enough for Python's re to take minutes
        ("(a+)+$", []),  # every line ends with "-" (no annotation)
        (r"(a+)+ L", ["http://beta.fr/" + "a" * 60]),
        (r"(.*a){25}x", []),
        (r"(.*a){25}\.fr", ["http://beta.fr/" + "a" * 60]),
    ],
)
def test_catastrophic_patterns_search_the_crawl_log_at_once(as_curator, job, pattern, expected):
    write_crawl_log(job, [*ORDINARY_LINES, LONG_LINE])
    response = as_curator.get(job.get_absolute_url(), {"log_domain": "", "log_pattern": pattern})
    assert response.status_code == 200
    assert [line.split()[3] for line in log_lines(response)] == expected


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "back-references (\\1, (?P=name)) are not supported"),
        (r"alpha(?!\.fr)", "look-ahead and look-behind ((?=…), (?!…), (?<=…), (?<!…)) are not supported"),
        (r"(?<=/)page", "look-ahead and look-behind"),
        (r"(?>a+)+!", "atomic groups and possessive quantifiers"),
        ("x" * 1001, "The regular expression is too long: 1001 characters, at most 1000."),
    ],
)
def test_patterns_re2_cannot_run_are_refused_with_the_reason(as_curator, job, pattern, reason):
    write_crawl_log(job, [*ORDINARY_LINES, LONG_LINE])
    response = as_curator.get(job.get_absolute_url(), {"log_domain": "", "log_pattern": pattern})
    assert response.status_code == 400
    assert log_lines(response) == []
    error = re.search(r'id="crawl-log-error">(.*?)</div>', response.content.decode(), re.S)
    assert error and reason in html.unescape(error[1]), error


def test_a_job_without_a_crawl_log_says_so(as_curator, job):
    response = as_curator.get(job.get_absolute_url(), {"log_domain": "alpha.fr"})
    assert response.status_code == 200
    assert "No crawl log yet" in page_text(response)


def test_a_search_shows_at_most_500_lines(as_curator, job):
    write_crawl_log(job, [(200, f"http://alpha.fr/{n}", "alpha.fr") for n in range(620)])
    response = as_curator.get(job.get_absolute_url(), {"log_pattern": "alpha"})
    lines = log_lines(response)
    assert len(lines) == 500 and lines[0].split()[3] == "http://alpha.fr/0"
    assert "The first 500 matching lines:" in page_text(response)


# WARC files, external links ---------------------------------------------------------------------


def test_the_job_lists_its_warc_files_and_external_links(as_curator, job):
    end(job, "alpha.fr", links={"http://other.org/": 3, "http://else.net/a": 9})
    end(job, "beta.fr", links={"http://other.org/": 5})
    warc_file_register(
        info=SimpleNamespace(
            name="webarchive-recovered.warc.gz",
            path="/data/webarchive-recovered.warc.gz",
            size=2048,
            sha256="ab" * 32,
            records=7,
            created_at=datetime(2026, 3, 1, tzinfo=UTC),
            closed_at=datetime(2026, 3, 1, 1, tzinfo=UTC),
            recovered=True,
        ),
        job_id=job.pk,
    )
    assert end(job, "gamma.fr") is True  # the last site: the job's metadata WARC is written

    response = as_curator.get(job.get_absolute_url())
    html = response.content.decode()
    [metadata] = WarcFile.objects.filter(job=job, recovered=False)
    data = Path(metadata.path).read_bytes()
    assert metadata.size == len(data) and metadata.sha256 == hashlib.sha256(data).hexdigest()
    assert f'data-warc="{metadata.name}"' in html and metadata.sha256 in html
    assert 'data-warc="webarchive-recovered.warc.gz"' in html and "warc-recovered" in html
    assert "2 WARC files" in page_text(response)

    table = html[html.index('id="external-link-table"') :]
    rows = re.findall(r"<tr><td[^>]*>([^<]+)</td><td>([^<]+)</td><td[^>]*>(\d+)</td></tr>", table)
    assert rows == [
        ("http://else.net/a", "alpha.fr", "9"),
        ("http://other.org/", "beta.fr", "5"),
        ("http://other.org/", "alpha.fr", "3"),
    ]


# A domain's harvest history ---------------------------------------------------------------------


def test_the_domain_page_shows_its_harvests_across_jobs(as_curator, attached, job, make_domain):
    end(job, "alpha.fr", "object-limit", urls_done=100, bytes=2_000_000)
    later = launch(attached)
    end(later, "alpha.fr", "completed", urls_done=42, bytes=4096)
    domain = entry_of(job, "alpha.fr").domain

    response = as_curator.get(domain.get_absolute_url())
    html = response.content.decode()
    rows = re.findall(r'<tr data-job="(\d+)">', html[html.index('id="harvest-history"') :])
    assert rows == [str(later.pk), str(job.pk)]  # the most recent first
    text = page_text(response)
    assert "2 harvests of this domain" in text
    assert f"{later} selective-test, run #{later.run_number} defaultconfig 42 4.0 KB Completed" in text
    assert "100 1.9 MB Configuration object limit reached" in text
    assert later.get_absolute_url() in html

    never = make_domain("never.fr")
    assert "Not harvested yet." in page_text(as_curator.get(never.get_absolute_url()))
