"""The pages of the test website. Add a page: write a handler, decorate it with ``@router.route``.

The title and example of each route make the index page (``/``), which
therefore lists every page a human can click through. The generated website
(``/site/``, ``/robots.txt``, and the CDN and external sites on the other
addresses) is served by :mod:`webarchive.testsite.generated`; the section built by
script (``/js/``) by :mod:`webarchive.testsite.scripted`.
"""

from __future__ import annotations

import html
import time

from webarchive.testsite import playable, scripted, streams
from webarchive.testsite.server import Request, Response, Router, html_page, not_found, redirect, text

router = Router()
cdn_router = Router()  # 127.0.0.2
external_router = Router()  # 127.0.0.3

MAX_SLOW_SECONDS = 60.0
MAX_REDIRECT_CHAIN = 100


@router.route("/", title="This index")
def index(request: Request) -> Response:
    items = "\n".join(
        f"<li><a href='{html.escape(route.example)}'>{html.escape(route.example)}</a>"
        f" — {html.escape(route.title)}</li>"
        for route in request.site.router.routes
        if route.example and route.example != "/"
    )
    return html_page(
        "Web archive test site",
        f"<p>A synthetic website for the tests (seed {request.site.seed}).</p>\n<ul>\n{items}\n</ul>",
    )


@router.route("/ok", title="A page that answers 200")
def ok(request: Request) -> Response:
    return html_page("OK", "<p>This page answers 200 OK.</p><p><a href='/'>Back to the index</a></p>")


@router.route("/redirect/<int:n>", example="/redirect/3", title="A chain of n 301 redirects ending at /ok")
def redirect_chain(request: Request) -> Response:
    n = int(request.params["n"])
    if not 1 <= n <= MAX_REDIRECT_CHAIN:
        return not_found(f"n must be between 1 and {MAX_REDIRECT_CHAIN}.")
    target = "/ok" if n == 1 else f"/redirect/{n - 1}"
    return redirect(request.absolute(target), status=301)


@router.route("/redirect-302", title="A 302 redirect to /ok")
def redirect_302(request: Request) -> Response:
    return redirect(request.absolute("/ok"), status=302)


@router.route("/redirect-relative", title="A redirect with a relative Location (ok?via=relative)")
def redirect_relative(request: Request) -> Response:
    return redirect("ok?via=relative", status=302)


@router.route(
    "/redirect-to-https",
    title="A 301 to https on a port that does not speak TLS (this site's own port, or ?port=N)",
)
def redirect_to_https(request: Request) -> Response:
    port = request.arg("port") or str(request.site.port)
    if not port.isdigit():
        return text("port must be a number\n", status=400)
    return redirect(f"https://{request.site.host}:{port}/ok", status=301)


@router.route("/loop", title="A redirect to itself")
def loop(request: Request) -> Response:
    return redirect(request.absolute("/loop"), status=302)


@router.route(
    "/redirect-to",
    example="/redirect-to?url=/ok",
    title="A redirect to any URL given in ?url= (and ?status=301…)",
)
def redirect_to(request: Request) -> Response:
    url = request.arg("url")
    status = request.arg("status", "302")
    if not url:
        return text("?url= is missing\n", status=400)
    if status not in {"301", "302", "303", "307", "308"}:
        return text("?status= must be a redirect status\n", status=400)
    return redirect(url, status=int(status))


@router.route(
    "/cookie-redirect",
    title="Without the cookie “visited”, sets it and redirects to itself; with it, answers 200",
)
def cookie_redirect(request: Request) -> Response:
    if "visited=yes" in request.headers.get("cookie", ""):
        return html_page("Welcome back", "<p>The cookie was there.</p>")
    response = redirect(request.absolute("/cookie-redirect"), status=302)
    response.headers["Set-Cookie"] = "visited=yes; Path=/"
    return response


@router.route("/not-found", title="A page that answers 404")
def missing(request: Request) -> Response:
    return not_found()


@router.route("/error", title="A page that answers 500")
def error(request: Request) -> Response:
    return html_page("Internal Server Error", "<p>Something went wrong, on purpose.</p>", status=500)


