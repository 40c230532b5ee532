"""The stored form of URLs (webarchive.urlnorm.normalise_url): what url-normalize gives, plus the
archive's own refusals; URLs already plain take a shorter road that must end at the same place."""

import random
from urllib.parse import urlsplit, urlunsplit

import pytest
from url_normalize import url_normalize

from webarchive.urlnorm import InvalidURL, normalise_url


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("example.fr", "http://example.fr/"),
        ("HTTP://WWW.Example.FR/Path/Page.HTML", "http://www.example.fr/Path/Page.HTML"),
        ("https://example.fr/a/", "https://example.fr/a/"),
        ("http://example.fr/a/./b/../c", "http://example.fr/a/c"),
        ("http://example.fr//a//b", "http://example.fr/a/b"),
        ("http://example.fr:80/", "http://example.fr/"),
        ("http://example.fr:8080", "http://example.fr:8080/"),
        ("http://example.fr/?b=1&&a=2#part", "http://example.fr/?b=1&a=2"),
        ("http://exämple.fr/été", "http://xn--exmple-cua.fr/%C3%A9t%C3%A9"),
        ("http://xn--exmple-cua.fr/", "http://xn--exmple-cua.fr/"),
        ("  http://example.fr/a  ", "http://example.fr/a"),
    ],
)
def test_urls_are_stored_in_their_normal_form(given, stored):
    assert normalise_url(given) == stored


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", "Enter a URL"),
        ("ftp://example.fr/", "Only http and https"),
        ("http://exa mple.fr/", "cannot contain spaces"),
        ("http://example/", "not a full host name"),
        ("http://-example.fr/", "not a valid host name"),
        (f"http://{'a' * 64}.fr/", "not a valid"),
        ("http://user:secret@example.fr/", "user name or password"),
        ("http://example.fr:0/", "Port 0"),
        ("http://example.fr/" + "a" * 2000, "longer than"),
    ],
)
def test_urls_that_cannot_be_harvested_are_refused_with_the_reason(given, reason):
    with pytest.raises(InvalidURL, match=reason):
        normalise_url(given)


PIECES = {
    "scheme": ["http", "https", "HTTP", "Https"],
    "label": [
        *("example", "www", "Site", "a1", "x-y", "a-b-c", "9"),
        *("ab--cd", "xn--exmple-cua", "é", "a_b", "-a"),
    ],
    "suffix": ["fr", "co.uk", "FR", "org", "1"],
    "port": ["", "", "", ":80", ":443", ":8080"],
    "segment": ["a", "Page.html", "b.c.d", "~user", "x_y-z", ".", "..", "", "a%41", "é", "a.", ".a", "A B"],
    "end": ["", "", "", "/", "?q=1", "?a=1&&b=2", "#top", "#!state", "?"],
}


def _random_url(rng: random.Random) -> str:
    host = ".".join(rng.choice(PIECES["label"]) for _ in range(rng.randint(1, 3)))
    host += "." + rng.choice(PIECES["suffix"])
    path = "".join("/" + rng.choice(PIECES["segment"]) for _ in range(rng.randint(0, 4)))
    scheme = rng.choice(PIECES["scheme"])
    return f"{scheme}://{host}{rng.choice(PIECES['port'])}{path}{rng.choice(PIECES['end'])}"


def _library_form(url: str) -> str:
    """url-normalize's form with the archive's own last touches (no fragment, '/' for no path)."""
    parts = urlsplit(url_normalize(url))
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", parts.query, ""))


def test_every_url_gets_the_form_url_normalize_gives_it():
    """Random URLs, plain ones (the short road) and every kind of exception to it (dot and empty
    segments, ports, queries, fragments, escapes, IDN, case): each accepted URL is stored as
    url-normalize has it, and what url-normalize cannot take is refused."""
    rng = random.Random(20261125)
    plain = 0
    for _ in range(5000):
        url = _random_url(rng)
        try:
            expected = _library_form(url)
        except (ValueError, UnicodeError):
            with pytest.raises(InvalidURL):
                normalise_url(url)
            continue
        try:
            stored = normalise_url(url)
        except InvalidURL:
            continue  # refused by the archive's own rules (host names, ports, spaces)
        assert stored == expected, url
        plain += stored == url.lower()
    assert plain > 100  # plain URLs (the short road's) were among them
