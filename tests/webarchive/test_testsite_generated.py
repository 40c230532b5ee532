"""The generated website (webarchive.testsite, /site/): what it serves over real HTTP, and its ground truth.

The links of the served pages are extracted here independently (selectolax and
regular expressions), to check that the site's own plan — which the ground
truth walks — is what a crawler really meets.
"""

import datetime
import gzip
import hashlib
import re
import socket
import threading
import time
from urllib.parse import quote, urljoin, urlsplit
from xml.etree import ElementTree

import protego
import pytest
import requests
from selectolax.lexbor import LexborHTMLParser

from webarchive.testsite import TestSite
from webarchive.testsite.generated import accepts_gzip
from webarchive.testsite.layout import FEATURES

TODAY = datetime.date(2026, 1, 15)  # the calendar's window then spans a change of year
PAGES = 60


@pytest.fixture(scope="module")
def site():
    options = {"large_file_bytes": 300_000, "slow_seconds": 0.05, "today": TODAY}
    with TestSite(port=0, seed=7, pages=PAGES, hosts=3, **options) as site:
        yield site


@pytest.fixture(scope="module")
def served(site):
    """Every ground-truth URL fetched once (bodies decoded from gzip by requests), by URL."""
    with requests.Session() as session:
        return {
            url: session.get(url, allow_redirects=False, timeout=10) for url in sorted(site.ground_truth())
        }


def get(url, **options):
    options.setdefault("allow_redirects", False)
    options.setdefault("timeout", 10)
    return requests.get(url, **options)


def canonical(url):
    """What the crawler keeps of a URL: no fragment, no session id, non-ASCII percent-encoded in UTF-8."""
    url = url.partition("#")[0]
    url = re.sub(r";jsessionid=[0-9A-Fa-f]+", "", url)
    url = re.sub(r"\?(sid=[0-9a-f]{32}|token=[0-9a-f]{40})$", "", url)
    return quote(url, safe=":/?#[]@!$&'()*+,;=%")


CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")
JS_PATH = re.compile(r"""["'](/[^"'\s]+\.html)["']""")


def html_links(url, text):
    """(canonical URL, hop letter) pairs found in an HTML page, as a crawler finds them."""
    tree = LexborHTMLParser(text)
    base_node = tree.css_first("base[href]")
    base = urljoin(url, base_node.attributes["href"]) if base_node else url
    found = set()

    def add(value, hop):
        if value and not value.startswith(("data:", "javascript:", "#")):
            found.add((canonical(urljoin(base, value.strip())), hop))

    for node in tree.css("a[href]"):
        add(node.attributes["href"], "L")
    for node in tree.css("link[href]"):
        add(node.attributes["href"], "E")
    for selector, attribute in [
        ("script[src]", "src"),
        ("img[src]", "src"),
        ("img[data-src]", "data-src"),
        ("source[src]", "src"),
        ("video[poster]", "poster"),
        ("object[data]", "data"),
        ("iframe[src]", "src"),
    ]:
        for node in tree.css(selector):
            add(node.attributes[attribute], "E")
    for node in tree.css("img[srcset], source[srcset]"):
        for candidate in node.attributes["srcset"].split(","):
            add(candidate.split()[0], "E")
    for node in tree.css("[style]"):
        for match in CSS_URL.finditer(node.attributes["style"]):
            add(match[1] or match[2], "E")
    for node in tree.css("meta[http-equiv]"):
        if node.attributes["http-equiv"].lower() == "refresh":
            add(node.attributes["content"].split("url=", 1)[1], "R")
    for node in tree.css("script"):
        for match in JS_PATH.finditer(node.text()):
            add(match[1], "X")
    return found


def links_served(url, response):
    """The links a crawler finds in a response: HTML, CSS, JavaScript, or a redirect's Location."""
    if response.is_redirect:
        return {(canonical(urljoin(url, response.headers["Location"])), "R")}
    content_type = response.headers["Content-Type"]
    if content_type.startswith("text/html"):
        return html_links(url, response.text)
    if content_type.startswith("text/css"):
        return {(canonical(urljoin(url, m[1] or m[2])), "E") for m in CSS_URL.finditer(response.text)}
    if content_type.startswith("text/javascript"):
        return {(canonical(urljoin(url, m[1])), "X") for m in JS_PATH.finditer(response.text)}
    return set()


