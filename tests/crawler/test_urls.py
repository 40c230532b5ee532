"""Canonical URLs, session ids, fingerprints and URL classification (harvest.crawler.urls)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvest.crawler.urls import canonicalize, fingerprint, host_of, is_dynamic, strip_session_ids


@pytest.mark.parametrize(
    ("url", "canonical"),
    [
        # scheme and host in lower case, empty path is "/"
        ("HTTP://Example.COM", "http://example.com/"),
        ("https://WWW.Example.org/Path/Keeps/Case", "https://www.example.org/Path/Keeps/Case"),
        # default ports removed, others kept, leading zeros read as a number
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:443/a", "http://example.com:443/a"),
        ("https://example.com:80/a", "https://example.com:80/a"),
        ("http://example.com:8080/a", "http://example.com:8080/a"),
        ("http://example.com:0080/a", "http://example.com/a"),
        ("http://example.com:/a", "http://example.com/a"),
        # IDN hosts in punycode, trailing dot of a host dropped
        ("http://bücher.example/", "http://xn--bcher-kva.example/"),
        ("http://BÜCHER.example/", "http://xn--bcher-kva.example/"),
        ("http://xn--bcher-kva.example/", "http://xn--bcher-kva.example/"),
        ("http://例え。テスト/", "http://xn--r8jz45g.xn--zckzah/"),
        ("http://example.com./a", "http://example.com/a"),
        # dot segments, including encoded ones
        ("http://example.com/a/./b/../c", "http://example.com/a/c"),
        ("http://example.com/a/b/..", "http://example.com/a/"),
        ("http://example.com/../../x", "http://example.com/x"),
        ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
        ("http://example.com/a//../b", "http://example.com/a/b"),
        # percent-encoding: unreserved decoded, hex in upper case, reserved kept, unsafe encoded
        ("http://example.com/%7euser/%41%62", "http://example.com/~user/Ab"),
        ("http://example.com/a%2fb%3F?q=%3d%26", "http://example.com/a%2Fb%3F?q=%3D%26"),
        ("http://example.com/a b/é?q=a b&r=é", "http://example.com/a%20b/%C3%A9?q=a%20b&r=%C3%A9"),
        ("http://example.com/100%", "http://example.com/100%25"),
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ('http://example.com/<"{}|^`>', "http://example.com/%3C%22%7B%7D%7C%5E%60%3E"),
        ("http://example.com/a+b?x=1+2", "http://example.com/a+b?x=1+2"),
        # fragment removed, empty query removed, query order kept
        ("http://example.com/a#section", "http://example.com/a"),
        ("http://example.com/a?#", "http://example.com/a"),
        ("http://example.com/a?z=1&a=2", "http://example.com/a?z=1&a=2"),
        # what a browser tolerates: surrounding spaces, tabs and newlines, backslashes
        ("  http://example.com/a\n/b\t ", "http://example.com/a/b"),
        ("http:\\\\example.com\\a\\b?x=\\", "http://example.com/a/b?x=%5C"),
        ("http:///example.com/a", "http://example.com/a"),
        # user info is never sent
        ("http://user:secret@example.com/a", "http://example.com/a"),
        # addresses
        ("http://127.0.0.1:8001/a", "http://127.0.0.1:8001/a"),
        ("http://0x7f.1/", "http://127.0.0.1/"),
        ("http://2130706433/", "http://127.0.0.1/"),
        ("http://[::1]:8080/a", "http://[::1]:8080/a"),
        ("http://[2001:DB8:0:0::1]/", "http://[2001:db8::1]/"),
        # session ids
        ("http://example.com/a;jsessionid=0123ABC?x=1", "http://example.com/a?x=1"),
        ("http://example.com/?PHPSESSID=abc&x=1", "http://example.com/?x=1"),
        ("http://example.com/(S(lit3py55t21z5v55vlm25s55))/page.aspx", "http://example.com/page.aspx"),
    ],
)
def test_canonicalize(url, canonical):
    assert canonicalize(url) == canonical


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "mailto:someone@example.com",
        "data:text/plain,hello",
        "ftp://example.com/file",
        "tel:+33123",
        "about:blank",
        "/relative/path",
        "example.com/no-scheme",
        "",
        "http://",
        "https:///",
        "http://:80/",
        "http://example.com:99999/",
        "http://example.com:0/",
        "http://example.com:-1/",
        "http://example.com:8o/",
        "http://example.com:²/",
        "http://exa mple.com/",
        "http://exa<mple.com/",
        "http://a..b.com/",
        "http://[::1/",
        "http://[not-an-address]/",
        "http://1.2.3.4.5/",
        "http://256.0.0.1/",
        "http://09.1.1.1/",
        "http://" + "a" * 64 + ".com/",
        "http://example.com/" + "a" * 9000,
    ],
)
def test_canonicalize_refuses(url):
    assert canonicalize(url) is None


def test_canonicalize_refuses_what_is_not_a_string():
    assert canonicalize(None) is None
    assert canonicalize(b"http://example.com/") is None


def test_hex_session_stripping_can_be_turned_off():
    url = "http://example.com/style.css?v=d41d8cd98f00b204e9800998ecf8427e"
    assert canonicalize(url) == "http://example.com/style.css"
    assert canonicalize(url, strip_hex_sessions=False) == url


@pytest.mark.parametrize(
    ("url", "stripped"),
    [
        ("http://example.com/a;jsessionid=1A2B3C", "http://example.com/a"),
        ("http://example.com/a;JSESSIONID=1A2B3C?x=1", "http://example.com/a?x=1"),
        ("http://example.com/a;jsessionid=1A2B/b.html", "http://example.com/a/b.html"),
        ("http://example.com/a;foo=1;jsessionid=2", "http://example.com/a;foo=1"),
        ("http://example.com/p?a=1&PHPSESSID=x&b=2&sid=y&c=3", "http://example.com/p?a=1&b=2&c=3"),
        ("http://example.com/p?sessionid=1&session_id=2&sessid=3&z=0", "http://example.com/p?z=0"),
        ("http://example.com/p?ASPSESSIONIDQARCTTAB=X&CFID=1&CFTOKEN=2&q=ok", "http://example.com/p?q=ok"),
        ("http://example.com/p?jsessionid=1", "http://example.com/p"),
        # 32 and 40 hex digits: 128- and 160-bit ids, whatever the parameter's name
        (
            "http://example.com/p?z=1&token=0123456789abcdef0123456789ABCDEF&a=2",
            "http://example.com/p?z=1&a=2",
        ),
        ("http://example.com/p?k=0123456789abcdef0123456789abcdef01234567", "http://example.com/p"),
        # not session ids: other lengths, non-hex, names that merely contain "sid", "s"
        (
            "http://example.com/p?k=0123456789abcdef0123456789abcde",
            "http://example.com/p?k=0123456789abcdef0123456789abcde",
        ),
        (
            "http://example.com/p?k=0123456789abcdef0123456789abcdeg",
            "http://example.com/p?k=0123456789abcdef0123456789abcdeg",
        ),
        ("http://example.com/p?inside=1&s=2&sidebar=3", "http://example.com/p?inside=1&s=2&sidebar=3"),
        # the fragment is left alone, the order of the other parameters kept
        ("http://example.com/p?b=2&sid=1&a=1#top", "http://example.com/p?b=2&a=1#top"),
    ],
)
def test_strip_session_ids(url, stripped):
    assert strip_session_ids(url) == stripped


def test_strip_session_ids_keeps_hex_values_when_asked():
    url = "http://example.com/p?v=0123456789abcdef0123456789abcdef&sid=1"
    assert (
        strip_session_ids(url, strip_hex_sessions=False)
        == "http://example.com/p?v=0123456789abcdef0123456789abcdef"
    )


def test_fingerprint_is_a_64_bit_number_of_the_canonical_url():
    value = fingerprint("http://example.com/a")
    assert isinstance(value, int)
    assert 0 <= value < 2**64
    assert fingerprint("HTTP://EXAMPLE.com:80/a#x") == value
    assert fingerprint("http://example.com/b") != value
    assert fingerprint("https://example.com/a") != value


@pytest.mark.parametrize(
    ("url", "dynamic"),
    [
        ("http://example.com/page?id=3", True),
        ("http://example.com/index.php", True),
        ("http://example.com/Default.ASPX", True),
        ("http://example.com/app/view.jsp;jsessionid=1", True),
        ("http://example.com/cgi-bin/search", True),
        ("http://example.com/script.cgi", True),
        ("http://example.com/legacy.cfm", True),
        ("http://example.com/", False),
        ("http://example.com/page.html", False),
        ("http://example.com/php/manual.html", False),
        ("http://example.com/style.css", False),
        ("http://example.com/page?", False),
        ("http://example.com/page.html#a?b", False),
    ],
)
def test_is_dynamic(url, dynamic):
    assert is_dynamic(url) is dynamic


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/a", "example.com"),
        ("http://Example.COM:80/a", "example.com"),
        ("https://example.com:443", "example.com"),
        ("http://example.com:443/", "example.com:443"),
        ("https://example.com:8443/a?b", "example.com:8443"),
        ("http://user@example.com:8001/", "example.com:8001"),
        ("http://127.0.0.1:8001/", "127.0.0.1:8001"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("http://[::1]/", "[::1]"),
        ("not a url", ""),
    ],
)
def test_host_of(url, host):
    assert host_of(url) == host


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_canonicalize_never_raises_on_any_text(text):
    canonicalize(text)
    canonicalize("http://" + text)
    canonicalize("http://example.com/" + text)
    strip_session_ids(text)
    is_dynamic(text)
    host_of(text)
    fingerprint(text)


_URL_PIECES = st.sampled_from(
    ["/", ".", "..", "%", "%2e", "%41", "%2F", "?", "&", "=", "#", ";", ";jsessionid=1", "sid=", "é", " ",
     "\\", "a", "B", ":", "@", "(S(abc))", "0123456789abcdef0123456789abcdef"]
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(["http://", "HTTPS://", "http://user@", "http:"]),
    st.sampled_from(["example.com", "Bücher.example", "127.0.0.1", "[::1]", "example.com:8080", "0x7f.1"]),
    st.lists(_URL_PIECES, max_size=12),
)
def test_canonicalize_is_idempotent(scheme, host, pieces):
    canonical = canonicalize(scheme + host + "/" + "".join(pieces))
    if canonical is not None:
        assert canonicalize(canonical) == canonical
        assert canonical.isascii()
        assert "#" not in canonical
