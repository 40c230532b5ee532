"""The web archive project: settings, Celery app, roles, login and the shared views."""

from webarchive.celery import app as celery_app

__all__ = ["celery_app"]
