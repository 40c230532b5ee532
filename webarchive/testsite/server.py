"""The machinery of the test website: a router of handlers on a threading HTTP server.

A handler is a function ``handler(request: Request) -> Response`` registered on
a :class:`Router` with a path pattern; ``<name>`` matches one path segment,
``<int:name>`` digits and ``<path:name>`` the rest of the path, and the values
arrive in ``request.params``. Adding a page is adding a function (see
``pages.py``); nothing here needs to change.

A site listens on up to three loopback addresses on the same port (Linux routes
all of 127.0.0.0/8 to the loopback interface): 127.0.0.1 is the site itself,
127.0.0.2 its "CDN" and 127.0.0.3 an "external" site, each with its own router.

Redirecting host names: ``site.add_redirect_host("old-name.fr", "http://new-name.fr/")``
makes the site answer a request whose ``Host:`` header names ``old-name.fr`` (any
port) for ``/`` (or the ``path=`` given) with a redirect to that location, whichever
address received it; other host names and paths are answered as before. It stands in for the web
servers of other domains (redirect discovery of the broad-crawl preparation): the
tests make those names resolve to the site's address.
"""

from __future__ import annotations

import collections
import datetime
import errno
import hashlib
import html
import re
import ssl
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")  # the site, its CDN, an external site
HOST = HOSTS[0]  # the test website never listens on anything but these loopback addresses

Handler = Callable[["Request"], "Response"]


@dataclass
class Response:
    """What a handler answers; ``chunks`` (and ``length``, their total) stream the body instead.

    ``chunked`` sends the body with ``Transfer-Encoding: chunked`` framing instead
    of a ``Content-Length`` (to HTTP/1.1 clients; HTTP/1.0 ones get the length).
    """

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"
    chunks: Iterable[bytes] | None = None
    length: int = 0
    chunked: bool = False


# With TestSite(conditional=True), every whole 200 answer has an ETag and this Last-Modified.
LAST_MODIFIED = "Sun, 01 Nov 2026 00:00:00 GMT"
CHUNK_SIZE = 1024  # chunked bodies are cut in pieces this size: pages of a few KiB make several


def html_page(title: str, body: str, *, status: int = 200) -> Response:
    """An HTML page; ``body`` is already HTML, ``title`` is text."""
    page = (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n"
    )
    return Response(status=status, body=page.encode())


