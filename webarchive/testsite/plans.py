"""The HTML pages of the generated website as plans: the home, the numbered pages, the special pages.

Each method returns a :class:`Resource` whose page plan
(:mod:`webarchive.testsite.markup`) gives both the HTML served and the links
the ground truth walks. Which page has which feature is decided in
:mod:`webarchive.testsite.layout`; dispatching URLs to these methods, the other
files and serving are in :mod:`webarchive.testsite.generated`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from webarchive.testsite.layout import (
    EXTERNAL_PAGES,
    JS_ONLY_PAGES,
    LANDINGS,
    NUMBER,
    PRIVATE_PAGES,
    SECTIONS,
    Layout,
    has,
)
from webarchive.testsite.markup import Element, Page, page_edges
from webarchive.testsite.sitetext import MALFORMED_EDGES, MALFORMED_MARKUP

HTML = "text/html; charset=utf-8"


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


class PagePlans(Layout):
    """The plans of the generated website's HTML pages (each method answers one kind of URL)."""

    _chrome: tuple[str, list[Element], list[Element]] = ("", [], [])  # (origin, head, header), made once

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
        page = Page(path, title, self._head(), [*self._top(title), *body, *self._bottom()], **options)
        return Resource(page=page)

    def _link(self, n: int, text: str = "") -> Element:
        return Element("a", (self.origins()[0] + self.page_path(n),), text or self._title(n))

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
            body.append(
                Element("a", (self.page_url(target),), self._title(target), self.session_suffix(style_n))
            )
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
            return [
                Element("srcset", (src, self.s(f"/site/img/{n}-480.png"), self.s(f"/site/img/{n}-960.png")))
            ]
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
        s = self.origins()[0].__add__  # self.s, without a call per URL: pages are built by the ten thousand
        body = [self._link(self.parent(n), "Up"), Element("p"), Element("p"), *self._main_image(n)]
        if has("picture", n):
            body.append(
                Element(
                    "picture",
                    (
                        s(f"/site/img/{n}-hero.jpg"),
                        s(f"/site/img/{n}-hero.webp"),
                        s(f"/site/img/{n}-hero@2x.webp"),
                    ),
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
        session = self.session_suffix(n)
        for i, m in enumerate(related):
            if i == 0 and session:
                body.append(Element("a", (s(self.page_path(m)),), self._title(m), session))
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
        body += [Element("a", (url,), text) for feature, (url, text) in extras.items() if has(feature, n)]
        if has("inline_script", n):
            body.append(Element("inline-script", (s(f"/site/js/inline-{n}.html"),)))
        resource = self._page(
            self.page_path(n), self._title(n), body, base="/site/" if has("base", n) else ""
        )
        resource.gzip, resource.chunked = has("gzip", n), has("chunked", n)
        return resource

    def _simple(self, path: str, title: str, *links: Element) -> Resource:
        return self._page(path, title, [Element("p"), *links, Element("p")])

    def _js_page(self, kind: str, number: str) -> Resource | None:
        n = int(number)
        exists = n < JS_ONLY_PAGES if kind == "only" else n < self.pages and has("inline_script", n)
        if not exists:
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
        following = (
            [Element("a", (self.s(f"/site/private/{k + 1}.html"),), "Next")] if k + 1 < PRIVATE_PAGES else []
        )
        return self._simple(f"/site/private/{k}.html", f"Private page {k}", *following)

    def _landing(self, name: str) -> Resource | None:
        if name not in LANDINGS:
            return None
        return self._simple(f"/site/landing/{name}.html", f"Reached through {name}")

    def _embed(self, number: str) -> Resource | None:
        n = int(number)
        if not (n < self.pages and has("iframe", n)):
            return None
        body = [
            Element("img", (self.s(f"/site/img/embed-{n}.png"),), "Embedded picture"),
            self._link(0, "Home"),
        ]
        return Resource(page=Page(f"/site/embed/{n}.html", f"Embedded in page {n}", body=body))

    def _calendar(self, year: str, month: str) -> Resource | None:
        y, m = int(year), int(month)
        if not (1 <= y <= 9999 and 1 <= m <= 12):
            return None
        links = []
        previous, following = divmod(y * 12 + m - 2, 12), divmod(y * 12 + m, 12)
        if previous[0] >= 1:
            links.append(
                Element("a", (self.s(self.calendar_path(previous[0], previous[1] + 1)),), "Previous")
            )
        if following[0] <= 9999:
            links.append(Element("a", (self.s(self.calendar_path(following[0], following[1] + 1)),), "Next"))
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
            Element(
                "raw", text="<p>Ça coûte 5 € — « très » cher : naïve élève, œuvre, Straße, l\u2019été.</p>"
            ),
            Element("a", (self.s("/site/caf%C3%A9.html"),), "Le café", href="café.html"),
            Element("a", (self.s("/site/culture/"),), "Culture"),
        ]
        resource = self._page(
            "/site/latin1.html", "Café crème à l\u2019été", body, lang="fr", encoding="windows-1252"
        )
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

    def _external(self, path: str) -> Resource | None:
        if path == "/ext/":
            k = -1
        else:
            match = re.fullmatch(rf"/ext/{NUMBER}\.html", path)
            if match is None or int(match[1]) >= EXTERNAL_PAGES:
                return None
            k = int(match[1])
        links = [
            Element("a", (self.x(f"/ext/{(k + 1) % EXTERNAL_PAGES}.html"),), "Next"),
            self._link(0, "Back"),
        ]
        title = "An external site" if k < 0 else f"External page {k}"
        return Resource(page=Page(path, title, body=[Element("h1", text=title), Element("p"), *links]))
