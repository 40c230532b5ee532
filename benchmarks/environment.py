"""What the benchmarks share: the machine they ran on, and the PostgreSQL server they make databases on.

Imported by the scripts once the repository root is on ``sys.path`` (``from benchmarks.environment
import …`` inside their functions), and by the tests that load them.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), empty if unknown."""
    with contextlib.suppress(OSError):
        models = re.findall(r"^model name\s*: (.*)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
        return models[0] if models else ""
    return ""


def cpus() -> str:
    """``2 (AMD EPYC …)``: how many CPUs and which."""
    return f"{os.cpu_count()} ({cpu_model()})"


def memory() -> str:
    """The machine's memory (``/proc/meminfo``), ``?`` if unknown."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        kib = re.search(r"^MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text(), re.MULTILINE).group(1)
        return f"{int(kib) / 2**20:.1f} GiB"
    return "?"


def maintenance_connection(url: str, *, allow_sqlite: bool = False) -> tuple[dict | None, str]:
    """psycopg arguments for the ``postgres`` database of the server ``url`` names, and ``url``'s database
    name (arguments None for an SQLite URL when ``allow_sqlite``)."""
    import environ

    config = environ.Env.db_url_config(url)
    if allow_sqlite and config["ENGINE"] == "django.db.backends.sqlite3":
        return None, config["NAME"]
    if config["ENGINE"] != "django.db.backends.postgresql":
        raise SystemExit(f"This benchmark runs on PostgreSQL; {url} is not a postgres:// URL.")
    arguments = {"dbname": "postgres", "user": config.get("USER") or None}
    for key, name in (("HOST", "host"), ("PORT", "port"), ("PASSWORD", "password")):
        if config.get(key):
            arguments[name] = str(config[key])
    return arguments, config["NAME"]
