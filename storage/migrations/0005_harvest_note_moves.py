"""HarvestNote moves to storage with the quality review (its table keeps its name): state only."""

import django.core.validators
import django.db.models.deletion
import django.db.models.functions.text
import django.db.models.lookups
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0011_browser_rendering"),
        ("selection", "0007_harvest_note_moves"),
        ("storage", "0004_storage_nodes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="HarvestNote",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "text",
                            models.TextField(
                                error_messages={"blank": "Write the note: an empty note is not saved."},
                                max_length=2000,
                                validators=[django.core.validators.MaxLengthValidator(2000)],
                                verbose_name="note",
                            ),
                        ),
                        (
                            "created_at",
                            models.DateTimeField(
                                default=django.utils.timezone.now, editable=False, verbose_name="written at"
                            ),
                        ),
                        (
                            "author",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="harvest_notes",
                                to=settings.AUTH_USER_MODEL,
                                verbose_name="author",
                            ),
                        ),
                        (
                            "domain",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="harvest_notes",
                                to="harvest.domain",
                                verbose_name="domain",
                            ),
                        ),
                        (
                            "job",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="harvest_notes",
                                to="harvest.job",
                                verbose_name="job",
                            ),
                        ),
                        (
                            "record",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="harvest_notes",
                                to="selection.record",
                                verbose_name="record",
                            ),
                        ),
                    ],
                    options={
                        "verbose_name": "harvest note",
                        "verbose_name_plural": "harvest notes",
                        "db_table": "selection_harvestnote",
                        "ordering": ["-created_at", "-pk"],
                        "indexes": [
                            models.Index(fields=["job", "domain"], name="selection_h_job_id_5a723f_idx")
                        ],
                        "constraints": [
                            models.CheckConstraint(
                                condition=models.Q(
                                    models.Q(("text", ""), _negated=True),
                                    django.db.models.lookups.LessThanOrEqual(
                                        django.db.models.functions.text.Length("text"), 2000
                                    ),
                                ),
                                name="selection_harvestnote_text_length",
                                violation_error_message="A note has between 1 and 2000 characters.",
                            )
                        ],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
