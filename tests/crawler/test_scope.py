"""Depth policies, hop limits and accept/reject/trap rules (harvest.crawler.scope)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvest.crawler.scope import Scope, registered_domain

SEED = "http://www.example.com/news/index.html"


def scope(policy, **options):
    return Scope(seeds=[SEED], policy=policy, **options)


def test_page_policy_follows_only_the_seeds():
    page = scope("page")
    assert page.decide(SEED, "") is None
    assert page.decide("HTTP://WWW.EXAMPLE.COM:80/news/index.html#top", "") is None  # canonical form
    assert page.decide("http://www.example.com/news/other.html", "L") == "out-of-scope"
    assert page.decide("http://www.example.com/", "L") == "out-of-scope"


def test_clicks_policy_counts_navigation_hops_only():
    clicks = scope("clicks", clicks=2)
    assert clicks.decide("http://www.example.com/a", "L") is None
    assert clicks.decide("http://www.example.com/a", "LL") is None
    assert clicks.decide("http://www.example.com/a", "LLL") == "out-of-scope"
    assert clicks.decide("http://www.example.com/a", "ML") is None
    assert clicks.decide("http://www.example.com/a", "MLL") == "out-of-scope"
    # redirects, embeds and speculative hops are not clicks
    assert clicks.decide("http://www.example.com/a", "RLERLX") is None


def test_clicks_policy_never_leaves_the_seeds_domain():
    clicks = scope("clicks", clicks=3)
    assert clicks.decide("http://blog.example.com/a", "L") is None
    assert clicks.decide("http://example.com/a", "L") is None
    assert clicks.decide("http://other.org/a", "L") == "out-of-scope"
    assert clicks.decide("http://example.com.evil.org/a", "L") == "out-of-scope"


def test_clicks_zero_is_the_page_and_its_requisites():
    assert scope("clicks", clicks=0).decide("http://www.example.com/a", "L") == "out-of-scope"
    assert scope("clicks", clicks=0).decide("http://www.example.com/frame.html", "E") is None


def test_path_policy_stays_under_the_seed_directory():
    path = scope("path")
    assert path.decide("http://www.example.com/news/2024/story.html", "L") is None
    assert path.decide("http://www.example.com/news/", "L") is None
    assert (
        path.decide("http://www.example.com/news", "L") is None
    )  # the directory itself, before its redirect
    assert path.decide("https://www.example.com/news/a.html", "L") is None  # the scheme does not matter
    assert path.decide("http://example.com/news/a.html", "L") is None  # www. equivalence
    assert path.decide("http://www.example.com/newsletter.html", "L") == "out-of-scope"
    assert path.decide("http://www.example.com/about/", "L") == "out-of-scope"
    assert path.decide("http://blog.example.com/news/a.html", "L") == "out-of-scope"


def test_path_policy_with_a_directory_seed_and_several_seeds():
    path = Scope(seeds=["http://example.org/a/b/", "http://other.net/x/page"], policy="path")
    assert path.decide("http://example.org/a/b/c/d.html", "LL") is None
    assert path.decide("http://example.org/a/c.html", "L") == "out-of-scope"
    assert path.decide("http://other.net/x/y.html", "L") is None
    assert path.decide("http://other.net/a/b/c.html", "L") == "out-of-scope"  # each seed its own directory


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://www.example.com/anything?x=1", None),
        ("https://www.example.com/", None),
        ("http://example.com/", None),  # www. + host and host are one host
        ("http://WWW.EXAMPLE.COM/a", None),
        ("http://blog.example.com/", "out-of-scope"),
        ("http://www.example.com:8080/", "out-of-scope"),  # another port is another host
        ("http://www2.example.com/", "out-of-scope"),
        ("http://other.org/", "out-of-scope"),
        ("mailto:someone@example.com", "out-of-scope"),
    ],
)
def test_host_policy(url, reason):
    assert scope("host").decide(url, "L") == reason


def test_host_policy_from_a_seed_without_www():
    host = Scope(seeds=["http://example.com/"], policy="host")
    assert host.decide("http://www.example.com/a", "L") is None
    assert host.decide("http://www.www.example.com/a", "L") == "out-of-scope"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com/", None),
        ("http://www.example.com/", None),
        ("https://deep.sub.example.com:8443/x", None),
        ("http://EXAMPLE.COM./x", None),
        ("http://example.org/", "out-of-scope"),
        ("http://notexample.com/", "out-of-scope"),
        ("http://example.com.evil.org/", "out-of-scope"),
    ],
)
def test_domain_policy(url, reason):
    assert scope("domain").decide(url, "LLLL") == reason


def test_domain_policy_with_a_public_suffix_of_two_labels():
    domain = Scope(seeds=["http://news.bbc.co.uk/"], policy="domain")
    assert domain.decide("http://www.bbc.co.uk/sport", "L") is None
    assert domain.decide("http://www.itv.co.uk/", "L") == "out-of-scope"


def test_domain_given_explicitly():
    domain = Scope(seeds=["http://www.example.com/"], policy="domain", domain="Example.COM")
    assert domain.decide("http://shop.example.com/", "L") is None
    assert (
        Scope(seeds=[], policy="domain", domain="bücher.example").decide(
            "http://www.xn--bcher-kva.example/", "L"
        )
        is None
    )


def test_an_ip_address_site_is_its_own_domain():
    assert registered_domain("127.0.0.1") == "127.0.0.1"
    assert registered_domain("news.bbc.co.uk") == "bbc.co.uk"
    assert registered_domain("localhost") == "localhost"
    for policy in ("host", "domain", "path"):
        site = Scope(seeds=["http://127.0.0.1:8001/site/"], policy=policy)
        assert site.decide("http://127.0.0.1:8001/site/page.html", "L") is None, policy
        assert site.decide("http://127.0.0.2:8001/site/page.html", "L") == "out-of-scope", policy
        assert site.decide("http://1.127.0.0.1/site/", "L") == "out-of-scope", policy
    assert Scope(seeds=["http://127.0.0.1:8001/"], policy="host").decide("http://127.0.0.1:8002/", "L") == (
        "out-of-scope"
    )
    assert (
        Scope(seeds=["http://127.0.0.1:8001/"], policy="domain").decide("http://127.0.0.1:8002/", "L") is None
    )


def test_ipv6_site():
    site = Scope(seeds=["http://[::1]:8001/"], policy="domain")
    assert site.decide("http://[0:0::1]:8001/x", "L") is None
    assert site.decide("http://[::2]:8001/x", "L") == "out-of-scope"


def test_max_hops():
    host = scope("host", max_hops=3)
    assert host.decide("http://www.example.com/a", "LLE") is None
    assert host.decide("http://www.example.com/a", "LLEL") == "max-hops"
    assert host.decide("http://other.org/a", "LLEL") == "max-hops"


def test_accept_rules_bring_urls_into_scope():
    host = scope("host", accept=[r"^https?://cdn\.example\.net/"])
    assert host.decide("http://cdn.example.net/lib.js", "L") is None
    assert host.decide("http://cdn2.example.net/lib.js", "L") == "out-of-scope"


def test_accept_rules_do_not_lift_the_hop_limit():
    host = scope("host", max_hops=1, accept=["other"])
    assert host.decide("http://other.org/", "LL") == "max-hops"


def test_reject_and_trap_rules_win_over_everything():
    rules = scope("domain", accept=[r"example"], reject=[r"/private/", r"\.exe$"], traps=[r"/calendar/"])
    assert rules.decide("http://www.example.com/private/a.html", "L") == "rejected"
    assert rules.decide("http://www.example.com/setup.exe", "L") == "rejected"
    assert rules.decide("http://www.example.com/calendar/2031/", "L") == "trap"
    # a seed too, and before the hop limit
    assert rules.decide("http://www.example.com/private/", "") == "rejected"
    seed_rules = Scope(seeds=["http://example.com/private/"], policy="page", reject=["private"])
    assert seed_rules.decide("http://example.com/private/", "") == "rejected"
    assert rules.decide("http://www.example.com/calendar/", "L" * 50) == "trap"
    # reject before trap when both match
    assert scope("host", reject=["x"], traps=["x"]).decide("http://www.example.com/x", "L") == "rejected"


def test_rules_are_searched_in_the_canonical_url():
    rules = scope("host", reject=[r"^http://www\.example\.com/a b$"], traps=[r"sid="])
    # the canonical form has %20, so a rule written with a space never matches
    assert rules.decide("http://www.example.com/a%20b", "L") is None
    assert rules.decide("HTTP://WWW.EXAMPLE.COM/a b", "L") is None
    assert scope("host", reject=[r"/a%20b$"]).decide("HTTP://WWW.EXAMPLE.COM/a b", "L") == "rejected"
    # the session id is gone from the canonical URL, so this trap rule does not match
    assert rules.decide("http://www.example.com/?sid=1", "L") is None


def test_is_trap_or_rejected_ignores_the_policy():
    rules = scope("page", reject=[r"\.exe$"], traps=[r"/loop/"])
    assert rules.is_trap_or_rejected("http://cdn.other.org/style.css") is None
    assert rules.is_trap_or_rejected("http://cdn.other.org/setup.exe") == "rejected"
    assert rules.is_trap_or_rejected("http://www.example.com/loop/a.png") == "trap"
    assert rules.is_trap_or_rejected("javascript:void(0)") is None


def test_add_seed_extends_every_policy():
    moved = Scope(seeds=["http://example.com/"], policy="host")
    assert moved.decide("https://www.example.fr/page", "RL") == "out-of-scope"
    moved.add_seed("https://www.example.fr/")
    assert moved.decide("https://www.example.fr/page", "RL") is None
    assert moved.decide("http://example.fr/page", "RL") is None
    assert "https://www.example.fr/" in moved.seeds
    domain = Scope(seeds=["http://example.com/"], policy="domain")
    domain.add_seed("http://www.example.fr/")
    assert domain.decide("http://shop.example.fr/", "L") is None
    page = Scope(seeds=["http://example.com/"], policy="page")
    page.add_seed("http://example.com/index.html")
    assert page.decide("http://example.com/index.html", "R") is None


def test_invalid_seeds_are_ignored():
    assert Scope(seeds=["mailto:a@b.c", "not a url"], policy="host").seeds == frozenset()


def test_bad_configuration_is_refused():
    with pytest.raises(ValueError, match="depth policy"):
        Scope(seeds=[SEED], policy="everything")


def test_rules_re2_cannot_run_are_skipped_and_listed_not_fatal(caplog):
    # Saved before rules were checked with RE2: one bad rule must not stop the crawl of a site.
    rules = scope(
        "host",
        accept=[r"(?=cdn\.)", r"^http://cdn\.example\.net/"],
        reject=["(unclosed", r"(\w+)/\1/", r"\.exe$"],
        traps=["[z-a]", r"/calendar/"],
    )
    assert rules.skipped_rules == [
        {"kind": "accept", "rule": r"(?=cdn\.)", "error": "invalid perl operator: (?="},
        {"kind": "reject", "rule": "(unclosed", "error": "missing ): (unclosed"},
        {"kind": "reject", "rule": r"(\w+)/\1/", "error": "invalid escape sequence: \\1"},
        {"kind": "trap", "rule": "[z-a]", "error": "invalid character class range: z-a"},
    ]
    assert "reject rule '(unclosed' skipped: RE2 cannot run it" in caplog.text
    # The others apply.
    assert rules.decide("http://www.example.com/setup.exe", "L") == "rejected"
    assert rules.decide("http://www.example.com/calendar/", "L") == "trap"
    assert rules.decide("http://cdn.example.net/a.js", "L") is None
    assert rules.decide("http://www.example.com/a/a/", "L") is None


@pytest.mark.timeout(30)
def test_rules_run_in_linear_time_on_hostile_urls():
    # Python's re takes hours on these (2**80 ways to split the path); RE2 answers at once.
    hostile = "http://www.example.com/" + "a" * 80
    rules = scope("page", reject=[r"(a+)+!"], traps=[r"(.*a){30}x"], accept=[r"(\w+)+\.exe"])
    assert rules.skipped_rules == []
    assert rules.decide(hostile, "L") == "out-of-scope"
    assert rules.is_trap_or_rejected(hostile) is None
    assert rules.decide(hostile + "!", "L") == "rejected"
    assert rules.decide(hostile + "x", "L") == "trap"


def test_rules_match_urls_that_are_not_valid_unicode():
    # A requisite's URL that cannot be canonicalised is matched as it is, lone surrogate included.
    rules = scope("page", reject=["caf"])
    assert rules.is_trap_or_rejected("http://www.example.com:99999/caf\udce9") == "rejected"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100), st.text(alphabet="LEXRMP", max_size=30))
def test_decide_never_raises(text, hop_path):
    for policy in ("page", "clicks", "path", "host", "domain"):
        rules = scope(policy, accept=["a"], reject=["zz"], traps=["yy"])
        assert rules.decide(text, hop_path) in (None, "out-of-scope", "max-hops", "rejected", "trap")
        assert rules.decide("http://www.example.com/" + text, hop_path) in (
            None,
            "out-of-scope",
            "max-hops",
            "rejected",
            "trap",
        )
        rules.is_trap_or_rejected(text)
