"""``manage.py replay [--host H] [--port P] [--config-dir DIR] [--print-config]``: the replay process."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from storage.replay import (
    profile_collection,
    pywb_installed,
    replay_config,
    replay_config_write,
    replay_config_yaml,
    wayback_command,
)
from storage.services.replay import replay_account_ensure

# A collection is one segment of pywb's URLs (/<collection>/<timestamp>/<url>).
COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def default_port() -> int:
    """REPLAY_PORT, else the port of REPLAY_URL, else 8080 (REPLAY_URL may be a proxy's, on 80 or 443)."""
    if settings.REPLAY_PORT is not None:
        return settings.REPLAY_PORT
    try:
        return urlsplit(settings.REPLAY_URL).port or 8080
    except ValueError as error:
        raise CommandError(f"REPLAY_URL {settings.REPLAY_URL!r}: {error}") from error


class Command(BaseCommand):
    help = (
        "Write pywb's configuration from the settings (one collection per kind of viewer, "
        "REPLAY_COLLECTION-public, -reader, -reader-room, -staff, each read through this application's "
        "CDX API narrowed to that viewer and its WARC endpoint at WEBARCHIVE_URL with the replay "
        "account's token; framed replay with the web archive's banner; no live web, no recording, no "
        "proxy) and the replay gate's into --config-dir, then become pywb behind the gate, which lets "
        "in only browsers holding the application's ticket. pywb runs in its own process, never inside "
        "Django or Celery. With --print-config, the directory is written and config.yaml printed, and "
        "pywb is not started (for a pywb run elsewhere: copy the directory and start "
        "`python replay_gate.py --bind H --port P` in it)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", help="Address pywb listens on (default REPLAY_HOST, 127.0.0.1).")
        parser.add_argument(
            "--port", type=int, help="Port pywb listens on (default REPLAY_PORT, else REPLAY_URL's port)."
        )
        parser.add_argument(
            "--config-dir",
            type=Path,
            metavar="DIR",
            help="Where config.yaml (mode 0600: it holds the token) and templates/ are written "
            "(default VAR_DIR/replay).",
        )
        parser.add_argument(
            "--print-config",
            action="store_true",
            help="Write the directory, print config.yaml (token included) and exit instead of starting pywb.",
        )

    def handle(self, *args, host=None, port=None, config_dir=None, print_config=False, **options):
        host = settings.REPLAY_HOST if host is None else host
        port = default_port() if port is None else port
        if not host or any(character.isspace() for character in host):
            raise CommandError(f"--host {host!r}: give an address such as 127.0.0.1.")
        if not 1 <= port <= 65535:
            raise CommandError(f"--port {port}: a port is between 1 and 65535.")
        if not COLLECTION_NAME.fullmatch(settings.REPLAY_COLLECTION):
            raise CommandError(
                f"REPLAY_COLLECTION {settings.REPLAY_COLLECTION!r}: letters, digits, '-' and '_' only "
                "(it is a segment of the replay URLs)."
            )
        directory = (config_dir or settings.VAR_DIR / "replay").absolute()
        if directory.exists() and not directory.is_dir():
            raise CommandError(f"--config-dir {directory}: not a directory.")

        token = replay_account_ensure()
        try:
            config = replay_config(token=token)
        except ValueError as error:
            raise CommandError(str(error)) from error
        try:
            path = replay_config_write(directory=directory, config=config)
        except OSError as error:
            raise CommandError(f"--config-dir {directory}: {error}") from error

        if print_config:
            # Only the YAML on the standard output, so that it can be redirected into a file.
            self.stdout.write(replay_config_yaml(config), ending="")
            self.stderr.write(f"Written to {path}, with the banner's templates in {directory / 'templates'}.")
            return

        wayback = wayback_command(directory=directory, host=host, port=port)
        if not pywb_installed():
            raise CommandError("pywb is not installed next to this Python: pip install -r requirements.txt")
        # The addresses without the token: this line ends up in logs.
        self.stdout.write(
            f"Replay (pywb behind the replay gate) on http://{host}:{port}/ "
            f"({profile_collection('public')}, …), public address {settings.REPLAY_URL}, reading the "
            f"archive from {settings.WEBARCHIVE_URL} (config {path})"
        )
        self.stdout.flush()
        # pywb replaces this process: it is never imported into Django (its gevent monkey-patching).
        os.chdir(wayback.cwd)
        os.execve(wayback.argv[0], wayback.argv, wayback.env)  # noqa: S606  (our own argv, no shell)