@router.route(
    "/slow",
    example="/slow?seconds=2",
    title="Answers after ?seconds=S (other requests go on); with &then=URL, redirects there",
)
def slow(request: Request) -> Response:
    try:
        seconds = float(request.arg("seconds", "1"))
    except ValueError:
        return text("seconds must be a number\n", status=400)
    seconds = max(0.0, min(seconds, MAX_SLOW_SECONDS))
    request.site.stopping.wait(seconds)  # returns at once when the site stops
    then = request.arg("then", "")
    if then:
        return redirect(then, status=302)
    return html_page("Slow", f"<p>This page waited {seconds:g} s.</p>")


@router.route(
    "/drip",
    example="/drip?seconds=5",
    title="Headers at once, then the body one piece at a time over ?seconds=S",
)
def drip(request: Request) -> Response:
    try:
        seconds = max(0.0, min(float(request.arg("seconds", "5")), MAX_SLOW_SECONDS))
    except ValueError:
        return text("seconds must be a number\n", status=400)
    pieces = 10
    piece = b"<p>" + b"drip " * 200 + b"</p>\n"

    def chunks():
        for _ in range(pieces):
            if request.site.stopping.wait(seconds / pieces):
                return
            yield piece

    return Response(chunks=chunks(), length=pieces * len(piece))


NEWS_ARTICLES_SHOWN = 3


@router.route(
    "/news/",
    title="A news front page: articles E to E+2 of edition E (the site's news_edition, which a test sets; "
    "else a new edition every hour)",
)
def news_front(request: Request) -> Response:
    edition = getattr(request.site, "news_edition", None)
    edition = int(edition) if edition is not None else int(time.time() // 3600) % 100_000 + 1
    items = "\n".join(
        f"<li><a href='/news/article/{number}'>Article {number}</a></li>"
        for number in range(edition, edition + NEWS_ARTICLES_SHOWN)
    )
    response = html_page(
        f"News, edition {edition}", f"<ul>\n{items}\n</ul>\n<p><a href='/news/about'>About us</a></p>"
    )
    response.body = response.body.replace(
        b"</head>", b"<link rel='stylesheet' href='/news/style.css'></head>"
    )
    return response


@router.route(
    "/news/article/<int:number>", example="/news/article/1", title="An article of the news front page"
)
def news_article(request: Request) -> Response:
    number = int(request.params["number"])
    return html_page(
        f"Article {number}",
        f"<p>The news of article {number}.</p><p><a href='/news/article/{number}/comments'>Comments</a> "
        "<a href='/news/'>Front page</a></p>",
    )


@router.route(
    "/news/article/<int:number>/comments", title="An article's comments (two clicks from the front)"
)
def news_comments(request: Request) -> Response:
    return html_page("Comments", "<p>No comment.</p>")


@router.route("/news/about", title="The news site's page about itself")
def news_about(request: Request) -> Response:
    return html_page("About", "<p>A news site for the tests.</p>")


@router.route("/news/style.css", title="The news site's style sheet (the same at every edition)")
def news_style(request: Request) -> Response:
    return text("body { font-family: serif; }\n", content_type="text/css")


def generated_site(request: Request) -> Response:
    """Whatever the generated website has at this address and path (404 if nothing)."""
    return request.site.generated.serve(request)


router.add("/site/", generated_site, title="The generated website (a crawler's test ground)")
router.add("/robots.txt", generated_site, title="robots.txt: /site/private/ is disallowed, the sitemap named")
router.add("/site/<path:rest>", generated_site)
router.add("/cdn/<path:rest>", generated_site)  # the CDN's files, when the site has no other address
router.routes.extend(scripted.router.routes)  # /js/, the section built by script
external_router.routes.extend(scripted.external_router.routes)  # before the generated site's catch-all
router.routes.extend(playable.router.routes)  # /streams/playable/, before the catch-all of /streams/
router.routes.extend(streams.router.routes)  # /streams/, streamed video (HLS, DASH)
cdn_router.routes.extend(streams.cdn_router.routes)  # the segments of one of its streams
for other in (cdn_router, external_router):
    other.add("/", generated_site)
    other.add("/<path:rest>", generated_site)
