"""Text resources of the generated website: style sheets, the script, robots.txt, the sitemap, bad HTML.

Each function returns the text together with, where a crawler must find
links in it, those links (absolute URL, hop letter), so the two are written
side by side.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from xml.sax.saxutils import escape

Links = list[tuple[str, str]]


def css_files(s: Callable[[str], str], c: Callable[[str], str]) -> dict[str, tuple[str, Links]]:
    """The style sheets by absolute URL: ``s(path)`` is a URL on the site, ``c(path)`` on its CDN."""
    site_origin = s("")

    def written(url: str) -> str:  # the CDN's fonts by path when the CDN is the site itself
        return url[len(site_origin) :] if url.startswith(site_origin + "/") else url

    body_woff2, body_woff = c("/cdn/fonts/body.woff2"), c("/cdn/fonts/body.woff")
    site_css = f"""@import url("base.css");
body {{ margin: 0 auto; max-width: 60em; background: #fff url("../img/bg.png") repeat-x; }}
body {{ font-family: Body, Georgia, serif; }}
@font-face {{
  font-family: Body;
  src: url("{written(body_woff2)}") format("woff2"), url({written(body_woff)}) format("woff");
}}
.banner {{ min-height: 120px; background-size: cover; }}
img.lazy {{ opacity: 0.5; }}
"""
    base_css = '@import "typography.css";\nhtml { color: #222; }\na { color: #035; }\n'
    typography_css = "h1, h2 { font-family: Body, sans-serif; line-height: 1.2; }\n"
    theme_css = (
        "header img { background: url(../img/pattern.png); }\n"
        "@font-face { font-family: Icons; src: url('../fonts/icons.woff2') format('woff2'); }\n"
    )
    return {
        s("/site/css/site.css"): (
            site_css,
            [
                (s("/site/css/base.css"), "E"),
                (s("/site/img/bg.png"), "E"),
                (body_woff2, "E"),
                (body_woff, "E"),
            ],
        ),
        s("/site/css/base.css"): (base_css, [(s("/site/css/typography.css"), "E")]),
        s("/site/css/typography.css"): (typography_css, []),
        c("/cdn/css/theme.css"): (
            theme_css,
            [(c("/cdn/img/pattern.png"), "E"), (c("/cdn/fonts/icons.woff2"), "E")],
        ),
    }


def app_js(hidden_paths: list[str]) -> str:
    """The site's script; the pages in ``hidden_paths`` are named nowhere else."""
    listed = ",\n".join(f'    "/{path}"' for path in hidden_paths)
    return f"""/* The test website's script. The pages listed below are linked from nowhere
   else: only a crawler that reads JavaScript finds them. */
(function () {{
  "use strict";
  var hidden = [
{listed}
  ];
  document.addEventListener("DOMContentLoaded", function () {{
    var lazy = document.querySelectorAll("img.lazy");
    for (var i = 0; i < lazy.length; i++) {{
      lazy[i].src = lazy[i].getAttribute("data-src");
    }}
    var nav = document.querySelector("nav");
    if (nav) {{
      nav.addEventListener("dblclick", function () {{
        window.location.href = hidden[Math.floor(Math.random() * hidden.length)];
      }});
    }}
  }});
}})();
"""


def robots_txt(sitemap_url: str) -> str:
    """The site's robots.txt: a bad robot is kept out, everyone out of /site/private/."""
    return f"""# robots.txt of the generated test website
User-agent: BadBot
Disallow: /

User-agent: *
Disallow: /site/private/

Sitemap: {sitemap_url}
"""


def sitemap_xml(urls: list[str], key: int) -> str:
    """A sitemaps.org urlset of ``urls``, with last-modification dates derived from ``key``."""
    start = datetime.date(2024, 1, 1)
    entries = "\n".join(
        f"  <url><loc>{escape(url)}</loc>"
        f"<lastmod>{start + datetime.timedelta(days=(key + index * 7) % 365)}</lastmod></url>"
        for index, url in enumerate(urls)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        f"{entries}\n</urlset>\n"
    )


# Unclosed tags, unquoted and upper-case attributes, stray end tags, no </html>: the
# links must all be found anyway, and the one in the comment must not.
MALFORMED_MARKUP = """<html>
<head>
<title>Malformed page</title>
<link rel=stylesheet href=/site/css/site.css>
</head>
<body bgcolor=white>
<div class=wrapper><div>
<p>An unclosed paragraph with <b>bold <i>and italic</b></i> text
<p>Another one, with <a href=/site/news/>an unquoted link</a>
</span></div></div></div></div>
<A HREF="/site/landing/malformed.html">An upper-case tag</A>
<a href='/site/sport/' class=nav>Single quotes, never closed
<table><tr><td><a href = "/site/culture/" >Spaces around the equals sign</a><td>no closing tags
</table>
<img src=/site/img/malformed.png alt=Unquoted>
<!-- <a href="/site/commented-out.html">A link in a comment is no link</a> -->
<ul><li><a href="/site/science/">Science</a><li>An item never closed
</body>
"""
MALFORMED_EDGES = (
    ("/site/css/site.css", "E"),
    ("/site/news/", "L"),
    ("/site/landing/malformed.html", "L"),
    ("/site/sport/", "L"),
    ("/site/culture/", "L"),
    ("/site/img/malformed.png", "E"),
    ("/site/science/", "L"),
)
