"""Many small websites told apart by host name, on many loopback addresses: a broad crawl's test web.

``site-N.<suffix>`` (N from 0; suffix ``fr`` by default, as a domain must end with a public suffix
to be a domain of the archive, and nothing leaves the machine: the names resolve only through the
benchmark's own dnsmasq) is a deterministic website of ``pages`` pages with host-relative links only:

- ``/robots.txt``: everything allowed, and its sitemap;
- ``/sitemap.xml``: every page (the crawler asks for it whatever robots.txt says);
- ``/`` (page 0) and ``/p/<n>.html`` (n from 1 to pages - 1): each links to the pages n + 1,
  2n + 1 and 2n + 2 (modulo ``pages``) and to ``/``: every page within a few hops of ``/``;
- ``/style.css`` and ``/logo.png``: one stylesheet and one image shared by the site's pages.

So a crawl of a site has exactly ``pages + 4`` URLs (:func:`urls_per_site`). Bodies are a few kB,
their text varying with N and the page. Anything else is 404, as is a host name the server does not
serve on the address the request came to (``sites_per_address`` sites share each address, as on a
shared host: site N is on the address ``first_address + N // sites_per_address``). A request naming an address
instead of a host (``Host: 127.64.0.1:port``) gets the address's first site, for clients without
the benchmark's resolver.

One process, one asyncio loop, HTTP/1.1 parsed by h11, keep-alive: thousands of connections at a
few hundred requests per second on a fraction of a CPU. It listens on one port of every address
(``127.64.0.1`` onwards: 254 addresses per /24, never 127.0.0.x, never 0.0.0.0). Each request can
be written to a log (``log_path``): ``epoch-seconds local-address host status bytes path``.

    python -m webarchive.testsite.broad --sites 200 [--pages 20] [--sites-per-address 1]
        [--port 0] [--suffix fr] [--log FILE] [--first-address 0]

prints ``{"port": …, "addresses": …}`` as one JSON line once it answers, and serves until its
standard input closes (or SIGTERM). :class:`BroadSites` serves from a thread of the caller (tests).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import ipaddress
import json
import re
import resource
import signal
import struct
import sys
import threading
import time
import zlib
from collections import Counter
from email.utils import formatdate

import h11

SUFFIX = "fr"
FIRST_NETWORK = 64  # addresses from 127.64.0.1: clear of 127.0.0.x, which the other test servers use
ADDRESSES_PER_BLOCK = 254  # x.y.z.1 to x.y.z.254 of each /24
IDLE_SECONDS = 60.0  # a keep-alive connection with no request for this long is closed
MAX_ADDRESSES = (256 - FIRST_NETWORK) * 256 * ADDRESSES_PER_BLOCK
WORDS = (
    "archive", "harvest", "crawl", "domain", "snapshot", "record", "capture", "collection", "library",
    "heritage", "legal", "deposit", "web", "page", "site", "link", "image", "style",
    "sitemap", "robots", "index", "replay", "storage", "metadata", "curator", "selection", "history",
    "memory", "culture", "public", "access", "research", "network", "protocol", "server", "client",
    "request", "response", "politeness", "delay", "address", "name", "resolver", "queue", "worker",
    "thread", "process", "memory", "frontier", "scope", "hop",
)  # fmt: skip


def urls_per_site(pages: int) -> int:
    """The URLs a complete crawl of one site fetches: robots.txt, the sitemap, the pages, CSS, image."""
    return pages + 4


def address(index: int) -> str:
    """The ``index``-th loopback address the server listens on (from 0)."""
    if not 0 <= index < MAX_ADDRESSES:
        raise ValueError(f"no address number {index}")
    block, host = divmod(index, ADDRESSES_PER_BLOCK)
    return f"127.{FIRST_NETWORK + (block >> 8)}.{block & 255}.{host + 1}"


def address_index(text: str) -> int | None:
    """The number of one of the server's addresses (:func:`address`), None for any other."""
    try:
        packed = ipaddress.IPv4Address(text).packed
    except ValueError:
        return None
    first, second, third, fourth = packed
    if first != 127 or second < FIRST_NETWORK or not 1 <= fourth <= ADDRESSES_PER_BLOCK:
        return None
    return (((second - FIRST_NETWORK) << 8) + third) * ADDRESSES_PER_BLOCK + fourth - 1


