"""Regular expressions typed by users, run by RE2: in time proportional to the text, whatever the pattern.

Python's ``re`` backtracks: ``(.+)+!`` or ``(a+)+$`` against an ordinary URL or crawl log line takes
minutes, holding a web worker. RE2 matches with automata and never backtracks, so a match costs at most
the text's length times the pattern's size. The price is that what only a backtracking engine can run
is refused: back-references (``\\1``, ``(?P=name)``), look-ahead and look-behind (``(?=…)``, ``(?!…)``,
``(?<=…)``, ``(?<!…)``), atomic groups, possessive quantifiers and conditionals. The message says which
one a refused pattern uses.

Every pattern a user types goes through :func:`compile_user_pattern` on the web side: CDX filters, the
crawl log search, and the validators of crawler traps and accept/reject rules. The crawler
(``harvest.crawler``), which imports no Django, compiles the rules saved here with ``re2`` itself and the
same :data:`MAX_MEMORY`.

Bounds: a pattern has at most :data:`MAX_LENGTH` characters, and RE2 at most :data:`MAX_MEMORY` bytes for
it (its compiled program and its automaton's cache). RE2 refuses a pattern whose program does not fit;
when the automaton's cache fills up on a text, it falls back to its slower matcher, still linear.
8 MiB is RE2's own default, kept on purpose: with less, ordinary long patterns such as ``.{1000}x`` lose
the fast automaton and run a hundred times slower on crawl log lines, with no gain (the memory is bounded
either way). ``re2.compile`` keeps its last 128 patterns, with their caches, for the life of the process;
a user's pattern is compiled outside that cache, so its memory goes with the request that made it.
"""

from __future__ import annotations

import re

import re2
from django.utils.translation import gettext as _

MAX_LENGTH = 1000  # characters of one pattern
MAX_MEMORY = 8 << 20  # bytes RE2 may use for one pattern: its program and its automaton's cache

_LOOK_AROUND = ("(?=", "(?!", "(?<=", "(?<!")
_NUMBERED_BACK_REFERENCE = re.compile(r"invalid escape sequence: \\[1-9]")


class PatternError(ValueError):
    """A pattern that cannot be run, with the message saying why (translated)."""


def pattern_options() -> re2.Options:
    """RE2's options for users' patterns: bounded memory, no capture groups, errors raised not logged."""
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False
    options.never_capture = True  # only whether it matches is asked: the fast automaton alone answers
    return options


def compile_user_pattern(text: str):
    """``text`` compiled by RE2 (with ``search``, ``match``, ``fullmatch``), or :class:`PatternError`."""
    if len(text) > MAX_LENGTH:
        raise PatternError(
            _("The regular expression is too long: %(length)d characters, at most %(max)d.")
            % {"length": len(text), "max": MAX_LENGTH}
        )
    try:
        # Not re2.compile, which would cache it for the life of the process (see the module's docstring).
        return re2._Regexp(text, pattern_options())
    except re2.error as error:
        raise PatternError(refusal_message(text, _error_text(error))) from None


def refusal_message(pattern: str, error: str) -> str:
    """Why RE2 refused ``pattern`` (``error`` is RE2's own message), in words a curator can act on."""
    reason = _unsupported_reason(pattern, error)
    if reason is None:
        return _("“%(pattern)s” is not a valid regular expression: %(error)s.") % {
            "pattern": pattern,
            "error": error,
        }
    return _("“%(pattern)s” cannot be used: %(reason)s") % {"pattern": pattern, "reason": reason}


def _unsupported_reason(pattern: str, error: str) -> str | None:
    why = _(
        "patterns are RE2 regular expressions, which run in time proportional to the text, "
        "and this feature needs a backtracking engine that can take exponential time."
    )
    if any(marker in error for marker in _LOOK_AROUND):
        return _("look-ahead and look-behind ((?=…), (?!…), (?<=…), (?<!…)) are not supported: ") + why
    if _NUMBERED_BACK_REFERENCE.search(error) or ("(?P" in error and "(?P=" in pattern):
        return _("back-references (\\1, (?P=name)) are not supported: ") + why
    if "(?>" in error or ("repetition operator: " in error and error.endswith("+")):
        return _(
            "atomic groups and possessive quantifiers ((?>…), a++, a*+) are not supported, nor needed: "
            "RE2 regular expressions never backtrack. Remove the “?>” or the last “+”."
        )
    if "(?(" in error:
        return _("conditional groups ((?(1)…|…)) are not supported by RE2 regular expressions.")
    if "\\Z" in error:
        return _("RE2 regular expressions write the end of the text \\z, not \\Z.")
    if "pattern too large" in error or "invalid repetition size" in error:
        return _(
            "it is too large for RE2, the regular expression engine (repetitions count up to 1000 in all, "
            "and the compiled pattern must fit in %(mib)d MiB)."
        ) % {"mib": MAX_MEMORY >> 20}
    return None


def _error_text(error: re2.error) -> str:
    message = error.args[0] if error.args else ""
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
