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
# Link anchors: short texts of any language, accents folded, not stemmed; the vector follows the text.
POSTGRESQL_ANCHORS = [
    "ALTER TABLE storage_searchanchor ADD COLUMN vector tsvector"
    " GENERATED ALWAYS AS (to_tsvector('archive_simple'::regconfig, text)) STORED",
    "CREATE INDEX storage_searchanchor_vector ON storage_searchanchor USING gin (vector)",
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
SQLITE_ANCHORS = [
    "CREATE VIRTUAL TABLE storage_searchanchor_fts USING fts5("
    "content = 'storage_searchanchor', content_rowid = 'id', text,"
    " tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TRIGGER storage_searchanchor_fts_insert AFTER INSERT ON storage_searchanchor "
    "BEGIN INSERT INTO storage_searchanchor_fts (rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER storage_searchanchor_fts_delete AFTER DELETE ON storage_searchanchor "
    "BEGIN INSERT INTO storage_searchanchor_fts (storage_searchanchor_fts, rowid, text)"
    " VALUES ('delete', old.id, old.text); END",
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


def index_anchors(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for statement in {"postgresql": POSTGRESQL_ANCHORS, "sqlite": SQLITE_ANCHORS}.get(vendor, []):
        schema_editor.execute(statement)


def unindex_anchors(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TABLE storage_searchanchor_fts")


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
        migrations.CreateModel(
            name="SearchAnchor",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("target_urlkey", storage.models.SurtKeyField(verbose_name="SURT key of the target")),
                ("text", models.CharField(max_length=200, verbose_name="anchor text")),
                (
                    "source_digest",
                    models.CharField(max_length=140, verbose_name="payload digest of the linking page"),
                ),
            ],
            options={
                "verbose_name": "link anchor",
                "verbose_name_plural": "link anchors",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("target_urlkey", "text", "source_digest"), name="search_anchor_unique"
                    )
                ],
            },
        ),
        migrations.RunPython(index_anchors, unindex_anchors),
    ]