# What is served ------------------------------------------------------------------------------------


def test_every_ground_truth_url_answers_as_the_site_plans(site, served):
    assert len(served) > 300
    for url, response in served.items():
        resource = site.generated.resource(url)
        expected = 404 if resource is None else resource.status
        assert response.status_code == expected, url
    statuses = {url.split(str(site.port), 1)[1]: response.status_code for url, response in served.items()}
    assert statuses["/site/missing.html"] == statuses["/site/img/missing.png"] == 404
    assert statuses["/site/broken.html"] == 500
    assert statuses["/site/redirect/301/3"] == 301
    assert statuses["/site/redirect/302/1"] == 302


def test_the_links_in_the_served_responses_are_the_ones_the_ground_truth_walks(site, served):
    for url, response in served.items():
        if response.status_code == 200 and url.endswith((".png", ".jpg", ".webp", ".woff2", ".bin")):
            continue
        assert links_served(url, response) == set(site.generated.links(url)), url


def test_the_ground_truth_is_closed_under_the_links_it_follows(site, served):
    """Every link of an in-scope page is in the ground truth, or excluded for a documented reason."""
    truth = site.ground_truth()
    window = set(site.generated.calendar_window())
    for url, response in served.items():
        if not url.startswith(site.url("/")):
            continue
        for target, _hop in links_served(url, response):
            if target in truth:
                continue
            assert (
                target.startswith(site.url("/site/private/"))
                or target.startswith(site.host_url(2, "/"))
                or (target.startswith(site.url("/site/calendar/")) and target not in window)
            ), f"{target} (linked from {url}) is missing from the ground truth"


def test_the_same_seed_gives_the_same_bytes_and_another_seed_another_site(site):
    options = {"large_file_bytes": 300_000, "slow_seconds": 0, "today": TODAY, "hosts": 3}
    paths = ["/site/", "/site/news/17.html", "/site/css/site.css", "/site/js/app.js", "/site/img/17.png"]
    paths += ["/site/sitemap.xml", "/robots.txt", "/site/latin1.html", "/site/files/large.bin"]
    with (
        TestSite(port=0, seed=7, pages=PAGES, **options) as twin,
        TestSite(port=0, seed=8, pages=PAGES, **options) as other,
    ):
        for path in paths:
            mine = get(site.url(path)).content.replace(str(site.port).encode(), b"PORT")
            assert get(twin.url(path)).content.replace(str(twin.port).encode(), b"PORT") == mine, path
        cdn = get(site.host_url(1, "/cdn/img/logo.png")).content
        assert get(twin.host_url(1, "/cdn/img/logo.png")).content == cdn
        assert get(other.url("/site/news/17.html")).text.replace(str(other.port), "PORT") != get(
            site.url("/site/news/17.html")
        ).text.replace(str(site.port), "PORT")
        assert get(other.host_url(1, "/cdn/img/logo.png")).content != cdn
        truth = {url.replace(str(site.port), "PORT") for url in site.ground_truth()}
        assert {url.replace(str(twin.port), "PORT") for url in twin.ground_truth()} == truth


def test_pages_have_every_kind_of_requisite(site):
    markers = {
        "srcset": 'srcset="',
        "picture": "<picture><source",
        "lazy": "data-src=",
        "banner": "style=\"background-image: url('",
        "video": "poster=",
        "object": "<object data=",
        "iframe": "<iframe src=",
        "base": '<base href="/site/">',
        "inline_script": "window.location.href",
        "cdn_photo": site.host_url(1, "/cdn/img/photo-"),
        "external": site.host_url(2, "/ext/"),
        "private": "/site/private/",
        "not_found": "missing.html",
        "server_error": "broken.html",
    }
    features = site.feature_urls()
    for feature, marker in markers.items():
        pages = features[f"with_{feature}"]
        assert pages, feature
        assert marker in get(pages[0]).text, feature
    home = get(site.url("/site/")).text
    for marker in ['rel="stylesheet"', 'rel="icon"', "<script src=", '<img src="//127.0.0.2:']:
        assert marker in home
    css = get(site.url("/site/css/site.css")).text
    assert '@import url("base.css")' in css and 'url("../img/bg.png")' in css
    assert site.host_url(1, "/cdn/fonts/body.woff2") in css
    assert '@import "typography.css"' in get(site.url("/site/css/base.css")).text
    assert get(site.host_url(1, "/cdn/fonts/body.woff2")).content.startswith(b"wOF2")
    assert get(site.url("/site/img/17.png")).content.startswith(b"\x89PNG\r\n\x1a\n")
    assert get(site.url("/site/favicon.ico")).headers["Content-Type"] == "image/x-icon"


