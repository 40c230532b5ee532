"""URLs a replayed page asked for that the archive does not hold."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("storage", "0013_storagenode_s3")]

    operations = [
        migrations.CreateModel(
            name="ReplayMiss",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("key", models.CharField(editable=False, max_length=64, unique=True, verbose_name="key")),
                ("page_url", models.CharField(max_length=2000, verbose_name="page")),
                ("page_stamp", models.CharField(max_length=14, verbose_name="page timestamp")),
                ("url", models.CharField(max_length=2000, verbose_name="missing URL")),
                ("host", models.CharField(db_index=True, max_length=255, verbose_name="host")),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("page", "page"),
                            ("image", "image"),
                            ("script", "script"),
                            ("stylesheet", "stylesheet"),
                            ("font", "font"),
                            ("media", "media"),
                            ("other", "other"),
                        ],
                        default="other",
                        max_length=10,
                        verbose_name="kind",
                    ),
                ),
                ("count", models.PositiveIntegerField(default=1, verbose_name="count")),
                ("first_seen", models.DateTimeField(verbose_name="first seen")),
                ("last_seen", models.DateTimeField(verbose_name="last seen")),
                (
                    "job",
                    models.ForeignKey(
                        blank=True,
                        help_text="The job whose capture of the page was browsed.",
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="replay_misses",
                        to="harvest.job",
                        verbose_name="job",
                    ),
                ),
            ],
            options={
                "verbose_name": "URL missed in replay",
                "verbose_name_plural": "URLs missed in replay",
                "ordering": ["host", "kind", "url"],
                "indexes": [models.Index(fields=["job", "host"], name="storage_miss_job_host")],
            },
        ),
    ]
