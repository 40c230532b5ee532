# ruff: noqa: S311 (random choices of a load pattern, not secrets)
"""The people of the load test (benchmarks/load.py): librarians, curators, crawl engineers and managers.

Run by ``load.py`` (``locust --headless -f benchmarks/locustfile.py``), which starts the server, writes
the fixture (ids of records, domains, jobs… drawn from the database: ``LOAD_FIXTURE``) and says how
many people of each role to simulate (``LOAD_MIX``: librarians, curators, engineers, managers). Each
simulated person logs in through the login page with an account of their own (``load-<role>-NN``,
made by benchmarks/volume.py or load.py) and then does what that role does, with think times of a few
seconds. Requests are named by page, so that the report has one line a page; htmx polls send
``HX-Request: true`` as the browser does, every 3 s where the page polls every 3 s.

A CSV download counts as failed unless complete: the records' export must hold as many rows as its
``X-Record-Count`` header says, a statistics CSV must end with a whole line. Traffic goes to the host
load.py gives, which must be 127.0.0.1.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import random
import re
from urllib.parse import urlsplit

from locust import HttpUser, between, events, task

FIXTURE = json.loads(open(os.environ["LOAD_FIXTURE"]).read()) if os.environ.get("LOAD_FIXTURE") else {}  # noqa: SIM115
PASSWORD = os.environ.get("LOAD_PASSWORD", "")
MIX = [int(count) for count in os.environ.get("LOAD_MIX", "24,12,8,6").split(",")]
POLL_SECONDS = 3
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
HTMX = {"HX-Request": "true"}
_numbers = {role: itertools.count(1) for role in ("librarian", "curator", "engineer", "manager")}


@events.test_start.add_listener
def _only_loopback(environment, **kwargs):
    """Refuse to send anything anywhere but 127.0.0.1."""
    if urlsplit(environment.host or "").hostname != "127.0.0.1":
        raise SystemExit(f"The load test only runs against 127.0.0.1, not {environment.host!r}.")


def pick(name: str):
    return random.choice(FIXTURE[name])


class Person(HttpUser):
    """Someone who logs in through the login page, then works."""

    abstract = True
    role = ""

    def on_start(self):
        if urlsplit(self.host).hostname != "127.0.0.1":
            raise SystemExit("load test traffic goes to 127.0.0.1 only")
        self.username = f"load-{self.role}-{next(_numbers[self.role]):02}"
        page = self.client.get("/login/", name="login page")
        token = CSRF.search(page.text)
        with self.client.post(
            "/login/",
            data={
                "username": self.username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": token.group(1) if token else "",
                "next": "/",
            },
            name="login (POST)",
            catch_response=True,
        ) as response:
            if "/login/" in response.url:
                response.failure(f"{self.username} could not log in")

    def get(self, url: str, name: str, **kwargs):
        return self.client.get(url, name=name, **kwargs)

    def poll(self, url: str, name: str, times: int) -> None:
        """The page's htmx poll, as a browser left open on it sends it."""
        for _ in range(times):
            self.wait_seconds(POLL_SECONDS)
            self.get(url, name, headers=HTMX)

    def wait_seconds(self, seconds: float) -> None:
        import gevent

        gevent.sleep(seconds)

    def csv_download(self, url: str, name: str, *, count_header: str | None = None) -> None:
        """Download a CSV to its end; a failure unless it is complete."""
        with self.client.get(url, name=name, stream=True, catch_response=True) as response:
            try:
                body = b"".join(response.iter_content(65536))
            except Exception as error:
                response.failure(f"truncated: {error}")
                return
            if response.status_code != 200:
                response.failure(f"status {response.status_code}")
                return
            text = body.decode("utf-8-sig", errors="replace")
            if count_header:
                rows = sum(1 for _row in csv.reader(io.StringIO(text))) - 1
                expected = response.headers.get(count_header)
                if expected is None or int(expected) != rows:
                    response.failure(f"truncated: {rows} rows, {count_header} {expected}")
                    return
            elif not text.endswith("\n"):
                response.failure("truncated: the file does not end with a whole line")
                return
            response.success()