def test_unknown_urls_and_unused_variants_answer_404(site):
    for path in [
        "/site/news/2.html",  # page 2 is the sport section's root
        "/site/news/05.html",
        f"/site/news/{PAGES + 3}.html",
        "/site/img/2-lazy.jpg",  # page 2 has no lazy image
        "/site/img/17.gif",
        "/site/js/only-99.html",
        "/site/private/9.html",
        "/site/redirect/301/4",
        "/site/calendar/2026/13",
        "/site/commented-out.html",
        "/site/news/" + "9" * 5000 + ".html",  # too long for a page number, not a server error
        "/cdn/img/logo.png",  # the CDN is on 127.0.0.2 here
        "/site/no/such/thing",
    ]:
        assert get(site.url(path)).status_code == 404, path
    assert get(site.host_url(1, "/site/")).status_code == 404
    assert get(site.host_url(2, "/cdn/img/logo.png")).status_code == 404


def test_the_hand_written_pages_are_still_served_on_127_0_0_1_only(site):
    assert get(site.url("/ok")).status_code == 200
    assert get(site.url("/redirect/1")).headers["Location"] == site.url("/ok")
    assert get(site.host_url(1, "/ok")).status_code == 404
    assert "/site/" in get(site.url("/")).text


# Hosts ---------------------------------------------------------------------------------------------


def test_three_hosts_on_one_port(site):
    assert site.host_url(0, "/a") == site.url("/a")
    assert site.host_url(1, "/a") == f"http://127.0.0.2:{site.port}/a"
    assert site.host_url(2, "/a") == f"http://127.0.0.3:{site.port}/a"
    assert get(site.host_url(1, "/cdn/css/theme.css")).status_code == 200
    external = get(site.host_url(2, "/ext/"))
    assert external.status_code == 200
    assert site.url("/site/") in external.text
    assert get(site.host_url(2, "/robots.txt")).status_code == 200
    truth = site.ground_truth()
    hosts = {urlsplit(url).hostname for url in truth}
    assert hosts == {"127.0.0.1", "127.0.0.2"}
    assert site.host_url(1, "/cdn/fonts/icons.woff2") in truth  # a font of the CDN's style sheet
    assert site.host_url(2, "/ext/") in get(site.url("/site/")).text
    with pytest.raises(ValueError, match="host index"):
        site.host_url(3)


def test_one_host_keeps_everything_on_127_0_0_1():
    with TestSite(port=0, pages=30, large_file_bytes=10) as site:
        truth = site.ground_truth()
        assert {urlsplit(url).hostname for url in truth} == {"127.0.0.1"}
        assert site.url("/cdn/img/logo.png") in truth
        home = get(site.url("/site/")).text
        assert "127.0.0.2" not in home and "127.0.0.3" not in home
        assert get(site.url("/cdn/img/logo.png")).status_code == 200
        with pytest.raises(requests.ConnectionError):
            get(site.host_url(1, "/cdn/img/logo.png"), timeout=2)


# Transfer: gzip and chunked ------------------------------------------------------------------------


def raw_exchange(site, request: bytes, *, responses: int = 1) -> bytes:
    """What the server sends back for ``request`` on one connection, read until it has sent ``responses``."""
    with socket.create_connection(("127.0.0.1", site.port), timeout=5) as sock:
        sock.sendall(request)
        data = b""
        while data.count(b"HTTP/1.") < responses or not complete(data, responses):
            piece = sock.recv(65536)
            if not piece:
                break
            data += piece
        return data


