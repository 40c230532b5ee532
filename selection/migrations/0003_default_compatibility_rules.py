"""The combinations BCWeb forbids out of the box; curators edit them afterwards."""

from django.db import migrations

DEFAULT_RULES = [
    ("large", "daily", "", "A large site cannot be harvested every day."),
    ("large", "weekly", "domain", "A whole large domain cannot be harvested every week."),
    ("medium", "daily", "domain", "A whole medium domain cannot be harvested every day."),
]


def add_rules(apps, schema_editor):
    CompatibilityRule = apps.get_model("selection", "CompatibilityRule")
    for budget, frequency, depth, reason in DEFAULT_RULES:
        CompatibilityRule.objects.get_or_create(
            budget=budget, frequency=frequency, depth=depth, defaults={"reason": reason}
        )


class Migration(migrations.Migration):
    dependencies = [("selection", "0002_records_themes_rules")]

    operations = [migrations.RunPython(add_rules, migrations.RunPython.noop)]
