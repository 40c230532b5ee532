"""The machinery of the test website: a router of handlers on a threading HTTP server.

A handler is a function ``handler(request: Request) -> Response`` registered on
a :class:`Router` with a path pattern; ``<name>`` matches one path segment,
``<int:name>`` digits and ``<path:name>`` the rest of the path, and the values
arrive in ``request.params``. Adding a page is adding a function (see
``pages.py``); nothing here needs to change.
"""

from __future__ import annotations

import collections
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

HOST = "127.0.0.1"  # the test website never listens on anything else

Handler = Callable[["Request"], "Response"]


@dataclass
class Response:
    """What a handler answers; ``chunks`` (and ``length``, their total) stream the body instead."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"
    chunks: Iterable[bytes] | None = None
    length: int = 0


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
        )
        site.requests.append(request)
        found = site.router.resolve(request.path)
        if found is None:
            response = not_found()
        else:
            handler, request.params = found
            try:
                response = handler(request)
            except Exception as error:  # a broken handler answers 500, the server goes on
                site.log(f"error in handler for {self.path}: {error!r}")
                response = text(f"Handler error: {error!r}\n", status=500)
        length = response.length if response.chunks is not None else len(response.body)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(length))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if not send_body:
            return
        if response.chunks is None:
            self.wfile.write(response.body)
            return
        self.wfile.flush()  # the headers now, the body as it comes
        for chunk in response.chunks:
            self.wfile.write(chunk)
            self.wfile.flush()

    def log_message(self, format, *args):
        self.server.site.log(f"{self.address_string()} {format % args}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a request still sleeping in /slow does not hold up the exit
    allow_reuse_address = True
    site: TestSite

    def handle_error(self, request, client_address):
        # A client that gave up (timeout) before the answer: normal here, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError | TimeoutError | ssl.SSLError):
            return
        super().handle_error(request, client_address)


class TestSite:
    """The synthetic test website, on ``127.0.0.1`` only.

    ``with TestSite(port=0) as site: requests.get(site.url("/ok"))`` — ``port=0``
    takes a free port. ``seed`` is kept as ``site.seed`` for the handlers: the
    generated parts of the site (to come) will derive from it, so that the same
    seed always gives the same site. ``tls=(certificate_file, key_file)`` serves
    HTTPS instead of HTTP.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        port: int = 0,
        *,
        seed: int = 0,
        router: Router | None = None,
        log: Callable[[str], None] | None = None,
        tls: tuple[str, str] | None = None,
    ):
        from webarchive.testsite.pages import router as default_router

        self.seed = seed
        self.router = router or default_router
        self._log = log
        self._tls = tls
        self.scheme = "https" if tls else "http"
        self.stopping = threading.Event()  # set on stop: handlers that wait should wait on it
        # What the site received, for the tests to look at.
        self.requests: collections.deque[Request] = collections.deque(maxlen=10_000)
        self._server = _Server((HOST, port), _RequestHandler, bind_and_activate=False)
        self._server.site = self
        self._thread: threading.Thread | None = None
        self._bound = False
        self._serving = False

    @property
    def host(self) -> str:
        return HOST

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.base_url}{path}"

    def requests_to(self, path: str) -> list[Request]:
        """The requests received for ``path`` (without its query), oldest first."""
        return [request for request in list(self.requests) if request.path == path]

    def log(self, message: str) -> None:
        if self._log is not None:
            self._log(message)

    def bind(self) -> None:
        if not self._bound:
            try:
                self._server.server_bind()
                self._server.server_activate()
                if self._tls:
                    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                    context.load_cert_chain(*self._tls)
                    # The handshake happens in the request's thread (handler setup), not in accept.
                    self._server.socket = context.wrap_socket(
                        self._server.socket, server_side=True, do_handshake_on_connect=False
                    )
            except OSError:
                self._server.server_close()
                raise
            self._bound = True

    def start(self) -> TestSite:
        """Serve in a background thread; returns once the socket is listening."""
        self.bind()
        self._serving = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="testsite", daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` (from another thread) or Ctrl-C."""
        self.bind()
        self._serving = True
        try:
            self._server.serve_forever(poll_interval=0.2)
        finally:
            self._serving = False
            self.stopping.set()
            self._server.server_close()

    def stop(self) -> None:
        """Stop serving and close the socket; waiting handlers (``/slow``) return at once."""
        self.stopping.set()
        if self._serving:
            self._server.shutdown()  # returns once serve_forever has returned
            self._serving = False
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> TestSite:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()
