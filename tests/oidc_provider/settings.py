"""A real OpenID Connect provider for the tests (django-oidc-provider), run as its own process on
127.0.0.1 by tests/oidc_server.py: what the application's single sign-on logs in against."""

import os
from pathlib import Path

FOLDER = Path(os.environ["OIDC_PROVIDER_DIR"])
SECRET_KEY = "test provider only"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.oidc_provider.urls"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(FOLDER / "provider.sqlite3")}}
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
USE_TZ = True
LOGIN_URL = "/login/"
SESSION_COOKIE_NAME = "providersession"  # not the application's, on the same host
CSRF_COOKIE_NAME = "providercsrf"
OIDC_EXTRA_SCOPE_CLAIMS = "tests.oidc_provider.claims.GroupsClaims"
OIDC_SKIP_CONSENT_EXPIRE = 1
OIDC_USERINFO = "tests.oidc_provider.claims.userinfo"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
