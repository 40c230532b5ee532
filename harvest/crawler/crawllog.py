"""The crawl log: one line per URL the crawler dealt with, in a file per job.

A line has eleven fields separated by single spaces, "-" for an empty one
(the layout of Heritrix's crawl.log, which crawl engineers already read)::

    2026-11-22T10:04:05.123Z 200 5120 http://example.fr/a.css LE http://example.fr/ \
        text/css 12ms sha256:ABC… example.fr truncated:length

timestamp (UTC, when the fetch started), status (HTTP status, or a negative
code below when there was no response), size (entity bytes as stored),
URL, hop path from the seed (L link, E embed, X speculative, R redirect,
M sitemap, P prerequisite), via (the URL it was found on), MIME type, fetch
duration, payload digest, the site (the domain of the crawl), annotations
(comma-separated).

A fetch without a response has the annotation ``error:<code>:<text>``: the code is a
:class:`~harvest.crawler.outcomes.FetchError` (what machines read: the monitoring page), the text
says it for people (spaces as ``_``), e.g. ``error:connection-refused:connection_refused``. Logs
written before the codes have ``error:<text>``: :func:`fetch_error` reads both.

Several threads of a process append to its file: each line is written with a single ``write`` on a
file opened with ``O_APPEND``, which the kernel keeps whole. A crawl worker keeps one file per job
and process, and rolls it now and then (:meth:`CrawlLog.roll`): the closed part goes into a WARC
file of the job (harvest.worker), so that the log is kept, replicated and read through storage like
the rest of the job, from any machine.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from .outcomes import FetchError
from .scope import compile_rule

# Negative statuses: why there is no HTTP status.
NO_ANSWER = {
    "dns": -1,  # the host name did not resolve
    "connect": -2,  # the connection could not be made
    "broken": -3,  # the connection broke during the exchange
    "timeout": -4,
    "refused": -7,  # the address guard refused the address
    "robots": -9998,  # robots.txt forbids it
}
# The status of a fetch without a response, by its error code.
ERROR_STATUS = {
    FetchError.REFUSED: NO_ANSWER["refused"],
    FetchError.DNS: NO_ANSWER["dns"],
    FetchError.CONNECTION_REFUSED: NO_ANSWER["connect"],
    FetchError.CONNECT: NO_ANSWER["connect"],
    FetchError.CONNECT_TIMEOUT: NO_ANSWER["timeout"],
    FetchError.TIMEOUT: NO_ANSWER["timeout"],
    FetchError.TLS: NO_ANSWER["broken"],
    FetchError.DISCONNECTED: NO_ANSWER["broken"],
    FetchError.RESET: NO_ANSWER["broken"],
    FetchError.PROTOCOL: NO_ANSWER["broken"],
    FetchError.INVALID_URL: NO_ANSWER["broken"],
    FetchError.INTERRUPTED: NO_ANSWER["broken"],
    FetchError.OTHER: NO_ANSWER["broken"],
}
ERROR_TEXT_CHARACTERS = 120  # of the text of an error annotation


def error_annotation(code: FetchError, text: str) -> str:
    """The annotation of a fetch without a response: ``error:<code>:<text>``.

    The text is one annotation: its spaces become ``_`` and its commas ``;``.
    """
    return f"error:{code.value}:" + text.replace(" ", "_").replace(",", ";")[:ERROR_TEXT_CHARACTERS]


def fetch_error(annotations: str) -> tuple[FetchError | None, str]:
    """The error code and text of a line's annotations field (``_`` read back as spaces).

    ``(None, text)`` for a line written before the codes (``error:<text>``), ``(None, "")`` for a line
    without an error.
    """
    for note in annotations.split(","):
        if not note.startswith("error:"):
            continue
        written = note.removeprefix("error:")
        code, _, text = written.partition(":")
        try:
            return FetchError(code), text.replace("_", " ")
        except ValueError:  # an old line: the text alone
            return None, written.replace("_", " ")
    return None, ""


def log_line(
    *,
    when: datetime,
    status: int,
    size: int,
    url: str,
    hop_path: str,
    via: str,
    mime: str,
    duration: float,
    digest: str,
    site: str,
    annotations: list[str] | tuple[str, ...] = (),
) -> str:
    """One crawl log line (without the newline)."""
    stamp = when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    fields = (
        stamp,
        str(status),
        str(size),
        url,
        hop_path or "-",
        via or "-",
        mime or "-",
        f"{round(duration * 1000)}ms",
        digest or "-",
        site or "-",
        ",".join(annotations) or "-",
    )
    return " ".join(field.replace(" ", "%20") for field in fields)


def _open_locked(path: Path) -> int:
    """The file opened for appending, with a lock that says a writer is alive (released when it closes
    it or dies: :func:`abandoned`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise
    return fd


def abandoned(path: str | Path) -> int | None:
    """A descriptor of a crawl log file holding its lock, when no writer has it open any more (closed, or
    its process died); None while one writes it. Close it once done with the file."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class CrawlLog:
    """Appends lines to one crawl log file, safely from several threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fd = _open_locked(self.path)
        self._lock = threading.Lock()

    def write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8", errors="replace")
        with self._lock:
            if self._fd >= 0:
                os.write(self._fd, data)

    def roll(self, path: str | Path | None) -> Path:
        """Go on writing into ``path`` (None: stop writing) and return the file written so far, closed:
        no line is lost or split between the two."""
        fd = -1
        if path is not None:
            path = Path(path)
            fd = _open_locked(path)
        with self._lock:
            old, old_fd = self.path, self._fd
            self._fd = fd
            if path is not None:
                self.path = path
        if old_fd >= 0:
            os.close(old_fd)
        return old

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> CrawlLog:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def search(
    source: str | Path | Iterable[str], *, site: str = "", pattern="", limit: int = 500
) -> Iterator[str]:
    """The lines of a crawl log for ``site`` (its domain) whose text matches ``pattern``, streamed.

    ``source`` is a crawl log file, or its lines (a job's log read through storage: harvest.selectors).

    ``pattern`` is a regular expression run by RE2, in time proportional to the line whatever the
    pattern (Python's ``re`` takes minutes on ``(\\S+)+!``): a compiled one (the web side's
    ``webarchive.patterns.compile_user_pattern``, which explains refusals), or its text (``re2.error``
    if RE2 cannot run it).
    """
    regex = compile_rule(pattern) if isinstance(pattern, str) and pattern else pattern or None
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.exists():
            return
        with path.open("r", encoding="utf-8", errors="replace") as lines:
            yield from search(lines, site=site, pattern=regex, limit=limit)
        return
    found = 0
    for line in source:
        line = line.rstrip("\n")
        if site:
            fields = line.split(" ")
            if len(fields) < 11 or fields[9] != site:
                continue
        if regex is not None and not regex.search(line):
            continue
        yield line
        found += 1
        if found >= limit:
            return
