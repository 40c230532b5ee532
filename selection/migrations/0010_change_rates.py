"""Suggested frequencies within a collection's bounds, and time-boxed boosts."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("selection", "0009_record_recent_first_index")]

    operations = [
        migrations.AddField(
            model_name="collection",
            name="follow_suggestions",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="Each record's frequency is changed to its suggested frequency when it is measured.",
                verbose_name="follow suggested frequencies automatically",
            ),
        ),
        migrations.AddField(
            model_name="collection",
            name="frequency_least_often",
            field=models.CharField(
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                ],
                db_default="annual",
                default="annual",
                help_text="Never suggest harvesting this collection's sites less often than this.",
                max_length=15,
                verbose_name="suggest at least",
            ),
        ),
        migrations.AddField(
            model_name="collection",
            name="frequency_most_often",
            field=models.CharField(
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                ],
                db_default="daily",
                default="daily",
                help_text="Never suggest harvesting this collection's sites more often than this.",
                max_length=15,
                verbose_name="suggest at most",
            ),
        ),
        migrations.AddField(
            model_name="historicalcollection",
            name="follow_suggestions",
            field=models.BooleanField(
                db_default=False,
                default=False,
                help_text="Each record's frequency is changed to its suggested frequency when it is measured.",
                verbose_name="follow suggested frequencies automatically",
            ),
        ),
        migrations.AddField(
            model_name="historicalcollection",
            name="frequency_least_often",
            field=models.CharField(
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                ],
                db_default="annual",
                default="annual",
                help_text="Never suggest harvesting this collection's sites less often than this.",
                max_length=15,
                verbose_name="suggest at least",
            ),
        ),
        migrations.AddField(
            model_name="historicalcollection",
            name="frequency_most_often",
            field=models.CharField(
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                ],
                db_default="daily",
                default="daily",
                help_text="Never suggest harvesting this collection's sites more often than this.",
                max_length=15,
                verbose_name="suggest at most",
            ),
        ),
        migrations.AddField(
            model_name="historicalrecord",
            name="boost_return_frequency",
            field=models.CharField(
                blank=True,
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                    ("once", "Once"),
                ],
                db_default="",
                default="",
                editable=False,
                max_length=15,
                verbose_name="frequency after the boost",
            ),
        ),
        migrations.AddField(
            model_name="historicalrecord",
            name="boost_until",
            field=models.DateField(blank=True, editable=False, null=True, verbose_name="boosted until"),
        ),
        migrations.AddField(
            model_name="record",
            name="boost_return_frequency",
            field=models.CharField(
                blank=True,
                choices=[
                    ("daily", "Daily"),
                    ("weekly", "Weekly"),
                    ("monthly", "Monthly"),
                    ("twice-yearly", "Twice a year"),
                    ("annual", "Annual"),
                    ("once", "Once"),
                ],
                db_default="",
                default="",
                editable=False,
                max_length=15,
                verbose_name="frequency after the boost",
            ),
        ),
        migrations.AddField(
            model_name="record",
            name="boost_until",
            field=models.DateField(blank=True, editable=False, null=True, verbose_name="boosted until"),
        ),
    ]
