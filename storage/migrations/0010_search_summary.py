# The summary vector of each search entry (PostgreSQL): the words of its text's title, headings and
# first characters, what a search reads first (storage.search: small enough to stay in the row, so
# that a word found in many documents is matched and ranked without reading each whole text).
# The SQL is written from constants only.
# ruff: noqa: S608

from django.db import migrations, models

LEAD_CHARS = 300
CONFIG = (
    "(CASE text.language WHEN 'fr' THEN 'archive_fr' WHEN 'en' THEN 'archive_en' "
    "ELSE 'archive_simple' END)::regconfig"
)
POSTGRESQL = [
    "ALTER TABLE storage_searchentry ADD COLUMN summary tsvector",
    "UPDATE storage_searchentry SET summary ="
    f" setweight(to_tsvector({CONFIG}, text.title), 'A')"
    f" || setweight(to_tsvector({CONFIG}, text.headings), 'B')"
    f" || to_tsvector({CONFIG}, left(text.body, {LEAD_CHARS}))"
    " FROM storage_searchtext AS text WHERE text.digest = storage_searchentry.digest",
    "CREATE INDEX storage_searchentry_summary ON storage_searchentry USING gin (summary)",
]
POSTGRESQL_DROP = [
    "DROP INDEX storage_searchentry_summary",
    "ALTER TABLE storage_searchentry DROP COLUMN summary",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("storage", "0009_fulltext_index")]

    operations = [
        migrations.RemoveIndex(model_name="searchentry", name="search_entry_definition"),
        migrations.AddIndex(
            model_name="searchentry",
            index=models.Index(fields=["year"], name="search_entry_year"),
        ),
        migrations.RunPython(_run(POSTGRESQL), _run(POSTGRESQL_DROP)),
    ]
