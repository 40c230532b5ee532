"""Steering a running job: pause, resume, rules and budgets changed while it runs."""

import django.db.models
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("harvest", "0025_next_run_additions")]

    operations = [
        migrations.AddField(
            model_name="historicaljob",
            name="paused_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="paused at"),
        ),
        migrations.AddField(
            model_name="job",
            name="paused_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="paused at"),
        ),
        migrations.AddField(
            model_name="job",
            name="rules_serial",
            field=models.PositiveIntegerField(
                db_default=0, default=0, editable=False, verbose_name="rules added while running"
            ),
        ),
        migrations.AddField(
            model_name="jobconfiguration",
            name="biggest_queues",
            field=models.JSONField(
                blank=True,
                db_default=django.db.models.Value({}, models.JSONField()),
                default=dict,
                verbose_name="biggest queues",
            ),
        ),
        migrations.AddField(
            model_name="jobconfiguration",
            name="paused_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="paused at"),
        ),
    ]
