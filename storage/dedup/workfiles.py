"""The files a run keeps in its work directory: written under a temporary name, then renamed.

A unit's output appears under its final name only once complete, so that a
unit killed halfway leaves temporary files alone; those are named after the
host and process that wrote them, and the next attempt on the same host
discards the ones whose process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

TEMP_MARK = ".tmp-"


class PipelineError(Exception):
    """What stops a run: a bad input, a torn file, an out_dir holding another run… (str() says which)."""


def temp_name(final: Path) -> Path:
    """A temporary name next to ``final``, unique to this host and process."""
    return final.with_name(f"{final.name}{TEMP_MARK}{socket.gethostname()}-{os.getpid()}")


def discard_stale(final: Path) -> None:
    """Remove temporary files of ``final`` left by dead processes of this host (or by this process)."""
    host = socket.gethostname()
    for temp in final.parent.glob(f"{final.name}{TEMP_MARK}*"):
        owner = temp.name.rpartition(TEMP_MARK)[2]
        owner_host, _, pid = owner.rpartition("-")
        if owner_host != host or not pid.isdigit():
            continue
        if int(pid) == os.getpid() or not _alive(int(pid)):
            temp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def atomic(final: Path, mode: str = "w") -> Iterator:
    """An open file under a temporary name, renamed to ``final`` once the block ends without error."""
    final.parent.mkdir(parents=True, exist_ok=True)
    discard_stale(final)
    temp = temp_name(final)
    try:
        with temp.open(mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": "\n"})) as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, final)
    finally:
        temp.unlink(missing_ok=True)


def write_json(final: Path, value) -> None:
    with atomic(final) as stream:
        json.dump(value, stream, indent=1, sort_keys=True)


def read_json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def escape(text: str) -> str:
    """A field of a tab-separated line: no tab nor line break in it."""
    return text.replace("%", "%25").replace("\t", "%09").replace("\n", "%0A").replace("\r", "%0D")


def unescape(text: str) -> str:
    if "%" not in text:
        return text
    return text.replace("%09", "\t").replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")
