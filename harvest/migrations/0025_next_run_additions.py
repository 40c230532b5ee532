"""URLs missed in replay added to a definition's next run."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0024_discovered_sites"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="NextRunAddition",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[("seed", "extra seed"), ("rule", "accept rule")],
                        default="seed",
                        max_length=4,
                        verbose_name="kind",
                    ),
                ),
                ("url", models.TextField(verbose_name="URL")),
                ("reason", models.CharField(blank=True, default="", max_length=200, verbose_name="reason")),
                ("added_at", models.DateTimeField(db_index=True, verbose_name="added at")),
                (
                    "added_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="added by",
                    ),
                ),
                (
                    "consumed_by",
                    models.ForeignKey(
                        blank=True,
                        help_text="The run it was given to as a seed; empty: waiting for the next run.",
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="additions_consumed",
                        to="harvest.harvestrun",
                        verbose_name="seed of run",
                    ),
                ),
                (
                    "definition",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="next_run_additions",
                        to="harvest.harvestdefinition",
                        verbose_name="harvest definition",
                    ),
                ),
                (
                    "domain",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="harvest.domain",
                        verbose_name="domain",
                    ),
                ),
            ],
            options={
                "verbose_name": "addition to the next run",
                "verbose_name_plural": "additions to the next run",
                "ordering": ["-added_at", "-pk"],
                "indexes": [
                    models.Index(fields=["definition", "consumed_by"], name="harvest_addition_waiting")
                ],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("consumed_by__isnull", True)),
                        fields=("definition", "url"),
                        name="harvest_nextrunaddition_unique_waiting",
                        violation_error_message="This URL is already waiting for the definition's next run.",
                    )
                ],
            },
        ),
    ]
