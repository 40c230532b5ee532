"""Frequent shallow crawls of news front pages feeding a daily deeper crawl."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("harvest", "0026_steering")]

    operations = [
        migrations.CreateModel(
            name="NewsArticle",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("url", models.TextField(verbose_name="URL")),
                ("found_at", models.DateTimeField(db_index=True, verbose_name="found at")),
            ],
            options={
                "verbose_name": "news article",
                "verbose_name_plural": "news articles",
                "ordering": ["-found_at", "-pk"],
            },
        ),
        migrations.AddField(
            model_name="harvestdefinition",
            name="news",
            field=models.BooleanField(
                default=False,
                help_text="Crawl its seeds (front pages) and the pages they link to, one click deep, fetching only the pages no earlier run of it captured; run it every few minutes.",
                verbose_name="news front pages",
            ),
        ),
        migrations.AddField(
            model_name="harvestdefinition",
            name="news_feeds",
            field=models.ForeignKey(
                blank=True,
                help_text="A scheduled selective definition whose next run gets the new article URLs as seeds.",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="news_sources",
                to="harvest.harvestdefinition",
                verbose_name="feeds new articles to",
            ),
        ),
        migrations.AddField(
            model_name="historicalharvestdefinition",
            name="news",
            field=models.BooleanField(
                default=False,
                help_text="Crawl its seeds (front pages) and the pages they link to, one click deep, fetching only the pages no earlier run of it captured; run it every few minutes.",
                verbose_name="news front pages",
            ),
        ),
        migrations.AddField(
            model_name="historicalharvestdefinition",
            name="news_feeds",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                help_text="A scheduled selective definition whose next run gets the new article URLs as seeds.",
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="harvest.harvestdefinition",
                verbose_name="feeds new articles to",
            ),
        ),
        migrations.AddConstraint(
            model_name="harvestdefinition",
            constraint=models.CheckConstraint(
                condition=models.Q(("kind", "selective"), ("news", False), _connector="OR"),
                name="harvest_definition_news_selective",
                violation_error_message="Only a selective harvest can crawl news front pages.",
            ),
        ),
        migrations.AddConstraint(
            model_name="harvestdefinition",
            constraint=models.CheckConstraint(
                condition=models.Q(("news", True), ("news_feeds__isnull", True), _connector="OR"),
                name="harvest_definition_only_news_feeds",
                violation_error_message="Only a news definition feeds articles to another definition.",
            ),
        ),
        migrations.AddField(
            model_name="newsarticle",
            name="definition",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="news_articles",
                to="harvest.harvestdefinition",
                verbose_name="news definition",
            ),
        ),
        migrations.AddField(
            model_name="newsarticle",
            name="domain",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="+",
                to="harvest.domain",
                verbose_name="domain",
            ),
        ),
        migrations.AddField(
            model_name="newsarticle",
            name="fed_to",
            field=models.ForeignKey(
                blank=True,
                help_text="The run of the deeper definition it was given to as a seed; empty: not yet.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="news_fed",
                to="harvest.harvestrun",
                verbose_name="seed of run",
            ),
        ),
        migrations.AddField(
            model_name="newsarticle",
            name="found_by",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="news_found",
                to="harvest.harvestrun",
                verbose_name="found by run",
            ),
        ),
        migrations.AddIndex(
            model_name="newsarticle",
            index=models.Index(fields=["definition", "fed_to"], name="harvest_news_to_feed"),
        ),
        migrations.AddConstraint(
            model_name="newsarticle",
            constraint=models.UniqueConstraint(
                fields=("definition", "url"),
                name="harvest_newsarticle_unique_url",
                violation_error_message="This article is already known to the definition.",
            ),
        ),
    ]
