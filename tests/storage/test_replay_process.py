"""``manage.py replay``: pywb's configuration from our settings, and pywb itself replaying the archive.

The command writes config.yaml (0600: it holds the replay account's token) and the banner's
templates, prints the YAML with --print-config, refuses bad options saying why, and otherwise
becomes pywb's ``wayback`` (the same process, exec'd). A real pywb on that configuration then
replays a crawl of the test website through the live server's CDX API and WARC endpoint.
"""

from __future__ import annotations

import base64
import io
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
import yaml
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.urls import reverse
from warcio.archiveiterator import ArchiveIterator

from storage.models import Capture
from storage.services.indexing import warc_file_index
from storage.services.replay import replay_account_ensure, replay_token_rotate
from tests.components import require_component
from tests.pywb_server import free_port, pywb_replay  # noqa: F401  (the fixture)

MANAGE = Path(django_settings.BASE_DIR) / "manage.py"
WAYBACK = Path(sys.executable).parent / "wayback"


def replay(*args: str) -> tuple[str, str]:
    """Run ``manage.py replay --print-config …``: (standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    call_command("replay", "--print-config", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"replay:{token}".encode()).decode()


@pytest.fixture
def config_dir(tmp_path) -> Path:
    return tmp_path / "replay"


@pytest.mark.django_db
def test_the_configuration_reads_the_archive_through_our_api_with_the_replay_token(
    config_dir, settings, client
):
    settings.WEBARCHIVE_URL = "http://archive.example:8000/"
    settings.REPLAY_COLLECTION = "legal-deposit"
    printed, said = replay("--config-dir", str(config_dir))

    config = yaml.safe_load(printed)
    assert (config_dir / "config.yaml").read_text() == printed
    assert f"Written to {config_dir / 'config.yaml'}" in said
    token = replay_account_ensure()  # the account exists: the same token again
    # One collection per kind of viewer, each reading the CDX API narrowed to that viewer.
    profiles = ["public", "reader", "reader-room", "staff"]
    assert list(config["collections"]) == [f"legal-deposit-{profile}" for profile in profiles]
    for profile in profiles:
        assert config["collections"][f"legal-deposit-{profile}"] == {
            # pywb's remote CDX source (what "cdx+URL" means to pywb, without the load_url it derives).
            "index": {
                "type": "cdx",
                "api_url": f"http://replay:{token}@archive.example:8000/cdx?url={{url}}&closest={{closest}}"
                f"&sort=closest&access={profile}",
                "replay_url": "",
            },
            "archive_paths": f"http://replay:{token}@archive.example:8000/warcs/",
        }
    # Framed replay with our banner; nothing but the archive: no live web, recording, proxy or
    # collections picked up from directories.
    assert config["framed_replay"] is True
    assert config["enable_auto_colls"] is False
    assert not {"live", "recorder", "proxy"} & (set(config) | set(config["collections"]))
    assert (config_dir / "templates" / config["banner_html"]).is_file()
    assert (config_dir / "templates" / config["error_html"]).is_file()
    assert config["ui"]["logo_home_url"] == "http://archive.example:8000/access/"

    # The token is the replay account's: our CDX API and WARC endpoint take it as pywb sends it
    # (HTTP Basic, from the credentials in those URLs), and refuse a wrong one.
    answer = client.get(reverse("cdx"), {"url": "http://127.0.0.1/"}, HTTP_AUTHORIZATION=basic(token))
    assert answer.status_code == 200
    refused = client.get(reverse("cdx"), {"url": "http://127.0.0.1/"}, HTTP_AUTHORIZATION=basic(token + "x"))
    assert refused.status_code in (401, 403)


@pytest.mark.django_db
def test_the_configuration_file_is_readable_by_its_owner_only(config_dir):
    config_dir.mkdir()
    earlier = config_dir / "config.yaml"
    earlier.write_text("left by an earlier run\n")
    earlier.chmod(0o644)
    replay("--config-dir", str(config_dir))
    assert stat.S_IMODE(earlier.stat().st_mode) == 0o600
    assert "left by an earlier run" not in earlier.read_text()


@pytest.mark.django_db
def test_the_configuration_goes_to_var_replay_by_default(settings, tmp_path):
    settings.VAR_DIR = tmp_path / "var"
    printed, _ = replay()
    assert (tmp_path / "var" / "replay" / "config.yaml").read_text() == printed


@pytest.mark.django_db
def test_the_banner_links_to_the_captures_of_the_page_in_the_application(config_dir, settings):
    settings.WEBARCHIVE_URL = "https://archive.example/"
    config = yaml.safe_load(replay("--config-dir", str(config_dir))[0])
    banner = (config_dir / "templates" / config["banner_html"]).read_text()
    # pywb's own banner (the capture date, the calendar) is kept: ours includes it and adds a link.
    assert '{% include "banner.html" %}' in banner
    assert "webarchive_search_url" in banner
    assert config["ui"]["webarchive_search_url"] == "https://archive.example" + reverse("storage:search")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--port", "0"], "--port 0: a port is between 1 and 65535."),
        (["--port", "65536"], "--port 65536: a port is between 1 and 65535."),
        (["--port", "eighty"], "argument --port: invalid int value: 'eighty'"),
        (["--host", ""], "--host '': give an address such as 127.0.0.1."),
        (["--host", "127.0.0.1 8080"], "--host '127.0.0.1 8080': give an address such as 127.0.0.1."),
        (["--listen"], "unrecognized arguments: --listen"),
    ],
)
def test_bad_options_are_refused_saying_why_and_nothing_is_written(arguments, message, config_dir):
    with pytest.raises(CommandError) as refused:
        replay("--config-dir", str(config_dir), *arguments)
    assert message in str(refused.value)
    assert not config_dir.exists()


@pytest.mark.django_db
def test_a_config_dir_that_is_a_file_is_refused(tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("a file")
    with pytest.raises(CommandError, match=f"--config-dir {taken}: not a directory."):
        replay("--config-dir", str(taken))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        (
            "REPLAY_COLLECTION",
            "my archive",
            "REPLAY_COLLECTION 'my archive': letters, digits, '-' and '_' only",
        ),
        ("REPLAY_COLLECTION", "", "REPLAY_COLLECTION '': letters, digits, '-' and '_' only"),
        (
            "WEBARCHIVE_URL",
            "ftp://archive.example/",
            "WEBARCHIVE_URL 'ftp://archive.example/': the application's",
        ),
        ("WEBARCHIVE_URL", "archive.example", "WEBARCHIVE_URL 'archive.example': the application's http(s)"),
        ("REPLAY_URL", "http://127.0.0.1:port/", "REPLAY_URL 'http://127.0.0.1:port/'"),
    ],
)
def test_bad_settings_are_refused_saying_which(setting, value, message, settings, config_dir):
    setattr(settings, setting, value)
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("replay", "--config-dir", str(config_dir), stdout=io.StringIO())
    assert not (config_dir / "config.yaml").exists()


def wait_for_answer(url: str, process: subprocess.Popen, output: Path) -> requests.Response:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"manage.py replay exited with {process.returncode}:\n{output.read_text()}")
        try:
            return requests.get(url, timeout=2)
        except requests.ConnectionError:
            time.sleep(0.2)
    pytest.fail(f"nothing answered on {url}:\n{output.read_text()}")


def test_the_command_becomes_pywb_listening_on_loopback(tmp_path):
    """The real command, in its own process on its own database: it execs pywb behind the gate."""
    require_component("pywb", WAYBACK.exists(), "pywb (requirements.txt) is the replay process")
    port = free_port()
    config_dir = tmp_path / "replay"
    environment = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'replay.sqlite3'}",
        "WEBARCHIVE_VAR_DIR": str(tmp_path / "var"),
        "REPLAY_URL": f"http://127.0.0.1:{port}/",
    }
    environment.pop("REPLAY_HOST", None)
    environment.pop("REPLAY_PORT", None)
    python = sys.executable
    subprocess.run(
        [python, MANAGE, "migrate", "--no-input"], env=environment, check=True, capture_output=True
    )
    output = tmp_path / "replay.out"
    with output.open("w") as out:
        process = subprocess.Popen(
            [python, MANAGE, "replay", "--config-dir", str(config_dir)],
            env=environment,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        home = wait_for_answer(f"http://127.0.0.1:{port}/static/wombat.js", process, output)
        assert home.status_code == 200  # pywb's static files are served
        # The same process is now pywb behind the replay gate, bound to loopback on REPLAY_URL's port,
        # in the configuration directory, without the project on its PYTHONPATH.
        argv = Path(f"/proc/{process.pid}/cmdline").read_bytes().split(b"\0")
        assert argv[1] == str(config_dir / "replay_gate.py").encode()
        assert argv[-5:-1] == [b"--bind", b"127.0.0.1", b"--port", str(port).encode()]
        assert Path(f"/proc/{process.pid}/cwd").resolve() == config_dir.resolve()
        pywb_environment = Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0")
        assert b"PYTHONPATH=" in pywb_environment

        # Without the application's ticket, a collection sends the browser to the application.
        entry = requests.get(
            f"http://127.0.0.1:{port}/archive/2024/http://example.org/", timeout=10, allow_redirects=False
        )
        assert entry.status_code == 302
        assert entry.headers["Location"] == "http://127.0.0.1:8000/access/replay/2024/http://example.org/"
        for other in ("live/http://example.org/", "collinfo.json", "archive-none/2024/http://example.org/"):
            assert requests.get(f"http://127.0.0.1:{port}/{other}", timeout=10).status_code == 404, other

        config = yaml.safe_load((config_dir / "config.yaml").read_text())
        token = urlsplit(config["collections"]["archive-staff"]["archive_paths"]).password
        assert stat.S_IMODE((config_dir / "config.yaml").stat().st_mode) == 0o600
        assert stat.S_IMODE((config_dir / "gate.json").stat().st_mode) == 0o600
        said = output.read_text()
        assert f"Replay (pywb behind the replay gate) on http://127.0.0.1:{port}/" in said
        assert token not in said
    finally:
        process.terminate()
        process.wait(30)


def archived_responses(paths: list[Path]) -> dict[str, tuple[int, bytes]]:
    """Each response record of these WARC files: URL -> (status, payload as the site sent it)."""
    found = {}
    for path in paths:
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type == "response":
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    found[url] = (int(record.http_headers.get_statuscode()), record.content_stream().read())
    return found


@pytest.fixture
def indexed_crawl(transactional_db, crawled_site, warc_paths):
    """The crawl of the test website in the capture index (the live server's database is flushed after)."""
    for path in warc_paths:
        warc_file_index(path=path)
    return crawled_site


def test_pywb_replays_every_capture_of_a_crawl_from_our_api(pywb_replay, indexed_crawl, warc_paths):  # noqa: F811
    responses = archived_responses(warc_paths)
    assert len(responses) > 30
    for url, (status, body) in responses.items():
        capture = Capture.objects.filter(url=url, record_type="response").latest("timestamp")
        answer = pywb_replay.get(
            pywb_replay.capture_url(url, capture.timestamp14, "id_"), headers={"Connection": "close"}
        )
        # id_ is the response as archived: redirects as redirects, errors as errors, the same bytes.
        assert answer.status_code == status, url
        if status == 200:
            assert answer.content == body, url
            assert answer.headers["Memento-Datetime"], url


def test_a_failure_to_read_the_archive_does_not_show_the_token(pywb_replay, tmp_path, warc_paths):  # noqa: F811
    copy = Path(shutil.copy2(warc_paths[0], tmp_path / warc_paths[0].name.replace(".warc", "-moved.warc")))
    indexed = warc_file_index(path=copy)
    copy.unlink()  # the index still names the file; /warcs/ can no longer serve it
    capture = indexed.warc_file.captures.filter(record_type="response").first()
    token = replay_account_ensure()

    answer = pywb_replay.get(pywb_replay.capture_url(capture.url, capture.timestamp14, "id_"))
    # pywb's stock error page lists the collection's configuration, token included ("Error Details"):
    # ours (webarchive_error.html) leaves them out.
    assert answer.status_code == 503
    assert token not in answer.text
    # pywb's own CDX API (its calendar reads it) answers from ours: the captures, and its errors.
    cdx = f"{pywb_replay.url}{pywb_replay.collection}-staff/cdx"
    calendar = pywb_replay.get(cdx, params={"url": capture.url, "output": "json"})
    assert calendar.status_code == 200
    assert capture.timestamp14 in calendar.text
    assert token not in calendar.text

    # A token that no longer works (rotated): our API refuses pywb, whose answers must not quote it.
    replay_token_rotate()
    refused = pywb_replay.get(cdx, params={"url": capture.url, "output": "json"})
    assert token not in refused.text
    page = pywb_replay.get(pywb_replay.capture_url(capture.url, capture.timestamp14, "mp_"))
    assert token not in page.text


def test_pywb_replays_from_the_replicas_with_a_node_offline(pywb_replay, copy_warcs, tmp_path, node_backend):  # noqa: F811
    """The files on two storage nodes only (their spool copies gone); one node offline: replay goes on
    (directory nodes, and S3 nodes: replay then reads an S3-only replica)."""
    from storage.models import IngestStep
    from storage.services.ingest import ingest_advance
    from storage.services.nodes import node_set_offline
    from tests.storage.storage_files import make_nodes

    copies = copy_warcs()
    responses = archived_responses(copies)
    spool = Path(django_settings.HARVEST_WARC_DIR)
    spool.mkdir(parents=True, exist_ok=True)
    spooled = [Path(shutil.move(path, spool / path.name)) for path in copies]
    a, _b = make_nodes(tmp_path / "nodes", "room-1", "room-2", backend=node_backend)
    for path in spooled:
        warc = warc_file_index(path=path).warc_file
        assert ingest_advance(warc.pk).ingest_step == IngestStep.CLEANED
        assert not path.exists()
    node_set_offline(node_id=a.pk)
    for url, (status, body) in responses.items():
        capture = Capture.objects.filter(url=url, record_type="response").latest("timestamp")
        answer = pywb_replay.get(
            pywb_replay.capture_url(url, capture.timestamp14, "id_"), headers={"Connection": "close"}
        )
        assert answer.status_code == status, url
        if status == 200:
            assert answer.content == body, url
