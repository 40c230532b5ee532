# Each text's summary vector (PostgreSQL), computed with its vector when the text is stored, so that its
# search entries copy it instead of parsing the text's start again (storage.search.PostgresBackend).
# Texts stored before keep NULL: their entries' summaries are computed from the text as before.
# The texts and their vectors are compressed with lz4 where the server has it (faster to write and to
# read than the default pglz, and smaller; rows already stored keep theirs). The SQL is written from
# constants only.
# ruff: noqa: S608

from django.db import migrations


def _compression(method: str) -> str:
    """Set the compression of the texts and their vectors on the table and each of its partitions (an
    ALTER TABLE of the partitioned table does not reach them)."""
    return f"""DO $$ DECLARE part regclass; BEGIN
        FOR part IN SELECT 'storage_searchtext'::regclass UNION ALL
            SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'storage_searchtext'::regclass
        LOOP
            EXECUTE 'ALTER TABLE ' || part::text || ' ALTER COLUMN body SET COMPRESSION {method},'
                || ' ALTER COLUMN vector SET COMPRESSION {method}';
        END LOOP;
    EXCEPTION WHEN feature_not_supported THEN NULL;
    END $$"""


POSTGRESQL = ["ALTER TABLE storage_searchtext ADD COLUMN summary tsvector", _compression("lz4")]
POSTGRESQL_DROP = ["ALTER TABLE storage_searchtext DROP COLUMN summary", _compression("default")]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("storage", "0010_search_summary")]

    operations = [migrations.RunPython(_run(POSTGRESQL), _run(POSTGRESQL_DROP))]
