"""HarvestNote moves to storage with the quality review (its table keeps its name): state only."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("selection", "0006_record_needs_browser"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="HarvestNote",
                ),
            ],
            database_operations=[],
        ),
    ]
