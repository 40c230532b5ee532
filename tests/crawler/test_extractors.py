"""Link extraction from HTML, CSS, JavaScript, sitemaps, text and headers (harvest.crawler.extractors)."""

import gzip

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harvest.crawler.extractors import EXTRACTORS, Document, ExtractOptions, Link, extract

PAGE = "http://example.com/dir/page.html"
ALL = ExtractOptions(javascript=True, forms=True, sitemaps=True)


def document(body, content_type="text/html", *, url=PAGE, status=200, headers=(), charset=None):
    if isinstance(body, str):
        body = body.encode("utf-8")
    return Document(
        url=url, status=status, headers=list(headers), content_type=content_type, charset=charset, body=body
    )


def links(body, content_type="text/html", options=ALL, **fields):
    return extract(document(body, content_type, **fields), options).links


def found(body, content_type="text/html", options=ALL, **fields):
    """{(url, hop, context)} of a document's links."""
    return {(link.url, link.hop, link.context) for link in links(body, content_type, options, **fields)}


def urls(body, content_type="text/html", options=ALL, **fields):
    return [link.url for link in links(body, content_type, options, **fields)]


# --- HTML -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "url", "hop", "context"),
    [
        ('<a href="next.html">x</a>', "/dir/next.html", "L", "a/@href"),
        ('<map><area href="/area.html"></map>', "/area.html", "L", "area/@href"),
        ('<img src="i.png">', "/dir/i.png", "E", "img/@src"),
        ('<img src="x.png" lowsrc="low.gif">', "/dir/low.gif", "E", "img/@lowsrc"),
        ('<img data-src="lazy.png">', "/dir/lazy.png", "E", "img/@data-src"),
        ('<div data-src="/bg.jpg"></div>', "/bg.jpg", "E", "div/@data-src"),
        ('<img data-srcset="l1.png 1x, l2.png 2x">', "/dir/l2.png", "E", "img/@data-srcset"),
        ('<img data-lazy-src="lz.png">', "/dir/lz.png", "E", "img/@data-lazy-src"),
        ('<img data-original="orig.png">', "/dir/orig.png", "E", "img/@data-original"),
        (
            '<picture><source srcset="p.webp" type="image/webp"></picture>',
            "/dir/p.webp",
            "E",
            "source/@srcset",
        ),
        ('<video><source src="v.webm"></video>', "/dir/v.webm", "E", "source/@src"),
        ('<video src="v.mp4"></video>', "/dir/v.mp4", "E", "video/@src"),
        ('<video poster="poster.jpg"></video>', "/dir/poster.jpg", "E", "video/@poster"),
        ('<audio src="/a.mp3"></audio>', "/a.mp3", "E", "audio/@src"),
        ('<video><track src="t.vtt"></video>', "/dir/t.vtt", "E", "track/@src"),
        ('<link rel="stylesheet" href="s.css">', "/dir/s.css", "E", "link/@href"),
        ('<link rel="alternate stylesheet" href="alt.css">', "/dir/alt.css", "E", "link/@href"),
        ('<link rel="icon" href="/favicon.png">', "/favicon.png", "E", "link/@href"),
        ('<link rel="Shortcut Icon" href="/favicon.ico">', "/favicon.ico", "E", "link/@href"),
        ('<link rel="apple-touch-icon" href="/t.png">', "/t.png", "E", "link/@href"),
        ('<link rel="preload" as="font" href="f.woff2">', "/dir/f.woff2", "E", "link/@href"),
        ('<link rel="modulepreload" href="m.js">', "/dir/m.js", "E", "link/@href"),
        ('<link rel="manifest" href="/app.webmanifest">', "/app.webmanifest", "E", "link/@href"),
        (
            '<link rel="preload" as="image" imagesrcset="w1.png 1x, w2.png 2x">',
            "/dir/w2.png",
            "E",
            "link/@imagesrcset",
        ),
        ('<link rel="alternate" hreflang="fr" href="/fr/">', "/fr/", "L", "link/@href"),
        ('<link rel="next" href="page2.html">', "/dir/page2.html", "L", "link/@href"),
        ('<link rel="prev" href="page0.html">', "/dir/page0.html", "L", "link/@href"),
        ('<link rel="canonical" href="/c">', "/c", "L", "link/@href"),
        ('<meta http-equiv="refresh" content="0; url=moved.html">', "/dir/moved.html", "R", "meta/refresh"),
        ('<iframe src="frame.html"></iframe>', "/dir/frame.html", "E", "iframe/@src"),
        ('<iframe srcdoc="&lt;img src=in-srcdoc.png&gt;"></iframe>', "/dir/in-srcdoc.png", "E", "img/@src"),
        ('<object data="movie.swf"></object>', "/dir/movie.swf", "E", "object/@data"),
        ('<object><param name="movie" value="f.swf"></object>', "/dir/f.swf", "E", "param/@value"),
        ('<embed src="e.swf">', "/dir/e.swf", "E", "embed/@src"),
        ('<input type="image" src="go.png">', "/dir/go.png", "E", "input/@src"),
        ('<script src="app.js"></script>', "/dir/app.js", "E", "script/@src"),
        ('<style>body { background: url("bg.png") }</style>', "/dir/bg.png", "E", "css/url"),
        ("<style>@import 'print.css' print;</style>", "/dir/print.css", "E", "css/@import"),
        ('<p style="background-image: url(/inline.png)">x</p>', "/inline.png", "E", "p/@style"),
        ('<body background="tile.gif">', "/dir/tile.gif", "E", "body/@background"),
        ("<table><tr><td background='cell.gif'>x</td></tr></table>", "/dir/cell.gif", "E", "td/@background"),
        ('<svg><image xlink:href="pic.png"/></svg>', "/dir/pic.png", "E", "image/@href"),
        ('<svg><use href="sprite.svg#icon"/></svg>', "/dir/sprite.svg", "E", "use/@href"),
        ('<html manifest="offline.appcache">', "/dir/offline.appcache", "E", "html/@manifest"),
        ('<noscript><img src="real.jpg"></noscript>', "/dir/real.jpg", "E", "img/@src"),
        ('<form action="/search" method="GET"><input name="q"></form>', "/search", "L", "form/@action"),
        ('<form action="/search"></form>', "/search", "L", "form/@action"),
        ("<script>var logo = '/static/logo.png';</script>", "/static/logo.png", "X", "js/string"),
        ("<a href=\"javascript:openWindow('/popup/w.html')\">x</a>", "/popup/w.html", "X", "a/@href"),
    ],
)
def test_html_sources(html, url, hop, context):
    url = "http://example.com" + url
    assert (url, hop, context) in found(f"<!doctype html><html><head></head><body>{html}</body></html>")


