"""A membership test whose values travel as one parameter on PostgreSQL.

``field IN (%s, %s, …)`` with thousands of values costs more in Django and psycopg than in the
database: each value is prepared, and the statement is parsed and rewritten with a placeholder for
each. ``AnyOf`` sends them as one array (``field = ANY(%s)``, which PostgreSQL plans as ``IN``) and
falls back to ``IN`` on the other databases::

    SeedList.objects.filter(AnyOf(F("domain_id"), ids), AnyOf(F("name"), names))

The values are given as the column stores them (ints for keys, strings for names): they are not
converted one by one.
"""

from __future__ import annotations

from django.db.models import Lookup
from django.db.models.lookups import In


class AnyOf(Lookup):
    lookup_name = "any_of"
    prepare_rhs = False

    def get_prep_lookup(self):
        return list(self.rhs)

    def as_sql(self, compiler, connection):
        if connection.vendor != "postgresql":
            return In(self.lhs, self.rhs).as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*lhs_params, self.rhs]
