"""SURT keys of URLs: the ``surt`` library's keys (pywb's), computed faster for the common URL.

``surt.surt`` costs about 12 µs a URL, a fifth of the index's reading time: it canonicalizes the
host (lower case, ``www`` stripped, IP forms resolved, reversed), then the path and query
(unescaping and escaping, ``.`` and ``..`` segments, session ids, lower case, query arguments
sorted). The host part depends only on the scheme and authority, so it is asked of ``surt`` once
per host and kept. The path and query of a plain URL (letters, digits and ``/ . _ ~ -`` in the path,
``= & + ,`` as well in the query, no ``.`` segment, no empty segment, no session id) come out of
``surt`` lower-cased, with a trailing ``/`` dropped and the query arguments sorted: they are
written so here. Every other URL is given to ``surt`` whole. The keys are the same as ``surt``'s
for every URL (``tests/storage/test_urlkeys.py`` compares them on generated URLs).
"""

from __future__ import annotations

import re

import surt

# scheme, authority (a host name or address, a port), path, query: nothing surt would rewrite
# but by lower case, the trailing slash and the order of the query arguments.
_PLAIN_URL = re.compile(
    r"(https?://[A-Za-z0-9.-]+(?::[0-9]{1,5})?)(/[A-Za-z0-9/._~-]*)?(?:\?([A-Za-z0-9._~=&+,-]+))?"
)
_SESSION_ID = re.compile(r"sessionid|sid=|cfid=", re.IGNORECASE)  # what surt strips from a query
_HOST_KEYS_KEPT = 10_000
_host_keys: dict[str, str | None] = {}


def url_key(url: str) -> str:
    """The SURT key of ``url`` (pywb's: the ``surt`` library's defaults); the URL itself if it has none."""
    plain = _PLAIN_URL.fullmatch(url)
    if plain is not None:
        origin, path, query = plain.groups(default="")
        host = _host_key(origin)
        if host is not None and "//" not in path and "/." not in path and not _SESSION_ID.search(query):
            path = path.lower()
            if path.endswith("/"):
                path = path[:-1]
            key = f"{host}{path or '/'}"
            return f"{key}?{_sorted_query(query.lower())}" if query else key
    return _surt(url)


def _surt(url: str) -> str:
    try:
        return surt.surt(url)
    except Exception:  # what cdxj-indexer does: an odd URL is its own key
        return url


def _host_key(origin: str) -> str | None:
    """``com,example)`` for ``http://www.example.com``: surt's key of the origin's root, its ``/``
    dropped; None when surt has no such key for it (an invalid port…)."""
    try:
        return _host_keys[origin]
    except KeyError:
        pass
    try:
        root = surt.surt(origin + "/")
    except Exception:
        root = ""
    key = root[:-1] if root.endswith(")/") else None
    if len(_host_keys) >= _HOST_KEYS_KEPT:
        _host_keys.clear()  # a broad crawl's files: keep the memory bounded
    _host_keys[origin] = key
    return key


def _sorted_query(query: str) -> str:
    """The query's arguments in surt's order: by name, then value, ``name`` before ``name=…``."""
    arguments = sorted(tuple(argument.split("=", 1)) for argument in query.split("&"))
    return "&".join("=".join(argument) for argument in arguments)
