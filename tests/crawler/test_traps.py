"""Crawler-trap detection (harvest.crawler.traps)."""

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harvest.crawler.traps import TrapGuard

TODAY = datetime.date(2025, 6, 15)


def guard(**options):
    options.setdefault("today", TODAY)
    options.setdefault("calendar_years", (5, 2))
    return TrapGuard(**options)


@pytest.mark.parametrize(
    ("url", "result"),
    [
        ("http://example.com/a/b/a/b/", None),
        ("http://example.com/a/b/a/b/a/b/", "trap:path-repeat"),
        ("http://example.com/x/x/x", "trap:path-repeat"),
        ("http://example.com/images/images/logo.png", None),
        ("http://example.com/a/b/c/d/e/f/", None),
        ("http://example.com/", None),
    ],
)
def test_path_repeats(url, result):
    assert guard().check(url) == result


def test_path_repeat_limit_is_configurable():
    assert guard(max_path_repeats=1).check("http://example.com/a/b/a/") == "trap:path-repeat"
    assert guard(max_path_repeats=3).check("http://example.com/a/b/a/b/a/b/") is None


@pytest.mark.parametrize(
    ("url", "result"),
    [
        # within 5 years before and 2 years after 2025 (the guard of these tests)
        ("http://example.com/events/2025/06/", None),
        ("http://example.com/events/2020/01/", None),
        ("http://example.com/events/2027/12/31/", None),
        ("http://example.com/calendar?year=2027&month=1", None),
        # too far in the past or the future, in the path or the query, with or without month and day
        ("http://example.com/events/2019/12/", "trap:calendar"),
        ("http://example.com/events/2028/01/", "trap:calendar"),
        ("http://example.com/events/2031-05-17.html", "trap:calendar"),
        ("http://example.com/events/20310517", "trap:calendar"),
        ("http://example.com/events/203105/", "trap:calendar"),
        ("http://example.com/calendar?year=2150&month=1", "trap:calendar"),
        ("http://example.com/calendar?date=1901-01-01", "trap:calendar"),
        ("http://example.com/calendar.php?view=month&d=2099_12", "trap:calendar"),
        # not years: other numbers, parts of names, parameter names
        ("http://example.com/products/12345", None),
        ("http://example.com/products/1899/", None),
        ("http://example.com/products/2200/", None),
        ("http://example.com/report-2010.pdf", None),
        ("http://example.com/page?2010=x", None),
        ("http://example.com/events/2031-13-01/", None),
        # a year alone in a path is an id or an archive, not a calendar
        ("http://example.com/node/1950", None),
        ("http://example.com/history/1914/", None),
        ("http://example.com/events/2019/", None),
        ("http://example.com/list?page=2150", None),
    ],
)
def test_calendar(url, result):
    assert guard().check(url) == result


def test_calendar_window_is_configurable():
    assert guard(calendar_years=(20, 10)).check("http://example.com/events/2010/05/") is None
    assert guard(calendar_years=(0, 0)).check("http://example.com/events/2024/05/") == "trap:calendar"
    assert guard(calendar_years=(0, 0)).check("http://example.com/events/2025/05/") is None


def test_calendar_defaults_to_the_real_today_and_thirty_years_back_two_ahead():
    this_year = datetime.date.today().year
    assert TrapGuard().check(f"http://example.com/events/{this_year}/1/") is None
    assert TrapGuard().check(f"http://example.com/events/{this_year - 30}/1/") is None
    assert TrapGuard().check(f"http://example.com/events/{this_year - 31}/1/") == "trap:calendar"
    assert TrapGuard().check(f"http://example.com/events/{this_year + 3}/1/") == "trap:calendar"


def test_too_many_urls_in_one_directory():
    trap = guard(max_per_directory=3)
    for name in ("a", "b", "c"):
        assert trap.check(f"http://example.com/dir/{name}.html") is None
    assert trap.check("http://example.com/dir/d.html") == "trap:directory"
    assert trap.check("http://example.com/dir/?x=1") == "trap:directory"
    # other directories, subdirectories and hosts have their own counts
    assert trap.check("http://example.com/dir/sub/a.html") is None
    assert trap.check("http://example.com/other/a.html") is None
    assert trap.check("http://www.example.com/dir/a.html") is None


def test_too_many_query_strings_for_one_path():
    trap = guard(max_per_script=2)
    assert trap.check("http://example.com/search?q=1") is None
    assert trap.check("http://example.com/search?q=2") is None
    assert trap.check("http://example.com/search?q=3") == "trap:parameters"
    # the path itself, and other scripts, still pass
    assert trap.check("http://example.com/search") is None
    assert trap.check("http://example.com/list?page=3") is None


def test_refused_urls_are_not_counted():
    trap = guard(max_per_directory=2)
    assert trap.check("http://example.com/d/x/x/x") == "trap:path-repeat"
    assert trap.check("http://example.com/d/1990/01") == "trap:calendar"
    assert trap.check("http://example.com/d/a") is None
    assert trap.check("http://example.com/d/b") is None
    assert trap.check("http://example.com/d/c") == "trap:directory"


def test_memory_is_bounded_oldest_forgotten():
    trap = guard(max_per_directory=1, max_keys=3)
    for index in range(5):
        assert trap.check(f"http://example.com/d{index}/a") is None
    # the newest directories are still counted, the oldest forgotten
    assert trap.check("http://example.com/d4/b") == "trap:directory"
    assert trap.check("http://example.com/d0/b") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=120))
def test_check_never_raises(text):
    trap = guard(max_per_directory=2, max_per_script=2)
    for url in (text, "http://example.com/" + text, "http://example.com/?" + text):
        assert trap.check(url) in (
            None,
            "trap:path-repeat",
            "trap:directory",
            "trap:parameters",
            "trap:calendar",
        )
