"""URLs a replayed page asked for that the archive does not hold."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("storage", "0013_storagenode_s3")]

    operations = []
