"""The ground truth of the generated website: the URLs a correct crawl of it must capture.

It is computed by walking the same page plans the server renders, so it is
what the site really serves. Hop letters are the crawler's: L link, E embedded
requisite, X URL found in a script, R redirect or meta refresh, M sitemap entry.

- The walk starts at ``start`` (a path or absolute URL on 127.0.0.1:P,
  default ``/site/``) and follows the links of each response.
- A URL is *in scope* when it is on 127.0.0.1:P and the policy admits it:
  ``host`` (and ``domain``: an IP address is its own domain) any such URL;
  ``path`` those whose path starts with the start's directory (up to its last
  "/"); ``clicks`` those at most ``clicks`` L or M letters from the start;
  ``page`` the start itself and the targets of its redirects. ``clicks``
  given with another policy limits it as well.
- An in-scope URL is included and all its links are followed: L and M one
  click further, X (only when ``javascript``), R and E at the same click
  count (a script, a redirect, a requisite are not clicks).
- An E link (image, style sheet, @import, font, url(), script, favicon,
  srcset candidate, poster, <source>, <object>, <iframe>) is included wherever
  it is (requisites on the CDN, outside the scope, count); its own E links and
  redirects are followed too (an @imported style sheet, a redirected image),
  its L links only if it is in scope itself (an iframe document on the site).
- Every response counts: each URL of a redirect chain, the 404 and 500 URLs.
- The sitemap named in robots.txt is read unless ``sitemaps=False`` or the
  policy is ``page``: its entries are one click from the start (hop path
  "PM": P for robots.txt, a prerequisite, then M).
- Excluded: URLs under /site/private/ when ``obey_robots``; the external site
  (127.0.0.3); the calendar except the month linked from home and the months
  either side of it (a crawler stops the infinite calendar somewhere: the
  ground truth holds what must be there, not what may be); robots.txt and
  sitemap.xml themselves (crawler prerequisites, not what a visitor needs).
- URLs are canonical: session ids stripped (the site's links carry ``?sid=``,
  ``;jsessionid=`` and ``?token=<40 hex>``), no fragment, lower-case host,
  the port kept (it is never a default one), non-ASCII characters of a path
  percent-encoded in UTF-8 with upper-case hex.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from webarchive.testsite.layout import (
    FEATURES,
    JS_ONLY_PAGES,
    LANDINGS,
    PRIVATE_PAGES,
    REDIRECT_CHAINS,
    SECTIONS,
    has,
)
from webarchive.testsite.markup import directory

if TYPE_CHECKING:
    from webarchive.testsite.generated import GeneratedSite

POLICIES = ("page", "clicks", "path", "host", "domain")


def walk(
    site: GeneratedSite,
    *,
    start: str = "/site/",
    policy: str = "host",
    clicks: int | None = None,
    obey_robots: bool = True,
    javascript: bool = True,
    sitemaps: bool = True,
) -> dict[str, str]:
    """The ground truth as {absolute URL: the hop path it is first reached by} (see the module rules)."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {', '.join(POLICIES)}")
    if policy == "clicks" and clicks is None:
        raise ValueError('the "clicks" policy needs clicks=N')
    if clicks is not None and clicks < 0:
        raise ValueError("clicks cannot be negative")
    origin = site.s("")
    start_url = start if "://" in start else site.s(start)
    located = site.locate(start_url)
    if located is None or located[0] != 0 or site.resolve(*located) is None:
        raise ValueError(f"{start} is not a URL of the generated site on {origin}")
    start_dir = directory(start_url[len(origin) :])
    private = origin + "/site/private/"
    calendar = origin + "/site/calendar/"
    calendar_window = set(site.calendar_window())
    seeds = {start_url}

    def in_scope(url: str, depth: int) -> bool:
        if not url.startswith(origin + "/") or (clicks is not None and depth > clicks):
            return False
        if policy == "page":
            return url in seeds
        if policy == "path":
            return url.startswith(start_dir, len(origin))
        return True

    found: dict[str, str] = {}
    done: set[tuple[str, bool, bool]] = set()  # (url, followed, as a requisite): each walked once
    # 0-1 breadth-first: zero-click hops go to the front, so each URL is first met at its fewest clicks.
    queue: deque[tuple[str, int, str, bool]] = deque([(start_url, 0, "", False)])
    if sitemaps and policy != "page":
        queue.extend((entry, 1, "PM", False) for entry in site.sitemap_entries())
    while queue:
        url, depth, hops, requisite = queue.popleft()
        if obey_robots and url.startswith(private):
            continue
        if url.startswith(calendar) and url not in calendar_window:
            continue
        follow = in_scope(url, depth)
        key = (url, follow, requisite)
        if not (follow or requisite) or key in done:
            continue
        done.add(key)
        found.setdefault(url, hops)
        for target, hop in site.links(url):
            if hop == "E":
                if (target, in_scope(target, depth), True) not in done:  # most are the shared ones, done
                    queue.appendleft((target, depth, hops + "E", True))
            elif hop == "R":
                if follow and policy == "page" and url in seeds:
                    seeds.add(target)  # a seed's redirect target is a seed
                queue.appendleft((target, depth, hops + "R", requisite))
            elif not follow or target in found:
                continue  # found at fewer clicks already: as a link, it would only be found again
            elif hop == "X":
                if javascript:
                    queue.appendleft((target, depth, hops + "X", False))
            else:
                queue.append((target, depth + 1, hops + hop, False))
    return found


