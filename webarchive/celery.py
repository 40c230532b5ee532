"""The Celery application shared by the worker, beat and the web process."""

import os
import threading

from celery import Celery
from celery.signals import celeryd_after_setup, task_postrun, task_prerun
from django.db import connections
from kombu import Queue

from harvest import consumer as site_crawls

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webarchive.settings")

app = Celery("webarchive")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Selective crawls go before broad ones: each has its own queue, so workers
# can be dedicated to a channel (``celery worker -Q crawl-high``).
# Each queue has its own routing key: with the default one they would all share the key
# "default", and the direct exchange would copy every task into all three.
app.conf.task_queues = [Queue(name, routing_key=name) for name in ("default", "crawl-high", "crawl-low")]
app.autodiscover_tasks()
# A worker consuming the crawl queues holds its site crawls in a consumer step, thousands at once,
# instead of a pool thread each (harvest.consumer).
site_crawls.install(app)


@celeryd_after_setup.connect(dispatch_uid="webarchive.spool_queue")
def consume_spool_queue(sender=None, instance=None, **kwargs) -> None:
    """Every worker also serves its machine's queue (webarchive.tasks.spool_queue): the tasks that read
    what only this machine's disk holds (the ingest chains of the WARC files its crawls wrote, the full
    text of their pages), so that no other machine needs to see that disk."""
    from webarchive.tasks import spool_queue

    instance.app.amqp.queues.select_add(spool_queue())


# Database connections in the workers, as Django handles them around a request (CONN_MAX_AGE and
# CONN_HEALTH_CHECKS of the settings), below. Celery's Django fix-up closes every connection before
# and after every task (since Celery 5.6, celery#9824: its use of CONN_MAX_AGE was reverted because
# thread-pool workers piled up connections), unless CELERY_DB_REUSE_MAX: then it closes them every
# that many tasks, in whichever thread crosses the count. Set out of reach, so that the handlers
# below alone decide; the fix-up still closes what a forked child inherits from its parent.
app.conf.CELERY_DB_REUSE_MAX = 2**62


def _is_eager(task) -> bool:
    """Run by task.apply() in the caller's thread: the caller's connection, the caller's business."""
    return task is not None and bool(getattr(task.request, "is_eager", False))


@task_prerun.connect(dispatch_uid="webarchive.connections_before_task")
def connections_before_task(sender=None, **kwargs) -> None:
    """Before a task, as at the start of a request: close the connections that are too old or broken;
    those kept are checked again before their first use (CONN_HEALTH_CHECKS), so that a connection the
    server dropped meanwhile is replaced instead of failing the task."""
    if _is_eager(sender):
        return
    for connection in connections.all(initialized_only=True):
        connection.close_if_unusable_or_obsolete()


@task_postrun.connect(dispatch_uid="webarchive.connections_after_task")
def connections_after_task(sender=None, **kwargs) -> None:
    """After a task: a prefork child or a solo worker runs its tasks in its main thread and keeps its
    connection for the next (one per process); a thread-pool worker (``--pool threads``) closes the
    thread's connections.

    A thread pool has up to --concurrency threads, each with a connection of its own that would stay
    open, idle, between tasks (what made Celery give up CONN_MAX_AGE): as many backends per worker as
    its --concurrency while nothing runs. Closed here, a thread-pool worker holds one connection per
    running task; a new connection is milliseconds, against tasks of seconds to hours.
    """
    if _is_eager(sender):
        return
    keep = threading.current_thread() is threading.main_thread()
    for connection in connections.all(initialized_only=True):
        if keep:
            connection.close_if_unusable_or_obsolete()
        else:
            connection.close()
