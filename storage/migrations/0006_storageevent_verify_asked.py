"""Storage events: an engineer asking for replicas to be verified now (node or file) is recorded."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0005_harvest_note_moves"),
    ]

    operations = [
        migrations.AlterField(
            model_name="storageevent",
            name="kind",
            field=models.CharField(
                choices=[
                    ("copied", "replica copied"),
                    ("verified", "replica verified"),
                    ("corrupt", "replica corrupt"),
                    ("missing", "replica missing"),
                    ("repaired", "replica repaired"),
                    ("removed", "replica removed"),
                    ("copy_failed", "copy failed"),
                    ("lost", "no good replica left"),
                    ("node_added", "node added"),
                    ("node_offline", "node offline"),
                    ("unreachable", "node unreachable"),
                    ("node_online", "node back online"),
                    ("draining", "node draining"),
                    ("node_retired", "node retired"),
                    ("verify_asked", "verification asked"),
                    ("cleaned", "spool copy deleted"),
                ],
                max_length=12,
                verbose_name="event",
            ),
        ),
    ]
