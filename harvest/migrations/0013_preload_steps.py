"""Preload runs keep an audit trail: a step per action, stage done and range of domains loaded."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0012_versions"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="PreloadStep",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("at", models.DateTimeField(auto_now_add=True, verbose_name="at")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("created", "created"),
                            ("stop_asked", "stop asked"),
                            ("resumed", "resumed"),
                            ("stage_done", "stage done"),
                            ("loaded", "domains loaded"),
                        ],
                        max_length=12,
                        verbose_name="step",
                    ),
                ),
                (
                    "stage",
                    models.CharField(
                        blank=True,
                        choices=[
                            ("ingest", "reading the lists"),
                            ("merge", "merging the sources"),
                            ("dns", "checking DNS"),
                            ("redirects", "discovering redirects"),
                            ("load", "loading the domains"),
                            ("done", "done"),
                        ],
                        max_length=10,
                        verbose_name="stage",
                    ),
                ),
                ("counts", models.JSONField(blank=True, default=dict, verbose_name="what it wrote")),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="steps",
                        to="harvest.preloadrun",
                        verbose_name="run",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        help_text="Who asked for it: for the run's own steps, who started the run or resumed it last.",
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="by",
                    ),
                ),
            ],
            options={
                "verbose_name": "preload step",
                "verbose_name_plural": "preload steps",
                "ordering": ["run", "pk"],
            },
        ),
    ]
