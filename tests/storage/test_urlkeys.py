"""SURT keys: the same as the ``surt`` library's (pywb's, cdxj-indexer's) for every URL."""

from __future__ import annotations

import pytest
import surt
from hypothesis import given, settings
from hypothesis import strategies as st

from storage import urlkeys
from storage.urlkeys import url_key


def surt_key(url: str) -> str:
    """What cdxj-indexer writes: surt's key, or the URL itself when surt has none."""
    try:
        return surt.surt(url)
    except Exception:
        return url


# URLs that take the plain path, and their neighbours that surt rewrites in other ways.
URLS = [
    "http://example.com/",
    "http://example.com",
    "https://example.com:443/a/",
    "http://example.com:80/A/B.HTML",
    "http://example.com:8080/a",
    "http://www.example.com/about",
    "http://www2.Example.COM/about",
    "http://127.0.0.1:8001/site/page/1.html",
    "http://2130706433/a",
    "http://0x7f.1/a",
    "http://example.com/a?b=2&a=1&a",
    "http://example.com/a?b=2&a=1&a=",
    "http://example.com?x=1",
    "http://example.com/a?",
    "http://example.com/a?&&",
    "http://example.com/a?jsessionid=0123456789abcdef0123456789abcdef",
    "http://example.com/a?x=1&sid=0123456789abcdef0123456789abcdef",
    "http://example.com/a?PHPSESSID=0123456789abcdef0123456789abcdef&b=1",
    "http://example.com/a?cfid=1&cftoken=2&z=3",
    "http://example.com/a?ASPSESSIONIDabcdefgh=abcdefghijklmnopqrstuvwx",
    "http://example.com/(S(0123456789abcdef01234567))/page.aspx",
    "http://example.com/a/./b/../c",
    "http://example.com/a/..",
    "http://example.com//a//b/",
    "http://example.com/.well-known/x",
    "http://example.com/%41%2f%252f",
    "http://example.com/a#frag",
    "http://user:pass@example.com/a",
    "http://example.com:/a",
    "http://example.com:99999/a",
    "http:////example.com/a",
    "http://http://example.com/a",
    "HTTP://EXAMPLE.COM/A",
    " http://example.com/a ",
    "http://exa\tmple.com/a",
    "http://éxample.com/ä",
    "http://..example.com./a",
    "https://example.com/a~b_c-d.e",
    "ftp://example.com/a",
    "dns:example.com",
    "filedesc://x.arc",
    "example.com/a",
    "",
]


@pytest.mark.parametrize("url", URLS)
def test_the_key_of_a_url_is_surts(url):
    assert url_key(url) == surt_key(url)
    assert url_key(url) == surt_key(url)  # again, the host's key from the cache


# Letters that surt rewrites (case, escapes, dots, slashes, session ids, separators) and letters it keeps.
_PARTS = st.sampled_from(
    [
        "a",
        "B",
        "z",
        "0",
        "9",
        ".",
        "..",
        "/",
        "//",
        "-",
        "_",
        "~",
        "%",
        "%41",
        "%2f",
        "?",
        "&",
        "=",
        "#",
        "+",
        ",",
        ";",
        ":",
        "@",
        "(",
        ")",
        "é",
        "www.",
        "sid=",
        "jsessionid=",
        "cfid=",
        "&cftoken=",
        " ",
    ]
)
_HOSTS = st.sampled_from(
    [
        "example.com",
        "www.example.com",
        "WWW3.Example.org",
        "127.0.0.1",
        "10.0.0.1:8080",
        "example.com:80",
        "example.com:443",
        "a-b.c",
        "..x.y.",
        "2130706433",
        "xn--bcher-kva.ch",
        "exa_mple.com",
        "h:99999",
    ]
)


# Only what the plain path takes (and its edges: dots, slashes, separators), mostly.
_PLAIN_PARTS = st.sampled_from(["a", "B", "0", ".", "/", "-", "_", "~", "?", "&", "=", "+", ",", "sid", "%"])


@settings(max_examples=600, deadline=None)
@given(
    scheme=st.sampled_from(["http", "https", "HTTP", "ftp"]),
    host=_HOSTS,
    path=st.lists(_PARTS, max_size=12).map("".join),
)
def test_generated_urls_have_surts_keys(scheme, host, path):
    url = f"{scheme}://{host}{path}"
    assert url_key(url) == surt_key(url)


@settings(max_examples=600, deadline=None)
@given(host=_HOSTS, path=st.lists(_PLAIN_PARTS, max_size=16).map("".join))
def test_generated_plain_urls_have_surts_keys(host, path):
    url = f"http://{host}/{path}"
    assert url_key(url) == surt_key(url)


def test_host_keys_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(urlkeys, "_HOST_KEYS_KEPT", 3)
    monkeypatch.setattr(urlkeys, "_host_keys", {})
    for number in range(10):
        url = f"http://host{number}.example/a"
        assert url_key(url) == surt_key(url)
    assert len(urlkeys._host_keys) <= 3
