"""The generated website under ``/site/``: what each URL serves, derived from (seed, pages) when asked.

Nothing is precomputed: what a URL serves is computed from its path (page
``n``'s links, images and text from ``n`` and the seed) when first asked, then
kept per path in an LRU cache, so 100,000 pages cost nothing until crawled.
A page is a plan (:mod:`webarchive.testsite.markup`) that gives both its HTML
and its links, which :mod:`webarchive.testsite.groundtruth` walks. Where
everything is (the map of the site) is in :mod:`webarchive.testsite.layout`.
"""

from __future__ import annotations

import datetime
import functools
import gzip
import re
import zlib
from dataclasses import dataclass

from webarchive.testsite import assets
from webarchive.testsite.groundtruth import feature_urls, walk
from webarchive.testsite.layout import (
    JS_ONLY_PAGES,
    NUMBER,
    REDIRECT_CHAINS,
    SECTIONS,
    clean_path,
    has,
    mix,
)
from webarchive.testsite.markup import Element, Page, render_page
from webarchive.testsite.plans import PagePlans, Resource
from webarchive.testsite.server import Request, Response
from webarchive.testsite.sitetext import (
    app_js,
    css_files,
    robots_txt,
    sitemap_xml,
)

CSS = "text/css; charset=utf-8"
JAVASCRIPT = "text/javascript; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
_SECTION = "(" + "|".join(SECTIONS) + ")"
_SECTION_PATTERNS = [
    (re.compile(rf"/site/{_SECTION}/(?:{NUMBER}\.html)?"), "_section_page"),
    (re.compile(rf"/site/{_SECTION}/sitemap-only-{NUMBER}\.html"), "_sitemap_only"),
]
_ASSET_PATTERN = [(re.compile(r"/site/(img|media)/([a-z0-9@-]+)\.(png|jpg|webp|webm|svg)"), "_site_asset")]
_SITE_PATTERNS = {  # by the folder after /site/; any other folder may be a section
    "js": [(re.compile(rf"/site/js/(only|inline)-{NUMBER}\.html"), "_js_page")],
    "private": [(re.compile(rf"/site/private/{NUMBER}\.html"), "_private")],
    "landing": [(re.compile(r"/site/landing/([a-z0-9]+)\.html"), "_landing")],
    "redirect": [(re.compile(rf"/site/redirect/(301|302)/{NUMBER}"), "_chain")],
    "moved": [(re.compile(rf"/site/moved/{NUMBER}\.html"), "_moved")],
    "embed": [(re.compile(rf"/site/embed/{NUMBER}\.html"), "_embed")],
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
    "/site/files/rapport.pdf": "_report",
    "/site/files/notes.txt": "_notes",
    "/site/img/old-logo.png": "_old_logo",
}
_IMAGE = re.compile(rf"{NUMBER}(|-480|-960|-hero|-hero@2x|-lazy)|(poster|embed|clip|chart)-{NUMBER}")
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
_CDN_FILES = {
    "img/logo.png",
    "img/badge.png",
    "img/pattern.png",
    "fonts/body.woff2",
    "fonts/body.woff",
    "fonts/icons.woff2",
}


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


class GeneratedSite(PagePlans):
    """The generated website of one :class:`~webarchive.testsite.TestSite`: its responses and ground truth."""

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
        super().__init__(site, seed=seed, pages=pages, today=today)
        if large_file_bytes < 0 or slow_seconds < 0:
            raise ValueError("large_file_bytes and slow_seconds cannot be negative")
        self.large_file_bytes = large_file_bytes
        self.slow_seconds = slow_seconds
        self._built = functools.lru_cache(maxsize=cache_size)(self._build)
        self._gzipped = functools.lru_cache(maxsize=cache_size)(self._gzip)
        self._truths: dict[tuple, dict[str, str]] = {}  # walks already made, by their options

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

    # Files and redirects -----------------------------------------------------------------------------------

    def _cdn(self, path: str) -> Resource | None:
        name = path[len("/cdn/") :]
        if name.startswith("css/"):
            return self._css(path)
        photo = re.fullmatch(rf"img/photo-{NUMBER}\.jpg", name)
        if photo and not (0 < int(photo[1]) < self.pages and has("cdn_photo", int(photo[1]))):
            return None
        if photo or name in _CDN_FILES:
            return self._binary(path)
        return None

    def _binary(self, path: str) -> Resource:
        extension = path.rpartition(".")[2]
        body = functools.partial(self._binary_body, extension, path)  # made only when served
        return Resource(content_type=assets.CONTENT_TYPES[extension], body=body)

    def _binary_body(self, extension: str, path: str) -> bytes:
        return assets.binary(extension, mix(self.seed, zlib.crc32(path.encode())))

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
        if feature and not has(feature, n):  # the home page (0) has the srcset of the even pages
            return None
        return self._binary(path)

    def _favicon(self) -> Resource:
        return self._binary("/site/favicon.ico")

    def _app_js(self) -> Resource:
        urls = [self.s(f"/site/js/only-{k}.html") for k in range(JS_ONLY_PAGES)]
        body = app_js([url.split("/", 3)[3] for url in urls])
        return Resource(
            content_type=JAVASCRIPT,
            body=body.encode(),
            edges=tuple((u, "X") for u in urls),
            gzip=True,
            chunked=True,
        )

    def _sitemap(self) -> Resource:
        def body() -> bytes:
            return sitemap_xml(self.sitemap_entries(), mix(self.seed, 3)).encode()

        return Resource(content_type="application/xml; charset=utf-8", body=body, gzip=True)

    def _large(self) -> Resource:
        return Resource(content_type=assets.CONTENT_TYPES["bin"], large=True)

    def _report(self) -> Resource:
        return Resource(content_type="application/pdf", body=assets.pdf_document())

    def _notes(self) -> Resource:
        # Latin-1, declared in the header; sent gzip when asked for.
        return Resource(
            content_type="text/plain; charset=iso-8859-1", body=assets.NOTES_TEXT.encode("latin-1"), gzip=True
        )

    # Serving -----------------------------------------------------------------------------------------------

    def serve(self, request: Request) -> Response:
        """The response to a request on any of the site's addresses."""
        host, path = request.host_index, clean_path(request.path)
        built = self._built(host, path)
        if built.slow:
            self.site.stopping.wait(self.slow_seconds)  # returns at once when the site stops
        if built.large:
            block = assets.large_file_block(mix(self.seed, 5), self.large_file_bytes)
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
            status=built.status,
            body=body,
            headers=headers,
            content_type=built.content_type,
            chunked=built.chunked,
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
            text_key = mix(self.seed, zlib.crc32(path.encode()))
            body = render_page(resource.page, self.origins()[host], text_key)
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
        """{URL: hop path} of the ground truth (see :mod:`webarchive.testsite.groundtruth`)."""
        if self.site.port == 0:
            raise RuntimeError("the site has no port yet: start (or bind) it before asking its ground truth")
        key = (self.origins(), *sorted(options.items()))
        if key not in self._truths:
            if len(self._truths) >= 8:  # a 100,000-page walk holds half a million URLs
                self._truths.pop(next(iter(self._truths)))
            self._truths[key] = walk(self, **options)
        return dict(self._truths[key])

    def ground_truth(self, **options) -> set[str]:
        """The absolute URLs a crawl of the site must capture (see :mod:`webarchive.testsite.groundtruth`)."""
        return set(self.ground_truth_hops(**options))

    def feature_urls(self) -> dict[str, list[str]]:
        """URLs of each feature of the site, by name (see :func:`groundtruth.feature_urls`)."""
        return feature_urls(self)
