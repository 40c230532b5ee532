"""URLs as the archive stores and compares them.

- :func:`normalise_url` — the form a URL is stored in: scheme and host in lower
  case, IDN host in punycode, no default port, ``/`` for an empty path, dot
  segments resolved, percent-encoding normalised (url-normalize), no fragment.
  Refuses, with a message a librarian understands, what cannot be harvested.
- :func:`url_key` — what two URLs share when they are "the same site page":
  also ignoring http/https, a leading ``www.`` and a trailing slash.
- :func:`registered_domain` — the domain a host belongs to, from the public
  suffix list shipped with tldextract (never fetched).
- :func:`unicode_url` — a stored URL as people read it: an IDN host in its
  Unicode form (``café.fr``), shown beside the stored punycode (``xn--caf-dma.fr``).
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache
from urllib.parse import urlsplit, urlunsplit

import idna
import tldextract
from django.utils.translation import gettext as _
from url_normalize import url_normalize

MAX_URL_LENGTH = 2000
SCHEMES = ("http", "https")
# Underscores are not allowed in host names by the RFCs, but real sites use them.
_HOST_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# A URL already in its normal form but for the case of its scheme and host: http(s), host labels
# of letters and digits with single inner hyphens (so no IDNA to check), no port, no user, no
# query, no fragment, a path of unreserved characters without empty or dot segments. Such URLs are
# most of those in the lists librarians and registries give, and url-normalize (IDNA per label)
# costs ten times more than this match: it is only asked about the others.
_PLAIN_URL = re.compile(
    r"https?://((?:[a-z0-9]+(?:-[a-z0-9]+)*\.)+[a-z0-9]+(?:-[a-z0-9]+)*)"
    r"((?:/[a-z0-9_~-]+(?:\.[a-z0-9_~-]+)*)*/?)",
    re.IGNORECASE,
)


class InvalidURL(ValueError):
    """A URL that cannot be stored or harvested; the message says why."""


def normalise_url(url: str, *, default_scheme: str = "http") -> str:
    """The stored form of a URL, or :class:`InvalidURL` saying what is wrong with it."""
    text = (url or "").strip()
    if not text:
        raise InvalidURL(_("Enter a URL."))
    if any(ch.isspace() for ch in text):
        raise InvalidURL(_("A URL cannot contain spaces."))
    if "://" not in text and not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d)", text):
        text = f"{default_scheme}://{text}"
    scheme = text.split(":", 1)[0].lower()
    if scheme not in SCHEMES:
        raise InvalidURL(
            _("Only http and https URLs can be harvested, not “%(scheme)s”.") % {"scheme": scheme}
        )
    if plain := _PLAIN_URL.fullmatch(text):
        host, path = plain.group(1).lower(), plain.group(2)
        _check_host(host)  # (labels of 64 or more)
        normal = f"{scheme}://{host}{path or '/'}"
    else:
        normal = _normalised_by_library(text, default_scheme)
    if len(normal) > MAX_URL_LENGTH:
        raise InvalidURL(_("A URL cannot be longer than %(max)d characters.") % {"max": MAX_URL_LENGTH})
    return normal


def unicode_url(url: str) -> str:
    """``url`` with its host in Unicode where it is an internationalised name; else ``url`` itself."""
    parts = urlsplit(url or "")
    host = parts.hostname or ""
    if "xn--" not in host:
        return url
    try:
        readable = idna.decode(host)
    except (idna.IDNAError, UnicodeError, ValueError):
        return url  # not a valid IDN: shown as stored
    netloc = readable if parts.port is None else f"{readable}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _normalised_by_library(text: str, default_scheme: str) -> str:
    """url-normalize's form of a URL, with the archive's checks of host, port and user."""
    try:
        normal = url_normalize(text, default_scheme=default_scheme)
        parts = urlsplit(normal)
        port = parts.port  # raises ValueError on a bad port
    except (ValueError, UnicodeError) as error:
        raise InvalidURL(_("This is not a valid URL (%(error)s).") % {"error": error}) from error
    _check_host(parts.hostname or "")
    if port == 0:
        raise InvalidURL(_("Port 0 is not a valid port."))
    if parts.username or parts.password:
        raise InvalidURL(_("A URL to harvest cannot contain a user name or password."))
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


def _check_host(host: str) -> None:
    if not host:
        raise InvalidURL(_("The URL has no host name."))
    try:
        ipaddress.ip_address(host)
        return
    except ValueError:
        pass
    labels = host.rstrip(".").split(".")
    if len(labels) < 2 and host != "localhost":
        raise InvalidURL(_("“%(host)s” is not a full host name (e.g. example.org).") % {"host": host})
    for label in labels:
        if not _HOST_LABEL.match(label):
            raise InvalidURL(_("“%(host)s” is not a valid host name.") % {"host": host})


def url_key(url: str) -> str:
    """The duplicate-detection key of a normalised URL."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    host = host.removeprefix("www.")
    if ":" in host:
        host = f"[{host}]"  # IPv6
    default_port = {"http": 80, "https": 443}.get(parts.scheme)
    port = f":{parts.port}" if parts.port and parts.port != default_port else ""
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{host}{port}{path}{query}"


def url_host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower().rstrip(".")


@cache
def _extractor() -> tldextract.TLDExtract:
    # The snapshot of the public suffix list inside the package: no network.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def registered_domain(host: str) -> str:
    """``news.bbc.co.uk`` → ``bbc.co.uk``; an address or a bare name is its own domain."""
    host = host.lower().rstrip(".")
    extracted = _extractor()(host)
    if extracted.domain and extracted.suffix:
        return f"{extracted.domain}.{extracted.suffix}"
    return host


def validate_url(value: str) -> None:
    """Model-field validator: the URL is one :func:`normalise_url` accepts."""
    from django.core.exceptions import ValidationError

    try:
        normalise_url(value)
    except InvalidURL as error:
        raise ValidationError(str(error), code="invalid_url") from error
