"""URLs as the crawler queues, deduplicates, fetches and records them.

:func:`canonicalize` is called for every link found, so it is written for
speed: the common URL (ASCII host, nothing to re-encode) goes through a few
precompiled regular expressions and string slices, and recent answers are
kept in a small cache because a site's navigation links repeat on every page.
Only ``http`` and ``https`` URLs have a canonical form; anything else is
``None``.

Percent-encoding is normalised the RFC 3986 way, which never changes what a
server sees: hex digits in upper case, escapes of unreserved characters
(``A-Z a-z 0-9 - . _ ~``) decoded, characters a URL may not contain (spaces,
non-ASCII, ``"<>\\^`{|}``…) encoded as UTF-8. Other escapes (``%2F``, ``%26``…)
are kept, because decoding them would change the URL's meaning.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote

import idna

MAX_URL_LENGTH = 8192  # what common servers accept in a request line
SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}

SESSION_PARAMETERS = frozenset(
    {"jsessionid", "phpsessid", "sid", "sessionid", "session_id", "sessid", "cfid", "cftoken"}
)
SCRIPT_EXTENSIONS = frozenset(
    {
        "php", "php3", "php4", "php5", "phtml", "asp", "aspx", "ashx", "asmx", "axd", "jsp", "jspx",
        "do", "action", "cgi", "pl", "cfm", "cfml", "py", "rb", "nsf", "dll", "exe", "fcgi",
    }
)  # fmt: skip

# WHATWG: leading and trailing C0 controls and spaces are ignored, tabs and newlines anywhere.
_EDGES = "".join(chr(code) for code in range(0x21))
_TAB_NEWLINE = re.compile(r"[\t\n\r]")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):[/\\]*")
_AUTHORITY_END = re.compile(r"[/?#]")
_ASCII_HOST = re.compile(r"[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*")
_NUMERIC_LABEL = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)")
_IDEOGRAPHIC_DOTS = re.compile("[\u3002\uff0e\uff61]")
# What must change in a path or a query: a "%" that starts no upper-case escape, the escape of an
# unreserved character, a character that is not allowed. Most URLs have none, and are left alone.
_ESCAPES_TO_FIX = r"%(?![0-9A-F]{2})|%(?:3[0-9]|4[1-9A-F]|5[0-9A]|6[1-9A-F]|7[0-9A]|2[DE]|5F|7E)"
_PATH_TO_FIX = re.compile(rf"{_ESCAPES_TO_FIX}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]")
_QUERY_TO_FIX = re.compile(rf"{_ESCAPES_TO_FIX}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
_PATH_FIX = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]")
_QUERY_FIX = re.compile(r"%([0-9A-Fa-f]{2})?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

_SESSION_NAMES = r"(?:jsessionid|phpsessid|sid|sessionid|session_id|sessid|aspsessionid[a-z]*|cfid|cftoken)"
_PATH_SESSION = re.compile(rf";{_SESSION_NAMES}=[^/;?#]*", re.IGNORECASE)
# ASP.NET cookieless sessions put the id in a path segment: /(S(lit3py55t21z5v55vlm25s55))/page.aspx
_ASPNET_SESSION = re.compile(r"/\((?:[A-Z]\([A-Za-z0-9_-]{1,200}\))*S\([A-Za-z0-9_-]{1,200}\)\)(?=/)")
_QUERY_SESSION_HINT = re.compile(rf"(?:^|[&;]){_SESSION_NAMES}=", re.IGNORECASE)
_QUERY_HEX_HINT = re.compile(r"=(?:[0-9a-fA-F]{40}|[0-9a-fA-F]{32})(?:&|$)")
_HEX_ID = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{32}")
_ASPSESSION = re.compile(r"aspsessionid[a-z]*", re.IGNORECASE)


def canonicalize(url: str, *, strip_hex_sessions: bool = True) -> str | None:
    """The form a URL is queued, deduplicated, fetched and recorded in; ``None`` if it is not a web URL."""
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
        return None
    return _canonicalize(url, strip_hex_sessions)


@lru_cache(maxsize=16384)
def _canonicalize(url: str, strip_hex_sessions: bool) -> str | None:
    try:
        return _canonical_form(url, strip_hex_sessions)
    except (ValueError, UnicodeError):
        return None


def _canonical_form(url: str, strip_hex_sessions: bool) -> str | None:
    url = url.strip(_EDGES)
    if "\t" in url or "\n" in url or "\r" in url:
        url = _TAB_NEWLINE.sub("", url)
    match = _SCHEME.match(url)
    if match is None:
        return None
    scheme = match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        return None
    rest = url[match.end() :]
    # Browsers read "http:\\host\a\b" as "http://host/a/b": backslashes before the query are slashes.
    if "\\" in rest:
        head, mark, tail = rest.partition("?")
        rest = head.replace("\\", "/") + mark + tail
    end = _AUTHORITY_END.search(rest)
    if end is None:
        authority, rest = rest, ""
    else:
        authority, rest = rest[: end.start()], rest[end.start() :]
    netloc = _netloc(scheme, authority)
    if netloc is None:
        return None
    rest = rest.partition("#")[0]
    path, mark, query = rest.partition("?")
    path = _normal_path(path)
    if query:
        if _QUERY_TO_FIX.search(query):
            query = _QUERY_FIX.sub(_fix_escape, query)
        query = _strip_query_sessions(query, strip_hex_sessions)
    canonical = f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"
    return canonical if len(canonical) <= MAX_URL_LENGTH else None


@lru_cache(maxsize=4096)  # a crawl sees few hosts, and IDNA encoding is slow
def _netloc(scheme: str, authority: str) -> str | None:
    # Credentials in a link are never sent: drop them (as Heritrix does).
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        address, bracket, port = host[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return None
        host = f"[{ipaddress.IPv6Address(address).compressed}]"
        port = port[1:]
    else:
        host, _, port = host.partition(":")
        host = _normal_host(host)
        if host is None:
            return None
    if port:
        if not (port.isascii() and port.isdigit()):
            return None
        number = int(port)
        if not 0 < number <= 65535:
            return None
        if number != DEFAULT_PORTS[scheme]:
            return f"{host}:{number}"
    return host


def _normal_host(host: str) -> str | None:
    if "%" in host:
        host = unquote(host, errors="strict")
    if not host.isascii():
        host = _idna_host(host)
        if host is None:
            return None
    host = host.lower().rstrip(".")
    if not host or len(host) > 253 or not _ASCII_HOST.fullmatch(host):
        return None
    last = host.rpartition(".")[2]
    if _NUMERIC_LABEL.fullmatch(last):
        return _ipv4(host)
    return host


def _idna_host(host: str) -> str | None:
    labels = []
    for label in _IDEOGRAPHIC_DOTS.sub(".", host).split("."):
        if label.isascii():
            labels.append(label)
            continue
        try:
            labels.append(idna.encode(label, uts46=True).decode("ascii"))
        except idna.IDNAError:
            # IDNA 2008 refuses some names browsers still open (symbols, emoji): use IDNA 2003.
            labels.append(label.encode("idna").decode("ascii"))
    return ".".join(labels)


def _ipv4(host: str) -> str | None:
    """WHATWG IPv4 parsing: a host whose last label is a number must be an address (0x7f.1 = 127.0.0.1)."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers = []
    for part in parts:
        if part[:2] in ("0x", "0X"):
            number = int(part[2:] or "0", 16)
        elif len(part) > 1 and part.startswith("0"):
            number = int(part, 8)  # raises ValueError on 8 or 9: not an address
        else:
            number = int(part)
        numbers.append(number)
    if any(number > 255 for number in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number << (8 * (3 - index))
    return str(ipaddress.IPv4Address(value))


def _normal_path(path: str) -> str:
    if not path:
        return "/"
    if _PATH_TO_FIX.search(path):
        path = _PATH_FIX.sub(_fix_escape, path)
    if ";" in path or "(" in path:
        path = _strip_path_sessions(path)
    if "/." in path:
        path = remove_dot_segments(path)
    return path


def _fix_escape(match: re.Match) -> str:
    text = match.group(0)
    if text[0] == "%":
        digits = match.group(1)
        if digits is None:
            return "%25"  # a "%" that starts no escape is a literal percent sign
        char = chr(int(digits, 16))
        return char if char in _UNRESERVED else f"%{digits.upper()}"
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        encoded = text.encode("utf-8", "surrogatepass")
    return "".join(f"%{byte:02X}" for byte in encoded)


def remove_dot_segments(path: str) -> str:
    """An absolute path without its ``.`` and ``..`` segments (RFC 3986, 5.2.4)."""
    segments = path.split("/")
    kept: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")
    return "/" + "/".join(kept)


def _strip_path_sessions(path: str) -> str:
    if ";" in path:
        path = _PATH_SESSION.sub("", path)
    if "(" in path:
        path = _ASPNET_SESSION.sub("", path)
    return path


def _strip_query_sessions(query: str, strip_hex_sessions: bool) -> str:
    if not (_QUERY_SESSION_HINT.search(query) or (strip_hex_sessions and _QUERY_HEX_HINT.search(query))):
        return query
    kept = []
    for parameter in query.split("&"):
        name, equals, value = parameter.partition("=")
        if equals:
            lowered = name.lower()
            if lowered in SESSION_PARAMETERS:
                continue
            if lowered.startswith("aspsessionid") and _ASPSESSION.fullmatch(lowered):
                continue
            if strip_hex_sessions and len(value) in (32, 40) and _HEX_ID.fullmatch(value):
                continue
        kept.append(parameter)
    return "&".join(kept)


def strip_session_ids(url: str, *, strip_hex_sessions: bool = True) -> str:
    """``url`` without ``;jsessionid=`` path parameters and session-id query parameters, the rest in order."""
    head, hash_mark, fragment = url.partition("#")
    address, question_mark, query = head.partition("?")
    scheme_end = address.find("://")
    path_start = address.find("/", scheme_end + 3) if scheme_end >= 0 else 0
    if path_start >= 0:
        address = address[:path_start] + _strip_path_sessions(address[path_start:])
    if question_mark:
        query = _strip_query_sessions(query, strip_hex_sessions)
    return address + ("?" + query if query else "") + hash_mark + fragment


def fingerprint(url: str) -> int:
    """A 64-bit fingerprint of the canonical form of ``url`` (of ``url`` itself if it has none)."""
    text = canonicalize(url) or url
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest())