def test_link_urls_are_absolute_without_fragment_but_not_canonical():
    assert urls('<a href="../Other%7e/Page.html?b=2&a=1#part">x</a>') == [
        "http://example.com/Other%7e/Page.html?b=2&a=1"
    ]


@pytest.mark.parametrize(
    "html",
    [
        '<a href="#top">x</a>',
        '<a href="javascript:void(0)">x</a>',
        '<a href="JavaScript:history.back()">x</a>',
        '<a href="mailto:someone@example.com">x</a>',
        '<a href="tel:+33100000000">x</a>',
        '<img src="data:image/png;base64,iVBORw0KGgo=">',
        '<iframe src="about:blank"></iframe>',
        '<a href="ftp://example.com/file">x</a>',
        '<a href="">x</a>',
        "<a>no href</a>",
        '<link rel="preconnect" href="https://fonts.example.net">',
        '<link rel="dns-prefetch" href="//cdn.example.net">',
        '<script type="application/ld+json">{"logo": "/static/ld-logo.png"}</script>',
        '<script type="text/template"><img src="/tpl.png"></script>',
        '<form action="/post" method="post"></form>',
        '<svg><use href="#local-icon"/></svg>',
    ],
)
def test_html_ignores(html):
    assert found(f"<body>{html}</body>") == set()


def test_forms_only_when_asked():
    html = '<form action="/search"><input name="q"></form>'
    assert urls(html, options=ExtractOptions(forms=False)) == []
    assert urls(html, options=ExtractOptions(forms=True)) == ["http://example.com/search"]


def test_javascript_only_when_asked():
    html = "<script>var a = '/img/a.png';</script><a href=\"javascript:go('/b.html')\">b</a><img src='c.png'>"
    assert urls(html, options=ExtractOptions(javascript=False)) == ["http://example.com/dir/c.png"]
    assert set(urls(html)) == {
        "http://example.com/img/a.png",
        "http://example.com/b.html",
        "http://example.com/dir/c.png",
    }


@pytest.mark.parametrize(
    ("srcset", "expected"),
    [
        ("a.png", ["a.png"]),
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("small.jpg 480w,large.jpg 1080w", ["small.jpg", "large.jpg"]),
        ("  a.png  1x ,  b.png   2x  ", ["a.png", "b.png"]),
        # commas inside URLs: only a comma after whitespace, or at the end of the URL, separates
        ("img,w_300.jpg 300w, img,w_600.jpg 600w", ["img,w_300.jpg", "img,w_600.jpg"]),
        ("a.png?size=1,2 1x, b.png 2x", ["a.png?size=1,2", "b.png"]),
        ("a.png,b.png", ["a.png,b.png"]),
        ("a.png, b.png", ["a.png", "b.png"]),
        ("a.png,, ,b.png", ["a.png", "b.png"]),
        # descriptors with parentheses and unknown ones are skipped
        ("a.png foo(1, 2), b.png 2x", ["a.png", "b.png"]),
        ("", []),
        (" , , ", []),
    ],
)
def test_srcset(srcset, expected):
    html = f'<img srcset="{srcset}">'
    assert urls(html) == [f"http://example.com/dir/{name}" for name in expected]