def page_path(page: int) -> str:
    return "/" if page == 0 else f"/p/{page}.html"


def page_links(page: int, pages: int) -> list[int]:
    """The pages page ``page`` links to (besides ``/``): n + 1, 2n + 1 and 2n + 2, modulo ``pages``."""
    others = dict.fromkeys((page + step) % pages for step in (1, page + 1, page + 2))
    return [other for other in others if other not in (0, page)]


class BroadSites:
    """``sites`` websites of ``pages`` pages, ``sites_per_address`` per loopback address, on one port."""

    def __init__(
        self,
        *,
        sites: int,
        pages: int = 20,
        sites_per_address: int = 1,
        port: int = 0,
        suffix: str = SUFFIX,
        log_path=None,
        first_address: int = 0,
    ):
        if sites < 1 or pages < 1 or sites_per_address < 1:
            raise ValueError("sites, pages and sites_per_address must be positive")
        if first_address + self.address_count_for(sites, sites_per_address) > MAX_ADDRESSES:
            raise ValueError(f"at most {MAX_ADDRESSES:,} addresses")
        self.sites, self.pages, self.sites_per_address = sites, pages, sites_per_address
        self.port, self.suffix, self.log_path = port, suffix.strip(".").lower(), log_path
        self.first_address = first_address  # the number of the first address (another server's are before)
        self._host = re.compile(rf"site-(0|[1-9][0-9]*)\.{re.escape(self.suffix)}\.?(?::[0-9]+)?")
        self.requests: Counter[int] = Counter()  # by status
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[asyncio.Task] = set()
        self._log = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    # What is served --------------------------------------------------------------------------------

    @staticmethod
    def address_count_for(sites: int, sites_per_address: int) -> int:
        return -(-sites // sites_per_address)

    @property
    def address_count(self) -> int:
        return self.address_count_for(self.sites, self.sites_per_address)

    def addresses(self) -> list[str]:
        return [address(self.first_address + index) for index in range(self.address_count)]

    def name(self, site: int) -> str:
        return f"site-{site}.{self.suffix}"

    def site_address(self, site: int) -> str:
        return address(self.first_address + site // self.sites_per_address)

    def names(self):
        """(host name, address) of every site, for a resolver's hosts file."""
        return ((self.name(site), self.site_address(site)) for site in range(self.sites))

    def url(self, site: int, path: str = "/") -> str:
        return f"http://{self.name(site)}:{self.port}{path}"

    def paths(self) -> list[str]:
        """The paths of every site: what a complete crawl of one fetches (:func:`urls_per_site`)."""
        pages = [page_path(page) for page in range(self.pages)]
        return ["/robots.txt", "/sitemap.xml", *pages, "/style.css", "/logo.png"]

    def site_of(self, host: str, local_address: str) -> int | None:
        """The site a request's Host header names on the address it came to, None if not served there."""
        found = self._host.fullmatch(host.lower())
        if found:
            site = int(found.group(1))
        else:  # an address instead of a name: the address's first site
            index = address_index(host.rsplit(":", 1)[0] if host.count(":") == 1 else host)
            if index is None or index < self.first_address:
                return None
            site = (index - self.first_address) * self.sites_per_address
        if site >= self.sites or self.site_address(site) != local_address:
            return None
        return site

    def answer(self, site: int | None, path: str) -> tuple[int, str, bytes]:
        """Status, content type and body of ``path`` on ``site`` (None: a host not served)."""
        if site is None:
            return 404, "text/plain", b"No such site on this address.\n"
        if path == "/robots.txt":
            return (
                200,
                "text/plain",
                f"User-agent: *\nAllow: /\n\nSitemap: {self._base(site)}/sitemap.xml\n".encode(),
            )
        if path == "/sitemap.xml":
            return 200, "application/xml", self._sitemap(site)
        if path == "/style.css":
            return 200, "text/css", self._stylesheet(site)
        if path == "/logo.png":
            return 200, "image/png", _png(site)
        page = self._page_number(path)
        if page is None:
            return (
                404,
                "text/html; charset=utf-8",
                b"<!doctype html><title>Not found</title><p>Not found.</p>\n",
            )
        return 200, "text/html; charset=utf-8", self._page(site, page)

    def _base(self, site: int) -> str:
        return f"http://{self.name(site)}:{self.port}"

    def _page_number(self, path: str) -> int | None:
        if path == "/":
            return 0
        found = re.fullmatch(r"/p/([1-9][0-9]*)\.html", path)
        if found and int(found.group(1)) < self.pages:
            return int(found.group(1))
        return None

    def _page(self, site: int, page: int) -> bytes:
        title = f"Site {site}, page {page}"
        links = "".join(
            f'<li><a href="{page_path(other)}">Page {other} of site {site}</a></li>'
            for other in page_links(page, self.pages)
        )
        paragraphs = "".join(
            f"<p>{_text(site, page, number)}</p>\n" for number in range(3 + (site + page) % 4)
        )
        return (
            f'<!doctype html>\n<html lang="fr"><head><meta charset="utf-8"><title>{title}</title>'
            '<link rel="stylesheet" href="/style.css"></head>\n'
            f'<body><h1>{title}</h1><img src="/logo.png" alt="Logo of site {site}" width="64" height="64">\n'
            f'{paragraphs}<ul><li><a href="/">Home</a></li>{links}</ul></body></html>\n'
        ).encode()

    def _sitemap(self, site: int) -> bytes:
        base = self._base(site)
        urls = "".join(f"<url><loc>{base}{page_path(page)}</loc></url>" for page in range(self.pages))
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>\n'
        ).encode()

    def _stylesheet(self, site: int) -> bytes:
        hue = site * 37 % 360
        rules = "".join(
            f".block-{n} {{ margin: {n}px; padding: {n % 7}px; color: hsl({(hue + n) % 360}, 40%, 30%); }}\n"
            for n in range(40)
        )
        return f"body {{ font-family: serif; background: hsl({hue}, 30%, 96%); }}\n{rules}".encode()

    # Serving ---------------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Listen on every address (on one port: the first address's, when ``port`` is 0)."""
        if self.log_path:
            self._log = open(self.log_path, "a", buffering=1 << 20)  # noqa: SIM115 (closed by shutdown())
        addresses = self.addresses()
        first = await asyncio.start_server(self._connection, host=addresses[0], port=self.port, backlog=512)
        self.port = first.sockets[0].getsockname()[1]
        self._servers = [first]
        # In batches: one server holds every socket of its batch (fewer objects than one per address).
        for start in range(1, len(addresses), 1000):
            self._servers.append(
                await asyncio.start_server(
                    self._connection, host=addresses[start : start + 1000], port=self.port, backlog=512
                )
            )

    async def shutdown(self) -> None:
        """Stop listening, end the open connections, close the log."""
        for server in self._servers:
            server.close()
        self._servers = []
        for task in self._connections:
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._log is not None:
            self._log.close()
            self._log = None

    def flush(self) -> None:
        if self._log is not None:
            self._log.flush()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        local_address = writer.get_extra_info("sockname")[0]
        task = asyncio.current_task()
        self._connections.add(task)
        connection = h11.Connection(h11.SERVER, max_incomplete_event_size=16_384)
        try:
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    async with asyncio.timeout(IDLE_SECONDS):
                        connection.receive_data(await reader.read(65_536))
                elif isinstance(event, h11.Request):
                    writer.write(self._respond(connection, event, local_address))
                    await writer.drain()
                elif event is h11.PAUSED and connection.states == {
                    h11.CLIENT: h11.DONE,
                    h11.SERVER: h11.DONE,
                }:
                    connection.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    break  # closed by the client, or either side asked to close after this answer
                # h11.Data and h11.EndOfMessage of a request: its body is not read.
        except h11.RemoteProtocolError as error:
            if connection.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                headers = [("content-length", "0"), ("connection", "close")]
                with contextlib.suppress(h11.LocalProtocolError):
                    writer.write(
                        connection.send(h11.Response(status_code=error.error_status_hint, headers=headers))
                    )
                    writer.write(connection.send(h11.EndOfMessage()))
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()
            self._connections.discard(task)

    def _respond(self, connection: h11.Connection, request: h11.Request, local_address: str) -> bytes:
        host = next((value.decode("latin-1") for name, value in request.headers if name == b"host"), "")
        target = request.target.decode("latin-1")
        path = target.split("?", 1)[0]
        if request.method in (b"GET", b"HEAD"):
            status, content_type, body = self.answer(self.site_of(host, local_address), path)
        else:
            status, content_type, body = 405, "text/plain", b"Only GET and HEAD.\n"
        self.requests[status] += 1
        if self._log is not None:
            self._log.write(
                f"{time.time():.6f} {local_address} {host or '-'} {status} {len(body)} {target}\n"
            )
        headers = [
            ("date", formatdate(usegmt=True)),
            ("server", "webarchive-broad-testsite"),
            ("content-type", content_type),
            ("content-length", str(len(body))),
        ]
        out = connection.send(h11.Response(status_code=status, headers=headers))
        if request.method != b"HEAD":
            out += connection.send(h11.Data(data=body))
        return out + connection.send(h11.EndOfMessage())

    # In a thread of the caller (tests) ---------------------------------------------------------------

    def start(self) -> BroadSites:
        ready = threading.Event()
        failure: list[BaseException] = []

        async def run() -> None:
            self._stopped = asyncio.Event()
            try:
                await self.serve()
            except BaseException as error:
                failure.append(error)
                ready.set()
                return
            ready.set()
            await self._stopped.wait()
            await self.shutdown()

        def target() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(run())
            self._loop.close()

        self._thread = threading.Thread(target=target, name="broad-sites", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._thread is not None and self._loop is not None and self._stopped is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> BroadSites:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()


def _text(site: int, page: int, paragraph: int) -> str:
    """About 70 words of a site's page, different for each site, page and paragraph."""
    digest = hashlib.blake2b(f"{site}/{page}/{paragraph}".encode(), digest_size=64).digest()
    words = [WORDS[byte % len(WORDS)] for byte in digest[:70] * 2][:70]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def _png(site: int) -> bytes:
    """A valid 1x1 PNG of the site's colour, with a text chunk of about 2 kB that varies with it."""

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (
            struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
        )

    colour = bytes(((site * 53) % 256, (site * 97) % 256, (site * 193) % 256))
    comment = b"Comment\0" + b" ".join(_text(site, -1, n).encode() for n in range(4))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"tEXt", comment)
        + chunk(b"IDAT", zlib.compress(b"\0" + colour))
        + chunk(b"IEND", b"")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", type=int, required=True)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--sites-per-address", type=int, default=1)
    parser.add_argument("--port", type=int, default=0, help="0: a free port (of the first address)")
    parser.add_argument("--suffix", default=SUFFIX)
    parser.add_argument("--log", help="append a line per request to this file")
    parser.add_argument("--first-address", type=int, default=0, help="number of the first address (from 0)")
    args = parser.parse_args(argv)
    # A socket per address, and one per connection: as many descriptors as the system lets us have.
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sites = BroadSites(
        sites=args.sites,
        pages=args.pages,
        sites_per_address=args.sites_per_address,
        port=args.port,
        suffix=args.suffix,
        log_path=args.log,
        first_address=args.first_address,
    )

    async def run() -> None:
        await sites.serve()
        loop, done = asyncio.get_running_loop(), asyncio.Event()
        for stop in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(stop, done.set)
        loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1(4096) or done.set())
        print(json.dumps({"port": sites.port, "addresses": sites.address_count}), flush=True)
        await done.wait()
        await sites.shutdown()

    asyncio.run(run())
    print(
        json.dumps({"requests": {str(status): count for status, count in sites.requests.items()}}), flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
