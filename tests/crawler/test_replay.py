"""The crawler's WARC files replay in pywb (run as its own process, as the archive runs it).

A crawl of the test website is added to a pywb collection with pywb's own
``wb-manager`` (which indexes it) and served by ``wayback`` on 127.0.0.1;
pages, gzip-encoded and chunked responses, images and redirects then come
back from the archive as the website served them. The test website is stopped
before replay: what pywb answers can only come from the WARC files.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.components import require_component
from tests.crawler.sitecrawl import crawl
from webarchive.testsite import TestSite

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    """(pywb base URL of the collection, the site's ground truth, a function: site path -> bytes served)."""
    require_component("pywb", (BIN / "wayback").exists(), "pywb (requirements-dev.txt) replays WARC files")
    root = tmp_path_factory.mktemp("pywb")
    with TestSite(port=0, seed=4, pages=30, hosts=2, large_file_bytes=50_000, slow_seconds=0.01) as site:
        files = crawl(root / "crawl", [site.url("/site/")]).files
        truth = sorted(site.ground_truth(policy="host"))
        with requests.Session() as client:
            served = {}
            for url in truth:
                answer = client.get(url, timeout=10, allow_redirects=False)
                served[url] = (answer.status_code, answer.content)
    port = free_port()
    server = start_pywb(root, [info.path for info in files], port)
    base = f"http://127.0.0.1:{port}/crawl"
    yield base, truth, served, site
    server.terminate()
    server.wait(30)


def start_pywb(root: Path, paths: list, port: int) -> subprocess.Popen:
    """pywb's ``wayback`` on 127.0.0.1:``port``, serving ``paths`` as the collection ``crawl`` of ``root``."""
    environment = {**os.environ, "PYTHONPATH": ""}
    subprocess.run(
        [str(BIN / "wb-manager"), "init", "crawl"], cwd=root, env=environment, check=True, capture_output=True
    )
    subprocess.run(
        [str(BIN / "wb-manager"), "add", "crawl", *[str(path) for path in paths]],
        cwd=root,
        env=environment,
        check=True,
        capture_output=True,
    )
    log = (root / "wayback.log").open("w")
    server = subprocess.Popen(
        [str(BIN / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
        cwd=root,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()  # the child has its own descriptor
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/", timeout=2)
            break
        except requests.ConnectionError:
            time.sleep(0.2)
    return server


def test_every_captured_url_replays_with_the_bytes_the_site_served(replay):
    base, _truth, served, _site = replay
    for url, (status, body) in served.items():
        # A connection per request: pywb's server does not always keep a connection usable after a redirect.
        answer = requests.get(
            f"{base}/id_/{url}", timeout=30, allow_redirects=False, headers={"Connection": "close"}
        )
        # id_ replays the original response: redirects as redirects, errors as errors, bodies as served.
        assert answer.status_code == status, url
        if status == 200:
            assert answer.content == body, url


def test_a_page_replays_rewritten_with_its_requisites_from_the_archive(replay):
    base, truth, served, site = replay
    page = requests.get(f"{base}/mp_/{site.url('/site/')}", timeout=30)
    assert page.status_code == 200
    assert "/crawl/" in page.text  # links rewritten into the archive
    requisites = [url for url in truth if url.endswith((".css", ".png", ".js")) and served[url][0] == 200]
    assert requisites
    for requisite in requisites:
        answer = requests.get(f"{base}/mp_/{requisite}", timeout=30, headers={"Connection": "close"})
        assert answer.status_code == 200, requisite