def test_base_href_changes_the_base_of_relative_links():
    html = """<html><head><base href="http://static.example.org/assets/"></head>
    <body><a href="a.html">a</a><img src="/root.png"><img src="//cdn.example.net/x.png">
    <a href="http://absolute.example/">abs</a></body></html>"""
    assert urls(html) == [
        "http://static.example.org/assets/a.html",
        "http://static.example.org/root.png",
        "http://cdn.example.net/x.png",
        "http://absolute.example/",
    ]


def test_frames():
    html = '<html><frameset cols="20%,80%"><frame src="left.html"><frame src="/right.html"></frameset></html>'
    assert found(html) == {
        ("http://example.com/dir/left.html", "E", "frame/@src"),
        ("http://example.com/right.html", "E", "frame/@src"),
    }


def test_relative_base_href_and_only_the_first_base_counts():
    html = '<base href="/other/"><base href="http://ignored.example/"><a href="x.html">x</a>'
    assert urls(html) == ["http://example.com/other/x.html"]


def test_a_base_href_that_is_not_web_is_ignored():
    assert urls('<base href="javascript:alert(1)"><a href="x.html">x</a>') == [
        "http://example.com/dir/x.html"
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("0; url=target.html", "http://example.com/dir/target.html"),
        ("0;URL=target.html", "http://example.com/dir/target.html"),
        ("5 ; Url = /target.html", "http://example.com/target.html"),
        ("0; url='quoted.html'", "http://example.com/dir/quoted.html"),
        ('0; url="dq.html" trailing', "http://example.com/dir/dq.html"),
        ("3, url=comma.html", "http://example.com/dir/comma.html"),
        ("0; bare.html", "http://example.com/dir/bare.html"),
        ("0; uploads/u.html", "http://example.com/dir/uploads/u.html"),
        ("1.5; url=http://other.example/", "http://other.example/"),
        ("0", None),
        ("0;", None),
        ("0; url=", None),
        ("soon; url=x.html", None),
        ("", None),
    ],
)
def test_meta_refresh(content, expected):
    escaped = content.replace('"', "&quot;")
    html = f'<head><meta http-equiv="Refresh" content="{escaped}"></head>'
    refreshes = [link.url for link in links(html) if link.context == "meta/refresh"]
    assert refreshes == ([expected] if expected else [])


def test_non_utf8_page_with_charset_in_meta():
    html = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head>'
        '<body><a href="café.html">x</a><a href="/recherche?q=été">q</a></body></html>'
    ).encode("latin-1")
    assert urls(html) == [
        "http://example.com/dir/café.html",
        # the query of a link is sent in the page's encoding, as a browser does
        "http://example.com/recherche?q=%E9t%E9",
    ]


def test_html5_meta_charset_and_a_legacy_multibyte_encoding():
    html = '<meta charset="shift_jis"><a href="/日本.html">x</a>'.encode("shift_jis")
    assert urls(html) == ["http://example.com/日本.html"]


def test_header_charset_wins_over_meta():
    html = '<meta charset="utf-8"><a href="/é.html">x</a>'.encode("latin-1")
    assert urls(html, charset="ISO-8859-1") == ["http://example.com/é.html"]


def test_byte_order_mark_wins_over_everything():
    html = '<meta charset="latin-1"><a href="/ü.html">x</a>'.encode("utf-16")
    assert urls(html, charset="latin-1") == ["http://example.com/ü.html"]


def test_wrong_declared_charset_does_not_stop_extraction():
    # declared UTF-8, written in Latin-1: what cannot be decoded becomes U+FFFD, the rest is found
    html = '<meta charset="utf-8"><a href="/ok.html">x</a><a href="/caf\xe9.html">y</a>'.encode("latin-1")
    assert urls(html) == ["http://example.com/ok.html", "http://example.com/caf\ufffd.html"]


@pytest.mark.parametrize("charset", ["klingon", "x-unknown-8", "base64", "rot13", "hex", "zlib", ""])
def test_unknown_or_unusable_charset_falls_back(charset):
    html = '<a href="/é.html">x</a>'.encode()
    assert urls(html, charset=charset or None) == ["http://example.com/é.html"]
    meta = f'<meta charset="{charset}"><a href="/é.html">x</a>'.encode()
    assert urls(meta) == ["http://example.com/é.html"]


