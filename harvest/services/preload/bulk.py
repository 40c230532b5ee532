"""The database side of the bulk stages (merge, load): how many connections may work side by side,
and PostgreSQL's settings for one bulk transaction."""

from __future__ import annotations

from django.conf import settings
from django.db import connection


def side_by_side(connections: int) -> int:
    """How many connections may work at once: one on SQLite (one writer), and one inside a
    transaction (other connections would not see its rows)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return 1
    return max(1, connections)


def in_thread(function, *args) -> None:
    """Run ``function`` in a worker thread, then close the connection Django opened for it."""
    try:
        function(*args)
    finally:
        connection.close()  # this thread's own connection


def tune_for_bulk(cursor) -> None:
    """For this transaction on PostgreSQL: sort in memory rather than on disk (the default 4 MB
    spills millions of rows), and do not wait for the disk at each commit (a batch lost in a
    crash is done again: the stage resumes from what is committed)."""
    if connection.vendor == "postgresql":
        cursor.execute("SET LOCAL work_mem = %s", [settings.PRELOAD_WORK_MEM])
        cursor.execute("SET LOCAL synchronous_commit = off")
