"""The replay process (pywb, its own process): where it shows a capture, and its configuration.

pywb monkey-patches the standard library with gevent when it starts, so it is
never imported here, nor anywhere in Django or Celery: this module only writes
pywb's ``config.yaml`` from our settings and says how to start pywb's own
``wayback`` server on it (``manage.py replay`` does both). pywb reads the
archive through this application: its collection's index is our CDX API
(``/cdx``, as pywb's remote "cdx" index source) and its WARC files come from our
byte-range endpoint (``/warcs/<filename>``), both with the read-only token of
the replay service account as HTTP Basic credentials in the URL, which is how
pywb's remote index source and HTTP loader authenticate. pywb's templates are
overridden where it supports it (``banner_html``, ``error_html``), by small
templates that extend or include its own (``replay_templates/``).
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import yaml
from django.conf import settings
from django.urls import NoReverseMatch, reverse

# Our pywb template overrides, copied next to the config (pywb looks for templates in ./templates).
TEMPLATES_DIR = Path(__file__).resolve().parent / "replay_templates"
BANNER_TEMPLATE = "webarchive_banner.html"
ERROR_TEMPLATE = "webarchive_error.html"
CONFIG_NAME = "config.yaml"
REPLAY_ACCOUNT = "replay"
# What pywb asks the CDX API (it adds limit and matchType when it needs them).
CDX_QUERY = "?url={url}&closest={closest}&sort=closest"


def replay_url(url: str, timestamp14: str) -> str:
    """The pywb address of ``url`` as captured at ``timestamp14`` (pywb picks the closest capture)."""
    base = settings.REPLAY_URL.rstrip("/") + "/"
    return f"{base}{settings.REPLAY_COLLECTION}/{timestamp14}/{url}"


def _application_url(name: str, **kwargs) -> str:
    """The address of a named URL of ours as seen from outside: WEBARCHIVE_URL joined with its path."""
    return settings.WEBARCHIVE_URL.rstrip("/") + "/" + reverse(name, kwargs=kwargs or None).lstrip("/")


def _search_url() -> str:
    """The Access search page (captures of a URL), or the Access area if this installation has none."""
    try:
        return _application_url("storage:search")
    except NoReverseMatch:
        return _application_url("area", area="access")


def _with_credentials(url: str, token: str) -> str:
    """``url`` with ``replay:<token>@`` in its authority: pywb sends them as HTTP Basic auth."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    netloc = f"{REPLAY_ACCOUNT}:{quote(token, safe='')}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def replay_config(*, token: str) -> dict:
    """pywb's configuration: one collection read through our CDX API and WARC endpoint, framed, banner."""
    application = urlsplit(settings.WEBARCHIVE_URL)
    if application.scheme not in ("http", "https") or not application.hostname:
        raise ValueError(
            f"WEBARCHIVE_URL {settings.WEBARCHIVE_URL!r}: the application's http(s) address is needed "
            "(e.g. http://127.0.0.1:8000/), where pywb reads the CDX API and the WARC files."
        )
    cdx_url = _application_url("cdx")
    # pywb appends the file name to archive_paths: the endpoint's URL without a file name.
    warcs_url = _application_url("warc_bytes", filename="name.warc.gz").rpartition("/")[0] + "/"
    ui = {
        # The banner's logo leads to the Access area; our banner adds the captures of the page shown.
        "logo_home_url": _application_url("area", area="access"),
        "webarchive_search_url": _search_url(),
    }
    return {
        "collections": {
            settings.REPLAY_COLLECTION: {
                # pywb's remote CDX source written out rather than as "cdx+URL": from that short form
                # pywb derives a "load_url" (the CDX URL's directory + "{timestamp}id_/{url}",
                # credentials included) that it adds to every capture of its own /cdx answers, where
                # any reader would see the token, and fetches as a live-web fallback when a WARC
                # record cannot be read. The query is the one the short form sends.
                "index": {
                    "type": "cdx",
                    "api_url": _with_credentials(cdx_url, token) + CDX_QUERY,
                    "replay_url": "",
                },
                "archive_paths": _with_credentials(warcs_url, token),
            },
        },
        # Only the collection above: no collections found on disk, no live web, no recording, no
        # proxy mode (none of the "live", "recorder" or "proxy" keys, and `wayback` is started without
        # --live, --record or --proxy).
        "enable_auto_colls": False,
        "framed_replay": True,
        "enable_memento": True,
        "banner_html": BANNER_TEMPLATE,
        "error_html": ERROR_TEMPLATE,
        "ui": ui,
    }


def replay_config_yaml(config: dict) -> str:
    """The configuration as the YAML text of pywb's config.yaml."""
    header = (
        "# pywb configuration written by `manage.py replay` from the web archive's settings; it is\n"
        "# rewritten each time the command runs. It holds the replay account's token: keep it 0600.\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False, default_flow_style=False)


def replay_config_write(*, directory: Path, config: dict) -> Path:
    """Write config.yaml (mode 0600: it holds the token) and our templates into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CONFIG_NAME
    text = replay_config_yaml(config)
    # Created 0600 before any byte is written, and a file left by an earlier run is narrowed too.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    templates = directory / "templates"
    templates.mkdir(exist_ok=True)
    for template in TEMPLATES_DIR.glob("*.html"):
        shutil.copyfile(template, templates / template.name)
    return path


@dataclass(frozen=True)
class WaybackCommand:
    """How to start pywb's ``wayback`` on a written configuration: argv, working directory, environment."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]


def wayback_command(*, directory: Path, host: str, port: int) -> WaybackCommand:
    """pywb's ``wayback`` next to this Python, run in ``directory`` (where it reads ./config.yaml)."""
    executable = Path(sys.executable).parent / "wayback"
    # Our PYTHONPATH (the project) must not leak into pywb's interpreter, and PYWB_CONFIG_FILE would
    # make pywb read another configuration than the one just written.
    env = {key: value for key, value in os.environ.items() if key != "PYWB_CONFIG_FILE"}
    env["PYTHONPATH"] = ""
    return WaybackCommand(argv=[str(executable), "--bind", host, "--port", str(port)], cwd=directory, env=env)