def complete(data: bytes, responses: int) -> bool:
    try:
        rest = data
        for _ in range(responses):
            _head, _body, rest = split_response(rest)
        return True
    except (ValueError, IndexError):
        return False


def split_response(data: bytes) -> tuple[bytes, bytes, bytes]:
    """(head, de-chunked body, what follows) of the first response in ``data``."""
    head, _, rest = data.partition(b"\r\n\r\n")
    if b"\r\ntransfer-encoding: chunked" in head.lower():
        body = b""
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                if not rest.startswith(b"\r\n"):
                    raise ValueError("the body does not end with an empty chunk")
                return head, body, rest[2:]
            if rest[size : size + 2] != b"\r\n":
                raise ValueError("a chunk is not followed by CRLF")
            body, rest = body + rest[:size], rest[size + 2 :]
    length = int(re.search(rb"(?i)\r\ncontent-length: (\d+)", head)[1])
    if len(rest) < length:
        raise ValueError("short body")
    return head, rest[:length], rest[length:]


def test_chunked_responses_are_framed_on_the_wire(site):
    chunked_page, plain_page = site.feature_urls()["with_chunked"][8], site.feature_urls()["with_gzip"][1]
    host = f"Host: 127.0.0.1:{site.port}\r\n"
    requests_ = b"".join(
        f"GET {urlsplit(url).path} HTTP/1.1\r\n{host}\r\n".encode()
        for url in (chunked_page, plain_page, site.url("/site/js/app.js"))
    )
    data = raw_exchange(site, requests_, responses=3)  # three on one kept-alive connection
    head, body, rest = split_response(data)
    assert b"Transfer-Encoding: chunked" in head and b"Content-Length" not in head
    assert re.search(rb"\r\n\r\n[0-9a-f]+\r\n<!DOCTYPE html>", data)
    assert body == site.generated.body(chunked_page)
    assert len(body) > 1024  # so that it went out in more than one chunk
    head, body, rest = split_response(rest)
    assert b"Content-Length" in head and b"Transfer-Encoding" not in head
    assert body == site.generated.body(plain_page)
    head, body, rest = split_response(rest)
    assert b"Transfer-Encoding: chunked" in head
    assert b"/site/js/only-0.html" in body
    assert rest == b""


def test_an_http_1_0_client_gets_a_content_length_instead_of_chunks(site):
    page = site.feature_urls()["with_chunked"][0]
    data = raw_exchange(site, f"GET {urlsplit(page).path} HTTP/1.0\r\n\r\n".encode())
    head, body, _rest = split_response(data)
    assert b"Transfer-Encoding" not in head
    assert body == site.generated.body(page)


def test_a_head_request_on_a_chunked_page_has_no_body(site):
    page = site.feature_urls()["with_chunked"][0]
    response = requests.head(page, timeout=5)
    assert response.status_code == 200
    assert response.headers["Transfer-Encoding"] == "chunked"
    assert response.content == b""


def test_gzip_when_the_client_accepts_it(site):
    features = site.feature_urls()
    both = sorted(set(features["with_gzip"]) & set(features["with_chunked"]))[0]
    for url in [site.url("/site/"), site.url("/site/css/site.css"), site.url("/site/sitemap.xml"), both]:
        path = urlsplit(url).path
        host = f"Host: 127.0.0.1:{site.port}\r\n"
        data = raw_exchange(site, f"GET {path} HTTP/1.1\r\n{host}Accept-Encoding: gzip, br\r\n\r\n".encode())
        head, body, _ = split_response(data)
        assert b"Content-Encoding: gzip" in head and b"Vary: Accept-Encoding" in head, url
        assert gzip.decompress(body) == site.generated.body(url), url
        assert body == site.generated.body(url, gzipped=True)
        for refusal in ("", "Accept-Encoding: gzip;q=0\r\n", "Accept-Encoding: identity\r\n"):
            data = raw_exchange(site, f"GET {path} HTTP/1.1\r\n{host}{refusal}\r\n".encode())
            head, body, _ = split_response(data)
            assert b"Content-Encoding" not in head, (url, refusal)
            assert body == site.generated.body(url)
    image = raw_exchange(site, b"GET /site/img/17.png HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
    assert b"Content-Encoding" not in split_response(image)[0]


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        ("gzip", True),
        ("gzip, deflate", True),
        ("deflate, GZIP;q=0.5", True),
        ("*", True),
        ("x-gzip", True),
        ("gzip;q=0", False),
        ("gzip;q=0.0", False),
        ("gzip;q=nonsense", False),
        ("identity", False),
        ("", False),
        ("br, deflate", False),
    ],
)
def test_accepts_gzip(header, accepted):
    assert accepts_gzip(header) is accepted