def test_a_real_but_wrong_codec_never_raises():
    html = '<a href="/é.html">x</a><img src="/ok.png">'.encode()
    for charset in ("utf-7", "utf-16", "utf-32", "cp037", "shift_jis", "iso-2022-jp"):
        for link in links(html, charset=charset):
            assert link.url.startswith("http://example.com/")


def test_undeclared_legacy_page_is_read_as_windows_1252():
    html = '<a href="/caf\xe9.html">x</a> \u201cquoted\u201d'.encode("cp1252")
    assert urls(html) == ["http://example.com/café.html"]


def test_undeclared_mostly_utf8_page_stays_utf8():
    html = '<a href="/ünïcödé.html">x</a>'.encode() + b"\xff stray byte"
    assert urls(html) == ["http://example.com/ünïcödé.html"]


@pytest.mark.parametrize(
    "html",
    [
        "<a href=unquoted.html>x",
        "<a href='single.html'>x</a",
        '<div><a href="a.html"<img src=b.png>',
        "<<a href=x.html>>",
        '<a href="x.html" href="dup.html">x</a>',
        '<A HREF="x.html">upper</A>',
        "<table><a href=x.html></table>",
        '\x00<a href="x.html">\x00</a>',
        "<!-- <a href=commented.html> --><a href=x.html>",
    ],
)
def test_malformed_html(html):
    assert "http://example.com/dir/x.html" in urls(html) or urls(html) in (
        ["http://example.com/dir/unquoted.html"],
        ["http://example.com/dir/single.html"],
        ["http://example.com/dir/a.html"],
    )
    assert "http://example.com/dir/commented.html" not in urls(html)
    assert "http://example.com/dir/dup.html" not in urls(html)  # the first attribute wins, as in browsers


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("?page=2", "http://example.com/dir/page.html?page=2"),
        ("?", "http://example.com/dir/page.html?"),
        ("./same-dir.html", "http://example.com/dir/same-dir.html"),
        ("../up.html", "http://example.com/up.html"),
        ("../../../../too-far-up.html", "http://example.com/too-far-up.html"),
        ("sub/./x/../y.html?a=../b", "http://example.com/dir/sub/y.html?a=../b"),
        ("a//b.html", "http://example.com/dir/a//b.html"),  # browsers keep the empty segment
        ("/", "http://example.com/"),
        ("//other.example/x", "http://other.example/x"),
        ("http:same-scheme.html", "http://example.com/dir/same-scheme.html"),
        ("https:other-scheme", "https://other-scheme"),
        ("HTTPS://Example.ORG/Path", "https://Example.ORG/Path"),
        ("page.html#section", "http://example.com/dir/page.html"),
    ],
)
def test_relative_references_resolve_as_in_a_browser(href, expected):
    assert urls(f'<a href="{href}">x</a>') == [expected]


def test_attribute_values_are_html_decoded_and_trimmed():
    assert urls('<a href="  /a?x=1&amp;y=2&#38;z=3\n">x</a>') == ["http://example.com/a?x=1&y=2&z=3"]
    assert urls('<a href="/a\n/b\t.html">x</a>') == ["http://example.com/a/b.html"]
    assert urls('<a href="\\windows\\style.html">x</a>') == ["http://example.com/windows/style.html"]


def test_untyped_body_that_starts_like_html_is_read_as_html():
    assert urls("  <!DOCTYPE html><a href=x.html>", content_type="") == ["http://example.com/dir/x.html"]
    assert urls("just text http://example.com/t", content_type="") == []


def test_svg_document():
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><image href="bitmap.png"/><a href="/page">p</a></svg>'
    assert found(svg, "image/svg+xml") == {
        ("http://example.com/dir/bitmap.png", "E", "image/@href"),
        ("http://example.com/page", "L", "a/@href"),
    }


def test_big_page():
    body = "".join(
        f'<div style="color:red"><a href="/p/{i}.html">{i}</a><img src="/i/{i}.png"></div>'
        for i in range(3000)
    )
    found_urls = urls(f"<html><body>{body}</body></html>")
    assert len(found_urls) == 6000
    assert found_urls[:2] == ["http://example.com/p/0.html", "http://example.com/i/0.png"]


# --- CSS ------------------------------------------------------------------------------------------

STYLE_SHEET = "http://example.com/css/site.css"