def is_dynamic(url: str) -> bool:
    """Whether ``url`` looks generated by a program: a query string, a script extension or a cgi-bin path."""
    head = url.partition("#")[0]
    address, question_mark, query = head.partition("?")
    if question_mark and query:
        return True
    scheme_end = address.find("://")
    path_start = address.find("/", scheme_end + 3) if scheme_end >= 0 else 0
    if path_start < 0:
        return False
    path = address[path_start:].lower()
    if "/cgi-bin/" in path or "/cgi/" in path:
        return True
    last = path.rpartition("/")[2].partition(";")[0]
    return "." in last and last.rpartition(".")[2] in SCRIPT_EXTENSIONS


def host_of(url: str) -> str:
    """``host``, or ``host:port`` if the port is not the scheme's default, of an absolute URL ("" if none)."""
    scheme, _, rest = url.partition("://")
    if not rest:
        return ""
    end = _AUTHORITY_END.search(rest)
    authority = (rest[: end.start()] if end else rest).rpartition("@")[2].lower()
    if authority.startswith("["):
        host, _, port = authority.partition("]")
        host += "]"
        port = port[1:]
    else:
        host, _, port = authority.partition(":")
        host = host.rstrip(".")
    default = DEFAULT_PORTS.get(scheme.lower())
    if port and port.isascii() and port.isdigit() and int(port) != default:
        return f"{host}:{int(port)}"
    return host
