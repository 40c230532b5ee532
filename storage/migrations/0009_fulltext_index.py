# The full-text index (storage.search). SearchText's table is made here by hand: on PostgreSQL it is
# partitioned by digest and has a tsvector column with a GIN index, searched with three text search
# configurations that fold accents (unaccent, a trusted extension); on SQLite an FTS5 table beside it.

from django.db import migrations, models

import storage.models

PARTITIONS = 16
POSTGRESQL = [
    "CREATE EXTENSION IF NOT EXISTS unaccent",
    *(
        statement
        for name, stemmer in (
            ("archive_fr", "french"),
            ("archive_en", "english"),
            ("archive_simple", "simple"),
        )
        for statement in (
            f"CREATE TEXT SEARCH CONFIGURATION {name} (COPY = pg_catalog.{stemmer})",
            f"ALTER TEXT SEARCH CONFIGURATION {name} ALTER MAPPING FOR hword, hword_part, word, asciiword,"
            f" asciihword, hword_asciipart WITH unaccent, {stemmer + '_stem' if stemmer != 'simple' else 'simple'}",
        )
    ),
    """CREATE TABLE storage_searchtext (
        digest varchar(140) NOT NULL PRIMARY KEY,
        mime varchar(255) NOT NULL,
        language varchar(8) NOT NULL,
        title text NOT NULL,
        headings text NOT NULL,
        body text NOT NULL,
        truncated boolean NOT NULL,
        error varchar(300) NOT NULL,
        extracted_at timestamp with time zone NOT NULL,
        vector tsvector
    ) PARTITION BY HASH (digest)""",
    *(
        f"CREATE TABLE storage_searchtext_{index:02} PARTITION OF storage_searchtext"
        f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {index})"
        for index in range(PARTITIONS)
    ),
    "CREATE INDEX storage_searchtext_vector ON storage_searchtext USING gin (vector)",
]
POSTGRESQL_DROP = [
    "DROP TABLE storage_searchtext",
    *(f"DROP TEXT SEARCH CONFIGURATION {name}" for name in ("archive_fr", "archive_en", "archive_simple")),
]
# SQLite: the text's words in an FTS5 table beside it, kept in step by triggers (also when Django's
# test flush empties the table).
SQLITE = [
    "CREATE VIRTUAL TABLE storage_searchtext_fts USING fts5("
    "digest UNINDEXED, title, headings, body, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER storage_searchtext_fts_insert AFTER INSERT ON storage_searchtext WHEN new.error = '' "
    "BEGIN INSERT INTO storage_searchtext_fts (digest, title, headings, body) "
    "VALUES (new.digest, new.title, new.headings, new.body); END",
    "CREATE TRIGGER storage_searchtext_fts_delete AFTER DELETE ON storage_searchtext "
    "BEGIN DELETE FROM storage_searchtext_fts WHERE digest = old.digest; END",
]


def create_text_table(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRESQL:
            schema_editor.execute(statement)
        return
    schema_editor.create_model(apps.get_model("storage", "SearchText"))
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)


def drop_text_table(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRESQL_DROP:
            schema_editor.execute(statement)
        return
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TABLE storage_searchtext_fts")
    schema_editor.delete_model(apps.get_model("storage", "SearchText"))


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0008_access_rules"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="SearchText",
                    fields=[
                        (
                            "digest",
                            models.CharField(
                                max_length=140,
                                primary_key=True,
                                serialize=False,
                                verbose_name="payload digest",
                            ),
                        ),
                        ("mime", models.CharField(blank=True, max_length=255, verbose_name="MIME type")),
                        ("language", models.CharField(blank=True, max_length=8, verbose_name="language")),
                        ("title", models.TextField(blank=True, verbose_name="title")),
                        ("headings", models.TextField(blank=True, verbose_name="headings")),
                        ("body", models.TextField(blank=True, verbose_name="text")),
                        ("truncated", models.BooleanField(default=False, verbose_name="truncated")),
                        (
                            "error",
                            models.CharField(blank=True, max_length=300, verbose_name="why it was skipped"),
                        ),
                        ("extracted_at", models.DateTimeField(verbose_name="extracted at")),
                    ],
                    options={
                        "verbose_name": "indexed text",
                        "verbose_name_plural": "indexed texts",
                    },
                ),
            ],
        ),
        migrations.RunPython(create_text_table, drop_text_table),
        migrations.CreateModel(
            name="SearchEntry",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("urlkey", storage.models.SurtKeyField(verbose_name="SURT key")),
                ("url", models.TextField(verbose_name="URL")),
                ("domain", models.CharField(blank=True, max_length=255, verbose_name="domain")),
                ("digest", models.CharField(max_length=140, verbose_name="payload digest")),
                ("harvest_definition_id", models.IntegerField(default=0, verbose_name="harvest definition")),
                ("year", models.PositiveSmallIntegerField(verbose_name="year")),
                ("mime", models.CharField(blank=True, max_length=255, verbose_name="MIME type")),
                ("language", models.CharField(blank=True, max_length=8, verbose_name="language")),
                ("captures", models.PositiveIntegerField(verbose_name="captures")),
                ("first_capture", models.DateTimeField(verbose_name="first captured")),
                ("last_capture", models.DateTimeField(verbose_name="last captured")),
            ],
            options={
                "verbose_name": "search entry",
                "verbose_name_plural": "search entries",
                "indexes": [
                    models.Index(fields=["digest"], name="search_entry_digest"),
                    models.Index(fields=["domain"], name="search_entry_domain"),
                    models.Index(fields=["harvest_definition_id", "year"], name="search_entry_definition"),
                ],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("urlkey", "digest", "harvest_definition_id", "year"),
                        name="search_entry_unique",
                    )
                ],
            },
        ),
    ]