def test_css():
    css = r"""
    @charset "utf-8";
    @import url("base.css");
    @import url(print.css) print;
    @import 'quoted.css';
    @IMPORT "/upper.css";
    body { background: url(bg.png) no-repeat; }
    .a { background-image: url( 'spaced.png' ) }
    .b { background: URL("../img/up.png") }
    @font-face { font-family: X; src: url(/fonts/x.woff2) format("woff2"),
                                      url('/fonts/x.woff') format("woff"); }
    .c { background-image: image-set("c1.png" 1x, url(c2.png) 2x); }
    .d { background-image: -webkit-image-set('d1.png' 1x, 'd2.png' 2x); }
    .e { background: url(esc\(aped\).png); }
    /* .f { background: url(commented.png) } */
    .g { background: url(data:image/png;base64,AAAA); }
    .h { filter: url(#svg-filter); }
    .i { background: url(); }
    """
    assert found(css, "text/css", url=STYLE_SHEET) == {
        ("http://example.com/css/base.css", "E", "css/@import"),
        ("http://example.com/css/print.css", "E", "css/@import"),
        ("http://example.com/css/quoted.css", "E", "css/@import"),
        ("http://example.com/upper.css", "E", "css/@import"),
        ("http://example.com/css/bg.png", "E", "css/url"),
        ("http://example.com/css/spaced.png", "E", "css/url"),
        ("http://example.com/img/up.png", "E", "css/url"),
        ("http://example.com/fonts/x.woff2", "E", "css/url"),
        ("http://example.com/fonts/x.woff", "E", "css/url"),
        ("http://example.com/css/c1.png", "E", "css/image-set"),
        ("http://example.com/css/c2.png", "E", "css/url"),
        ("http://example.com/css/d1.png", "E", "css/image-set"),
        ("http://example.com/css/d2.png", "E", "css/image-set"),
        ("http://example.com/css/esc(aped).png", "E", "css/url"),
    }


def test_css_charset_and_untyped_css():
    css = '@charset "iso-8859-1"; .a { background: url(/caf\xe9.png) }'.encode("latin-1")
    assert urls(css, "text/css", url=STYLE_SHEET) == ["http://example.com/café.png"]
    assert urls("a{background:url(x.png)}", "", url=STYLE_SHEET) == ["http://example.com/css/x.png"]
    assert urls("a{background:url(x.png)}", "text/plain", url="http://example.com/notes.txt") == []


def test_css_unterminated_is_read_as_far_as_it_goes():
    assert urls("a{background:url(ok.png)} b{background:url(", "text/css", url=STYLE_SHEET) == [
        "http://example.com/css/ok.png"
    ]
    assert urls("/* never closed url(x.png)", "text/css", url=STYLE_SHEET) == []


# --- JavaScript -----------------------------------------------------------------------------------

SCRIPT = "http://example.com/js/app.js"


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ('"/images/logo.png"', "http://example.com/images/logo.png"),
        ("'/pages/about.html'", "http://example.com/pages/about.html"),
        ("`/static/app.css`", "http://example.com/static/app.css"),
        ('"./chunk.4f3a.js"', "http://example.com/js/chunk.4f3a.js"),
        ('"../data/list.json"', "http://example.com/data/list.json"),
        ('"/docs/report.pdf?v=2"', "http://example.com/docs/report.pdf?v=2"),
        (
            '"/assets/fonts/icons.weird"',
            "http://example.com/assets/fonts/icons.weird",
        ),  # a file in a directory
        ('"https://cdn.example.net/lib/v1/lib.min.js"', "https://cdn.example.net/lib/v1/lib.min.js"),
        ('"http://example.org/"', "http://example.org/"),
        ('"//cdn.example.net/x.js"', "http://cdn.example.net/x.js"),
        ('"https:\\/\\/cdn.example.net\\/escaped\\/a.png"', "https://cdn.example.net/escaped/a.png"),
        ('"\\/json\\/escaped.png"', "http://example.com/json/escaped.png"),
        ('"http://127.0.0.1:8001/api/x.json"', "http://127.0.0.1:8001/api/x.json"),
    ],
)
def test_javascript_url_literals(literal, expected):
    assert found(f"var x = {literal};", "application/javascript", url=SCRIPT) == {
        (expected, "X", "js/string")
    }


