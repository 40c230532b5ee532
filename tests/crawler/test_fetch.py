"""harvest.crawler.fetch: exchanges kept as the server sent them, limits, errors, the address guard."""

import base64
import gzip
import hashlib
import io
import shutil
import socket
import ssl
import subprocess
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from harvest.crawler.fetch import Exchange, Fetcher, media_type
from harvest.crawler.outcomes import FetchError
from webarchive import netguard

PAGE = b"<html><head><title>A page</title></head><body><a href='/next'>next</a></body></html>"
TEXT = b"compressible words, " * 2000
GZIPPED = gzip.compress(TEXT, mtime=0)
CHUNKS = [
    b"first chunk, ",
    b"second chunk, ",
    b"",
    b"third",
]  # the empty one is not sent (it would end the body)
BIG = bytes(range(256)) * 8000  # 2 048 000 bytes


def digest(data: bytes, algorithm: str = "sha256") -> str:
    """The WARC form of a digest, computed here without the code under test."""
    return f"{algorithm}:{base64.b32encode(hashlib.new(algorithm, data).digest()).decode()}"


class LocalServer(ThreadingHTTPServer):
    """An HTTP/1.1 server on 127.0.0.1 that counts connections and records the requests it receives."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.requests: list[tuple[int, str, bytes]] = []  # client port, path, request head as received
        self.stopping = threading.Event()
        self._count_lock = threading.Lock()

    def process_request(self, request, client_address):
        with self._count_lock:
            self.connections += 1
        super().process_request(request, client_address)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def reset(self) -> None:
        with self._count_lock:
            self.connections = 0
            self.requests.clear()

    def __enter__(self):
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info):
        self.stopping.set()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: no delayed-ACK wait

    def log_message(self, *args):
        pass

    def do_GET(self):
        head = self.raw_requestline + b"".join(
            f"{name}: {value}\r\n".encode("latin-1") for name, value in self.headers.items()
        )
        self.server.requests.append((self.client_address[1], self.path, head + b"\r\n"))
        route = urlsplit(self.path).path.strip("/").replace("-", "_") or "page"
        getattr(self, f"route_{route}", self.route_missing)()

    def _send(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _send_chunked(self, chunks: list[bytes], headers: list[tuple[str, str]]) -> None:
        self.send_response(200)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            if chunk:
                self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
        self.wfile.write(b"0\r\n\r\n")

    def route_page(self):
        self._send(
            200, PAGE, [("Content-Type", "text/html; charset=UTF-8"), ("X-Seen", "1"), ("x-seen", "2")]
        )

    def route_missing(self):
        self._send(404, b"not here", [("Content-Type", "text/plain")])

    def route_chunked(self):
        self._send_chunked(CHUNKS, [("Content-Type", "text/plain")])

    def route_chunked_with_length(self):  # both framings: forbidden, chunked wins
        self._send_chunked(CHUNKS, [("Content-Type", "text/plain"), ("Content-Length", "999")])

    def route_gzip(self):
        self._send(200, GZIPPED, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")])

    def route_gzip_chunked(self):
        pieces = [GZIPPED[i : i + 1000] for i in range(0, len(GZIPPED), 1000)]
        self._send_chunked(pieces, [("Content-Type", "text/plain"), ("Content-Encoding", "gzip")])

    def route_deflate_zlib(self):
        self._send(200, zlib.compress(TEXT), [("Content-Encoding", "deflate")])

    def route_deflate_raw(self):
        raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._send(200, raw.compress(TEXT) + raw.flush(), [("Content-Encoding", "deflate")])

    def route_not_gzip(self):
        self._send(200, b"this is not gzip at all", [("Content-Encoding", "gzip")])

    def route_brotli(self):
        self._send(200, b"\x8b\x02\x80hello\x03", [("Content-Encoding", "br")])

    def route_big(self):
        self._send(200, BIG, [("Content-Type", "application/octet-stream")])

    def route_redirect(self):
        self._send(302, b"", [("Location", "/page")])

    def route_drip(self):  # a body that never ends, a little at a time
        self.send_response(200)
        self.send_header("Content-Length", str(10**9))
        self.end_headers()
        try:
            while not self.server.stopping.wait(0.02):
                self.wfile.write(b"x" * 100)
                self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def route_stall(self):  # a body that stops coming
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b"y" * 10)
        self.wfile.flush()
        self.server.stopping.wait(10)
        self.close_connection = True

    def route_hang(self):  # no answer at all
        self.server.stopping.wait(10)
        self.close_connection = True

    def route_cut(self):  # the server goes away in the middle of the body
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        self.wfile.write(b"z" * 300)
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def route_close_silently(self):
        self.close_connection = True

    def route_close_after(self):  # answers, then drops the kept-alive connection without saying so
        self._send(200, b"once", [("Content-Type", "text/plain")])
        self.wfile.flush()
        self.close_connection = True

    def route_many_headers(self):
        self.send_response(200)
        for number in range(150):
            self.send_header(f"X-Header-{number}", "value")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def route_latin1(self):
        self.wfile.write(b"HTTP/1.1 200 Fine\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok")


@pytest.fixture(scope="module")
def server():
    with LocalServer() as running:
        yield running


@pytest.fixture
def fetcher():
    return Fetcher(user_agent="TestArchiver/1.0 (+https://archive.example/)", address_check=lambda ip: None)


def fetch(fetcher: Fetcher, url: str, **headers) -> Exchange:
    with fetcher.session() as session:
        return session.fetch(url, headers=headers or None)


def body_of(exchange: Exchange) -> bytes:
    exchange.body.seek(0)
    return exchange.body.read()


def test_a_page_is_kept_with_its_headers_as_sent(server, fetcher):
    exchange = fetch(fetcher, server.url("/page?x=1"))
    assert exchange.error is None
    assert (exchange.status, exchange.reason, exchange.http_version) == (200, "OK", "HTTP/1.1")
    assert exchange.peer_ip == "127.0.0.1"
    assert exchange.method == "GET"
    assert exchange.url == server.url("/page?x=1")
    assert body_of(exchange) == PAGE
    assert exchange.body_length == len(PAGE)
    assert exchange.truncated is None
    assert exchange.payload_digest == digest(PAGE)
    assert (exchange.content_type, exchange.charset) == ("text/html", "utf-8")
    names = [name for name, _ in exchange.headers]
    assert names[-3:] == ["X-Seen", "x-seen", "Content-Length"]  # order, case and repeats as sent
    assert exchange.header("x-SEEN") == "1"
    assert exchange.header("Nothing-Like-This") is None
    assert exchange.started_at.tzinfo is not None
    assert exchange.duration >= 0


def test_the_request_head_is_what_the_server_received(server, fetcher):
    server.reset()
    exchange = fetch(fetcher, server.url("/page?q=%C3%A9t%C3%A9"), Referer="http://example.org/")
    head = exchange.request_head
    assert head.startswith(b"GET /page?q=%C3%A9t%C3%A9 HTTP/1.1\r\n")
    assert head.endswith(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert f"Host: 127.0.0.1:{server.server_address[1]}".encode() in lines
    assert b"User-Agent: TestArchiver/1.0 (+https://archive.example/)" in lines
    assert b"Accept-Encoding: gzip, deflate" in lines
    assert b"Referer: http://example.org/" in lines
    [(_, _, received)] = server.requests
    assert received == head


def test_chunked_transfer_is_removed_and_the_length_given(server, fetcher):
    exchange = fetch(fetcher, server.url("/chunked"))
    whole = b"".join(CHUNKS)
    assert body_of(exchange) == whole
    assert exchange.header("Transfer-Encoding") is None
    assert exchange.header("Content-Length") == str(len(whole))
    assert [name.lower() for name, _ in exchange.headers].count("content-length") == 1
    assert exchange.payload_digest == digest(whole)


def test_chunked_with_a_content_length_too_gets_the_real_length(server, fetcher):
    exchange = fetch(fetcher, server.url("/chunked-with-length"))
    assert exchange.header("Content-Length") == str(len(b"".join(CHUNKS)))
    assert [name.lower() for name, _ in exchange.headers].count("content-length") == 1


@pytest.mark.parametrize("path", ["/gzip", "/gzip-chunked"])
def test_gzip_content_encoding_is_kept_byte_for_byte(server, fetcher, path):
    exchange = fetch(fetcher, server.url(path))
    assert exchange.header("Content-Encoding") == "gzip"
    assert body_of(exchange) == GZIPPED
    assert exchange.payload_digest == digest(GZIPPED)
    assert exchange.decoded_body() == TEXT
    assert exchange.decoded_body(limit=100) == TEXT[:100]
    assert body_of(exchange) == GZIPPED  # decoding did not consume the body


@pytest.mark.parametrize("path", ["/deflate-zlib", "/deflate-raw"])
def test_deflate_both_ways_is_decoded(server, fetcher, path):
    assert fetch(fetcher, server.url(path)).decoded_body() == TEXT


@pytest.mark.parametrize("path", ["/not-gzip", "/brotli"])
def test_an_undecodable_body_decodes_to_nothing(server, fetcher, path):
    exchange = fetch(fetcher, server.url(path))
    assert exchange.error is None
    assert exchange.body_length > 0
    assert exchange.decoded_body() == b""


def test_an_identity_body_is_returned_up_to_the_limit(server, fetcher):
    exchange = fetch(fetcher, server.url("/page"))
    assert exchange.decoded_body() == PAGE
    assert exchange.decoded_body(limit=10) == PAGE[:10]


def test_sha1_can_be_chosen(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, digest_algorithm="sha1")
    exchange = fetch(fetcher, server.url("/page"))
    assert exchange.payload_digest == digest(PAGE, "sha1")


def test_an_unknown_digest_algorithm_is_refused():
    with pytest.raises(ValueError):
        Fetcher(user_agent="t", digest_algorithm="md5")


def test_the_size_cap_truncates_the_body(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, max_response_bytes=100_000)
    exchange = fetch(fetcher, server.url("/big"))
    assert exchange.truncated == "length"
    assert exchange.body_length == 100_000
    assert body_of(exchange) == BIG[:100_000]
    assert exchange.payload_digest == digest(BIG[:100_000])
    assert exchange.header("Content-Length") == str(len(BIG))  # what the server announced


def test_a_body_exactly_at_the_cap_is_not_truncated(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, max_response_bytes=len(PAGE))
    exchange = fetch(fetcher, server.url("/page"))
    assert exchange.truncated is None
    assert body_of(exchange) == PAGE


def test_a_big_body_is_read_whole_and_spooled_to_disk(server, fetcher):
    exchange = fetch(fetcher, server.url("/big"))
    assert exchange.truncated is None
    assert body_of(exchange) == BIG
    assert exchange.payload_digest == digest(BIG)
    exchange.close()


def test_the_fetch_time_cap_truncates_an_endless_body(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, max_fetch_seconds=0.5)
    exchange = fetch(fetcher, server.url("/drip"))
    assert exchange.error is None
    assert exchange.truncated == "time"
    data = body_of(exchange)
    assert len(data) == exchange.body_length
    assert set(data) <= {ord("x")}
    assert exchange.payload_digest == digest(data)


def test_a_body_that_stops_coming_is_cut_at_the_read_timeout(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, read_timeout=0.3)
    exchange = fetch(fetcher, server.url("/stall"))
    assert exchange.status == 200
    assert exchange.truncated == "time"
    assert body_of(exchange) == b"y" * 10


def test_no_answer_within_the_read_timeout_is_an_error(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, read_timeout=0.3)
    exchange = fetch(fetcher, server.url("/hang"))
    assert (exchange.error_code, exchange.error) == (FetchError.TIMEOUT, "timed out")
    assert exchange.status == 0
    assert exchange.body_length == 0


def test_a_fetch_the_crawl_ends_before_an_answer_says_so(server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, read_timeout=0.3)
    with fetcher.session() as session:
        exchange = session.fetch(server.url("/hang"), interrupted=lambda: "stopped")
    # Not a timeout of the site: the crawl's own reason, which the monitoring page leaves aside.
    assert (exchange.error_code, exchange.error, exchange.status) == (FetchError.INTERRUPTED, "stopped", 0)


def test_a_server_closing_early_gives_a_disconnect_truncation(server, fetcher):
    exchange = fetch(fetcher, server.url("/cut"))
    assert exchange.error is None
    assert exchange.truncated == "disconnect"
    assert body_of(exchange) == b"z" * 300
    assert exchange.payload_digest == digest(b"z" * 300)


def test_a_connection_closed_without_a_response_is_an_error(server, fetcher):
    exchange = fetch(fetcher, server.url("/close-silently"))
    assert exchange.error_code == FetchError.DISCONNECTED
    assert exchange.error == "closed by the server without a response"


def test_too_many_headers_is_an_error(server, fetcher):
    exchange = fetch(fetcher, server.url("/many-headers"))
    assert (exchange.error_code, exchange.error) == (FetchError.PROTOCOL, "too many headers")


def test_redirects_are_not_followed(server, fetcher):
    server.reset()
    exchange = fetch(fetcher, server.url("/redirect"))
    assert exchange.status == 302
    assert exchange.header("Location") == "/page"
    assert [path for _, path, _ in server.requests] == ["/redirect"]


def test_an_error_status_is_a_response_not_an_error(server, fetcher):
    exchange = fetch(fetcher, server.url("/missing"))
    assert (exchange.error, exchange.status, body_of(exchange)) == (None, 404, b"not here")


def test_latin1_header_bytes_survive(server, fetcher):
    exchange = fetch(fetcher, server.url("/latin1"))
    assert exchange.reason == "Fine"
    assert exchange.header("X-Name").encode("latin-1") == b"caf\xe9"


def test_one_connection_is_kept_alive_for_several_fetches(server, fetcher):
    server.reset()
    with fetcher.session() as session:
        exchanges = [session.fetch(server.url(path)) for path in ("/page", "/chunked", "/gzip", "/page")]
    assert all(exchange.error is None for exchange in exchanges)
    assert server.connections == 1
    assert len({port for port, _, _ in server.requests}) == 1


def test_a_kept_alive_connection_closed_by_the_server_is_replaced(server, fetcher):
    with fetcher.session() as session:
        first = session.fetch(server.url("/close-after"))
        second = session.fetch(server.url("/page"))
    assert (first.status, body_of(first)) == (200, b"once")
    assert (second.error, body_of(second)) == (None, PAGE)


def test_sessions_do_not_share_connections(server, fetcher):
    server.reset()
    fetch(fetcher, server.url("/page"))
    fetch(fetcher, server.url("/page"))
    assert server.connections == 2


def test_a_refused_address_is_an_error_and_never_contacted(server):
    server.reset()
    exchange = fetch(Fetcher(user_agent="t"), server.url("/page"))  # default: public addresses only
    assert exchange.error_code == FetchError.REFUSED
    assert exchange.error.startswith("address refused: 127.0.0.1 is a loopback address")
    assert exchange.status == 0
    assert exchange.request_head == b""
    assert server.connections == 0


def test_a_name_resolving_to_a_refused_address_is_refused(server, monkeypatch):
    monkeypatch.setattr(
        netguard.socket,
        "getaddrinfo",
        lambda host, port, **kwargs: [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))],
    )
    server.reset()
    policy = netguard.AddressPolicy()
    exchange = fetch(
        Fetcher(user_agent="t", address_check=policy.refusal),
        f"http://archive.test:{server.server_address[1]}/",
    )
    assert exchange.error_code == FetchError.REFUSED
    assert exchange.error.startswith("address refused: 127.0.0.1")
    assert server.connections == 0


def test_the_address_check_sees_the_address_connected_to(server):
    seen = []
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: seen.append(ip))
    assert fetch(fetcher, server.url("/page")).error is None
    assert seen == ["127.0.0.1"]


def test_a_closed_port_is_connection_refused(fetcher):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    exchange = fetch(fetcher, f"http://127.0.0.1:{port}/")
    assert (exchange.error_code, exchange.error) == (FetchError.CONNECTION_REFUSED, "connection refused")


def test_a_name_that_does_not_resolve_is_a_dns_error(fetcher, monkeypatch):
    def no_such_name(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(netguard.socket, "getaddrinfo", no_such_name)
    exchange = fetch(fetcher, "http://no-such-host.test/")
    assert exchange.error_code == FetchError.DNS
    assert exchange.error == "DNS lookup failed: Name or service not known"


@pytest.mark.parametrize(
    "url",
    ["ftp://example.org/file", "http://[::1/", "not a url", "http://exa mple.org/", "http://a.org:99999/"],
)
def test_bad_urls_are_errors_not_exceptions(fetcher, url):
    exchange = fetch(fetcher, url)
    assert exchange.error_code == FetchError.INVALID_URL
    assert exchange.error.startswith("invalid URL")
    assert exchange.status == 0


def test_a_dns_lookup_that_does_not_answer_is_a_dns_timeout(monkeypatch):
    answered = threading.Event()

    def slow_getaddrinfo(*args, **kwargs):
        answered.wait(5)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(netguard.socket, "getaddrinfo", slow_getaddrinfo)
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, connect_timeout=0.2)
    try:
        exchange = fetch(fetcher, "http://slow-dns.test/")
        assert (exchange.error_code, exchange.error) == (FetchError.DNS, "DNS lookup timed out")
    finally:
        answered.set()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('Text/HTML; Charset="ISO-8859-1"', ("text/html", "iso-8859-1")),
        ("application/json", ("application/json", None)),
        ("text/plain; format=flowed; charset=utf-8", ("text/plain", "utf-8")),
        ("", ("", None)),
        (None, ("", None)),
        ("text/html; charset=", ("text/html", None)),
    ],
)
def test_media_type(value, expected):
    assert media_type(value) == expected


def test_decoded_body_of_a_hand_made_exchange_with_two_gzip_members():
    data = gzip.compress(b"one ", mtime=0) + gzip.compress(b"two", mtime=0)
    exchange = Exchange(
        url="http://example.org/", headers=[("Content-Encoding", "gzip")], body=io.BytesIO(data)
    )
    assert exchange.decoded_body() == b"one two"
    exchange.close()
    assert exchange.decoded_body() == b""  # a closed body is no longer readable, and that does not raise


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """The same server behind TLS, with a self-signed certificate made for the test."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    directory = tmp_path_factory.mktemp("tls")
    certificate, key = directory / "cert.pem", directory / "key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    command += ["-subj", "/CN=127.0.0.1", "-keyout", str(key), "-out", str(certificate)]
    subprocess.run(command, check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    with LocalServer() as running:
        running.socket = context.wrap_socket(running.socket, server_side=True)
        yield running


def test_https_is_recorded_like_http(tls_server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None, verify_tls=False)
    url = tls_server.url("/chunked").replace("http://", "https://")
    tls_server.reset()
    with fetcher.session() as session:
        first, second = session.fetch(url), session.fetch(url)
    assert (first.error, first.status, first.peer_ip) == (None, 200, "127.0.0.1")
    assert body_of(first) == b"".join(CHUNKS)
    assert first.request_head.startswith(b"GET /chunked HTTP/1.1\r\n")
    assert second.request_head == first.request_head
    assert tls_server.connections == 1


def test_an_invalid_certificate_is_an_error_when_verified(tls_server):
    fetcher = Fetcher(user_agent="t", address_check=lambda ip: None)
    exchange = fetch(fetcher, tls_server.url("/page").replace("http://", "https://"))
    assert exchange.error_code == FetchError.TLS
    assert exchange.error.startswith("TLS error: certificate verify failed")