# Features ------------------------------------------------------------------------------------------


def test_robots_txt_disallows_the_private_pages_and_names_the_sitemap(site):
    response = get(site.url("/robots.txt"))
    assert response.status_code == 200
    assert "Disallow: /site/private/" in response.text.splitlines()
    robots = protego.Protego.parse(response.text)
    assert list(robots.sitemaps) == [site.url("/site/sitemap.xml")]
    private = site.feature_urls()["private"]
    assert all(not robots.can_fetch(url, "webarchive") for url in private)
    assert robots.can_fetch(site.url("/site/news/17.html"), "webarchive")
    assert not robots.can_fetch(site.url("/site/"), "BadBot")
    assert all(get(url).status_code == 200 for url in private)
    assert not set(private) & site.ground_truth()
    assert set(private) <= site.ground_truth(obey_robots=False)  # a chain: 0 links 1, which links 2


def test_the_sitemap_lists_pages_some_of_which_only_it_names(site, served):
    root = ElementTree.fromstring(get(site.url("/site/sitemap.xml")).content)
    namespace = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
    listed = [loc.text for loc in root.iter(f"{namespace}loc")]
    assert listed == site.generated.sitemap_entries()
    only = site.feature_urls()["sitemap_only"]
    assert len(only) == 4 and set(only) <= set(listed)
    linked = {target for url, response in served.items() for target, _hop in links_served(url, response)}
    assert not set(only) & linked
    assert set(only) <= site.ground_truth()
    assert not set(only) & site.ground_truth(sitemaps=False)
    hops = site.ground_truth_hops()
    assert {hops[url] for url in only} == {"PM"}
    assert site.url("/site/sitemap.xml") not in site.ground_truth()
    assert site.url("/robots.txt") not in site.ground_truth()


def test_urls_only_in_javascript(site, served):
    js_only = site.feature_urls()["js_only"]
    assert len(js_only) == 4 + len(site.feature_urls()["with_inline_script"])
    for url, response in served.items():
        if response.headers.get("Content-Type", "").startswith("text/html"):
            tree = LexborHTMLParser(response.text)
            for node in tree.css("script"):
                node.decompose()
            assert not any(urlsplit(js).path in tree.html for js in js_only), url
    app = get(site.url("/site/js/app.js")).text
    assert all(f'"{urlsplit(url).path}"' in app for url in js_only[:4])
    assert all(get(url).status_code == 200 for url in js_only)
    assert set(js_only) <= site.ground_truth()
    assert not set(js_only) & site.ground_truth(javascript=False)


def test_redirect_chains_and_meta_refresh_lead_to_real_pages(site):
    response = requests.get(site.url("/site/redirect/301/3"), timeout=5)
    assert [r.status_code for r in response.history] == [301, 301, 301]
    assert response.url == site.url("/site/landing/301.html")
    assert response.status_code == 200
    assert get(site.url("/site/redirect/302/2")).headers["Location"] == "/site/redirect/302/1"  # not absolute
    response = requests.get(site.url("/site/redirect/302/2"), timeout=5)
    assert [r.status_code for r in response.history] == [302, 302]
    assert response.url == site.url("/site/landing/302.html")
    refresh = get(site.url("/site/refresh.html")).text
    assert '<meta http-equiv="refresh" content="0; url=/site/landing/refresh.html">' in refresh
    moved = site.feature_urls()["redirects"]
    assert any("/site/moved/" in url for url in moved)
    truth = site.ground_truth()
    assert set(moved) <= truth
    for name in ("301", "302", "refresh", "malformed"):
        assert site.url(f"/site/landing/{name}.html") in truth
    logo = get(site.url("/site/img/old-logo.png"))
    assert logo.status_code == 301
    assert logo.headers["Location"] == site.host_url(1, "/cdn/img/logo.png")