@pytest.mark.parametrize(
    "literal",
    [
        '"/"',
        '"/api/users"',  # no file-like last segment
        '"/about/"',
        '"/user/:id/profile.html"',  # a route pattern
        '"/item/${id}.html"',
        "`/item/${id}.html`",
        '"/img/*.png"',
        '"/(\\\\d+)\\\\.html"',  # a regular expression source
        '"text/html"',
        '"image/png"',
        '"logo.png"',  # relative without ./ : too ambiguous
        '"/v1.2"',  # one segment, unknown extension
        '"../../modules/es.array.from"',  # a module name
        '"./lib/util.inspect"',
        '"http://www.w3.org/2000/svg"',
        '"http://www.w3.org/1999/xlink"',
        '"http://"',
        '"https://"',
        '"http://localhost-ish"',
        '"https://example"',  # no dot in the host
        '"// a comment in a string"',
        '"javascript:void(0)"',
        "'/unterminated.png",
        "\"/mixed.png'",
        '"/with space/a.png"',
    ],
)
def test_javascript_negatives(literal):
    assert urls(f"var x = {literal};", "application/javascript", url=SCRIPT) == []


def test_javascript_only_when_asked_and_json_too():
    js = 'fetch("/data/items.json")'
    assert urls(js, "text/javascript", options=ExtractOptions(javascript=False), url=SCRIPT) == []
    assert urls(js, "text/javascript", url=SCRIPT) == ["http://example.com/data/items.json"]
    manifest = '{"icons": [{"src": "/icons/192.png", "sizes": "192x192"}], "start_url": "/"}'
    assert urls(manifest, "application/manifest+json", url="http://example.com/app.webmanifest") == [
        "http://example.com/icons/192.png"
    ]
    assert urls('{"u": "/a/b.png"}', "application/json", url="http://example.com/api") == [
        "http://example.com/a/b.png"
    ]
    assert urls('x("/a/b.png")', "", url="http://example.com/untyped.js") == ["http://example.com/a/b.png"]


def test_javascript_big_minified_bundle():
    bundle = ";".join(f'a{i}="/s/{i}.png",b{i}="/api/{i}",c{i}="x{i}"' for i in range(5000))
    found_urls = urls(bundle, "application/javascript", url=SCRIPT)
    assert len(found_urls) == 5000
    assert found_urls[-1] == "http://example.com/s/4999.png"


# --- Sitemaps and robots.txt ----------------------------------------------------------------------

URLSET = """<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url><loc>http://example.com/</loc><lastmod>2024-01-01</lastmod></url>
  <url>
    <loc>
      http://example.com/a?x=1&amp;y=2
    </loc>
    <image:image><image:loc>http://example.com/img/a.jpg</image:loc></image:image>
    <xhtml:link rel="alternate" hreflang="fr" href="http://example.com/fr/a"/>
  </url>
  <url><loc><![CDATA[http://example.com/cdata]]></loc></url>
  <url><loc>/relative.html</loc></url>
  <url><loc>mailto:nobody@example.com</loc></url>
</urlset>"""


def test_sitemap_urlset():
    assert found(URLSET, "application/xml", url="http://example.com/sitemap.xml") == {
        ("http://example.com/", "M", "sitemap/loc"),
        ("http://example.com/a?x=1&y=2", "M", "sitemap/loc"),
        ("http://example.com/img/a.jpg", "M", "sitemap/image:loc"),
        ("http://example.com/fr/a", "M", "sitemap/link"),
        ("http://example.com/cdata", "M", "sitemap/loc"),
        ("http://example.com/relative.html", "M", "sitemap/loc"),
    }


def test_sitemap_index():
    index = """<?xml version="1.0" encoding="UTF-8"?>
    <sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sitemap><loc>http://example.com/sitemap-pages.xml</loc></sitemap>
      <sitemap><loc>http://example.com/sitemap-posts.xml.gz</loc><lastmod>2024-01-01</lastmod></sitemap>
    </sitemapindex>"""
    assert found(index, "text/xml", url="http://example.com/sitemap.xml") == {
        ("http://example.com/sitemap-pages.xml", "M", "sitemapindex/loc"),
        ("http://example.com/sitemap-posts.xml.gz", "M", "sitemapindex/loc"),
    }


@pytest.mark.parametrize(
    "content_type", ["application/x-gzip", "application/gzip", "application/octet-stream"]
)
def test_gzip_sitemap(content_type):
    body = gzip.compress(URLSET.encode())
    assert "http://example.com/cdata" in urls(body, content_type, url="http://example.com/sitemap.xml.gz")


