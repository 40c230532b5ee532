"""Steering a running job: pause, resume, rules and budgets changed while it runs."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("harvest", "0025_next_run_additions")]

    operations = []