def test_the_calendar_goes_on_forever_and_the_ground_truth_keeps_three_months(site):
    home = get(site.url("/site/")).text
    assert 'href="/site/calendar/2026/01"' in home
    january = site.url("/site/calendar/2026/01")
    links = html_links(january, get(january).text)
    assert {(site.url("/site/calendar/2025/12"), "L"), (site.url("/site/calendar/2026/02"), "L")} <= links
    far = site.url("/site/calendar/1999/12")
    assert (site.url("/site/calendar/2000/01"), "L") in html_links(far, get(far).text)
    assert get(site.url("/site/calendar/9999/12")).status_code == 200
    calendar = sorted(url for url in site.ground_truth() if "/calendar/" in url)
    expected = [site.url(f"/site/calendar/{month}") for month in ("2025/12", "2026/01", "2026/02")]
    assert calendar == expected == sorted(site.feature_urls()["calendar"])


def test_session_id_links_point_to_real_pages_and_the_ground_truth_strips_them(site):
    home = get(site.url("/site/")).text
    styles = [r"\?sid=[0-9a-f]{32}\"", r";jsessionid=[0-9A-F]{32}\"", r"\?token=[0-9a-f]{40}\""]
    for style in styles:
        assert re.search(r'href="/site/\w+/\d+\.html' + style, home), style
    session_links = site.feature_urls()["session_links"]
    assert len(session_links) > 10
    for url in session_links[:12]:
        response = get(url)
        assert response.status_code == 200
        assert response.content == get(canonical(url)).content
        assert canonical(url) in site.ground_truth()
    assert not [url for url in site.ground_truth() if re.search(r"sid=|jsessionid|token=", url)]


def test_the_slow_page_waits_and_a_stopping_site_wakes_it():
    site = TestSite(port=0, pages=5, slow_seconds=60).start()
    result = {}
    waiting = threading.Thread(
        target=lambda: result.update(status=get(site.url("/site/slow.html")).status_code)
    )
    waiting.start()
    time.sleep(0.2)
    assert waiting.is_alive()  # 60 seconds to wait: it cannot be done yet
    site.stop()
    waiting.join(timeout=10)
    assert not waiting.is_alive()
    assert result["status"] == 200


def test_the_large_file(site):
    url = site.url("/site/files/large.bin")
    assert 'href="/site/files/large.bin"' in get(site.url("/site/")).text
    response = get(url)
    assert response.headers["Content-Type"] == "application/octet-stream"
    assert int(response.headers["Content-Length"]) == len(response.content) == 300_000
    assert len(gzip.compress(response.content)) > 290_000  # random bytes: not a shortcut for a size cap
    with TestSite(port=0, seed=7, pages=5, large_file_bytes=300_000) as twin:
        twin_body = get(twin.url("/site/files/large.bin")).content
    assert hashlib.sha256(twin_body).digest() == hashlib.sha256(response.content).digest()
    assert url in site.ground_truth()


def test_a_windows_1252_page_with_accents_and_links(site):
    response = get(site.url("/site/latin1.html"))
    assert response.headers["Content-Type"] == "text/html; charset=windows-1252"
    with pytest.raises(UnicodeDecodeError):
        response.content.decode("utf-8")
    text = response.content.decode("cp1252")
    assert "Café crème" in text and "5 €" in text and "<meta charset" not in text
    assert 'href="café.html"' in text
    cafe = site.url("/site/caf%C3%A9.html")
    assert (cafe, "L") in html_links(response.url, text)
    assert get(cafe).status_code == 200
    assert cafe in site.ground_truth()


def test_malformed_html_still_gives_its_links(site):
    url = site.url("/site/malformed.html")
    response = get(url)
    assert "</div></div></div></div>" in response.text and "</html>" not in response.text
    found = {link for link, _hop in html_links(url, response.text)}
    expected = {link for link, _hop in site.generated.links(url)}
    assert found == expected
    assert site.url("/site/landing/malformed.html") in expected
    assert site.url("/site/commented-out.html") not in expected | site.ground_truth()


