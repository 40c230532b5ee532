"""Crawler-trap detection: URL spaces a site can generate without end.

Four rules, each an annotation for the crawl log:

- ``trap:path-repeat`` — a path segment repeated more than ``max_path_repeats``
  times (``/a/b/a/b/a/b/``: relative links resolved against the wrong base);
- ``trap:calendar`` — a date too far in the past or the future (calendars link to
  the next month forever): a year (1900 to 2199) followed by a month, as path
  segments (``/2031/05/``) or in one value (``2031-05``, ``20310517``), or a year
  in a query parameter named like a date (``?year=2031``). A year alone in a path
  (``/node/1950``, ``/history/1914/``) is not a date: ids and archives keep theirs;
- ``trap:directory`` — too many distinct URLs in one directory;
- ``trap:parameters`` — too many distinct query strings for one path (faceted
  search, sort orders, session-like parameters).

The last two count the URLs :meth:`TrapGuard.check` lets through, so it is
called once per new URL. Memory is bounded: only counters are kept, for at
most ``max_keys`` directories and paths, the oldest forgotten first.
"""

from __future__ import annotations

import datetime
import re
from collections import Counter

from harvest.crawler import defaults

PATH_REPEAT = "trap:path-repeat"
DIRECTORY = "trap:directory"
PARAMETERS = "trap:parameters"
CALENDAR = "trap:calendar"

# A year, optionally followed by a month and a day, with or without separators.
_DATE = re.compile(
    r"(19\d\d|2[01]\d\d)(?:[-_.]?(?:0[1-9]|1[0-2])(?:[-_.]?(?:0[1-9]|[12]\d|3[01]))?)?(?:\.html?)?",
    re.IGNORECASE,
)
# The same with the month required: a date in one value.
_YEAR_MONTH = re.compile(
    r"(19\d\d|2[01]\d\d)[-_.]?(?:0[1-9]|1[0-2])(?:[-_.]?(?:0[1-9]|[12]\d|3[01]))?(?:\.html?)?",
    re.IGNORECASE,
)
_YEAR = re.compile(r"19\d\d|2[01]\d\d")
_MONTH = re.compile(r"0?[1-9]|1[0-2]")
# Query parameter names that say their value is a date.
_DATE_NAMES = ("year", "date", "month", "day", "cal", "time", "when", "period")


class TrapGuard:
    """Refuses URLs that look like crawler traps; one guard per site crawl (not thread-safe)."""

    def __init__(
        self,
        *,
        max_path_repeats: int = defaults.TRAP_PATH_REPEATS,
        max_per_directory: int = defaults.TRAP_PER_DIRECTORY,
        max_per_script: int = defaults.TRAP_PER_SCRIPT,
        calendar_years: tuple[int, int] = (
            defaults.TRAP_CALENDAR_YEARS_BACK,
            defaults.TRAP_CALENDAR_YEARS_AHEAD,
        ),
        today: datetime.date | None = None,
        max_keys: int = 100_000,
    ):
        self.max_path_repeats = max_path_repeats
        self.max_per_directory = max_per_directory
        self.max_per_script = max_per_script
        year = (today or datetime.date.today()).year
        self.first_year = year - calendar_years[0]
        self.last_year = year + calendar_years[1]
        self.max_keys = max_keys
        self._per_directory: dict[str, int] = {}
        self._per_script: dict[str, int] = {}

    def check(self, url: str) -> str | None:
        """``None`` if ``url`` may be crawled (and it is counted), else the trap annotation."""
        address, _, query = url.partition("#")[0].partition("?")
        scheme_end = address.find("://")
        path_start = address.find("/", scheme_end + 3 if scheme_end >= 0 else 0)
        path = address[path_start:] if path_start >= 0 else "/"
        segments = [segment for segment in path.split("/") if segment]
        if segments and max(Counter(segments).values()) > self.max_path_repeats:
            return PATH_REPEAT
        if self._out_of_calendar(segments, query):
            return CALENDAR
        directory = address[: len(address) - len(path) + path.rfind("/") + 1]
        if self._per_directory.get(directory, 0) >= self.max_per_directory:
            return DIRECTORY
        if query and self._per_script.get(address, 0) >= self.max_per_script:
            return PARAMETERS
        self._count(self._per_directory, directory)
        if query:
            self._count(self._per_script, address)
        return None

    def _out_of_calendar(self, segments: list[str], query: str) -> bool:
        return any(not self.first_year <= year <= self.last_year for year in _calendar_years(segments, query))

    def _count(self, counters: dict[str, int], key: str) -> None:
        counters[key] = counters.get(key, 0) + 1
        if len(counters) > self.max_keys:
            del counters[next(iter(counters))]  # dicts keep insertion order: the oldest key


def _calendar_years(segments: list[str], query: str):
    """The years of the date-like parts of a URL (see the module's docstring)."""
    for index, segment in enumerate(segments):
        if len(segment) < 4 or segment[0] not in "12":
            continue
        if _YEAR.fullmatch(segment):
            following = segments[index + 1] if index + 1 < len(segments) else ""
            if _MONTH.fullmatch(following):
                yield int(segment)
            continue
        match = _YEAR_MONTH.fullmatch(segment)
        if match:
            yield int(match.group(1))
    if not query:
        return
    for parameter in query.split("&"):
        name, _, value = parameter.partition("=")
        if len(value) < 4 or value[0] not in "12":
            continue
        match = _YEAR_MONTH.fullmatch(value)
        if match is None and any(word in name.lower() for word in _DATE_NAMES):
            match = _DATE.fullmatch(value)
        if match:
            yield int(match.group(1))
