"""The script-built section ``/js/``: a news front page that only a real browser sees whole.

Its HTML is an empty shell; ``/js/app.js`` assembles every URL at run time (no
string literal in it holds a slash or a dot), so a crawler that reads HTML and
greps scripts finds ``/js/`` and ``/js/app.js`` and nothing more. A browser
that opens the page, scrolls to the end in steps, clicks the load-more button,
each tab and the in-page link and plays the media loads :func:`browser_urls`.

The page, as the browser behaviours meet it:

- ``main#articles``: ``article.story`` elements, each with an ``h2``, an ``a.read-more``
  to ``/js/article/<id>`` and an ``img.lazy`` whose ``data-src`` becomes its ``src``
  when an IntersectionObserver sees it in the viewport (jumps skip images: scroll in
  steps of at most a viewport, a frame apart). Articles are 1000 px tall, so a
  1366x768 viewport shows one image at first.
- ``#sentinel`` below them fetches the next page when seen (:data:`PAGES` pages of
  :data:`PER_PAGE`); ``#feed-status`` then says ``data-state="end"``.
- ``button#load-more`` fetches one extra batch, then stays disabled.
- ``button[role=tab]`` in ``#tabs`` fill ``#tab-panel``; ``a#more-link`` (``href="#more"``)
  fills ``#extra`` without navigating; ``a#lead-link`` is an ordinary link away.
- ``audio#audio`` and ``video#video`` (``preload="none"``, muted) load only when played;
  ``iframe#frame`` and a style sheet with a web font are added at once.

Helper pages for a crawler's failure tests, not linked from ``/js/``: ``/js/hang``
spins forever from 100 ms after its load event, ``/js/crash`` allocates without
bound from 100 ms after its load event (a renderer started with
``--js-flags=--max-old-space-size=64`` dies half a second later), ``/js/navigate``
leaves for :data:`NAVIGATE_TARGET` 100 ms after its load event,
``/js/service-worker`` registers ``/js/sw.js`` and ``/js/refused`` also loads an
image and JSON from the external host 127.0.0.3. Everything here is fixed: it
does not depend on the site's seed.
"""

from __future__ import annotations

import functools
import io
import json
import wave
import zlib
from urllib.parse import urlsplit

from webarchive.testsite import assets
from webarchive.testsite import scripted_markup as markup
from webarchive.testsite.scripted_markup import NAVIGATE_TARGET
from webarchive.testsite.server import HOSTS, Request, Response, Router, not_found

router = Router()  # joined to the site's router by pages.py
external_router = Router()  # 127.0.0.3's part of the section, joined likewise

PAGES = 3  # pages of the infinite scroll
PER_PAGE = 4

HTML = "text/html; charset=utf-8"
JAVASCRIPT = "application/javascript; charset=utf-8"
JSON = "application/json"
CSS = "text/css; charset=utf-8"
PNG = "image/png"
WOFF2 = "font/woff2"
WAV = "audio/wav"

TITLES = (  # articles 1..16: pages 1..PAGES, then the load-more batch
    "Harbour reopens after the winter storms",
    "City council approves the new tram line",
    "Library extends its evening hours",
    "Local bakery wins the regional bread prize",
    "Volunteers restore the old lighthouse",
    "School orchestra tours three countries",
    "River clean-up draws record crowds",
    "Museum unveils a forgotten map collection",
    "Market square gets a new fountain",
    "Cyclists celebrate the finished coastal path",
    "Observatory opens its dome to the public",
    "Farmers report an early apple harvest",
    "Theatre revives a century-old comedy",
    "Station clock ticks again after repairs",
    "Beekeepers share their honey with the food bank",
    "Night ferry returns for the summer season",
)
BATCH = range(PAGES * PER_PAGE + 1, len(TITLES) + 1)  # the ids the load-more button brings
TABS = {  # name: (label, text shown in the panel)
    "world": ("World", "World: talks resume on the shared river treaty."),
    "science": ("Science", "Science: a new comet is visible before dawn this week."),
    "culture": ("Culture", "Culture: the film festival announces its programme."),
}
EXTRA_TEXT = "From the desk: letters to the editor are open until Friday."
MEDIA = {"clip": 0.5, "reel": 0.6}  # /js/media/<name>.wav (audio, video): seconds of silence

# Content ----------------------------------------------------------------------------------------------


def article_titles() -> list[str]:
    """Every article title the front page shows after all behaviours, pages first, then the batch."""
    return list(TITLES)


def tab_texts() -> list[str]:
    """The texts the tabs show in ``#tab-panel``, in the order of the tabs."""
    return [text for _label, text in TABS.values()]


def extra_text() -> str:
    """The text the in-page link ``a#more-link`` shows in ``#extra``."""
    return EXTRA_TEXT


def _article(article_id: int) -> dict:
    title = TITLES[article_id - 1]
    return {
        "id": article_id,
        "title": title,
        "summary": f"Story {article_id} of the front page: {title.lower()}, and what comes next.",
    }


