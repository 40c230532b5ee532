"""Discovered sites: candidates aggregated from external links, and curators' decisions."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("harvest", "0023_change_rates"),
        ("selection", "0009_record_recent_first_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="DiscoveredSite",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "registered_domain",
                    models.CharField(max_length=255, unique=True, verbose_name="registered domain"),
                ),
                ("tld", models.CharField(db_index=True, max_length=63, verbose_name="TLD")),
                ("site_count", models.PositiveIntegerField(default=0, verbose_name="archived sites linking")),
                ("link_count", models.BigIntegerField(default=0, verbose_name="links found")),
                ("first_seen", models.DateTimeField(verbose_name="first seen")),
                ("last_seen", models.DateTimeField(verbose_name="last seen")),
            ],
            options={
                "verbose_name": "discovered site",
                "verbose_name_plural": "discovered sites",
                "ordering": ["-site_count", "-link_count", "registered_domain"],
            },
        ),
        migrations.CreateModel(
            name="DiscoveryFold",
            fields=[
                (
                    "entry",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        primary_key=True,
                        related_name="discovery_fold",
                        serialize=False,
                        to="harvest.jobconfiguration",
                        verbose_name="site crawl",
                    ),
                ),
                ("folded_at", models.DateTimeField(auto_now_add=True, verbose_name="counted at")),
            ],
            options={
                "verbose_name": "site crawl counted in discovery",
                "verbose_name_plural": "site crawls counted in discovery",
            },
        ),
        migrations.AddField(
            model_name="externallink",
            name="sources",
            field=models.JSONField(
                blank=True,
                db_default=models.Value([], models.JSONField()),
                default=list,
                verbose_name="linking pages",
            ),
        ),
        migrations.CreateModel(
            name="DiscoveryBlock",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("pattern", models.CharField(max_length=255, unique=True, verbose_name="pattern")),
                ("reason", models.CharField(blank=True, max_length=500, verbose_name="reason")),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="added at")),
                (
                    "created_by",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="added by",
                    ),
                ),
            ],
            options={
                "verbose_name": "blacklisted domain",
                "verbose_name_plural": "blacklisted domains",
                "ordering": ["pattern"],
            },
        ),
        migrations.CreateModel(
            name="DiscoveredLink",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("link_count", models.BigIntegerField(default=0, verbose_name="links found")),
                ("source_pages", models.JSONField(blank=True, default=list, verbose_name="linking pages")),
                ("urls", models.JSONField(blank=True, default=list, verbose_name="linked URLs")),
                ("first_seen", models.DateTimeField(verbose_name="first seen")),
                ("last_seen", models.DateTimeField(verbose_name="last seen")),
                (
                    "source_domain",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="harvest.domain",
                        verbose_name="linking site",
                    ),
                ),
                (
                    "site",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="links",
                        to="harvest.discoveredsite",
                        verbose_name="discovered site",
                    ),
                ),
            ],
            options={
                "verbose_name": "discovered link",
                "verbose_name_plural": "discovered links",
                "ordering": ["site", "-link_count", "pk"],
                "indexes": [models.Index(fields=["source_domain"], name="harvest_discoveredlink_src")],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("site", "source_domain"), name="harvest_discoveredlink_once"
                    )
                ],
            },
        ),
        migrations.CreateModel(
            name="DiscoveryDecision",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("registered_domain", models.CharField(max_length=255, verbose_name="registered domain")),
                (
                    "action",
                    models.CharField(
                        choices=[
                            ("dismissed", "Dismissed"),
                            ("proposed", "Proposed as a record"),
                            ("domain_added", "Added as a domain"),
                        ],
                        max_length=20,
                        verbose_name="action",
                    ),
                ),
                ("decided_at", models.DateTimeField(auto_now_add=True, verbose_name="at")),
                ("undone_at", models.DateTimeField(blank=True, null=True, verbose_name="undone at")),
                (
                    "collection",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="selection.collection",
                        verbose_name="collection",
                    ),
                ),
                (
                    "decided_by",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="by",
                    ),
                ),
                (
                    "domain",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="harvest.domain",
                        verbose_name="domain",
                    ),
                ),
                (
                    "record",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to="selection.record",
                        verbose_name="record",
                    ),
                ),
                (
                    "undone_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="undone by",
                    ),
                ),
            ],
            options={
                "verbose_name": "discovery decision",
                "verbose_name_plural": "discovery decisions",
                "ordering": ["-decided_at", "-pk"],
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("undone_at__isnull", True)),
                        fields=("collection", "registered_domain"),
                        name="harvest_discoverydecision_once",
                        violation_error_message="This site was already decided on for this collection.",
                    )
                ],
            },
        ),
    ]
