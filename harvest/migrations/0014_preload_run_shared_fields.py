"""Preload runs share the fields of every run (webarchive.runs.Run): the stage's ``done`` and ``total``."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0013_preload_steps"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameField(model_name="preloadrun", old_name="stage_done", new_name="done"),
        migrations.RenameField(model_name="preloadrun", old_name="stage_total", new_name="total"),
        migrations.AlterField(
            model_name="preloadrun",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="started by",
            ),
        ),
    ]