def text(content: str, *, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Response:
    return Response(status=status, body=content.encode(), content_type=content_type)


def redirect(location: str, *, status: int = 302) -> Response:
    """A redirect with ``location`` sent as it is (relative or absolute)."""
    response = html_page(
        HTTPStatus(status).phrase,
        f"<p>Moved to <a href='{html.escape(location)}'>{html.escape(location)}</a>.</p>",
        status=status,
    )
    response.headers["Location"] = location
    return response


def not_found(message: str = "There is no page here.") -> Response:
    return html_page("Not Found", f"<p>{html.escape(message)}</p>", status=404)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names in lower case
    site: TestSite
    params: dict[str, str] = field(default_factory=dict)
    host_index: int = 0  # which of the site's addresses received it (0: 127.0.0.1, 1: .2, 2: .3)

    def arg(self, name: str, default: str = "") -> str:
        """The first value of a query parameter."""
        values = self.query.get(name)
        return values[0] if values else default

    @property
    def base_url(self) -> str:
        """The site as the client addressed it (its Host header), e.g. ``http://127.0.0.1:8800``."""
        host = self.headers.get("host") or f"{HOST}:{self.site.port}"
        return f"{self.site.scheme}://{host}"

    def absolute(self, path: str) -> str:
        return f"{self.base_url}{path}"


_CONVERTERS = {"str": "[^/]+", "int": "[0-9]+", "path": ".+"}
_PLACEHOLDER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")


@dataclass
class Route:
    pattern: str
    regex: re.Pattern
    handler: Handler
    title: str
    example: str  # a path to link to from the index page ("" for none)


class Router:
    """Path patterns to handlers, first match wins."""

    def __init__(self):
        self.routes: list[Route] = []

    def route(self, pattern: str, *, title: str = "", example: str | None = None):
        """Register the decorated handler for ``pattern`` (e.g. ``/redirect/<int:n>``)."""

        def register(handler: Handler) -> Handler:
            self.add(pattern, handler, title=title, example=example)
            return handler

        return register

    def add(self, pattern: str, handler: Handler, *, title: str = "", example: str | None = None) -> None:
        regex = ""
        position = 0
        for match in _PLACEHOLDER.finditer(pattern):
            regex += re.escape(pattern[position : match.start()])
            converter = _CONVERTERS[match["converter"] or "str"]
            regex += f"(?P<{match['name']}>{converter})"
            position = match.end()
        regex += re.escape(pattern[position:])
        if example is None:
            example = "" if "<" in pattern else pattern
        self.routes.append(Route(pattern, re.compile(f"^{regex}$"), handler, title, example))

    def resolve(self, path: str) -> tuple[Handler, dict[str, str]] | None:
        for route in self.routes:
            match = route.regex.match(path)
            if match:
                return route.handler, match.groupdict()
        return None


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = "webarchive-testsite/1"
    # Buffered: headers and body leave in one write (unbuffered, Nagle and delayed
    # ACKs add 40 ms to every request on a kept-alive connection).
    wbufsize = -1
    timeout = 30  # an idle kept-alive connection frees its thread after this

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.timeout)
            self.request.do_handshake()
        super().setup()

    def do_GET(self):
        self._answer(send_body=True)

    def do_HEAD(self):
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        site = self.server.site
        parts = urlsplit(self.path)
        request = Request(
            method=self.command,
            path=parts.path or "/",
            query=parse_qs(parts.query, keep_blank_values=True),
            headers={name.lower(): value for name, value in self.headers.items()},
            site=site,
            host_index=self.server.host_index,
        )
        site.requests.append(request)
        redirect_to = site.redirect_hosts.get((_host_name(request.headers.get("host", "")), request.path))
        found = None if redirect_to else site.routers[request.host_index].resolve(request.path)
        if redirect_to is not None:
            location, status = redirect_to
            response = redirect(location, status=status)
        elif found is None:
            response = not_found()
        else:
            handler, request.params = found
            try:
                response = handler(request)
            except Exception as error:  # a broken handler answers 500, the server goes on
                site.log(f"error in handler for {self.path}: {error!r}")
                response = text(f"Handler error: {error!r}\n", status=500)
        if site.conditional and self._not_modified(request, response):
            return
        chunked = response.chunked and self.request_version == "HTTP/1.1"
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            length = response.length if response.chunks is not None else len(response.body)
            self.send_header("Content-Length", str(length))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not send_body:
            return
        if response.chunks is None:
            if chunked:
                body = response.body
                for start in range(0, len(body), CHUNK_SIZE):
                    self._write_chunk(body[start : start + CHUNK_SIZE])
                self.wfile.write(b"0\r\n\r\n")
            else:
                self.wfile.write(response.body)
            return
        self.wfile.flush()  # the headers now, the body as it comes
        for chunk in response.chunks:
            if chunked:
                self._write_chunk(chunk)
            else:
                self.wfile.write(chunk)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _not_modified(self, request: Request, response: Response) -> bool:
        """Give a whole 200 answer validators; answer 304 when the request's match them."""
        if response.status != 200 or response.chunks is not None:
            return False
        etag = f'"{hashlib.sha256(response.body).hexdigest()[:20]}"'
        response.headers = {**response.headers, "ETag": etag, "Last-Modified": LAST_MODIFIED}
        asked = request.headers.get("if-none-match")
        if asked is not None:
            fresh = etag in [tag.strip() for tag in asked.split(",")]
        else:
            fresh = request.headers.get("if-modified-since") == LAST_MODIFIED
        if not fresh:
            return False
        self.send_response(304)
        self.send_header("ETag", etag)
        self.send_header("Last-Modified", LAST_MODIFIED)
        self.send_header("Cache-Control", "max-age=60")
        self.end_headers()
        return True

    def _write_chunk(self, chunk: bytes) -> None:
        if chunk:  # an empty chunk would end the body
            self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))

    def log_request(self, code="-", size="-"):
        if self.server.site._log is not None:  # formatting the line costs, even for nobody
            super().log_request(code, size)

    def log_message(self, format, *args):
        self.server.site.log(f"{self.address_string()} {format % args}")