# Ground truth --------------------------------------------------------------------------------------


def clicks_of(hop_path):
    return sum(letter in "LM" for letter in hop_path)


def test_the_policies_nest_and_follow_their_rules(site):
    hops = site.ground_truth_hops()
    host = set(hops)
    assert set(site.page_urls()) <= host
    page = site.ground_truth_hops(policy="page")
    assert site.url("/site/") in page
    assert all(set(path) <= set("ER") for path in page.values())  # the start and its requisites
    assert site.url("/site/css/typography.css") in page  # imported by an imported style sheet
    assert site.url("/site/img/old-logo.png") in page and site.host_url(1, "/cdn/img/logo.png") in page
    one_click = site.ground_truth_hops(policy="clicks", clicks=1)
    assert set(page) < set(one_click) < host
    assert all(clicks_of(path) <= 1 for path in one_click.values())
    assert site.url("/site/news/") in one_click and site.url("/site/calendar/2025/12") not in one_click
    news = site.ground_truth_hops(policy="path", start="/site/news/")
    for url, path in news.items():
        assert url.startswith(site.url("/site/news/")) or path.endswith(("E", "ER")), (url, path)
    assert site.url("/site/news/17.html") in news and site.url("/site/sport/") not in news
    assert set(news) < host
    assert site.ground_truth(policy="domain") == host
    assert site.ground_truth(clicks=1) == set(one_click)
    assert site.ground_truth(policy="page", start="/site/redirect/301/3") >= {
        site.url("/site/redirect/301/1"),
        site.url("/site/landing/301.html"),
        site.url("/site/css/site.css"),
    }


def test_every_page_is_reachable_and_the_depth_grows_with_the_pages():
    depths = []
    for pages in (50, 2000):
        with TestSite(port=0, pages=pages) as site:
            hops = site.ground_truth_hops(sitemaps=False)
            assert set(site.page_urls()) <= set(hops)
            depths.append(max(clicks_of(hops[url]) for url in site.page_urls()))
            assert all(get(url).status_code == 200 for url in site.page_urls()[-3:])
    assert depths[0] < depths[1]


def test_a_site_of_100_000_pages_serves_its_last_page():
    with TestSite(port=0, pages=100_000, hosts=3) as site:
        last = site.generated.page_url(99_999)
        response = get(last)
        assert response.status_code == 200
        assert {(link, hop) for link, hop in html_links(last, response.text)} == set(
            site.generated.links(last)
        )
        assert get(last.replace("99999", "100003")).status_code == 404


def test_bad_ground_truth_options(site):
    for options, message in [
        ({"policy": "everything"}, "policy must be one of"),
        ({"policy": "clicks"}, "needs clicks"),
        ({"clicks": -1}, "cannot be negative"),
        ({"start": "http://example.com/"}, "not a URL of the generated site"),
        ({"start": site.host_url(1, "/cdn/img/logo.png")}, "not a URL of the generated site"),
        ({"start": "/site/no-such-page.html"}, "not a URL of the generated site"),
    ]:
        with pytest.raises(ValueError, match=message):
            site.ground_truth(**options)


def test_the_ground_truth_needs_the_port_of_a_started_site():
    site = TestSite(port=0, pages=5)
    with pytest.raises(RuntimeError, match="start"):
        site.ground_truth()
    with site:
        assert site.url("/site/") in site.ground_truth()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hosts": 0}, "hosts must be between 1 and 3"),
        ({"hosts": 4}, "hosts must be between 1 and 3"),
        ({"pages": 0}, "pages must be at least 1"),
        ({"port": 70000}, "port must be between"),
        ({"large_file_bytes": -1}, "cannot be negative"),
        ({"slow_seconds": -1}, "cannot be negative"),
    ],
)
def test_bad_site_options(options, message):
    with pytest.raises(ValueError, match=message):
        TestSite(**options)


def test_the_features_table_is_covered_by_a_small_site():
    with TestSite(port=0, pages=PAGES, hosts=3) as site:
        features = site.feature_urls()
        assert all(features[f"with_{name}"] for name in FEATURES)
