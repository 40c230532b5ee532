"""The web archive project: settings, Celery app, roles, login and the shared views.

Importing this package loads nothing: the crawler uses its plain-Python modules (``netguard``,
``urlnorm``) without Django or Celery. The Celery app (``webarchive.celery``) is loaded when Django
starts (``WebArchiveConfig.ready``) and by ``celery -A webarchive``.
"""
