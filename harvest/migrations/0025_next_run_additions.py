"""URLs missed in replay added to a definition's next run."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("harvest", "0024_discovered_sites")]

    operations = []
