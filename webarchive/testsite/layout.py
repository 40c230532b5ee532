"""Where everything of the generated website is: numbering, addresses, and which page has what.

The home is page 0; pages 1, 2, 3, 4 are the roots of the four sections, and
the sections then take turns (page n is in section (n - 1) % 4). Each section
is a tree of ``BRANCHING`` children per page, so every page is reachable and
the depth grows as the logarithm of the number of pages; "related" links add
shortcuts. Everything is derived from the page number and the seed.

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
- S/site/files/rapport.pdf (a PDF) and S/site/files/notes.txt (plain text in ISO-8859-1, gzip when
  asked for): documents in French for the full-text index, linked from no page
- X/ext/ and X/ext/<k>.html: the external site that some pages link to
"""

from __future__ import annotations

import datetime
import re
from urllib.parse import unquote

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
MASK = (1 << 64) - 1
NUMBER = r"(0|[1-9][0-9]{0,8})"  # a number in a URL: no leading zeros (one URL per number), no absurd length


def has(feature: str, n: int) -> bool:
    """Whether numbered page ``n`` has ``feature`` (see ``FEATURES``)."""
    modulus, remainder = FEATURES[feature]
    return n % modulus == remainder


def mix(*values: int) -> int:
    """A 64-bit hash of integers (splitmix64 steps): the site's only source of chance."""
    h = 0
    for value in values:
        h = (h + (value & MASK) + 0x9E3779B97F4A7C15) & MASK
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & MASK
        h ^= h >> 31
    return h


class Layout:
    """The numbering and the addresses of a generated website (its content is in ``generated``)."""

    def __init__(self, site, *, seed: int, pages: int, today: datetime.date | None):
        if pages < 1:
            raise ValueError("pages must be at least 1")
        self.site = site
        self.seed = seed
        self.pages = pages
        self.today = today or datetime.date.today()
        self.sitemap_only = len(SECTIONS) + pages // 200
        self._origins: tuple[int, tuple[str, ...]] = (-1, ())

    # Addresses ---------------------------------------------------------------------------------------------

    def origins(self) -> tuple[str, ...]:
        """``scheme://address:port`` of the site, the CDN and the external site."""
        port, origins = self._origins
        if port < 0:  # not kept before binding: port 0 is still to become a real port
            origins = tuple(self.site.host_url(index, "") for index in range(3))
            self._origins = (self.site.port if self.site.bound else -1, origins)
        return origins

    def s(self, path: str) -> str:
        """The absolute URL of ``path`` on the site (127.0.0.1)."""
        return self.origins()[0] + path

    def c(self, path: str) -> str:
        """The absolute URL of ``path`` on the CDN (127.0.0.2, or the site itself with one host)."""
        return self.origins()[1 if self.site.hosts >= 2 else 0] + path

    def x(self, path: str) -> str:
        """The absolute URL of ``path`` on the external site (127.0.0.3)."""
        return self.origins()[2] + path

    def locate(self, url: str) -> tuple[int, str] | None:
        """(host index, decoded path) of a URL of this site, None for any other URL."""
        for index, origin in enumerate(self.origins()[: self.site.hosts]):
            if url.startswith(origin + "/"):
                path = url[len(origin) :].partition("#")[0].partition("?")[0]
                return index, clean_path(path)
        return None

    # Numbering: page 0 is the home, then the sections take turns -----------------------------------------

    def page_path(self, n: int) -> str:
        """The path of numbered page ``n``."""
        if n == 0:
            return "/site/"
        section, local = (n - 1) % len(SECTIONS), (n - 1) // len(SECTIONS)
        return f"/site/{SECTIONS[section]}/" if local == 0 else f"/site/{SECTIONS[section]}/{n}.html"

    def page_url(self, n: int) -> str:
        """The absolute URL of numbered page ``n``."""
        return self.s(self.page_path(n))

    def page_urls(self) -> list[str]:
        """The absolute URLs of all numbered pages, the home (0) first."""
        return [self.page_url(n) for n in range(self.pages)]

    def parent(self, n: int) -> int:
        """The page that links ``n`` in its section's tree (0, the home, for a section's root)."""
        local = (n - 1) // len(SECTIONS)
        return 0 if local == 0 else 1 + ((local - 1) // BRANCHING) * len(SECTIONS) + (n - 1) % len(SECTIONS)

    def children(self, n: int) -> list[int]:
        """The pages ``n`` links below it in its section's tree (the section roots for the home)."""
        if n == 0:
            return list(range(1, min(len(SECTIONS) + 1, self.pages)))
        local, section = (n - 1) // len(SECTIONS), (n - 1) % len(SECTIONS)
        first = 1 + (BRANCHING * local + 1) * len(SECTIONS) + section
        return list(range(first, min(first + BRANCHING * len(SECTIONS), self.pages), len(SECTIONS)))

    def related(self, n: int) -> list[int]:
        """Up to ``RELATED`` pages anywhere that ``n`` also links, chosen by the seed."""
        found: list[int] = []
        if self.pages > 2:
            bits = mix(self.seed, n, 1)
            for i in range(RELATED):  # 21 bits of the hash each: enough for any number of pages asked
                m = 1 + ((bits >> (21 * i)) & 0x1FFFFF) % (self.pages - 1)
                if m != n and m not in found:
                    found.append(m)
        return found

    def session_suffix(self, n: int) -> str:
        """The session id page ``n`` adds to its first related link ("" for none)."""
        style = SESSION_STYLES.get(n % 6)
        if style is None:
            return ""
        digits = "".join(f"{mix(self.seed, n, i, 7):016x}" for i in range(3))
        suffixes = {
            "sid": f"?sid={digits[:32]}",
            "jsessionid": f";jsessionid={digits[:32].upper()}",
            "token": f"?token={digits[:40]}",  # no session name: only its 40 hex digits give it away
        }
        return suffixes[style]

    def calendar_path(self, year: int, month: int) -> str:
        """The path of a month of the infinite calendar."""
        return f"/site/calendar/{year:04d}/{month:02d}"

    def calendar_window(self) -> list[str]:
        """The month linked from the home page and its neighbours: the calendar URLs that must be crawled."""
        year, month = self.today.year, self.today.month
        months = [(year, month - 1) if month > 1 else (year - 1, 12), (year, month)]
        months.append((year, month + 1) if month < 12 else (year + 1, 1))
        return [self.s(self.calendar_path(y, m)) for y, m in months]

    def sitemap_entries(self) -> list[str]:
        """The page URLs the sitemap lists (some of them listed nowhere else)."""
        listed = [self.page_url(n) for n in range(min(self.pages, SITEMAP_LISTED))]
        listed += [
            self.s(f"/site/{SECTIONS[k % len(SECTIONS)]}/sitemap-only-{k}.html")
            for k in range(self.sitemap_only)
        ]
        return listed


def clean_path(path: str) -> str:
    """A request path without its ``;parameters`` (``;jsessionid=…``), percent-decoded."""
    if ";" in path:
        path = re.sub(r";[^/]*", "", path)
    return unquote(path) if "%" in path else path
