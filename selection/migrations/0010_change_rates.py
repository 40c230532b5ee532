"""Suggested frequencies within a collection's bounds, and time-boxed boosts."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("selection", "0009_record_recent_first_index")]

    operations = []