def _json(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@functools.cache
def _png(name: str) -> bytes:
    return assets.png(zlib.crc32(f"/js/img/{name}.png".encode()))


@functools.cache
def _wav(seconds: float) -> bytes:
    """Seconds of silence, 8 kHz mono 16-bit PCM."""
    rate = 8000
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(b"\x00\x00" * round(rate * seconds))
    return buffer.getvalue()


@functools.cache
def _font() -> bytes:
    return assets.binary("woff2", zlib.crc32(b"/js/font/news.woff2"))


# Routes -----------------------------------------------------------------------------------------------

_TAB_NAMES = [[name, label] for name, (label, _text) in TABS.items()]
_FILES = {  # path: (content type, body)
    "/js/": (HTML, markup.SHELL.format(layout=markup.LAYOUT).encode()),
    "/js/app.js": (JAVASCRIPT, markup.APP_JS.replace("TAB_NAMES", json.dumps(_TAB_NAMES)).encode()),
    "/js/article.js": (JAVASCRIPT, markup.ARTICLE_JS.encode()),
    "/js/css/theme.css": (CSS, markup.THEME_CSS.encode()),
    "/js/frame": (HTML, markup.FRAME.encode()),
    "/js/sw.js": (JAVASCRIPT, markup.SW_JS.encode()),
    "/js/api/extra": (JSON, _json({"text": EXTRA_TEXT})),
    "/js/hang": (HTML, markup.HANG),
    "/js/crash": (HTML, markup.CRASH),
    "/js/navigate": (HTML, markup.NAVIGATE),
    "/js/service-worker": (HTML, markup.SERVICE_WORKER_PAGE),
}
_TITLES = {  # the section's pages listed on the site's index
    "/js/": "A news front page built by JavaScript: infinite scroll, load more, tabs, lazy images, media",
    "/js/hang": "A page whose script spins forever from 100 ms after its load event",
    "/js/crash": "A page whose script exhausts memory (crashes a renderer started with a small V8 heap)",
    "/js/navigate": f"A page that goes to {NAVIGATE_TARGET} by script just after its load event",
    "/js/service-worker": "A page that registers a service worker (/js/sw.js), then fetches JSON",
}


def _file(request: Request) -> Response:
    content_type, body = _FILES[request.path]
    return Response(body=body, content_type=content_type)


for _path in _FILES:
    router.add(_path, _file, title=_TITLES.get(_path, ""), example=_path if _path in _TITLES else "")


@router.route("/js/api/articles", example="")
def articles_page(request: Request) -> Response:
    """Page ``?page=n`` of the infinite scroll."""
    page = request.arg("page")
    if not page.isdigit() or not 1 <= int(page) <= PAGES:
        return _json_error(f"page must be between 1 and {PAGES}")
    n = int(page)
    ids = range((n - 1) * PER_PAGE + 1, n * PER_PAGE + 1)
    answer = {"page": n, "pages": PAGES, "more": n < PAGES, "articles": [_article(k) for k in ids]}
    return Response(body=_json(answer), content_type=JSON)


@router.route("/js/api/more", example="")
def more_articles(request: Request) -> Response:
    """The one extra batch of the load-more button (``?batch=1``)."""
    if request.arg("batch") != "1":
        return _json_error("there is one batch: batch=1")
    answer = {"batch": 1, "more": False, "articles": [_article(k) for k in BATCH]}
    return Response(body=_json(answer), content_type=JSON)


@router.route("/js/api/tab/<name>", example="")
def tab(request: Request) -> Response:
    found = TABS.get(request.params["name"])
    if found is None:
        return _json_error("no such tab")
    return Response(body=_json({"tab": request.params["name"], "text": found[1]}), content_type=JSON)


@router.route("/js/api/article/<int:article_id>", example="")
def article_json(request: Request) -> Response:
    article_id = int(request.params["article_id"])
    if not 1 <= article_id <= len(TITLES):
        return _json_error("no such article")
    article = _article(article_id)
    body = [article["summary"], f"Reported for the Scripted Times, story {article_id} of {len(TITLES)}."]
    return Response(body=_json({**article, "body": body}), content_type=JSON)


@router.route("/js/article/<int:article_id>", example="/js/article/1", title="An article built by script")
def article_page(request: Request) -> Response:
    if not 1 <= int(request.params["article_id"]) <= len(TITLES):
        return not_found("There is no such article.")
    return Response(body=markup.ARTICLE_SHELL.encode(), content_type=HTML)


@router.route("/js/img/<name>", example="")
def image(request: Request) -> Response:
    name = request.params["name"].removesuffix(".png")
    known = name in ("frame", "own") or (name.isdigit() and 1 <= int(name) <= len(TITLES) and name[0] != "0")
    if not request.params["name"].endswith(".png") or not known:
        return not_found()
    return Response(body=_png(name), content_type=PNG)


@router.route("/js/font/news.woff2", example="")
def font(request: Request) -> Response:
    return Response(body=_font(), content_type=WOFF2)


@router.route("/js/media/<name>", example="")
def media(request: Request) -> Response:
    seconds = MEDIA.get(request.params["name"].removesuffix(".wav"))
    if seconds is None or not request.params["name"].endswith(".wav"):
        return not_found()
    return Response(body=_wav(seconds), content_type=WAV)


@router.route(
    "/js/refused", title="A page that also loads an image and JSON from the external host (127.0.0.3)"
)
def refused(request: Request) -> Response:
    external = _external_origin(request.base_url)
    return Response(body=markup.page("A page with external parts", markup.REFUSED.format(external=external)))


@external_router.route("/js/ext/photo.png")
def external_photo(request: Request) -> Response:
    return Response(body=_png("external"), content_type=PNG, headers={"Access-Control-Allow-Origin": "*"})


@external_router.route("/js/ext/feed.json")
def external_feed(request: Request) -> Response:
    body = _json({"text": "From the external site."})
    return Response(body=body, content_type=JSON, headers={"Access-Control-Allow-Origin": "*"})


def _json_error(message: str) -> Response:
    return Response(status=404, body=_json({"error": message}), content_type=JSON)


def _external_origin(base_url: str) -> str:
    """The external host (127.0.0.3) on the scheme and port of ``base_url``."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{HOSTS[2]}:{parts.port}"


# Ground truth -----------------------------------------------------------------------------------------


def _urls(base_url: str, paths) -> set[str]:
    return {base_url.rstrip("/") + path for path in paths}


def initial_urls(base_url: str) -> set[str]:
    """What a browser loads opening ``/js/`` without any interaction (viewport 1366x768), favicon aside."""
    return _urls(
        base_url,
        [
            "/js/",
            "/js/app.js",
            "/js/css/theme.css",
            "/js/font/news.woff2",
            "/js/api/articles?page=1",
            "/js/frame",
            "/js/img/frame.png",
            "/js/img/1.png",  # the first article's: the only one in the first viewport
        ],
    )


def browser_urls(base_url: str) -> set[str]:
    """What a browser loads on ``/js/`` after every behaviour: scroll to the end, clicks, media played.

    The behaviours: scroll down in steps to the end (again after the clicks), click
    ``#load-more``, each ``[role=tab]`` and ``#more-link``, play the audio and video.
    Following a link (``#lead-link``, ``a.read-more``) is not one: those are :func:`article_urls`.
    """
    paths = [f"/js/api/articles?page={n}" for n in range(1, PAGES + 1)]
    paths += ["/js/api/more?batch=1", "/js/api/extra", *(f"/js/api/tab/{name}" for name in TABS)]
    paths += [f"/js/img/{k}.png" for k in range(1, len(TITLES) + 1)]
    paths += [f"/js/media/{name}.wav" for name in MEDIA]
    return initial_urls(base_url) | _urls(base_url, paths)


def plain_crawler_urls(base_url: str) -> set[str]:
    """What a crawler reading HTML and script text (not running it) finds from ``/js/``."""
    return _urls(base_url, ["/js/", "/js/app.js"])


def article_urls(base_url: str) -> set[str]:
    """The article pages linked from the front page's DOM once every behaviour has run."""
    return _urls(base_url, [f"/js/article/{k}" for k in range(1, len(TITLES) + 1)])


def article_page_urls(base_url: str, article_id: int) -> set[str]:
    """What a browser loads opening the article page ``/js/article/<article_id>``."""
    paths = ["/js/article.js", f"/js/api/article/{article_id}", f"/js/img/{article_id}.png"]
    return _urls(base_url, [f"/js/article/{article_id}", *paths])


def service_worker_urls(base_url: str) -> set[str]:
    """What a browser loads opening ``/js/service-worker`` (the worker allowed or blocked)."""
    return _urls(base_url, ["/js/service-worker", "/js/sw.js", "/js/api/articles?page=1"])


def refused_urls(base_url: str) -> set[str]:
    """The URLs of ``/js/refused`` on the site itself (what a crawler refusing 127.0.0.3 still loads)."""
    return _urls(base_url, ["/js/refused", "/js/img/own.png", "/js/api/extra"])


def external_urls(base_url: str) -> set[str]:
    """The URLs ``/js/refused`` asks of the external host 127.0.0.3 (needs ``TestSite(hosts=3)``)."""
    return _urls(_external_origin(base_url), ["/js/ext/photo.png", "/js/ext/feed.json"])


def served_urls(base_url: str) -> set[str]:
    """Every URL of the section on the site itself (127.0.0.1), pages and what they load."""
    urls = browser_urls(base_url) | service_worker_urls(base_url) | refused_urls(base_url)
    for article_id in range(1, len(TITLES) + 1):
        urls |= article_page_urls(base_url, article_id)
    return urls | _urls(base_url, ["/js/hang", "/js/crash", "/js/navigate"])
