"""How often sites change: measured estimates, suggestions, boosts."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("harvest", "0022_template_stream_variants")]

    operations = []
