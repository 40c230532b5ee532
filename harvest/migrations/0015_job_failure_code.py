"""A failed job says why as a code (JobFailure), read by the monitoring page whatever the workers' language."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0014_preload_run_shared_fields"),
    ]

    operations = [
        migrations.AddField(
            model_name="historicaljob",
            name="failure",
            field=models.CharField(
                blank=True,
                choices=[
                    ("metadata-no-space", "metadata not written: disk full"),
                    ("metadata-permission", "metadata not written: no write access"),
                    ("metadata", "metadata not written"),
                    ("crawler-broken", "the crawler broke"),
                    ("stalled", "stalled: no progress, no worker"),
                ],
                help_text="Why it failed, as a code.",
                max_length=30,
                verbose_name="failure",
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="failure",
            field=models.CharField(
                blank=True,
                choices=[
                    ("metadata-no-space", "metadata not written: disk full"),
                    ("metadata-permission", "metadata not written: no write access"),
                    ("metadata", "metadata not written"),
                    ("crawler-broken", "the crawler broke"),
                    ("stalled", "stalled: no progress, no worker"),
                ],
                help_text="Why it failed, as a code.",
                max_length=30,
                verbose_name="failure",
            ),
        ),
    ]
