"""Bulk loads tell the database's planner what they loaded.

Right after a bulk load the planner still knows the tables as they were (empty, or a fraction of
their size): autovacuum analyses them later, or never where it is turned off, and meanwhile a query
over millions of fresh rows is planned as a scan per row. The preload, the transfer and
``index_warcs`` analyse the tables they filled as their last step.
"""

from __future__ import annotations

from django.db import connection

ANALYZE_AFTER_ROWS = 1_000  # rows written by one load, below which autovacuum is left to it


def analyze(*models) -> None:
    """``ANALYZE`` the tables of these models (or many-to-many ``through`` models), each once, on
    PostgreSQL and SQLite alike: a sample of each table, a fraction of a second for millions of rows."""
    tables = dict.fromkeys(model._meta.db_table for model in models)
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(table)}")


def analyze_after(rows: int, *models) -> bool:
    """Analyse these tables if a load wrote at least ``ANALYZE_AFTER_ROWS`` rows; whether it did."""
    if rows < ANALYZE_AFTER_ROWS:
        return False
    analyze(*models)
    return True
