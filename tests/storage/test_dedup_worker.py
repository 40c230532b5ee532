"""A deduplication run on a real Celery worker and broker: units as tasks, stages moved on by the
unit that completes them, the output registered at the end (PostgreSQL and RabbitMQ)."""

from __future__ import annotations

import pytest

from storage.models import Capture, DedupRun, WarcFile
from storage.services.dedup_runs import dedup_run_start
from storage.services.indexing import warc_file_index
from tests.crawl_worker import wait_for
from tests.factories import UserFactory
from tests.storage.dedup_files import duplicate_warcs
from webarchive.permissions import Role


def state(run: DedupRun) -> str:
    return DedupRun.objects.values_list("state", flat=True).get(pk=run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_run_goes_through_its_stages_on_the_worker_and_is_registered(crawl_worker, settings):
    root = settings.HARVEST_WARC_DIR
    inputs = duplicate_warcs(root / "in")
    sources = [warc_file_index(path=path).warc_file for path in inputs]
    crawl_worker.start()
    run = dedup_run_start(
        inputs=[str(root / "in")], out_dir=str(root / "out"), user=UserFactory(roles=[Role.ENGINEER])
    )
    ended = wait_for(
        lambda: state(run) in (DedupRun.State.VALIDATED, DedupRun.State.FAILED, DedupRun.State.DONE),
        timeout=120,
        message=crawl_worker.logs(),
    )
    assert ended
    run.refresh_from_db()
    assert run.state == DedupRun.State.VALIDATED, run.error + crawl_worker.logs()
    assert run.validation["ok"] and run.summary["totals"]["duplicates"] == 2
    assert "storage.dedup_unit" in crawl_worker.logs()
    for source in sources:
        source.refresh_from_db()
        assert source.replaced_by is not None and not source.captures.exists()
    assert Capture.objects.filter(warc_file__origin=WarcFile.Origin.DEDUPLICATED).count() == 5