def test_gzip_sitemap_served_as_xml_and_a_truncated_one():
    body = gzip.compress(URLSET.encode())
    assert "http://example.com/cdata" in urls(body, "application/xml", url="http://example.com/sitemap.xml")
    cut = urls(body[: len(body) * 2 // 3], "application/gzip", url="http://example.com/sitemap.xml.gz")
    assert "http://example.com/" in cut
    assert urls(b"\x1f\x8bnot really gzip", "application/gzip", url="http://example.com/sitemap.xml.gz") == []


def test_other_gzip_files_are_not_decompressed():
    body = gzip.compress(URLSET.encode())
    assert urls(body, "application/gzip", url="http://example.com/downloads/source.tar.gz") == []


def test_truncated_and_malformed_xml_sitemap():
    assert urls(URLSET[:400], "application/xml", url="http://example.com/sitemap.xml") == [
        "http://example.com/",
        "http://example.com/a?x=1&y=2",
    ]
    assert urls(
        "<urlset><url><loc>http://example.com/x</loc><url><loc>http://example.com/y</loc>", "text/xml"
    ) == [
        "http://example.com/x",
        "http://example.com/y",
    ]


def test_xml_that_is_not_a_sitemap_gives_nothing():
    rss = '<?xml version="1.0"?><rss><channel><link>http://example.com/</link></channel></rss>'
    assert urls(rss, "application/xml", url="http://example.com/feed.xml") == []


def test_text_sitemap():
    text = "http://example.com/one\n  https://example.com/two  \n\n# not a url\nftp://example.com/no\n"
    assert found(text, "text/plain", url="http://example.com/sitemap.txt") == {
        ("http://example.com/one", "M", "sitemap/text"),
        ("https://example.com/two", "M", "sitemap/text"),
    }


def test_robots_txt_sitemap_lines():
    robots = "User-agent: *\nDisallow: /private/\n# http://example.com/in-a-comment\nSitemap: http://example.com/sitemap.xml\nsitemap:/relative-sitemap.xml\n"
    assert found(robots, "text/plain", url="http://example.com/robots.txt") == {
        ("http://example.com/sitemap.xml", "M", "robots/sitemap"),
        ("http://example.com/relative-sitemap.xml", "M", "robots/sitemap"),
    }


def test_sitemaps_only_when_asked():
    no_sitemaps = ExtractOptions(sitemaps=False)
    assert urls(URLSET, "application/xml", options=no_sitemaps, url="http://example.com/sitemap.xml") == []
    robots = "Sitemap: http://example.com/sitemap.xml\n"
    assert urls(robots, "text/plain", options=no_sitemaps, url="http://example.com/robots.txt") == []


# --- Plain text -----------------------------------------------------------------------------------


def test_plain_text():
    text = (
        "See http://example.com/a. Also (https://example.com/b) and <http://example.com/c>,\n"
        "or http://en.example.org/wiki/Thing_(disambiguation)! Not ftp://x nor example.com/d."
    )
    assert found(text, "text/plain", url="http://example.com/readme.txt") == {
        ("http://example.com/a", "L", "text"),
        ("https://example.com/b", "L", "text"),
        ("http://example.com/c", "L", "text"),
        ("http://en.example.org/wiki/Thing_(disambiguation)", "L", "text"),
    }


# --- Headers --------------------------------------------------------------------------------------


def test_location_on_redirects_only():
    assert found(b"", "", status=301, headers=[("Location", "/new/place")]) == {
        ("http://example.com/new/place", "R", "header/Location")
    }
    assert found(b"", "", status=302, headers=[("location", "other.html")]) == {
        ("http://example.com/dir/other.html", "R", "header/Location")
    }
    assert found(b"", "", status=201, headers=[("Location", "/created")]) == set()
    assert found(b"", "", status=200, headers=[("Location", "/not-a-redirect")]) == set()


def test_location_sent_as_utf8_bytes():
    # HTTP clients decode header bytes as Latin-1; the server meant UTF-8
    mojibake = "/café".encode().decode("latin-1")
    assert urls(b"", "", status=301, headers=[("Location", mojibake)]) == ["http://example.com/café"]


def test_refresh_header():
    assert found(b"", "", headers=[("Refresh", "3; url=/later")]) == {
        ("http://example.com/later", "R", "header/Refresh")
    }
    assert found(b"", "", headers=[("Refresh", "3")]) == set()


def test_link_header_with_several_links():
    headers = [
        (
            "Link",
            "</style.css>; rel=preload; as=style, "
            '<https://cdn.example.net/f.woff2>; rel="preload"; as=font; crossorigin',
        ),
        (
            "Link",
            '<http://example.com/page/2>; rel="next"; title="a, tricky; title", </other>; rel="canonical"',
        ),
        ("Link", '<https://fonts.example.net>; rel=preconnect, </icon.png>; rel="icon shortcut", </no-rel>'),
        ("Link", "garbage without angle brackets; rel=next"),
    ]
    assert found(b"", "", headers=headers) == {
        ("http://example.com/style.css", "E", "header/Link"),
        ("https://cdn.example.net/f.woff2", "E", "header/Link"),
        ("http://example.com/page/2", "L", "header/Link"),
        ("http://example.com/other", "L", "header/Link"),
        ("http://example.com/icon.png", "E", "header/Link"),
        ("http://example.com/no-rel", "L", "header/Link"),
    }


def test_headers_are_read_whatever_the_type():
    headers = [("Link", "</s.css>; rel=stylesheet")]
    assert urls(b"\x89PNG...", "image/png", headers=headers) == ["http://example.com/s.css"]


# --- extract ------------------------------------------------------------------------------------


def test_duplicates_are_dropped_first_wins():
    html = '<a href="/x">1</a><a href="/x#again">2</a><img src="/x"><link rel=next href="/x">'
    assert links(html) == [
        Link("http://example.com/x", "L", "a/@href"),
        Link("http://example.com/x", "E", "img/@src"),
    ]


def test_a_broken_extractor_does_not_stop_the_others():
    class Broken:
        name = "broken"

        def accepts(self, document):
            return True

        def extract(self, document, options):
            yield Link("http://example.com/before-the-crash", "L", "test")
            raise RuntimeError("bug")

    class Refusing:
        name = "refusing"

        def accepts(self, document):
            raise ValueError("bug")

        def extract(self, document, options):
            return []

    extractors = [Refusing(), Broken(), *EXTRACTORS]
    result = extract(document('<a href="/ok">ok</a>'), ALL, extractors).links
    assert [link.url for link in result] == ["http://example.com/before-the-crash", "http://example.com/ok"]


def test_registry_lists_one_extractor_per_format():
    assert [extractor.name for extractor in EXTRACTORS] == [
        "headers",
        "html",
        "css",
        "javascript",
        "sitemap",
        "streams",
        "text",
    ]


def test_binary_and_unknown_types_give_header_links_only():
    assert urls(b"\x00\x01<a href=x>", "application/pdf") == []
    assert urls(b"\xff\xd8\xff<a href=x>", "image/jpeg") == []


_CONTENT_TYPES = st.sampled_from(
    ["text/html", "application/xhtml+xml", "image/svg+xml", "text/css", "application/javascript",
     "application/json", "application/xml", "text/xml", "application/gzip", "text/plain", "", "image/png",
     "application/x-weird+json"]
)  # fmt: skip
_URLS = st.sampled_from(
    [PAGE, "http://example.com/robots.txt", "http://example.com/sitemap.xml.gz", "http://example.com/sitemap.txt",
     "http://example.com/a.js", "http://example.com/a.css", "not a url", ""]
)  # fmt: skip
_MARKUP = st.lists(
    st.sampled_from(
        ['<a href="', "<img srcset='", "<base href=", "<meta http-equiv=refresh content=", "<script>",
         "</script>", "<style>", "url(", "@import '", "<loc>", "</loc>", "<urlset>", "<sitemapindex>",
         "\x1f\x8b",
         '"', "'", ">", "<", ",", " ", "javascript:", "http://", "//", "/a.png", "\\", "%", "#", "é",
         "\x00", "\ufeff", "&#x0;", "<iframe srcdoc='", "<![CDATA[", "Sitemap: ", "; rel="]
    ),
    max_size=40,
).map("".join)  # fmt: skip


def _run_every_extractor(doc, options):
    """Call the extractors directly: extract would hide their exceptions."""
    for extractor in EXTRACTORS:
        if extractor.accepts(doc):
            for link in extractor.extract(doc, options):
                assert link.url.startswith(("http://", "https://"))
                assert link.hop in "LEXRMP"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(st.binary(max_size=2000), _MARKUP.map(lambda text: text.encode("utf-8", "surrogatepass"))),
    _CONTENT_TYPES,
    _URLS,
    st.sampled_from([None, "utf-8", "latin-1", "klingon", "utf-16", "shift_jis", "base64"]),
    st.integers(min_value=100, max_value=599),
    st.lists(
        st.tuples(st.sampled_from(["Location", "Link", "Refresh", "X"]), st.text(max_size=60)), max_size=3
    ),
)
def test_extractors_never_raise(body, content_type, url, charset, status, headers):
    doc = Document(
        url=url, status=status, headers=headers, content_type=content_type, charset=charset, body=body
    )
    _run_every_extractor(doc, ALL)
    _run_every_extractor(doc, ExtractOptions(javascript=False, forms=False, sitemaps=False))
    assert isinstance(extract(doc, ALL).links, list)


@settings(max_examples=100, deadline=None)
@given(_MARKUP)
def test_extractors_never_raise_on_gzip_of_anything(text):
    body = gzip.compress(text.encode("utf-8", "surrogatepass"))
    _run_every_extractor(document(body, "application/gzip", url="http://example.com/sitemap.xml.gz"), ALL)
    _run_every_extractor(document(body[:-5], "application/xml", url="http://example.com/sitemap.xml"), ALL)
