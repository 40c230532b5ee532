"""How often captured pages change, measured from successive captures."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0014_replay_misses"),
        ("harvest", "0001_initial"),
        ("selection", "0010_change_rates"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChangeEstimate",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("visits", models.PositiveIntegerField(verbose_name="visits compared")),
                ("changes", models.PositiveIntegerField(verbose_name="visits that saw a change")),
                ("mean_interval_days", models.FloatField(verbose_name="mean interval (days)")),
                ("rate_per_day", models.FloatField(verbose_name="changes per day")),
                (
                    "confidence",
                    models.CharField(
                        choices=[("low", "low"), ("medium", "medium"), ("high", "high")],
                        max_length=10,
                        verbose_name="confidence",
                    ),
                ),
                (
                    "suggested_frequency",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("daily", "Daily"),
                            ("weekly", "Weekly"),
                            ("monthly", "Monthly"),
                            ("twice-yearly", "Twice a year"),
                            ("annual", "Annual"),
                            ("once", "Once"),
                        ],
                        max_length=15,
                        verbose_name="suggested frequency",
                    ),
                ),
                ("evidence", models.JSONField(default=list, verbose_name="evidence")),
                ("computed_at", models.DateTimeField(verbose_name="computed at")),
                (
                    "domain",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="change_estimate",
                        to="harvest.domain",
                        verbose_name="domain",
                    ),
                ),
                (
                    "record",
                    models.OneToOneField(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="change_estimate",
                        to="selection.record",
                        verbose_name="record",
                    ),
                ),
            ],
            options={
                "verbose_name": "change estimate",
                "verbose_name_plural": "change estimates",
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("record__isnull", True), ("domain__isnull", True), _connector="XOR"
                        ),
                        name="storage_changeestimate_record_xor_domain",
                    )
                ],
            },
        ),
    ]
