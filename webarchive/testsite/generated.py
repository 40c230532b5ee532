"""The generated website under ``/site/``: derived from (seed, pages), one URL at a time.

Nothing is precomputed: what a URL serves is computed from its path (page
``n``'s links, images and text from ``n`` and the seed) when first asked, then
kept per path in an LRU cache, so 100,000 pages cost nothing until crawled.
A page is a plan (:mod:`webarchive.testsite.markup`) that gives both its HTML
and its links, which :mod:`webarchive.testsite.groundtruth` walks.

Map (S = http://127.0.0.1:P; C, the CDN, = http://127.0.0.2:P with hosts >= 2,
else S; X = http://127.0.0.3:P, only with hosts = 3):

- S/robots.txt: ``Disallow: /site/private/`` and ``Sitemap: S/site/sitemap.xml``
- S/site/ home (page 0): links to the sections and to every feature below
- S/site/<section>/ (pages 1-4) and S/site/<section>/<n>.html: each section a
  tree of 8 children per page, plus 3 "related" links per page anywhere
- requisites on every page: S/site/css/site.css (``@import`` base.css, which
  imports typography.css; ``url()`` of S/site/img/bg.png and of fonts on C),
  C/cdn/css/theme.css (an image and a font), S/site/favicon.ico,
  S/site/js/app.js, the logo C/cdn/img/logo.png; per page, its image
  S/site/img/<n>.png and, by page number (``FEATURES``), srcset, <picture>,
  data-src, inline style url(), <video poster>, <object data>, <iframe>, a
  photo on C, a <base href>, an inline script
- S/site/js/only-<k>.html (named only in app.js), S/site/js/inline-<n>.html
  (only in an inline script), S/site/<section>/sitemap-only-<k>.html (only in
  the sitemap), S/site/private/<k>.html (disallowed by robots.txt)
- S/site/redirect/301/3 -> /2 -> /1 -> S/site/landing/301.html,
  S/site/redirect/302/2 -> /1 -> S/site/landing/302.html, S/site/moved/<n>.html
  -> page n (301), S/site/refresh.html (meta refresh) -> S/site/landing/refresh.html,
  S/site/img/old-logo.png -> C/cdn/img/logo.png
- S/site/missing.html (404), S/site/img/missing.png (404), S/site/broken.html (500)
- S/site/calendar/YYYY/MM: every month links the previous and the next one
- links with session ids: ``?sid=<32 hex>``, ``;jsessionid=<32 HEX>``, ``?token=<40 hex>``
- S/site/slow.html (answers after ``slow_seconds``), S/site/files/large.bin
- S/site/latin1.html (windows-1252, declared in the Content-Type header only)
  linking S/site/caf%C3%A9.html; S/site/malformed.html
- gzip (when asked for) and chunked bodies on some pages, CSS and the script
- X/ext/ and X/ext/<k>.html: the external site that some pages link to
"""

from __future__ import annotations

import datetime
import functools
import gzip
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote

from webarchive.testsite import assets
from webarchive.testsite.markup import Element, Page, page_edges, render_page
from webarchive.testsite.server import Request, Response
from webarchive.testsite.sitetext import (
    MALFORMED_EDGES,
    MALFORMED_MARKUP,
    app_js,
    css_files,
    robots_txt,
    sitemap_xml,
)

SECTIONS = ("news", "sport", "culture", "science")
BRANCHING = 8  # children of a page in its section's tree: the depth grows as log8(pages)
RELATED = 3
JS_ONLY_PAGES = 4
PRIVATE_PAGES = 3
EXTERNAL_PAGES = 10
SITEMAP_LISTED = 100  # the sitemap lists this many numbered pages, and the sitemap-only ones
REDIRECT_CHAINS = {301: 3, 302: 2}  # status: length of the chain
LANDINGS = ("301", "302", "refresh", "malformed")

# Which numbered pages have a feature: those with n % modulus == remainder.
FEATURES = {
    "srcset": (2, 0),
    "chunked": (2, 1),
    "picture": (3, 1),
    "cdn_photo": (3, 2),
    "gzip": (3, 0),
    "lazy": (4, 3),
    "banner": (5, 0),
    "video": (7, 3),
    "object": (8, 5),
    "iframe": (9, 2),
    "moved": (10, 4),
    "external": (10, 1),
    "inline_script": (10, 8),
    "base": (11, 6),
    "private": (25, 13),
    "not_found": (50, 17),
    "server_error": (50, 27),
}
SESSION_STYLES = {1: "sid", 4: "jsessionid", 5: "token"}  # by n % 6: the first related link carries one

