"""The channels, templates and budget mappings a fresh installation starts with (harvest/defaults.py)."""

from django.db import migrations


def create_defaults(apps, schema_editor):
    from harvest.defaults import planning_defaults_ensure

    planning_defaults_ensure(apps)


class Migration(migrations.Migration):
    dependencies = [("harvest", "0001_initial")]

    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
