"""Collections are changed over the version their writer read (webarchive.versioning)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("selection", "0007_harvest_note_moves"),
    ]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="version",
            field=models.PositiveIntegerField(
                db_default=1, default=1, editable=False, verbose_name="version"
            ),
        ),
        migrations.AddField(
            model_name="historicalcollection",
            name="version",
            field=models.PositiveIntegerField(
                db_default=1, default=1, editable=False, verbose_name="version"
            ),
        ),
    ]
