"""How often captured pages change, measured from successive captures."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("storage", "0014_replay_misses")]

    operations = []
