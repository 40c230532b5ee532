"""WSGI entry point (gunicorn webarchive.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webarchive.settings")

application = get_wsgi_application()
