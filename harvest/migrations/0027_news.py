"""Frequent shallow crawls of news front pages feeding a daily deeper crawl."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("harvest", "0026_steering")]

    operations = []
