"""Missed in replay, in a real browser through the real pywb process: a captured page whose image and
script were not captured is browsed; the replay gate reports both misses to the application, which
records them against the job whose capture was browsed; a curator adds them from the job's quality page
and the next run of the definition gets them as seeds.
"""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from harvest.models import Job, NextRunAddition
from harvest.services.launcher import launch_due
from harvest.services.planning import definition_configurations_change, definition_run_now
from storage.models import ReplayMiss
from tests.browser.test_navigation import log_in
from tests.factories import PASSWORD, UserFactory
from tests.harvest.sitecrawls import launch
from tests.pywb_server import pywb_replay  # noqa: F401  (the fixture)
from tests.storage.test_replay_misses import PAGE, capture_page
from webarchive.permissions import Role

pytestmark = pytest.mark.browser

REPLAY_TIMEOUT_MS = 30_000
STAMP = "20260301120000"
MISSED = {"http://www.alpha.fr/logo.png": "image", "http://www.alpha.fr/app.js": "script"}


def wait_for_misses(count: int, seconds: float = 30) -> list[ReplayMiss]:
    """The misses once the gate's reports (sent after pywb's answers) have arrived."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = list(ReplayMiss.objects.order_by("url"))
        if len(rows) >= count:
            return rows
        time.sleep(0.2)
    pytest.fail(f"{count} misses expected, {ReplayMiss.objects.count()} recorded")


@pytest.fixture
def planning_defaults(transactional_db):
    """The default channels and templates (harvest migration 0002): an earlier transactional test of the
    run may have flushed them."""
    from django.apps import apps

    from harvest.defaults import planning_defaults_ensure

    planning_defaults_ensure(apps)


def test_a_miss_browsed_in_pywb_becomes_a_seed_of_the_next_run(
    page,
    live_server,
    pywb_replay,  # noqa: F811  (the fixture imported above)
    planning_defaults,
    make_domain,
    selective,
):
    definition_configurations_change(
        definition=selective, add=[make_domain("alpha.fr").default_configuration]
    )
    job = launch(selective)
    capture_page(
        job,
        PAGE,
        STAMP,
        body=b'<html><body><h1>News</h1><img src="/logo.png" alt="Logo">'
        b'<script src="/app.js"></script></body></html>',
    )

    page.set_default_timeout(REPLAY_TIMEOUT_MS)
    pywb_replay.admit(page.context)
    page.goto(pywb_replay.capture_url(PAGE, STAMP))
    frame = page.locator("#replay_iframe").element_handle().content_frame()
    frame.wait_for_load_state("load")
    assert frame.locator("h1").text_content() == "News"

    misses = wait_for_misses(len(MISSED))
    assert {miss.url: miss.kind for miss in misses} == MISSED
    for miss in misses:
        assert (miss.page_url, miss.page_stamp, miss.job_id) == (PAGE, STAMP, job.pk)

    # A curator ticks the image on the job's quality page and adds it to the next run.
    curator = UserFactory(roles=[Role.CURATOR])
    page.goto(live_server.url + reverse("login"))
    log_in(page, curator.username, PASSWORD)
    page.goto(live_server.url + reverse("quality:job_quality", kwargs={"pk": job.pk}))
    image = ReplayMiss.objects.get(url="http://www.alpha.fr/logo.png")
    page.locator(f"#miss-{image.pk}").check()
    with page.expect_navigation():
        page.locator("#misses-add-selected").click()
    assert "will be extra seeds of the next run" in page.locator("body").text_content()
    (addition,) = NextRunAddition.objects.all()
    assert (addition.url, addition.added_by, addition.consumed_by) == (image.url, curator, None)

    definition_run_now(definition=selective)
    (run,) = launch_due()
    next_job = Job.objects.get(run=run)
    assert image.url in next_job.configurations.get().seed_urls
    assert "http://www.alpha.fr/app.js" not in next_job.configurations.get().seed_urls
    addition.refresh_from_db()
    assert addition.consumed_by == run