def _host_name(host_header: str) -> str:
    """The name in a ``Host:`` header, without its port, in lower case."""
    return (urlsplit(f"//{host_header}").hostname or "").rstrip(".")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a request still sleeping in /slow does not hold up the exit
    allow_reuse_address = True
    site: TestSite
    host_index = 0

    def handle_error(self, request, client_address):
        # A client that gave up (timeout) before the answer: normal here, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError | ssl.SSLError):
            return
        super().handle_error(request, client_address)


class TestSite:
    """The synthetic test website, on ``127.0.0.1`` (and with ``hosts`` > 1 on 127.0.0.2 and .3).

    ``with TestSite(port=0) as site: requests.get(site.url("/ok"))`` — ``port=0``
    takes a free port (the same one on every address). The generated website
    under ``/site/`` (see :mod:`webarchive.testsite.generated`) derives from
    ``seed`` and ``pages``: the same pair always gives the same site.
    ``hosts=2`` adds its CDN on 127.0.0.2, ``hosts=3`` also an external site on
    127.0.0.3. ``tls=(certificate_file, key_file)`` serves HTTPS instead of HTTP.
    ``conditional=True`` gives whole 200 answers an ``ETag`` and ``Last-Modified`` and
    answers conditional requests that match them with ``304 Not Modified``.
    :meth:`add_redirect_host` makes requests for other host names answer redirects.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        port: int = 0,
        *,
        seed: int = 0,
        pages: int = 100,
        hosts: int = 1,
        large_file_bytes: int = 2 * 1024 * 1024,
        slow_seconds: float = 0.3,
        today: datetime.date | None = None,
        cache_size: int = 20_000,
        router: Router | None = None,
        log: Callable[[str], None] | None = None,
        tls: tuple[str, str] | None = None,
        conditional: bool = False,
    ):
        from webarchive.testsite.generated import GeneratedSite
        from webarchive.testsite.pages import cdn_router, external_router
        from webarchive.testsite.pages import router as default_router

        if not 1 <= hosts <= len(HOSTS):
            raise ValueError(f"hosts must be between 1 and {len(HOSTS)}")
        if not 0 <= port <= 65535:
            raise ValueError("port must be between 0 and 65535")
        self.seed = seed
        self.conditional = conditional  # validators on whole 200 answers, 304 to conditional requests
        self.hosts = hosts
        self.router = router or default_router
        self.routers = [self.router, cdn_router, external_router][:hosts]
        self._log = log
        self._tls = tls
        self.scheme = "https" if tls else "http"
        self.stopping = threading.Event()  # set on stop: handlers that wait should wait on it
        # What the site received, for the tests to look at.
        self.requests: collections.deque[Request] = collections.deque(maxlen=10_000)
        # (host name, path) -> (location, status); see add_redirect_host.
        self.redirect_hosts: dict[tuple[str, str], tuple[str, int]] = {}
        self._port = port
        self._server = self._new_server(0, port)
        self._servers = [self._server]  # one per address, the site's own first
        self._threads: list[threading.Thread] = []
        self._bound = False
        self._serving = False
        self.generated = GeneratedSite(
            self,
            seed=seed,
            pages=pages,
            large_file_bytes=large_file_bytes,
            slow_seconds=slow_seconds,
            today=today,
            cache_size=cache_size,
        )

    def _new_server(self, index: int, port: int) -> _Server:
        server = _Server((HOSTS[index], port), _RequestHandler, bind_and_activate=False)
        server.site = self
        server.host_index = index
        return server

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def pages(self) -> int:
        return self.generated.pages

    @property
    def bound(self) -> bool:
        """Whether the site listens (its port is then final)."""
        return self._bound

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.base_url}{path}"

    def host_url(self, index: int, path: str = "/") -> str:
        """A URL on one of the site's addresses: 0 is 127.0.0.1, 1 is 127.0.0.2 (CDN), 2 is 127.0.0.3."""
        if not 0 <= index < len(HOSTS):
            raise ValueError(f"host index must be between 0 and {len(HOSTS) - 1}")
        return f"{self.scheme}://{HOSTS[index]}:{self.port}{path}"

    def ground_truth(self, **options) -> set[str]:
        """The URLs a crawl must capture; see :func:`webarchive.testsite.groundtruth.ground_truth`."""
        return self.generated.ground_truth(**options)

    def ground_truth_hops(self, **options) -> dict[str, str]:
        """Like :meth:`ground_truth`, with the hop path each URL is first reached by."""
        return self.generated.ground_truth_hops(**options)

    def page_urls(self) -> list[str]:
        """The generated site's numbered pages (home and sections included), page 0 first."""
        return self.generated.page_urls()

    def feature_urls(self) -> dict[str, list[str]]:
        """Example URLs of each feature a crawler must handle, by feature name."""
        return self.generated.feature_urls()

    def add_redirect_host(self, name: str, location: str, *, path: str = "/", status: int = 301) -> None:
        """Answer ``path`` with a redirect to ``location`` (sent as it is) when ``Host:`` is ``name``."""
        self.redirect_hosts[(name.lower().rstrip("."), path)] = (location, status)

    def requests_to(self, path: str) -> list[Request]:
        """The requests received for ``path`` (without its query), oldest first."""
        return [request for request in list(self.requests) if request.path == path]

    def log(self, message: str) -> None:
        if self._log is not None:
            self._log(message)

    def bind(self) -> None:
        """Listen on every address of the site, on one port (with ``port=0``, one free everywhere)."""
        if self._bound:
            return
        attempts = 20 if self._port == 0 else 1
        for attempt in range(attempts):
            try:
                self._bind_all()
                break
            except OSError as error:
                for server in self._servers:
                    server.server_close()
                # Port 0 gave a port free on 127.0.0.1 that another program holds on .2 or .3: try another.
                if error.errno != errno.EADDRINUSE or attempt == attempts - 1:
                    raise
                self._server = self._new_server(0, self._port)
                self._servers = [self._server]
        self._bound = True

    def _bind_all(self) -> None:
        self._listen(self._server)
        port = self.port
        for index in range(1, self.hosts):
            server = self._new_server(index, port)
            self._servers.append(server)
            self._listen(server)

    def _listen(self, server: _Server) -> None:
        server.server_bind()
        server.server_activate()
        if self._tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self._tls)
            # The handshake happens in the request's thread (handler setup), not in accept.
            server.socket = context.wrap_socket(
                server.socket, server_side=True, do_handshake_on_connect=False
            )

    def _serve_in_threads(self, servers: list[_Server]) -> None:
        for server in servers:
            thread = threading.Thread(
                target=server.serve_forever, args=(0.05,), name=f"testsite-{server.host_index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def start(self) -> TestSite:
        """Serve in background threads; returns once the sockets are listening."""
        self.bind()
        self._serving = True
        self._serve_in_threads(self._servers)
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` (from another thread) or Ctrl-C."""
        self.bind()
        self._serving = True
        self._serve_in_threads(self._servers[1:])
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._serving = False
            self.stopping.set()
            for server in self._servers[1:]:
                server.shutdown()
            for server in self._servers:
                server.server_close()

    def stop(self) -> None:
        """Stop serving and close the sockets; waiting handlers (``/slow``) return at once."""
        self.stopping.set()
        if self._serving:
            for server in self._servers:
                server.shutdown()  # returns once serve_forever has returned
            self._serving = False
        for thread in self._threads:
            thread.join()
        self._threads = []
        for server in self._servers:
            server.server_close()

    def __enter__(self) -> TestSite:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
