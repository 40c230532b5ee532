"""Deduplication runs share the fields of every run (webarchive.runs.Run): the units of a stage are
its ``done`` and ``total``, and the stage's start time gives its rate."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("storage", "0006_storageevent_verify_asked"),
    ]

    operations = [
        migrations.RenameField(model_name="deduprun", old_name="units_done", new_name="done"),
        migrations.RenameField(model_name="deduprun", old_name="units_total", new_name="total"),
        migrations.AlterField(
            model_name="deduprun",
            name="done",
            field=models.BigIntegerField(default=0, verbose_name="done in this stage"),
        ),
        migrations.AlterField(
            model_name="deduprun",
            name="total",
            field=models.BigIntegerField(default=0, verbose_name="to do in this stage"),
        ),
        migrations.AddField(
            model_name="deduprun",
            name="stage_started_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="stage started at"),
        ),
    ]
