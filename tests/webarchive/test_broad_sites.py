"""The broad crawl's test website (webarchive.testsite.broad): many small sites told apart by host name."""

import http.client
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from webarchive.testsite.broad import BroadSites, address, address_index, urls_per_site

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r'(?:href|src)="([^"]*)"')


@pytest.fixture(scope="module")
def sites():
    with BroadSites(sites=600, pages=20, sites_per_address=2) as served:
        yield served


def get(sites: BroadSites, site: int, path: str, *, host: str | None = None, connection=None):
    """GET ``path`` from the address of ``site`` naming ``host`` (the site's name by default)."""
    connection = connection or http.client.HTTPConnection(sites.site_address(site), sites.port, timeout=10)
    connection.request("GET", path, headers={"Host": host or f"{sites.name(site)}:{sites.port}"})
    response = connection.getresponse()
    return response.status, response.getheader("Content-Type"), response.read()


def test_every_page_answers_by_host_name_and_differs_between_sites(sites):
    for site in (0, 1, 599):
        for path in sites.paths():
            status, content_type, body = get(sites, site, path)
            assert status == 200, (site, path)
            assert content_type and body
    # The same page of two sites sharing an address: told apart by the Host header alone.
    assert sites.site_address(0) == sites.site_address(1)
    first, second = get(sites, 0, "/p/3.html")[2], get(sites, 1, "/p/3.html")[2]
    assert first != second
    assert b"Site 0, page 3" in first and b"Site 1, page 3" in second
    assert 1_500 < len(first) < 5_000
    assert get(sites, 1, "/logo.png")[2].startswith(b"\x89PNG\r\n\x1a\n")


def test_a_crawl_of_a_site_finds_exactly_its_urls_all_host_relative(sites):
    """From / and robots.txt, following every link, sitemap entry and requisite: pages + 4 URLs."""
    site, base = 7, sites.url(7, "")
    seen, queue = set(), ["/", "/robots.txt", "/sitemap.xml"]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        status, _, body = get(sites, site, path)
        assert status == 200, path
        text = body.decode("utf-8", "replace")
        for link in LINK.findall(text) + re.findall(r"<loc>([^<]*)</loc>|Sitemap: (\S+)", text):
            link = next(part for part in link if part) if isinstance(link, tuple) else link
            if link.startswith("http"):
                assert link.startswith(base), link  # only the sitemap names the site, and only itself
                link = link.removeprefix(base)
            assert link.startswith("/") and not link.startswith("//"), link
            queue.append(link)
    assert seen == set(sites.paths())
    assert len(seen) == urls_per_site(20) == 24


@pytest.mark.parametrize(
    ("site", "path", "host"),
    [
        (3, "/nothing.html", None),  # unknown path
        (3, "/p/20.html", None),  # beyond the site's pages
        (3, "/", "site-3.example"),  # another suffix
        (3, "/", "elsewhere.fr"),  # not a site's name at all
        (3, "/", "site-600.fr"),  # beyond the sites served
        (3, "/", "site-5.fr"),  # a site served, but on another address
    ],
)
def test_an_unknown_host_or_path_is_404(sites, site, path, host):
    assert get(sites, site, path, host=host)[0] == 404


def test_connections_are_kept_alive_hundreds_at_once(sites):
    connections = [
        http.client.HTTPConnection(sites.site_address(site), sites.port, timeout=10)
        for site in range(0, 600, 2)
    ]
    try:
        for site, connection in zip(range(0, 600, 2), connections, strict=True):
            assert get(sites, site, "/", connection=connection)[0] == 200
        opened = [connection.sock for connection in connections]
        # Every connection still open: its second request goes over the same socket.
        for site, connection in zip(range(0, 600, 2), connections, strict=True):
            assert get(sites, site, "/p/1.html", connection=connection)[0] == 200
        assert [connection.sock for connection in connections] == opened
    finally:
        for connection in connections:
            connection.close()


def test_one_address_per_site_by_default_all_on_127_slash_8():
    with BroadSites(sites=1_000, pages=3) as served:
        assert served.address_count == 1_000
        addresses = served.addresses()
        assert len(set(addresses)) == 1_000
        assert all(text.startswith("127.") and not text.startswith("127.0.0.") for text in addresses)
        assert [address_index(text) for text in addresses] == list(range(1_000))
        for site in (0, 253, 254, 999):
            assert get(served, site, "/")[0] == 200
        # An address instead of a name: that address's site.
        assert b"Site 254, page 0" in get(served, 254, "/", host=f"{address(254)}:{served.port}")[2]


def test_a_second_server_takes_the_addresses_after_the_first_ones():
    with BroadSites(sites=10, pages=2) as first, BroadSites(sites=1, pages=2, first_address=10) as second:
        assert second.addresses() == [address(10)] and address(10) not in first.addresses()
        assert get(second, 0, "/")[0] == 200
        assert get(first, 9, "/")[0] == 200


def test_the_command_serves_logs_each_request_and_stops_when_its_input_closes(tmp_path):
    log = tmp_path / "requests.log"
    command = [sys.executable, "-m", "webarchive.testsite.broad", "--sites", "50", "--pages", "5"]
    process = subprocess.Popen(
        [*command, "--sites-per-address", "10", "--log", str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        ready = json.loads(process.stdout.readline())
        assert ready["addresses"] == 5
        served = BroadSites(sites=50, pages=5, sites_per_address=10, port=ready["port"])
        assert get(served, 12, "/robots.txt")[0] == 200
        assert get(served, 12, "/missing")[0] == 404
    finally:
        process.stdin.close()
        ended = json.loads(process.stdout.readline())
        assert process.wait(timeout=30) == 0
    assert ended == {"requests": {"200": 1, "404": 1}}
    lines = [line.split(" ") for line in log.read_text().splitlines()]
    assert [(line[1], line[2], line[3], line[5]) for line in lines] == [
        (address(1), f"site-12.fr:{ready['port']}", "200", "/robots.txt"),
        (address(1), f"site-12.fr:{ready['port']}", "404", "/missing"),
    ]
