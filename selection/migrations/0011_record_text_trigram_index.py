# The records' text search (the URL, the supplementary URLs and the notes, selection.models.record_text)
# has a trigram index on PostgreSQL: at 50,000 records a word was looked for by reading every record,
# twice a page (the count, then the page).

from django.db import migrations

from selection.models import record_text

INDEX = "selection_record_text_trgm"


def create_text_trigram_index(apps, schema_editor):
    # GIN: the texts are long (notes), and a word's trigrams are rare among them. The expression is
    # compiled by the ORM from the very expression the search filters on (UPPER, as icontains does on
    # PostgreSQL), so that the planner recognises it.
    if schema_editor.connection.vendor != "postgresql":
        return
    from django.db.models.functions import Upper

    Record = apps.get_model("selection", "Record")
    query = Record.objects.annotate(record_text=Upper(record_text())).query
    compiler = query.get_compiler(connection=schema_editor.connection)
    sql, params = compiler.compile(query.annotations["record_text"])
    expression = sql % tuple(schema_editor.quote_value(param) for param in params)
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    schema_editor.execute(
        f"CREATE INDEX IF NOT EXISTS {INDEX} ON selection_record USING gin (({expression}) gin_trgm_ops)"
    )


def drop_text_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX}")


class Migration(migrations.Migration):
    dependencies = [("selection", "0010_change_rates")]

    operations = [migrations.RunPython(create_text_trigram_index, drop_text_trigram_index)]