class Librarian(Person):
    """Lists, searches and filters records, opens them, sometimes proposes one, rarely exports."""

    role = "librarian"
    fixed_count = MIX[0]
    wait_time = between(3, 8)

    @task(6)
    def records_list(self):
        self.get(f"/selection/records/?page={random.randint(1, FIXTURE['record_pages'])}", "records: list")

    @task(6)
    def records_search(self):
        self.get(f"/selection/records/?q={pick('words')}", "records: search")

    @task(5)
    def records_filter(self):
        query = random.choice(
            [
                f"collection={pick('collections')}&status=proposed",
                f"collection={pick('collections')}&keyword={pick('keywords')}",
                f"status=validated&budget=small&frequency=weekly&theme={pick('themes')}",
                "responsible=me&ordering=-modified_at",
                f"created_after=2024-01-01&collection={pick('collections')}",
            ]
        )
        self.get(f"/selection/records/?{query}", "records: filter")

    @task(8)
    def record_page(self):
        self.get(f"/selection/records/{pick('records')}/", "record page")

    @task(1)
    def propose(self):
        # The form, then its first stage (the URL checked online): a loopback address, which the server
        # refuses to fetch, so that nothing leaves the machine.
        self.get("/selection/records/propose/", "propose: form")
        page = self.get(f"/selection/records/propose/?collection={pick('own_collections')}", "propose: form")
        token = CSRF.search(page.text)
        self.client.post(
            "/selection/records/propose/",
            data={
                "csrfmiddlewaretoken": token.group(1) if token else "",
                "entry-collection": pick("own_collections"),
                "entry-url": f"http://127.0.0.1:9/load-test/{random.randint(1, 10**9)}",
            },
            name="propose: URL check (POST)",
        )

    @task(1)
    def export(self):
        if random.random() < 0.2:
            self.csv_download(
                f"/selection/records/export/?collection={pick('collections')}",
                "records CSV export (a collection)",
                count_header="X-Record-Count",
            )


class Curator(Person):
    """The validation queue, record pages, domain search and pages, harvest definitions."""

    role = "curator"
    fixed_count = MIX[1]
    wait_time = between(3, 8)

    @task(5)
    def validation_queue(self):
        self.get(f"/selection/validation/?collection={pick('collections')}", "validation queue")

    @task(2)
    def validation_queue_all(self):
        self.get("/selection/validation/", "validation queue")

    @task(4)
    def record_page(self):
        self.get(f"/selection/records/{pick('records')}/", "record page")

    @task(3)
    def domain_search_prefix(self):
        self.get(
            f"/harvest/domains/?q={random.choice(['exam*', pick('domain_prefixes')])}",
            "domains: search prefix*",
        )

    @task(3)
    def domain_search_exact(self):
        self.get(f"/harvest/domains/?q={pick('domain_names')}", "domains: search exact name")

    @task(4)
    def domain_page(self):
        self.get(f"/harvest/domains/{pick('domains')}/", "domain page")

    @task(2)
    def definitions(self):
        self.get("/harvest/definitions/", "harvest definitions")
        self.get(f"/harvest/definitions/{pick('definitions')}/", "harvest definition page")


class Engineer(Person):
    """Running jobs and monitoring with their polls, job pages with thousands of sites, the crawl log."""

    role = "engineer"
    fixed_count = MIX[2]
    wait_time = between(2, 5)

    @task(4)
    def running_jobs(self):
        self.get("/harvest/jobs/running/", "running jobs")
        self.poll("/harvest/jobs/running/", "running jobs (htmx poll)", random.randint(3, 10))

    @task(2)
    def monitoring(self):
        self.get("/harvest/monitoring/", "monitoring")
        self.poll("/harvest/monitoring/", "monitoring (htmx poll)", random.randint(1, 4))

    @task(3)
    def running_job(self):
        job = pick("running_jobs")
        self.get(f"/harvest/jobs/{job}/", "job page (running, thousands of sites)")
        self.poll(f"/harvest/jobs/{job}/", "job page sites (htmx poll)", random.randint(2, 6))
        self.get(f"/harvest/jobs/{job}/?state=running", "job page sites (htmx poll)", headers=HTMX)

    @task(2)
    def ended_job(self):
        job = pick("large_jobs")
        self.get(f"/harvest/jobs/{job}/", "job page (ended, thousands of sites)")
        self.get(
            f"/harvest/jobs/{job}/?sites_page={random.randint(2, 40)}",
            "job page: sites, page n",
            headers=HTMX,
        )

    @task(1)
    def crawl_log(self):
        job, domain = pick("log_searches")
        self.get(
            f"/harvest/jobs/{job}/?log_domain={domain}&log_pattern=text/html", "job page: crawl log search"
        )

    @task(1)
    def job_list(self):
        self.get("/harvest/jobs/", "jobs: list")


class Manager(Person):
    """The reports dashboard, statistics tables, a statistics CSV, the records' CSV export."""

    role = "manager"
    fixed_count = MIX[3]
    wait_time = between(3, 8)

    @task(4)
    def dashboard(self):
        self.get("/reports/dashboard/", "reports dashboard")

    @task(2)
    def dashboard_year(self):
        self.get(f"/reports/dashboard/?year={pick('years')}", "reports dashboard")

    @task(5)
    def statistics_table(self):
        self.get(f"/reports/statistics/?table={pick('tables')}&year={pick('years')}", "statistics table")

    @task(2)
    def statistics_filtered(self):
        self.get(
            f"/reports/statistics/?table={pick('tables')}&harvest_definition={pick('definitions')}",
            "statistics table",
        )

    @task(2)
    def statistics_csv(self):
        self.csv_download(
            f"/reports/statistics/?table={pick('tables')}&year={pick('years')}&export=csv", "statistics CSV"
        )

    @task(1)
    def records_export(self):
        self.csv_download(
            "/selection/records/export/", "records CSV export (all)", count_header="X-Record-Count"
        )
