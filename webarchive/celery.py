"""The Celery application shared by the worker, beat and the web process."""

import os

from celery import Celery
from kombu import Queue

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webarchive.settings")

app = Celery("webarchive")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Selective crawls go before broad ones: each has its own queue, so workers
# can be dedicated to a channel (``celery worker -Q crawl-high``).
# Each queue has its own routing key: with the default one they would all share the key
# "default", and the direct exchange would copy every task into all three.
app.conf.task_queues = [Queue(name, routing_key=name) for name in ("default", "crawl-high", "crawl-low")]
app.autodiscover_tasks()
