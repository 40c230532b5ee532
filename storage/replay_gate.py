"""The replay gate: pywb behind a check of the application's tickets, in pywb's own process.

Run by ``manage.py replay`` with the interpreter that has pywb (``python replay_gate.py --bind H
--port P`` in the configuration directory); never imported into Django or Celery, which pywb's gevent
patching would break, and it imports nothing of Django. It reads ``gate.json`` (written next to
``config.yaml``, mode 0600) and serves pywb's ``FrontEndApp`` behind these rules:

- pywb has one collection per kind of viewer (``archive-public``, ``archive-reader``,
  ``archive-reader-room``, ``archive-staff``), each reading the CDX API narrowed to that viewer;
- a request for a collection must carry a valid ticket (a cookie set by ``/_ticket``): signed by the
  application, not expired, for this client address. Without one, the browser is sent to the
  application's replay entry, which decides (a new ticket, the login page, or a refusal);
- the ticket's profile decides the collection: a request for another collection is sent to the
  ticket's own (``/archive/…``, the stable address, too);
- the bytes as archived (``id_``) are for profiles that may download (staff);
- pywb's other pages (its home, collection list) are not served; its static files are;
- when pywb answers 404 to a capture's address (the archive does not hold that URL), the gate reports it
  to the application (``misses_url``, signed with the key), in the background after the answer, with the
  page that asked (``Referer``) and what for (``Sec-Fetch-Dest``): the curators' "missed in replay".

pywb's internal index and record server (a second port on localhost) answers only under a secret
path prefix that this process alone knows, so it cannot be asked directly either.
"""

from gevent.monkey import patch_all

patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import re  # noqa: E402
import secrets  # noqa: E402
import urllib.request  # noqa: E402
from http.cookies import CookieError, SimpleCookie  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import parse_qs, quote  # noqa: E402

import gevent  # noqa: E402
from gevent.queue import Full, Queue  # noqa: E402

try:  # run as a script (manage.py replay), its own directory is on the path
    from replay_ticket import COOKIE, miss_signature, ticket_profile
except ImportError:
    from storage.replay_ticket import COOKIE, miss_signature, ticket_profile

GATE_CONFIG = "gate.json"
TICKET_PATH = "/_ticket"
# pywb's address of a capture: /coll/<timestamp><modifier>/<url>; the modifier "id_" is the raw bytes.
_STAMP = re.compile(r"^(\d*)([a-z]{2}_)?$")
# Reports waiting to be sent, one at a time by one sender (a page's misses come in bursts; the application
# records them one after the other): more misses at that moment are not reported.
MISS_REPORTS_WAITING = 200
MISS_FIELD_MAX = 2200  # characters of a URL or Referer in a report

logger = logging.getLogger("webarchive.replay_gate")