HTML = "text/html; charset=utf-8"
CSS = "text/css; charset=utf-8"
JAVASCRIPT = "text/javascript; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
MASK = (1 << 64) - 1

_NUMBER = r"(0|[1-9][0-9]*)"  # no leading zeros: one URL per number
_SECTION = "(" + "|".join(SECTIONS) + ")"
_SECTION_PATTERNS = [
    (re.compile(rf"/site/{_SECTION}/(?:{_NUMBER}\.html)?"), "_section_page"),
    (re.compile(rf"/site/{_SECTION}/sitemap-only-{_NUMBER}\.html"), "_sitemap_only"),
]
_ASSET_PATTERN = [(re.compile(r"/site/(img|media)/([a-z0-9@-]+)\.(png|jpg|webp|webm|svg)"), "_site_asset")]
_SITE_PATTERNS = {  # by the folder after /site/; any other folder may be a section
    "js": [(re.compile(rf"/site/js/(only|inline)-{_NUMBER}\.html"), "_js_page")],
    "private": [(re.compile(rf"/site/private/{_NUMBER}\.html"), "_private")],
    "landing": [(re.compile(r"/site/landing/([a-z0-9]+)\.html"), "_landing")],
    "redirect": [(re.compile(rf"/site/redirect/(301|302)/{_NUMBER}"), "_chain")],
    "moved": [(re.compile(rf"/site/moved/{_NUMBER}\.html"), "_moved")],
    "embed": [(re.compile(rf"/site/embed/{_NUMBER}\.html"), "_embed")],
    "calendar": [(re.compile(r"/site/calendar/([0-9]{4})/([0-9]{2})"), "_calendar")],
    "img": _ASSET_PATTERN,
    "media": _ASSET_PATTERN,
}
_SITE_FILES = {
    "/site/": "_home",
    "/site/sitemap.xml": "_sitemap",
    "/site/js/app.js": "_app_js",
    "/site/favicon.ico": "_favicon",
    "/site/refresh.html": "_refresh",
    "/site/slow.html": "_slow",
    "/site/latin1.html": "_latin1",
    "/site/café.html": "_cafe",
    "/site/malformed.html": "_malformed",
    "/site/broken.html": "_broken",
    "/site/files/large.bin": "_large",
    "/site/img/old-logo.png": "_old_logo",
}
_IMAGE = re.compile(rf"{_NUMBER}(|-480|-960|-hero|-hero@2x|-lazy)|(poster|embed|clip|chart)-{_NUMBER}")
_IMAGE_FEATURES = {  # image variant: (extensions, feature of the page that uses it)
    "": (("png",), ""),
    "-480": (("png",), "srcset"),
    "-960": (("png",), "srcset"),
    "-hero": (("jpg", "webp"), "picture"),
    "-hero@2x": (("webp",), "picture"),
    "-lazy": (("jpg",), "lazy"),
    "poster": (("jpg",), "video"),
    "clip": (("webm",), "video"),
    "chart": (("svg",), "object"),
    "embed": (("png",), "iframe"),
}
_CDN_FILES = {"img/logo.png", "img/badge.png", "img/pattern.png", "fonts/body.woff2", "fonts/body.woff"}
_CDN_FILES |= {"fonts/icons.woff2"}


def has(feature: str, n: int) -> bool:
    """Whether numbered page ``n`` has ``feature`` (see ``FEATURES``)."""
    modulus, remainder = FEATURES[feature]
    return n % modulus == remainder


