"""Pages of the generated website as plans (lists of elements) and their HTML.

A :class:`Page` is a list of :class:`Element` s, each naming the absolute URLs
it refers to. The same list gives the page's HTML (:func:`render_page`) and
its outgoing links (:func:`page_edges`, with the hop letter a crawler records),
so what is served and what the ground truth expects come from one place.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from html import escape
from typing import NamedTuple

# The hop letter (Heritrix convention) of the URLs of each kind of element; kinds
# not listed ("p", "h1", "h2", "raw") refer to nothing.
HOPS = {
    "a": "L",
    "stylesheet": "E",
    "icon": "E",
    "script": "E",
    "img": "E",
    "img-protocol-relative": "E",
    "srcset": "E",
    "picture": "E",
    "lazy": "E",
    "banner": "E",
    "video": "E",
    "object": "E",
    "iframe": "E",
    "inline-script": "X",
    "refresh": "R",
}

# A 1x1 transparent GIF: lazy images show it until their script swaps in data-src.
PLACEHOLDER = "data:image/gif;base64,R0lGODlhAQABAAAAACH5BAEKAAEALAAAAAABAAEAAAICTAEAOw=="

_VOCABULARY = (
    "archive web legal deposit library harvest crawl record page site link image style script "
    "collection curator election news sport culture science history museum journal review city "
    "river mountain village market garden festival theatre concert lecture school student council "
    "report budget policy research study survey energy climate water forest ocean island harbour "
    "bridge railway station airport road tower castle church square street house window door "
    "morning evening winter summer spring autumn yesterday today tomorrow early late quiet busy "
    "open closed new old small large bright dark green blue red yellow white black silver golden "
    "the a of and to in for on with from by at about after before during between under over"
)
WORDS = _VOCABULARY.split()


class Element(NamedTuple):  # a tuple: pages are built by the ten thousand for the ground truth
    """One part of a page: its kind (see ``HOPS``), the absolute URLs it names, and its text.

    ``suffix`` is appended to the first URL as written (a session id the crawler
    must strip); ``href`` replaces the written form of the first URL entirely.
    """

    kind: str
    urls: tuple[str, ...] = ()
    text: str = ""
    suffix: str = ""
    href: str = ""


@dataclass(slots=True)
class Page:
    """An HTML page of the generated site: where it is, its title, and its elements in order."""

    path: str
    title: str
    head: list[Element] = field(default_factory=list)
    body: list[Element] = field(default_factory=list)
    base: str = ""  # a <base href> path, "" for none
    lang: str = "en"
    encoding: str = "utf-8"  # anything else is declared only in the Content-Type header
    markup: str = ""  # the whole HTML verbatim, for pages whose markup is the point (malformed)
    extra_edges: tuple[tuple[str, str], ...] = ()  # the links of a verbatim page


def page_edges(page: Page) -> list[tuple[str, str]]:
    """The (absolute URL, hop letter) pairs a crawler finds in the page, in document order."""
    edges = []
    for element in (*page.head, *page.body):
        hop = HOPS.get(element.kind)
        if hop is not None:
            edges.extend((url, hop) for url in element.urls)
    edges.extend(page.extra_edges)
    return edges


def directory(path: str) -> str:
    """The directory part of a URL path, up to and including its last slash."""
    return path[: path.rindex("/") + 1]


class Writer:
    """Writes URLs the way pages of the site do: relative when short, absolute across hosts."""

    def __init__(self, origin: str, base_dir: str, *, deep: bool):
        self.origin = origin  # "http://127.0.0.1:port": other origins are written in full
        self.base_dir = base_dir
        self.deep = deep  # relative to base_dir at any depth (pages with <base>), else direct children only

    def __call__(self, url: str) -> str:
        if not url.startswith(self.origin + "/"):
            return url
        path = url[len(self.origin) :]
        if not path.startswith(self.base_dir):
            return path
        rest = path[len(self.base_dir) :]
        if not rest:
            return "./"
        if self.deep or "/" not in rest.rstrip("/"):
            return rest
        return path


def render_page(page: Page, origin: str, text_key: int) -> bytes:
    """The page's HTML, encoded as the page says; ``text_key`` seeds its filler text."""
    if page.markup:
        return page.markup.encode(page.encoding)
    write = Writer(origin, page.base or directory(page.path), deep=bool(page.base))
    rng = random.Random(text_key)  # noqa: S311  (filler text, not secrets)
    out = ["<!DOCTYPE html>", f'<html lang="{page.lang}">', "<head>"]
    if page.encoding == "utf-8":
        out.append('<meta charset="utf-8">')
    out.append(f"<title>{escape(page.title)}</title>")
    if page.base:
        out.append(f'<base href="{page.base}">')
    out.extend(_element(element, write, rng) for element in page.head)
    out += ["</head>", "<body>"]
    out.extend(_element(element, write, rng) for element in page.body)
    out += ["</body>", "</html>", ""]
    return "\n".join(out).encode(page.encoding)


def _element(element: Element, write: Writer, rng: random.Random) -> str:
    kind, urls, text = element.kind, element.urls, escape(element.text)
    href = element.href or (write(urls[0]) + element.suffix if urls else "")
    if kind == "a":
        return f'<a href="{href}">{text}</a>'
    if kind == "p":
        return f"<p>{_filler(rng)}</p>"
    if kind in ("h1", "h2"):
        return f"<{kind}>{text}</{kind}>"
    if kind == "raw":
        return element.text
    if kind == "stylesheet":
        return f'<link rel="stylesheet" href="{href}">'
    if kind == "icon":
        return f'<link rel="icon" href="{href}">'
    if kind == "script":
        return f'<script src="{href}" defer></script>'
    if kind == "img":
        return f'<img src="{href}" alt="{text}">'
    if kind == "img-protocol-relative":
        return f'<img src="{urls[0].split(":", 1)[1]}" alt="{text}">'
    if kind == "srcset":
        return (
            f'<img src="{href}" srcset="{write(urls[1])} 480w, {write(urls[2])} 960w"'
            f' sizes="(max-width: 600px) 480px, 960px" alt="{text}">'
        )
    if kind == "picture":
        return (
            f'<picture><source type="image/webp" srcset="{write(urls[1])} 1x, {write(urls[2])} 2x">'
            f'<img src="{href}" alt="{text}"></picture>'
        )
    if kind == "lazy":
        return f'<img class="lazy" src="{PLACEHOLDER}" data-src="{href}" alt="{text}">'
    if kind == "banner":
        return f'<div class="banner" style="background-image: url(\'{href}\')"></div>'
    if kind == "video":
        return (
            f'<video controls preload="none" poster="{href}">'
            f'<source src="{write(urls[1])}" type="video/webm"></video>'
        )
    if kind == "object":
        return f'<object data="{href}" type="image/svg+xml">{text}</object>'
    if kind == "iframe":
        return f'<iframe src="{href}" title="{text}" width="400" height="120"></iframe>'
    if kind == "inline-script":
        # Written as an absolute path: a script's URL is the only place this page is named.
        path = urls[0].split("/", 3)[3]
        return (
            '<script>\ndocument.addEventListener("keydown", function (event) {\n'
            f'  if (event.key === "n") {{ window.location.href = "/{path}"; }}\n}});\n</script>'
        )
    if kind == "refresh":
        return f'<meta http-equiv="refresh" content="0; url={href}">'
    raise ValueError(f"unknown element kind {kind!r}")


def _filler(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(30, 70))
    words[0] = words[0].capitalize()
    return " ".join(words) + "."
