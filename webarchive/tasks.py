"""Sending Celery tasks: always once the database work that asked for them is committed.

A worker that starts on a task before the transaction that asked for it has committed finds the
rows it was given missing or stale (a job not yet submitted, a run not yet created), and a
transaction rolled back must send nothing. Every service and view therefore sends its tasks with
:func:`enqueue`, never with ``.delay()`` or ``.apply_async()`` directly.
"""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.db import transaction


def enqueue(task, *args, queue: str | None = None, **kwargs) -> None:
    """Send ``task(*args, **kwargs)`` once the current transaction commits (at once outside one;
    never if it rolls back), on ``queue`` when given, else on the task's own queue.

    ``task`` is a task or its registered name (``"harvest.crawl_site"``): services name the tasks
    they send, so that they do not import their app's ``tasks`` module, which imports them.
    Arguments are ids and plain JSON values: a task re-reads what it needs.
    """

    def send():
        target = current_app.tasks[task] if isinstance(task, str) else task
        if queue is None:
            target.delay(*args, **kwargs)
        else:
            target.apply_async(args, kwargs, queue=queue)

    transaction.on_commit(send)


def spool_queue(machine: str | None = None) -> str:
    """The queue of the workers of a machine (this one by default; every worker serves its own:
    webarchive.celery): the tasks that read its disk, which only that machine sees (the ingest chain of
    the WARC files its crawls wrote, the full text of their pages)."""
    return f"spool.{machine or settings.MACHINE_NAME}"