def _text(start_response, status: str, message: str, headers=()):
    body = (message + "\n").encode()
    start_response(
        status,
        [
            ("Content-Type", "text/plain; charset=utf-8"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            *headers,
        ],
    )
    return [body]


def _redirect(start_response, location: str, headers=()):
    start_response(
        "302 Found",
        [("Location", location), ("Content-Length", "0"), ("Cache-Control", "no-store"), *headers],
    )
    return [b""]


class ReplayGate:
    """WSGI middleware in front of pywb: the application's tickets decide who replays which collection."""

    def __init__(self, app, config: dict):
        self.app = app
        self.key = config["key"]
        self.base = config["collection"]
        self.collections = config["collections"]  # profile -> pywb collection
        self.profiles = {collection: profile for profile, collection in self.collections.items()}
        self.raw_profiles = set(config["raw_profiles"])
        self.entry_url = config["entry_url"]  # the application's replay entry, ending with "/"
        self.home_url = config["home_url"]
        self.address_header = config.get("client_address_header", "")
        self.secure = config.get("secure_cookie", False)
        self.misses_url = config.get("misses_url", "")
        self.reports: Queue = Queue(maxsize=MISS_REPORTS_WAITING)
        self.sender = None  # the greenlet sending them, started with the first miss

    def client_address(self, environ) -> str:
        if self.address_header:
            value = environ.get("HTTP_" + self.address_header.upper().replace("-", "_"), "")
            forwarded = [part.strip() for part in value.split(",") if part.strip()]
            if forwarded:
                return forwarded[-1]
        return environ.get("REMOTE_ADDR", "")

    def ticket(self, environ) -> str:
        try:
            cookie = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        except CookieError:
            return ""
        morsel = cookie.get(COOKIE)
        return morsel.value if morsel else ""

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == TICKET_PATH:
            return self.take_ticket(environ, start_response)
        if path.startswith("/static/"):
            return self.app(environ, start_response)
        collection, _slash, rest = path.lstrip("/").partition("/")
        if collection != self.base and collection not in self.profiles:
            return (
                _redirect(start_response, self.home_url)
                if path in ("", "/")
                else _text(
                    start_response,
                    "404 Not Found",
                    "Not found: replay addresses are /<collection>/<date>/<URL>.",
                )
            )
        raw_rest = self.raw_rest(environ, collection)
        profile = ticket_profile(self.ticket(environ), key=self.key, address=self.client_address(environ))
        if profile is None or profile not in self.collections:
            # No leave (or an expired one, or another address's): the application decides.
            return _redirect(start_response, self.entry_url + raw_rest)
        own = self.collections[profile]
        if collection != own:
            return _redirect(start_response, f"/{own}/{raw_rest}")
        stamp = rest.split("/", 1)[0]
        match = _STAMP.match(stamp)
        if match and match.group(2) == "id_" and profile not in self.raw_profiles:
            return _text(
                start_response, "403 Forbidden", "The archived bytes (id_) cannot be downloaded by readers."
            )
        if not self.misses_url or not match:
            return self.app(environ, start_response)
        return self.app(environ, self.noting_misses(environ, start_response, raw_rest, match))

    def noting_misses(self, environ, start_response, raw_rest: str, match):
        """``start_response`` that reports a 404 (not in the archive) once pywb has answered."""
        # Read before pywb runs: it rewrites the Referer in place to the original site's address.
        referer = environ.get("HTTP_REFERER", "")[:MISS_FIELD_MAX]

        def start(status, headers, exc_info=None):
            if status.startswith("404"):
                report = {
                    "url": raw_rest.partition("/")[2][:MISS_FIELD_MAX],
                    "stamp": match.group(1)[:14],
                    "modifier": match.group(2) or "",
                    "referer": referer,
                    "destination": environ.get("HTTP_SEC_FETCH_DEST", "")[:20],
                }
                self.queue_report(report)
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        return start

    def queue_report(self, report: dict) -> None:
        try:
            self.reports.put_nowait(report)
        except Full:
            return
        if self.sender is None or self.sender.dead:
            self.sender = gevent.spawn(self.send_reports)

    def send_reports(self) -> None:
        """Send the waiting reports one after the other, until none is left."""
        while not self.reports.empty():
            self.report_miss(self.reports.get_nowait())

    def report_miss(self, report: dict) -> None:
        body = json.dumps(report).encode()
        request = urllib.request.Request(  # noqa: S310 (our own address, from gate.json)
            self.misses_url,
            data=body,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "X-Replay-Signature": miss_signature(self.key, body),
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 (our own address)
                answer.read()
        except OSError as error:
            logger.warning("A missed URL could not be reported: %s", error)

    def raw_rest(self, environ, collection: str) -> str:
        """What follows ``/<collection>/`` in the request as sent (timestamp, modifier, URL, query)."""
        uri = environ.get("REQUEST_URI") or quote(environ.get("PATH_INFO", "")) + (
            "?" + environ["QUERY_STRING"] if environ.get("QUERY_STRING") else ""
        )
        prefix = f"/{collection}/"
        return uri[len(prefix) :] if uri.startswith(prefix) else ""

    def take_ticket(self, environ, start_response):
        """``/_ticket?t=…&next=/collection/…``: keep the application's ticket as a cookie, go on."""
        query = parse_qs(environ.get("QUERY_STRING", ""))
        ticket = (query.get("t") or [""])[0]
        target = (query.get("next") or [""])[0]
        profile = ticket_profile(ticket, key=self.key, address=self.client_address(environ))
        if profile is None or profile not in self.collections:
            return _text(
                start_response,
                "403 Forbidden",
                "This replay link has expired or was made for another address: open the capture again "
                f"from the web archive ({self.home_url}).",
            )
        own = self.collections[profile]
        if not target.startswith(f"/{own}/"):
            target = f"/{own}/"
        cookie = f"{COOKIE}={ticket}; Path=/; HttpOnly; SameSite=Lax" + ("; Secure" if self.secure else "")
        return _redirect(start_response, target, [("Set-Cookie", cookie)])


def gated_front_end(config_file: str = "./config.yaml"):
    """pywb's FrontEndApp whose internal index and record server answers only under a secret prefix."""
    from pywb.apps.frontendapp import FrontEndApp

    prefix = secrets.token_urlsafe(24)

    class GatedFrontEndApp(FrontEndApp):
        REPLAY_API = "http://localhost:%s/" + prefix + "/{coll}/resource/postreq"
        CDX_API = "http://localhost:%s/" + prefix + "/{coll}/index"

    app = GatedFrontEndApp(config_file=config_file)
    inner = app.warcserver

    def internal(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if not path.startswith(f"/{prefix}/"):
            return _text(start_response, "404 Not Found", "Not found.")
        environ["PATH_INFO"] = path[len(prefix) + 1 :]
        return inner(environ, start_response)

    app.warcserver_server.server.application = internal
    logger.info("pywb's internal server is on localhost:%s (secret prefix)", app.warcserver_server.port)
    return app


def main(argv=None):
    parser = argparse.ArgumentParser(description="pywb behind the web archive's replay gate")
    parser.add_argument("--bind", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s: [%(levelname)s]: %(message)s")
    config = json.loads(Path(GATE_CONFIG).read_text(encoding="utf-8"))
    from pywb.utils.geventserver import GeventServer, RequestURIWSGIHandler

    application = ReplayGate(gated_front_end(), config)
    logger.info("Replay gate on %s:%s", options.bind, options.port)
    GeventServer(
        application,
        port=options.port,
        hostname=options.bind,
        handler_class=RequestURIWSGIHandler,
        direct=True,
    )


if __name__ == "__main__":
    main()
