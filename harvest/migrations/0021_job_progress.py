# The engineers' pages at volume: a job counts the progress of its ended sites on its own row
# (filled here for the existing jobs), the monitoring page's failed sites have a partial index, and
# on PostgreSQL the domain search by part of a name (LIKE '%…%') has a trigram index.

from django.db import migrations, models
from django.db.models import Count, Sum

PROGRESS_FIELDS = ("urls_done", "urls_queued", "bytes_done", "error_count", "duplicates", "duplicate_bytes")
COUNTERS = ("sites_ended", *(f"ended_{field}" for field in PROGRESS_FIELDS))


def fill_counters(apps, schema_editor):
    """Each job's counters from its ended sites: one pass over the site crawls, grouped by job."""
    Job = apps.get_model("harvest", "Job")
    JobConfiguration = apps.get_model("harvest", "JobConfiguration")
    rows = (
        JobConfiguration.objects.filter(state="ended")
        .order_by()
        .values("job_id")
        .annotate(sites_ended=Count("pk"), **{f"ended_{field}": Sum(field) for field in PROGRESS_FIELDS})
    )
    jobs = []
    for row in rows.iterator(chunk_size=2000):
        job = Job(pk=row.pop("job_id"))
        for name, value in row.items():
            setattr(job, name, value or 0)
        jobs.append(job)
    Job.objects.bulk_update(jobs, COUNTERS, batch_size=500)


def create_name_trigram_index(apps, schema_editor):
    # pg_trgm is a trusted extension (PostgreSQL 13+): the database's owner may create it. GiST, not
    # GIN: a whole name ("musee-0012345.fr") shares its frequent trigrams ("-00", ".fr") with millions
    # of names, and GIN intersects their posting lists (100 ms at 1,000,000 domains) where GiST's
    # signatures prune the tree (3 ms). On lower(name), which the search by part of a name asks
    # (harvest.filtersets.DomainFilterSet): a prefix search (LIKE 'exam%' on name) keeps its btree.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        schema_editor.execute(
            "CREATE INDEX IF NOT EXISTS harvest_domain_name_trgm ON harvest_domain"
            " USING gist ((lower(name)) gist_trgm_ops)"
        )


def drop_name_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS harvest_domain_name_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0020_period_statistics"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="ended_bytes_done",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="bytes of ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ended_duplicate_bytes",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="bytes saved by ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ended_duplicates",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="revisits of ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ended_error_count",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="errors of ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ended_urls_done",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="URLs done by ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="ended_urls_queued",
            field=models.BigIntegerField(
                db_default=0, default=0, editable=False, verbose_name="URLs left queued by ended sites"
            ),
        ),
        migrations.AddField(
            model_name="job",
            name="sites_ended",
            field=models.PositiveIntegerField(
                db_default=0, default=0, editable=False, verbose_name="sites ended"
            ),
        ),
        migrations.AddIndex(
            model_name="jobconfiguration",
            index=models.Index(
                condition=models.Q(
                    ("state", "ended"),
                    models.Q(
                        ("stop_reason", "failed"), models.Q(("error", ""), _negated=True), _connector="OR"
                    ),
                ),
                fields=["-ended_at"],
                name="harvest_jobconf_failed_ended",
            ),
        ),
        migrations.RunPython(fill_counters, migrations.RunPython.noop, elidable=True),
        migrations.RunPython(create_name_trigram_index, drop_name_trigram_index),
    ]