def _mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 steps): the site's only source of chance."""
    h = 0
    for value in values:
        h = (h + (value & MASK) + 0x9E3779B97F4A7C15) & MASK
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & MASK
        h ^= h >> 31
    return h


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header value accepts gzip."""
    for part in accept_encoding.split(","):
        name, _, parameters = part.partition(";")
        if name.strip().lower() not in ("gzip", "x-gzip", "*"):
            continue
        quality = parameters.strip().lower()
        if quality.startswith("q="):
            try:
                return float(quality[2:]) > 0
            except ValueError:
                return False
        return True
    return False


@dataclass(slots=True)
class Resource:
    """What one URL of the generated site is: a page plan, a redirect, or a body and its links."""

    status: int = 200
    content_type: str = HTML
    page: Page | None = None
    body: bytes | Callable[[], bytes] | None = None  # a function when making it costs (images)
    edges: tuple[tuple[str, str], ...] = ()
    location: str = ""  # a redirect's Location header, as sent (absolute or not)
    gzip: bool = False
    chunked: bool = False
    slow: bool = False
    large: bool = False

    def links(self) -> list[tuple[str, str]]:
        """The (absolute URL, hop letter) pairs a crawler finds in this response."""
        return page_edges(self.page) if self.page is not None else list(self.edges)


@dataclass(frozen=True, slots=True)
class _Built:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...]
    gzip: bool
    chunked: bool
    slow: bool
    large: bool


class GeneratedSite:
    """The generated website of one :class:`~webarchive.testsite.TestSite`."""

    def __init__(
        self,
        site,
        *,
        seed: int,
        pages: int,
        large_file_bytes: int,
        slow_seconds: float,
        today: datetime.date | None,
        cache_size: int,
    ):
        if pages < 1:
            raise ValueError("pages must be at least 1")
        if large_file_bytes < 0 or slow_seconds < 0:
            raise ValueError("large_file_bytes and slow_seconds cannot be negative")
        self.site = site
        self.seed = seed
        self.pages = pages
        self.large_file_bytes = large_file_bytes
        self.slow_seconds = slow_seconds
        self.today = today or datetime.date.today()
        self.sitemap_only = len(SECTIONS) + pages // 200
        self._built = functools.lru_cache(maxsize=cache_size)(self._build)
        self._gzipped = functools.lru_cache(maxsize=cache_size)(self._gzip)
        self._origins: tuple[int, tuple[str, ...]] = (-1, ())
        self._chrome: tuple[str, list[Element], list[Element]] = ("", [], [])

    # Addresses ---------------------------------------------------------------------------------------------

    def origins(self) -> tuple[str, ...]:
        """``scheme://address:port`` of the site, the CDN and the external site."""
        port, origins = self._origins
        if port < 0 or not self.site._bound:  # before binding, port 0 may still become another port
            port = self.site.port
            origins = tuple(self.site.host_url(index, "") for index in range(3))
            self._origins = (port if self.site._bound else -1, origins)
        return origins

    def s(self, path: str) -> str:
        return self.origins()[0] + path

    def c(self, path: str) -> str:
        return self.origins()[1 if self.site.hosts >= 2 else 0] + path

    def x(self, path: str) -> str:
        return self.origins()[2] + path

    def locate(self, url: str) -> tuple[int, str] | None:
        """(host index, decoded path) of a URL of this site, None for any other URL."""
        for index, origin in enumerate(self.origins()[: self.site.hosts]):
            if url.startswith(origin + "/"):
                path = url[len(origin) :].partition("#")[0].partition("?")[0]
                return index, _clean(path)
        return None

    # Numbering: page 0 is the home, then the sections take turns -----------------------------------------

    def page_path(self, n: int) -> str:
        if n == 0:
            return "/site/"
        section, local = (n - 1) % len(SECTIONS), (n - 1) // len(SECTIONS)
        return f"/site/{SECTIONS[section]}/" if local == 0 else f"/site/{SECTIONS[section]}/{n}.html"

    def page_url(self, n: int) -> str:
        return self.s(self.page_path(n))

    def page_urls(self) -> list[str]:
        return [self.page_url(n) for n in range(self.pages)]

    def parent(self, n: int) -> int:
        local = (n - 1) // len(SECTIONS)
        return 0 if local == 0 else 1 + ((local - 1) // BRANCHING) * len(SECTIONS) + (n - 1) % len(SECTIONS)

    def children(self, n: int) -> list[int]:
        if n == 0:
            return list(range(1, min(len(SECTIONS) + 1, self.pages)))
        local, section = (n - 1) // len(SECTIONS), (n - 1) % len(SECTIONS)
        first = 1 + (BRANCHING * local + 1) * len(SECTIONS) + section
        return list(range(first, min(first + BRANCHING * len(SECTIONS), self.pages), len(SECTIONS)))

    def related(self, n: int) -> list[int]:
        found: list[int] = []
        if self.pages > 2:
            for i in range(RELATED):
                m = 1 + _mix(self.seed, n, i, 1) % (self.pages - 1)
                if m != n and m not in found:
                    found.append(m)
        return found

    def session_suffix(self, n: int) -> str:
        """The session id page ``n`` adds to its first related link ("" for none)."""
        style = SESSION_STYLES.get(n % 6)
        if style is None:
            return ""
        digits = "".join(f"{_mix(self.seed, n, i, 7):016x}" for i in range(3))
        if style == "sid":
            return f"?sid={digits[:32]}"
        if style == "jsessionid":
            return f";jsessionid={digits[:32].upper()}"
        if style == "token":
            return f"?token={digits[:40]}"
        return ""

    def calendar_path(self, year: int, month: int) -> str:
        return f"/site/calendar/{year:04d}/{month:02d}"

    def calendar_window(self) -> list[str]:
        """The month linked from the home page and its neighbours: the calendar URLs that must be crawled."""
        year, month = self.today.year, self.today.month
        months = [(year, month - 1) if month > 1 else (year - 1, 12), (year, month)]
        months.append((year, month + 1) if month < 12 else (year + 1, 1))
        return [self.s(self.calendar_path(y, m)) for y, m in months]

    # What a URL is -----------------------------------------------------------------------------------------

    def resolve(self, host: int, path: str) -> Resource | None:
        """The resource at ``path`` (decoded, without query) on host ``host``; None for a 404."""
        if host == 0:
            if path.startswith("/site/"):
                return self._site(path)
            if path == "/robots.txt":
                return Resource(content_type=TEXT, body=robots_txt(self.s("/site/sitemap.xml")).encode())
            if path.startswith("/cdn/") and self.site.hosts == 1:
                return self._cdn(path)
            return None
        if path == "/robots.txt":
            return Resource(content_type=TEXT, body=b"User-agent: *\nDisallow:\n")
        if host == 1:
            return self._cdn(path) if path.startswith("/cdn/") else None
        return self._external(path)

    def resource(self, url: str) -> Resource | None:
        """The resource at an absolute URL of the site (None for a 404 or another site's URL)."""
        located = self.locate(url)
        return None if located is None else self.resolve(*located)

    def links(self, url: str) -> list[tuple[str, str]]:
        """The (absolute URL, hop letter) pairs a crawler finds in the response to ``url``."""
        resource = self.resource(url)
        return [] if resource is None else resource.links()

    def _site(self, path: str) -> Resource | None:
        fixed = _SITE_FILES.get(path)
        if fixed is not None:
            return getattr(self, fixed)()
        if path.startswith("/site/css/"):
            return self._css(path)
        folder = path[6 : path.find("/", 6)]
        for pattern, method in _SITE_PATTERNS.get(folder, _SECTION_PATTERNS):
            match = pattern.fullmatch(path)
            if match:
                return getattr(self, method)(*match.groups())
        return None

    def _cdn(self, path: str) -> Resource | None:
        name = path[len("/cdn/") :]
        if name.startswith("css/"):
            return self._css(path)
        photo = re.fullmatch(rf"img/photo-{_NUMBER}\.jpg", name)
        if photo and not (0 < int(photo[1]) < self.pages and has("cdn_photo", int(photo[1]))):
            return None
        if photo or name in _CDN_FILES:
            return self._binary(path)
        return None

    def _binary(self, path: str, *, status: int = 200) -> Resource:
        extension = path.rpartition(".")[2]
        body = functools.partial(assets.binary, extension, _mix(self.seed, zlib.crc32(path.encode())))
        return Resource(status=status, content_type=assets.CONTENT_TYPES[extension], body=body)

    def _css(self, path: str) -> Resource | None:
        found = css_files(self.s, self.c).get(self.s(path) if path.startswith("/site/") else self.c(path))
        if found is None:
            return None
        body, edges = found
        name = path.rpartition("/")[2]
        return Resource(
            content_type=CSS,
            body=body.encode(),
            edges=tuple(edges),
            gzip=name in ("site.css", "theme.css"),
            chunked=name == "base.css",
        )

    # Page plans --------------------------------------------------------------------------------------------

    def _head(self) -> list[Element]:
        return self._shared_chrome()[0]

    def _top(self, title: str) -> list[Element]:
        return [*self._shared_chrome()[1], Element("h1", text=title)]

    def _shared_chrome(self) -> tuple[list[Element], list[Element]]:
        """The head and the header every page has (made once: elements are immutable)."""
        origin = self.origins()[0]
        if self._chrome[0] != origin:
            s = self.s
            head = [
                Element("stylesheet", (s("/site/css/site.css"),)),
                Element("stylesheet", (self.c("/cdn/css/theme.css"),)),
                Element("icon", (s("/site/favicon.ico"),)),
                Element("script", (s("/site/js/app.js"),)),
            ]
            nav = [Element("a", (self.s("/site/"),), "Home")]
            nav += [Element("a", (self.page_url(n),), SECTIONS[n - 1].capitalize()) for n in self.children(0)]
            header = [
                Element("raw", text="<header>"),
                Element("img", (self.c("/cdn/img/logo.png"),), "Logo"),
                Element("raw", text="<nav>"),
                *nav,
                Element("raw", text="</nav>\n</header>\n<main>"),
            ]
            self._chrome = (origin, head, header)
        return self._chrome[1], self._chrome[2]

    def _bottom(self) -> list[Element]:
        return [Element("raw", text="</main>\n<footer><p>A generated test website.</p></footer>")]

    def _page(self, path: str, title: str, body: list[Element], **options) -> Resource:
        """A page with the site's usual requisites and navigation around ``body``."""
        key = _mix(self.seed, zlib.crc32(path.encode()))
        page = Page(path, title, self._head(), [*self._top(title), *body, *self._bottom()], key, **options)
        return Resource(page=page)

    def _link(self, n: int, text: str = "") -> Element:
        return Element("a", (self.page_url(n),), text or self._title(n))

    def _title(self, n: int) -> str:
        return "Home" if n == 0 else f"{SECTIONS[(n - 1) % len(SECTIONS)].capitalize()} {n}"

    def _home(self) -> Resource:
        s = self.s
        body = [Element("p"), Element("p"), *self._main_image(0)]
        body += [
            Element("img", (s("/site/img/old-logo.png"),), "Old logo"),
            Element("img", (s("/site/img/missing.png"),), "Missing image"),
            Element("img-protocol-relative", (self.c("/cdn/img/badge.png"),), "Badge"),
            Element("h2", text="Sections"),
            *(self._link(n) for n in self.children(0)),
            Element("h2", text="Everything a crawler meets"),
            Element("a", (s("/site/redirect/301/3"),), "Three 301 redirects"),
            Element("a", (s("/site/redirect/302/2"),), "Two 302 redirects"),
            Element("a", (s("/site/refresh.html"),), "A meta refresh"),
            Element("a", (s(self.calendar_path(self.today.year, self.today.month)),), "Calendar"),
            Element("a", (s("/site/slow.html"),), "A slow page"),
            Element("a", (s("/site/files/large.bin"),), "A large file"),
            Element("a", (s("/site/latin1.html"),), "Une page en windows-1252"),
            Element("a", (s("/site/malformed.html"),), "Malformed HTML"),
            Element("a", (s("/site/private/0.html"),), "Private (disallowed by robots.txt)"),
            Element("a", (s("/site/missing.html"),), "A missing page"),
            Element("a", (s("/site/broken.html"),), "A broken page"),
            Element("h2", text="Session ids"),
        ]
        for i, style_n in enumerate((1, 4, 5)):  # one link with each kind of session id
            target = min(self.pages - 1, len(SECTIONS) + 1 + i)
            body.append(Element("a", (self.page_url(target),), self._title(target), self.session_suffix(style_n)))
        if self.site.hosts == 3:
            body += [
                Element("h2", text="Elsewhere"),
                Element("a", (self.x("/ext/"),), "An external site"),
                Element("a", (self.x("/ext/1.html"),), "A page of the external site"),
            ]
        resource = self._page("/site/", "Home", body)
        resource.gzip = True
        return resource

    def _main_image(self, n: int) -> list[Element]:
        src = self.s(f"/site/img/{n}.png")
        if has("srcset", n):
            return [Element("srcset", (src, self.s(f"/site/img/{n}-480.png"), self.s(f"/site/img/{n}-960.png")))]
        return [Element("img", (src,), f"Picture {n}")]

    def _section_page(self, section: str, number: str | None) -> Resource | None:
        if number is None:
            n = 1 + SECTIONS.index(section)
        else:
            n = int(number)
            if n <= len(SECTIONS) or SECTIONS[(n - 1) % len(SECTIONS)] != section:
                return None
        if n >= self.pages:
            return None
        return self._content_page(n)

    def _content_page(self, n: int) -> Resource:
        s = self.s
        body = [self._link(self.parent(n), "Up"), Element("p"), Element("p"), *self._main_image(n)]
        if has("picture", n):
            body.append(
                Element(
                    "picture",
                    (s(f"/site/img/{n}-hero.jpg"), s(f"/site/img/{n}-hero.webp"), s(f"/site/img/{n}-hero@2x.webp")),
                )
            )
        if has("cdn_photo", n):
            body.append(Element("img", (self.c(f"/cdn/img/photo-{n}.jpg"),), "Photo"))
        if has("lazy", n):
            body.append(Element("lazy", (s(f"/site/img/{n}-lazy.jpg"),), "Lazy"))
        if has("banner", n):
            body.append(Element("banner", (s(f"/site/img/banner-{SECTIONS[(n - 1) % len(SECTIONS)]}.jpg"),)))
        if has("video", n):
            body.append(Element("video", (s(f"/site/img/poster-{n}.jpg"), s(f"/site/media/clip-{n}.webm"))))
        if has("object", n):
            body.append(Element("object", (s(f"/site/media/chart-{n}.svg"),), "A chart"))
        if has("iframe", n):
            body.append(Element("iframe", (s(f"/site/embed/{n}.html"),), "Embedded"))
        body.append(Element("p"))
        children = self.children(n)
        if children:
            body.append(Element("h2", text="In this section"))
            body += [self._link(child) for child in children]
        related = self.related(n)
        if related:
            body.append(Element("h2", text="Related"))
        for i, m in enumerate(related):
            if i == 0 and self.session_suffix(n):
                body.append(Element("a", (self.page_url(m),), self._title(m), self.session_suffix(n)))
            elif i == 1 and has("moved", n):
                body.append(Element("a", (s(f"/site/moved/{m}.html"),), self._title(m)))
            else:
                body.append(self._link(m))
        extras = {
            "private": (s(f"/site/private/{n % PRIVATE_PAGES}.html"), "Members only"),
            "not_found": (s("/site/missing.html"), "Gone"),
            "server_error": (s("/site/broken.html"), "Broken"),
        }
        if self.site.hosts == 3:
            extras["external"] = (self.x(f"/ext/{(n // 10) % EXTERNAL_PAGES}.html"), "Elsewhere")
        body += [Element("a", (url, ), text) for feature, (url, text) in extras.items() if has(feature, n)]
        if has("inline_script", n):
            body.append(Element("inline-script", (s(f"/site/js/inline-{n}.html"),)))
        resource = self._page(self.page_path(n), self._title(n), body, base="/site/" if has("base", n) else "")
        resource.gzip, resource.chunked = has("gzip", n), has("chunked", n)
        return resource

    def _simple(self, path: str, title: str, *links: Element) -> Resource:
        return self._page(path, title, [Element("p"), *links, Element("p")])

    def _js_page(self, kind: str, number: str) -> Resource | None:
        n = int(number)
        if kind == "only" and n >= JS_ONLY_PAGES or kind == "inline" and not (n < self.pages and has("inline_script", n)):
            return None
        return self._simple(f"/site/js/{kind}-{n}.html", f"Found only in JavaScript ({kind} {n})")

    def _sitemap_only(self, section: str, number: str) -> Resource | None:
        k = int(number)
        if k >= self.sitemap_only or SECTIONS[k % len(SECTIONS)] != section:
            return None
        return self._simple(f"/site/{section}/sitemap-only-{k}.html", f"Listed only in the sitemap ({k})")

    def _private(self, number: str) -> Resource | None:
        k = int(number)
        if k >= PRIVATE_PAGES:
            return None
        following = [Element("a", (self.s(f"/site/private/{k + 1}.html"),), "Next")] if k + 1 < PRIVATE_PAGES else []
        return self._simple(f"/site/private/{k}.html", f"Private page {k}", *following)

    def _landing(self, name: str) -> Resource | None:
        if name not in LANDINGS:
            return None
        return self._simple(f"/site/landing/{name}.html", f"Reached through {name}")

    def _redirect(self, status: int, location: str, target: str) -> Resource:
        return Resource(status=status, location=location, edges=((target, "R"),))

    def _chain(self, status: str, number: str) -> Resource | None:
        code, k = int(status), int(number)
        if not 1 <= k <= REDIRECT_CHAINS[code]:
            return None
        path = f"/site/redirect/{code}/{k - 1}" if k > 1 else f"/site/landing/{code}.html"
        # The 301s send absolute URLs, the 302s absolute paths: both are met in the wild.
        return self._redirect(code, self.s(path) if code == 301 else path, self.s(path))

    def _moved(self, number: str) -> Resource | None:
        n = int(number)
        return self._redirect(301, self.page_url(n), self.page_url(n)) if 0 < n < self.pages else None

    def _old_logo(self) -> Resource:
        return self._redirect(301, self.c("/cdn/img/logo.png"), self.c("/cdn/img/logo.png"))

    def _embed(self, number: str) -> Resource | None:
        n = int(number)
        if not (n < self.pages and has("iframe", n)):
            return None
        body = [Element("img", (self.s(f"/site/img/embed-{n}.png"),), "Embedded picture"), self._link(0, "Home")]
        return Resource(page=Page(f"/site/embed/{n}.html", f"Embedded in page {n}", body=body))

    def _calendar(self, year: str, month: str) -> Resource | None:
        y, m = int(year), int(month)
        if not (1 <= y <= 9999 and 1 <= m <= 12):
            return None
        links = []
        if (y, m) > (1, 1):
            links.append(Element("a", (self.s(self.calendar_path(*((y, m - 1) if m > 1 else (y - 1, 12)))),), "Previous"))
        if (y, m) < (9999, 12):
            links.append(Element("a", (self.s(self.calendar_path(*((y, m + 1) if m < 12 else (y + 1, 1)))),), "Next"))
        resource = self._simple(self.calendar_path(y, m), f"Calendar {y:04d}-{m:02d}", *links)
        resource.chunked = True
        return resource

    def _refresh(self) -> Resource:
        target = self.s("/site/landing/refresh.html")
        page = Page("/site/refresh.html", "Moved", [Element("refresh", (target,))], [Element("p")])
        return Resource(page=page)

    def _slow(self) -> Resource:
        resource = self._simple("/site/slow.html", "A slow page")
        resource.slow = True
        return resource

    def _latin1(self) -> Resource:
        body = [
            Element("raw", text="<p>Ça coûte 5 € — « très » cher : naïve élève, œuvre, Straße, l’été.</p>"),
            Element("a", (self.s("/site/caf%C3%A9.html"),), "Le café", href="café.html"),
            Element("a", (self.s("/site/culture/"),), "Culture"),
        ]
        resource = self._page("/site/latin1.html", "Café crème à l’été", body, lang="fr", encoding="windows-1252")
        resource.content_type = "text/html; charset=windows-1252"
        resource.chunked = True
        return resource

    def _cafe(self) -> Resource:
        return self._simple("/site/café.html", "Le café")

    def _malformed(self) -> Resource:
        edges = tuple((self.s(path), hop) for path, hop in MALFORMED_EDGES)
        page = Page("/site/malformed.html", "Malformed", markup=MALFORMED_MARKUP, extra_edges=edges)
        return Resource(page=page, gzip=True)

    def _broken(self) -> Resource:
        page = Page("/site/broken.html", "Internal Server Error", body=[Element("p")])
        return Resource(status=500, page=page)

    def _site_asset(self, folder: str, name: str, extension: str) -> Resource | None:
        path = f"/site/{folder}/{name}.{extension}"
        if folder == "img" and name in ("bg", "malformed") and extension == "png":
            return self._binary(path)
        if folder == "img" and name.startswith("banner-") and name[7:] in SECTIONS and extension == "jpg":
            return self._binary(path)
        match = _IMAGE.fullmatch(name)
        if match is None:
            return None
        number, variant = (match[1], match[2]) if match[1] is not None else (match[4], match[3])
        n = int(number)
        extensions, feature = _IMAGE_FEATURES[variant]
        in_media = variant in ("clip", "chart")
        if extension not in extensions or folder != ("media" if in_media else "img") or n >= self.pages:
            return None
        if feature and not (n > 0 and has(feature, n) or n == 0 and feature == "srcset"):
            return None
        return self._binary(path)

    def _favicon(self) -> Resource:
        return self._binary("/site/favicon.ico")

    def _app_js(self) -> Resource:
        urls = [self.s(f"/site/js/only-{k}.html") for k in range(JS_ONLY_PAGES)]
        body = app_js([url.split("/", 3)[3] for url in urls])
        return Resource(
            content_type=JAVASCRIPT, body=body.encode(), edges=tuple((u, "X") for u in urls), gzip=True, chunked=True
        )

    def sitemap_entries(self) -> list[str]:
        """The page URLs the sitemap lists (some of them listed nowhere else)."""
        listed = [self.page_url(n) for n in range(min(self.pages, SITEMAP_LISTED))]
        listed += [
            self.s(f"/site/{SECTIONS[k % len(SECTIONS)]}/sitemap-only-{k}.html") for k in range(self.sitemap_only)
        ]
        return listed

    def _sitemap(self) -> Resource:
        def body() -> bytes:
            return sitemap_xml(self.sitemap_entries(), _mix(self.seed, 3)).encode()

        return Resource(content_type="application/xml; charset=utf-8", body=body, gzip=True)

    def _large(self) -> Resource:
        return Resource(content_type=assets.CONTENT_TYPES["bin"], large=True)

    def _external(self, path: str) -> Resource | None:
        if path == "/ext/":
            k = -1
        else:
            match = re.fullmatch(rf"/ext/{_NUMBER}\.html", path)
            if match is None or int(match[1]) >= EXTERNAL_PAGES:
                return None
            k = int(match[1])
        links = [Element("a", (self.x(f"/ext/{(k + 1) % EXTERNAL_PAGES}.html"),), "Next"), self._link(0, "Back")]
        title = "An external site" if k < 0 else f"External page {k}"
        return Resource(page=Page(path, title, body=[Element("h1", text=title), Element("p"), *links]))

    # Serving -----------------------------------------------------------------------------------------------

    def serve(self, request: Request) -> Response:
        """The response to a request on any of the site's addresses."""
        host, path = request.host_index, _clean(request.path)
        built = self._built(host, path)
        if built.slow:
            self.site.stopping.wait(self.slow_seconds)  # returns at once when the site stops
        if built.large:
            block = assets.large_file_block(_mix(self.seed, 5), self.large_file_bytes)
            chunks = assets.large_file_chunks(block, self.large_file_bytes)
            return Response(content_type=built.content_type, chunks=chunks, length=self.large_file_bytes)
        headers = dict(built.headers)
        body = built.body
        if built.gzip:
            headers["Vary"] = "Accept-Encoding"
            if accepts_gzip(request.headers.get("accept-encoding", "")):
                body = self._gzipped(host, path)
                headers["Content-Encoding"] = "gzip"
        return Response(
            status=built.status, body=body, headers=headers, content_type=built.content_type, chunked=built.chunked
        )

    def body(self, url: str, *, gzipped: bool = False) -> bytes:
        """The body served at an absolute URL (what :meth:`serve` sends, without HTTP)."""
        located = self.locate(url)
        if located is None:
            raise ValueError(f"{url} is not on this site")
        return self._gzipped(*located) if gzipped else self._built(*located).body

    def _build(self, host: int, path: str) -> _Built:
        resource = self.resolve(host, path)
        if resource is None:
            page = Page(path, "Not Found", body=[Element("h1", text="Not Found"), Element("p")])
            resource = Resource(status=404, page=page)
        headers: tuple[tuple[str, str], ...] = ()
        if resource.page is not None:
            body = render_page(resource.page, self.origins()[host])
        elif resource.location:
            body = b"<!DOCTYPE html>\n<title>Moved</title>\n<p>Moved.</p>\n"
            headers = (("Location", resource.location),)
        else:
            body = resource.body() if callable(resource.body) else resource.body or b""
        return _Built(
            resource.status,
            resource.content_type,
            body,
            headers,
            resource.gzip,
            resource.chunked,
            resource.slow,
            resource.large,
        )

    def _gzip(self, host: int, path: str) -> bytes:
        return gzip.compress(self._built(host, path).body, compresslevel=6, mtime=0)

    # Ground truth ------------------------------------------------------------------------------------------

    def ground_truth_hops(self, **options) -> dict[str, str]:
        from webarchive.testsite.groundtruth import walk

        return walk(self, **options)

    def ground_truth(self, **options) -> set[str]:
        return set(self.ground_truth_hops(**options))

    def feature_urls(self) -> dict[str, list[str]]:
        from webarchive.testsite.groundtruth import feature_urls

        return feature_urls(self)


def _clean(path: str) -> str:
    """A request path without its ``;parameters`` (``;jsessionid=…``), percent-decoded."""
    if ";" in path:
        path = re.sub(r";[^/]*", "", path)
    return unquote(path) if "%" in path else path
