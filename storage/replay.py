"""The replay process (pywb, its own process): where it shows a capture, and its configuration.

pywb monkey-patches the standard library with gevent when it starts, so it is
never imported here, nor anywhere in Django or Celery: this module only writes
pywb's ``config.yaml`` (and the replay gate's ``gate.json``) from our settings
and says how to start pywb behind the gate (``manage.py replay`` does both).
pywb reads the archive through this application: its collections' index is our
CDX API (``/cdx``, as pywb's remote "cdx" index source) and its WARC files come
from our byte-range endpoint (``/warcs/<filename>``), both with the token of the
replay service account as HTTP Basic credentials in the URL, which is how pywb's
remote index source and HTTP loader authenticate.

Who may replay what is decided here, not in pywb: pywb has one collection per
kind of viewer (storage.access profiles), whose index is the CDX API narrowed
to that viewer (``access=<profile>``), and the gate (storage/replay_gate.py)
lets a browser into a collection only with a ticket the application signed for
its address (storage.views.replay_entry). pywb's templates are overridden where
it supports it (``banner_html``, ``head_insert_html``, ``error_html``,
``not_found_html``), by small templates that extend or include its own.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import yaml
from django.conf import settings
from django.urls import NoReverseMatch, reverse

from storage.access import PROFILES
from storage.replay_ticket import ticket_key

# Our pywb template overrides, copied next to the config (pywb looks for templates in ./templates).
TEMPLATES_DIR = Path(__file__).resolve().parent / "replay_templates"
BANNER_TEMPLATE = "webarchive_banner.html"
HEAD_INSERT_TEMPLATE = "webarchive_head_insert.html"
ERROR_TEMPLATE = "webarchive_error.html"
NOT_FOUND_TEMPLATE = "webarchive_not_found.html"
CONFIG_NAME = "config.yaml"
GATE_CONFIG_NAME = "gate.json"
GATE_SCRIPT = Path(__file__).resolve().parent / "replay_gate.py"
TICKET_SCRIPT = Path(__file__).resolve().parent / "replay_ticket.py"
# Profiles that may have the bytes as archived (pywb's id_ mode): those who may download WARC files.
RAW_PROFILES = ("staff",)
REPLAY_ACCOUNT = "replay"
# What pywb asks the CDX API (it adds limit and matchType when it needs them).
CDX_QUERY = "?url={url}&closest={closest}&sort=closest"


def replay_url(url: str, timestamp14: str) -> str:
    """Where to replay ``url`` as captured at ``timestamp14``: the application's replay entry, which
    checks the access rules and sends the browser on to pywb with a ticket (storage.views.replay_entry)."""
    return reverse("storage:replay_entry", kwargs={"stamp": timestamp14, "url": url})


def profile_collection(profile: str) -> str:
    """pywb's collection for one kind of viewer: ``archive-public``, ``archive-reader``…"""
    return f"{settings.REPLAY_COLLECTION}-{profile}"


def pywb_url(profile: str, stamp: str, url: str) -> str:
    """The path in pywb of ``url`` at ``stamp`` (a timestamp, perhaps with a modifier) for a profile."""
    return f"/{profile_collection(profile)}/{stamp}/{url}"


def gate_ticket_key() -> str:
    """The key replay tickets are signed with (derived from SECRET_KEY)."""
    return ticket_key(settings.SECRET_KEY)


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
            profile_collection(profile): {
                # pywb's remote CDX source written out rather than as "cdx+URL": from that short form
                # pywb derives a "load_url" (the CDX URL's directory + "{timestamp}id_/{url}",
                # credentials included) that it adds to every capture of its own /cdx answers, where
                # any reader would see the token, and fetches as a live-web fallback when a WARC
                # record cannot be read. The query is the one the short form sends, narrowed to the
                # captures this kind of viewer may read.
                "index": {
                    "type": "cdx",
                    "api_url": _with_credentials(cdx_url, token) + CDX_QUERY + f"&access={profile}",
                    "replay_url": "",
                },
                "archive_paths": _with_credentials(warcs_url, token),
            }
            for profile in PROFILES
        },
        # Only the collection above: no collections found on disk, no live web, no recording, no
        # proxy mode (none of the "live", "recorder" or "proxy" keys, and `wayback` is started without
        # --live, --record or --proxy).
        "enable_auto_colls": False,
        "framed_replay": True,
        "enable_memento": True,
        "banner_html": BANNER_TEMPLATE,
        "head_insert_html": HEAD_INSERT_TEMPLATE,
        "error_html": ERROR_TEMPLATE,
        "not_found_html": NOT_FOUND_TEMPLATE,
        "ui": ui,
    }


def gate_config() -> dict:
    """The replay gate's configuration (gate.json): the ticket key, the collections and where to send
    a browser without a ticket."""
    return {
        "key": gate_ticket_key(),
        "collection": settings.REPLAY_COLLECTION,
        "collections": {profile: profile_collection(profile) for profile in PROFILES},
        "raw_profiles": [profile for profile in RAW_PROFILES if profile in PROFILES],
        "entry_url": _application_url("storage:replay_entry", stamp="0", url="u").removesuffix("0/u"),
        "home_url": _application_url("area", area="access"),
        "client_address_header": settings.ACCESS_CLIENT_ADDRESS_HEADER,
        "secure_cookie": urlsplit(settings.REPLAY_URL).scheme == "https",
        # Where the gate reports the URLs pywb did not find (storage.views.replay_misses).
        "misses_url": _application_url("replay_misses"),
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
    gate = directory / GATE_CONFIG_NAME
    descriptor = os.open(gate, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(gate_config(), out, indent=2)
    templates = directory / "templates"
    templates.mkdir(exist_ok=True)
    for template in TEMPLATES_DIR.glob("*.html"):
        shutil.copyfile(template, templates / template.name)
    # The gate and the ticket check beside the configuration: a pywb run elsewhere needs nothing else.
    for script in (GATE_SCRIPT, TICKET_SCRIPT):
        shutil.copyfile(script, directory / script.name)
    return path


@dataclass(frozen=True)
class WaybackCommand:
    """How to start pywb behind the gate on a written configuration: argv, working directory, environment."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]


def pywb_installed() -> bool:
    """Whether pywb is installed next to this Python (its ``wayback`` script is there)."""
    return (Path(sys.executable).parent / "wayback").exists()


def wayback_command(*, directory: Path, host: str, port: int) -> WaybackCommand:
    """pywb's app behind the replay gate (the copy of replay_gate.py in ``directory``), run with this
    Python in ``directory``, where it reads ./config.yaml and ./gate.json."""
    # Our PYTHONPATH (the project) must not leak into pywb's interpreter, and PYWB_CONFIG_FILE would
    # make pywb read another configuration than the one just written.
    env = {key: value for key, value in os.environ.items() if key != "PYWB_CONFIG_FILE"}
    env["PYTHONPATH"] = ""
    argv = [sys.executable, str(directory / GATE_SCRIPT.name), "--bind", host, "--port", str(port)]
    return WaybackCommand(argv=argv, cwd=directory, env=env)
