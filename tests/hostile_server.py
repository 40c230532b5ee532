"""A hostile website on 127.0.0.1, for the tests of the limits a crawl worker keeps.

Each path is one way a site can make a crawler spend memory or time (sizes and intervals are query
parameters, so tests stay fast):

- ``/flood?links=N&start=I`` — a page of N distinct links (to ``/page/<d>/<i>``, small empty pages), and a
  frame holding the next such page (the next N links);
- ``/line?bytes=N`` — one line of N bytes repeating one link;
- ``/bomb?bytes=N`` — a gzip bomb: N bytes of repeated links, sent compressed with
  ``Content-Encoding: gzip`` (a few hundred kilobytes on the wire);
- ``/dribble?interval=S&bytes=N`` — announces N bytes and sends one every S seconds;
- ``/endless?interval=S`` — a chunked response that never ends (a chunk every S seconds, 0: flat out).

``robots.txt`` and ``sitemap.xml`` are 404s, so a crawl starts with the page it was given.
"""

from __future__ import annotations

import threading
import time
import zlib
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LINK = b'<a href="/same">x</a>'
BLOCK = 64 * 1024


@cache
def gzip_bomb(size: int) -> bytes:
    """``size`` bytes of one repeated link, gzip-compressed (computed once per size)."""
    block = LINK * (1024 * 1024 // len(LINK))
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = []
    left = size
    while left > 0:
        parts.append(compressor.compress(block[:left]))
        left -= len(block)
    parts.append(compressor.flush())
    return b"".join(parts)


class HostileServer(ThreadingHTTPServer):
    """The hostile site, served from a thread: ``with HostileServer() as server: server.url("/flood")``."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stopping = threading.Event()
        self.requests: list[str] = []  # paths asked for, in order
        self.started: dict[str, threading.Event] = {}  # path -> set once its answer has begun
        self.lock = threading.Lock()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"

    def answer_started(self, path: str) -> threading.Event:
        """An event set when the server begins answering ``path`` (its headers are sent)."""
        with self.lock:
            return self.started.setdefault(path, threading.Event())

    def __enter__(self) -> HostileServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: HostileServer

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        query = {name: values[-1] for name, values in parse_qs(parts.query).items()}
        with self.server.lock:
            self.server.requests.append(self.path)
        route = {
            "/flood": self._flood,
            "/line": self._line,
            "/bomb": self._bomb,
            "/dribble": self._dribble,
            "/endless": self._endless,
            "/slow-headers": self._slow_headers,
        }.get(parts.path)
        try:
            if route is not None:
                route(query)
            elif parts.path.startswith("/page/"):
                self._send(200, b"<html><body>a page</body></html>")
            else:
                self._send(404, b"not here")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the crawler hung up: what these answers are for

    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        self.server.answer_started(self.path).set()

    def _send(self, status: int, body: bytes, content_type: str = "text/html") -> None:
        self._head(status, {"Content-Type": content_type, "Content-Length": str(len(body))})
        self.wfile.write(body)

    def _flood(self, query: dict) -> None:
        count = int(query.get("links", 100_000))
        start = int(query.get("start", 0))
        # The next flood page is a frame (a requisite, fetched before any link): page after page.
        following = f"/flood?links={count}&start={start + count}"
        head, tail = f'<html><body><iframe src="{following}"></iframe>'.encode(), b"</body></html>"
        padding = "p" * int(query.get("padding", 40))  # URLs as long as a real site's paths
        # 2,000 a directory: the crawler's trap guard lets so many through (5,000 a directory).
        lines = [
            f'<a href="/page/{i // 2000}/{padding}{i}">{i}</a>\n'.encode()
            for i in range(start, start + count)
        ]
        size = len(head) + sum(map(len, lines)) + len(tail)
        self._head(200, {"Content-Type": "text/html", "Content-Length": str(size)})
        self.wfile.write(head)
        for start in range(0, count, 1000):
            self.wfile.write(b"".join(lines[start : start + 1000]))
        self.wfile.write(tail)

    def _line(self, query: dict) -> None:
        size = int(query.get("bytes", 20 * 1024 * 1024))
        self._head(200, {"Content-Type": "text/html", "Content-Length": str(size)})
        block = LINK * (BLOCK // len(LINK))
        left = size
        while left > 0:
            self.wfile.write(block[:left])
            left -= len(block)

    def _bomb(self, query: dict) -> None:
        body = gzip_bomb(int(query.get("bytes", 200 * 1024 * 1024)))
        self._head(
            200,
            {"Content-Type": "text/html", "Content-Encoding": "gzip", "Content-Length": str(len(body))},
        )
        self.wfile.write(body)

    def _dribble(self, query: dict) -> None:
        interval = float(query.get("interval", 5))
        size = int(query.get("bytes", 120))
        self._head(200, {"Content-Type": "text/html", "Content-Length": str(size)})
        for _ in range(size):
            self.wfile.write(b"x")
            self.wfile.flush()
            if self.server.stopping.wait(interval):
                return

    def _endless(self, query: dict) -> None:
        interval = float(query.get("interval", 0))
        self._head(200, {"Content-Type": "text/html", "Transfer-Encoding": "chunked"})
        chunk = b"y" * 4096
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        while not self.server.stopping.is_set():
            self.wfile.write(framed)
            self.wfile.flush()
            if interval:
                self.server.stopping.wait(interval)

    def _slow_headers(self, query: dict) -> None:
        """A status line, then a header a byte at a time, never ending: no body is ever reached."""
        interval = float(query.get("interval", 0.5))
        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        self.wfile.flush()
        self.server.answer_started(self.path).set()
        while not self.server.stopping.wait(interval):
            self.wfile.write(b"x")
            self.wfile.flush()


def main() -> None:  # pragma: no cover - by hand: python -m tests.hostile_server
    with HostileServer() as server:
        print(server.url("/"), flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":  # pragma: no cover
    main()
