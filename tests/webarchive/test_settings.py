"""Configuration from the environment, checked in a fresh process as a deployment would see it."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def manage(*args, **env):
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


PRODUCTION = {
    "DEBUG": "0",
    "SECRET_KEY": "a-real-secret-of-enough-length-and-variety-0123456789-ABCDEFGHIJ",
    "ALLOWED_HOSTS": "archive.example.org",
}


@pytest.mark.smoke
def test_production_settings_pass_the_deploy_check_without_warnings(tmp_path):
    result = manage(
        "check", "--deploy", "--fail-level", "WARNING", WEBARCHIVE_VAR_DIR=str(tmp_path), **PRODUCTION
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_without_a_secret_key_production_refuses_to_start(tmp_path):
    env = {**PRODUCTION, "SECRET_KEY": "", "WEBARCHIVE_VAR_DIR": str(tmp_path)}
    result = manage("check", **env)
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in result.stderr


def test_a_secret_key_starting_with_a_dollar_is_taken_as_is(tmp_path):
    key = "$ecret-" + PRODUCTION["SECRET_KEY"]
    script = "from django.conf import settings; print(settings.SECRET_KEY)"
    result = manage(
        "shell", "-c", script, **{**PRODUCTION, "SECRET_KEY": key}, WEBARCHIVE_VAR_DIR=str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(key)


def test_without_allowed_hosts_production_refuses_to_start(tmp_path):
    env = {**PRODUCTION, "ALLOWED_HOSTS": "", "WEBARCHIVE_VAR_DIR": str(tmp_path)}
    result = manage("check", **env)
    assert result.returncode != 0
    assert "ALLOWED_HOSTS must be set when DEBUG is off." in result.stderr


def test_database_and_broker_come_from_the_environment(tmp_path):
    script = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.DATABASES['default']['NAME'], s.CELERY_BROKER_URL)"
    )
    result = manage(
        "shell",
        "-c",
        script,
        DATABASE_URL="postgres://archive@db.example.org:5432/archive",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/3",
        WEBARCHIVE_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "django.db.backends.postgresql archive redis://127.0.0.1:6379/3" in result.stdout


def test_embedded_default_is_sqlite_and_a_filesystem_broker_under_var(tmp_path):
    script = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['NAME'], s.CELERY_BROKER_URL,"
        " s.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'])"
    )
    result = manage("shell", "-c", script, WEBARCHIVE_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    database, broker, queue = result.stdout.split()[-3:]
    assert database == str(tmp_path / "webarchive.sqlite3")
    assert broker == "filesystem://"
    assert Path(queue).is_dir() and Path(queue).is_relative_to(tmp_path)


def test_postgresql_connections_run_without_jit_unless_the_url_says_otherwise(tmp_path):
    script = "from django.conf import settings as s; print(repr(s.DATABASES['default']['OPTIONS']))"
    plain = manage(
        "shell", "-c", script, DATABASE_URL="postgres://a@db:5432/archive", WEBARCHIVE_VAR_DIR=str(tmp_path)
    )
    assert plain.returncode == 0, plain.stderr
    assert "'options': '-c jit=off'" in plain.stdout
    own = manage(
        "shell",
        "-c",
        script,
        DATABASE_URL="postgres://a@db:5432/archive?options=-c%20work_mem%3D64MB",
        WEBARCHIVE_VAR_DIR=str(tmp_path),
    )
    assert own.returncode == 0, own.stderr
    assert "'options': '-c work_mem=64MB'" in own.stdout
