"""The synthetic test website (webarchive.testsite) and its management command."""

import os
import re
import select
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from webarchive.testsite import Router, TestSite
from webarchive.testsite.server import html_page

ROOT = Path(__file__).resolve().parents[2]


def get(url, **options):
    options.setdefault("allow_redirects", False)
    options.setdefault("timeout", 5)
    return requests.get(url, **options)


def test_binds_127_0_0_1_on_a_free_port(testsite):
    assert testsite.port > 0
    assert testsite.base_url == f"http://127.0.0.1:{testsite.port}"
    assert testsite.url("/ok") == f"http://127.0.0.1:{testsite.port}/ok"
    assert testsite._server.server_address[0] == "127.0.0.1"
    assert testsite.seed == 0


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/ok", 200, None),
        ("/redirect/3", 301, "{base}/redirect/2"),
        ("/redirect/2", 301, "{base}/redirect/1"),
        ("/redirect/1", 301, "{base}/ok"),
        ("/redirect/0", 404, None),
        ("/redirect-302", 302, "{base}/ok"),
        ("/redirect-relative", 302, "ok?via=relative"),
        ("/loop", 302, "{base}/loop"),
        ("/redirect-to?url=http://10.0.0.1/x", 302, "http://10.0.0.1/x"),
        ("/redirect-to?url=/ok&status=308", 308, "/ok"),
        ("/redirect-to?url=/ok&status=200", 400, None),
        ("/redirect-to", 400, None),
        ("/not-found", 404, None),
        ("/error", 500, None),
        ("/no/such/page", 404, None),
        ("/slow?seconds=0", 200, None),
    ],
)
def test_pages(testsite, path, status, location):
    response = get(testsite.url(path))
    assert response.status_code == status
    expected = location and location.format(base=testsite.base_url)  # /redirect-to sends it as given
    assert response.headers.get("Location") == expected


def test_redirect_to_https_goes_to_a_port_that_does_not_speak_tls(testsite):
    response = get(testsite.url("/redirect-to-https"))
    assert response.status_code == 301
    assert response.headers["Location"] == f"https://127.0.0.1:{testsite.port}/ok"
    assert (
        get(testsite.url("/redirect-to-https?port=4443")).headers["Location"] == "https://127.0.0.1:4443/ok"
    )
    with pytest.raises(requests.exceptions.SSLError):
        get(f"https://127.0.0.1:{testsite.port}/ok")


def test_the_redirect_chain_ends_at_ok(testsite):
    response = requests.get(testsite.url("/redirect/3"), timeout=5)
    assert response.status_code == 200
    assert response.url == testsite.url("/ok")
    assert [r.status_code for r in response.history] == [301, 301, 301]


def test_the_index_links_to_the_pages(testsite):
    response = get(testsite.url("/"))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    links = set(re.findall(r"href='([^']+)'", response.text))
    assert {
        "/ok",
        "/redirect/3",
        "/redirect-302",
        "/loop",
        "/not-found",
        "/error",
        "/slow?seconds=2",
    } <= links
    assert "seed 0" in response.text


def test_head_has_headers_and_no_body(testsite):
    response = requests.head(testsite.url("/ok"), timeout=5)
    assert response.status_code == 200
    assert int(response.headers["Content-Length"]) > 0
    assert response.content == b""


def test_requests_are_recorded(testsite):
    get(testsite.url("/ok?recorded=1"), headers={"User-Agent": "recorder-test"})
    request = [r for r in testsite.requests_to("/ok") if r.arg("recorded") == "1"][-1]
    assert request.method == "GET"
    assert request.headers["user-agent"] == "recorder-test"
    assert request.headers["host"] == f"127.0.0.1:{testsite.port}"


def test_a_slow_page_does_not_block_the_others_and_stop_is_clean():
    site = TestSite(port=0).start()
    slow_result = {}

    def ask_slow():
        started = time.monotonic()
        slow_result["status"] = get(site.url("/slow?seconds=30"), timeout=10).status_code
        slow_result["seconds"] = time.monotonic() - started

    slow = threading.Thread(target=ask_slow)
    slow.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert get(site.url("/ok")).status_code == 200
    assert time.monotonic() - started < 0.5
    site.stop()  # wakes /slow at once
    slow.join(timeout=5)
    assert not slow.is_alive()
    assert slow_result["status"] == 200
    assert slow_result["seconds"] < 5
    with pytest.raises(requests.exceptions.ConnectionError):
        get(site.url("/ok"), timeout=1)


def test_slow_waits_the_seconds_asked(testsite):
    started = time.monotonic()
    assert get(testsite.url("/slow?seconds=0.3")).status_code == 200
    assert 0.3 <= time.monotonic() - started < 1.5
    assert get(testsite.url("/slow?seconds=soon")).status_code == 400


def test_a_site_with_its_own_router_and_seed():
    router = Router()

    @router.route("/item/<int:number>/<name>", example="/item/1/a", title="An item")
    def item(request):
        return html_page(f"Item {request.params['number']} {request.params['name']} {request.site.seed}", "")

    @router.route("/broken")
    def broken(request):
        raise RuntimeError("on purpose")

    with TestSite(router=router, seed=42) as site:
        assert site.seed == 42
        response = get(site.url("/item/7/seven"))
        assert response.status_code == 200
        assert "<title>Item 7 seven 42</title>" in response.text
        assert get(site.url("/item/x/seven")).status_code == 404
        assert get(site.url("/ok")).status_code == 404  # not in this router
        assert get(site.url("/broken")).status_code == 500
        assert [route.example for route in router.routes] == ["/item/1/a", "/broken"]


def test_the_management_command_serves_the_site_on_127_0_0_1():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "manage.py", "testsite", "--port", "0", "--seed", "42"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready, _w, _x = select.select([process.stdout], [], [], 20)
        assert ready, "the command printed nothing"
        line = process.stdout.readline().decode()
        match = re.search(r"(http://127\.0\.0\.1:(\d+)/)", line)
        assert match, line
        assert "seed 42" in line
        response = get(match[1])
        assert response.status_code == 200
        assert "seed 42" in response.text
        assert get(f"{match[1]}ok").status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_management_command_says_when_the_port_is_taken():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "manage.py", "testsite", "--port", str(port)],
            cwd=ROOT,
            capture_output=True,
            timeout=30,
        )
    assert result.returncode != 0
    assert f"Cannot listen on 127.0.0.1:{port}" in result.stderr.decode()
