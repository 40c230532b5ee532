"""Discovered sites: candidates aggregated from external links, and curators' decisions."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("harvest", "0023_change_rates")]

    operations = []