def feature_urls(site: GeneratedSite) -> dict[str, list[str]]:
    """URLs of each feature of the site, by name, read from the page plans (all pages: slow at 100k)."""
    s = site.s
    # "with_<feature>": the numbered pages that have it (see generated.FEATURES).
    features: dict[str, list[str]] = {f"with_{name}": [] for name in FEATURES}
    session_links, moved = [], []
    for n in range(site.pages):
        url = site.page_url(n)
        for name in FEATURES:
            if n > 0 and has(name, n):
                features[f"with_{name}"].append(url)
        for element in site.resource(url).page.body:
            if element.kind == "a" and element.suffix:
                session_links.append(element.urls[0] + element.suffix)
            elif element.kind == "a" and element.urls[0].startswith(s("/site/moved/")):
                moved.append(element.urls[0])
    chains = [
        s(f"/site/redirect/{status}/{k}")
        for status, length in REDIRECT_CHAINS.items()
        for k in range(length, 0, -1)
    ]
    external = [site.x("/ext/"), site.x("/ext/1.html")] if site.site.hosts == 3 else []
    features.update(
        {
            "home": [s("/site/")],
            "js_only": [s(f"/site/js/only-{k}.html") for k in range(JS_ONLY_PAGES)]
            + [s(f"/site/js/inline-{n}.html") for n in range(1, site.pages) if has("inline_script", n)],
            "sitemap_only": [
                s(f"/site/{SECTIONS[k % len(SECTIONS)]}/sitemap-only-{k}.html")
                for k in range(site.sitemap_only)
            ],
            "private": [s(f"/site/private/{k}.html") for k in range(PRIVATE_PAGES)],
            "redirects": [*chains, *dict.fromkeys(moved), s("/site/img/old-logo.png")],
            "meta_refresh": [s("/site/refresh.html")],
            "landing": [s(f"/site/landing/{name}.html") for name in LANDINGS],
            "calendar": site.calendar_window(),
            "session_links": session_links,
            "not_found": [s("/site/missing.html"), s("/site/img/missing.png")],
            "server_error": [s("/site/broken.html")],
            "slow": [s("/site/slow.html")],
            "large_file": [s("/site/files/large.bin")],
            "non_utf8": [s("/site/latin1.html")],
            "malformed": [s("/site/malformed.html")],
            "external": external,
            "cdn": [
                site.c(path) for path in ("/cdn/css/theme.css", "/cdn/img/logo.png", "/cdn/fonts/body.woff2")
            ],
            "gzip": [
                *(
                    s(path)
                    for path in ("/site/", "/site/css/site.css", "/site/js/app.js", "/site/malformed.html")
                ),
                s("/site/sitemap.xml"),
                site.c("/cdn/css/theme.css"),
                *features["with_gzip"],
            ],
            "chunked": [
                *(s(path) for path in ("/site/latin1.html", "/site/css/base.css", "/site/js/app.js")),
                *site.calendar_window(),
                *features["with_chunked"],
            ],
            "robots": [s("/robots.txt")],
            "sitemap": [s("/site/sitemap.xml")],
        }
    )
    return features
