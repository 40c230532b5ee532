"""The article URLs news runs found: what a news definition has already captured, and what its deeper
definition's next run gets as extra seeds (docs/curation.md, "Frequent shallow crawls for news")."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class NewsArticle(models.Model):
    """A page a run of a news definition captured for the first time (one click from a front page)."""

    definition = models.ForeignKey(
        "harvest.HarvestDefinition",
        on_delete=models.CASCADE,
        related_name="news_articles",
        verbose_name=_("news definition"),
    )
    url = models.TextField(_("URL"))
    domain = models.ForeignKey(
        "harvest.Domain", on_delete=models.CASCADE, related_name="+", verbose_name=_("domain")
    )
    found_by = models.ForeignKey(
        "harvest.HarvestRun",
        on_delete=models.CASCADE,
        related_name="news_found",
        verbose_name=_("found by run"),
    )
    found_at = models.DateTimeField(_("found at"), db_index=True)
    fed_to = models.ForeignKey(
        "harvest.HarvestRun",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="news_fed",
        verbose_name=_("seed of run"),
        help_text=_("The run of the deeper definition it was given to as a seed; empty: not yet."),
    )

    class Meta:
        verbose_name = _("news article")
        verbose_name_plural = _("news articles")
        ordering = ["-found_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["definition", "url"],
                name="harvest_newsarticle_unique_url",
                violation_error_message=_("This article is already known to the definition."),
            )
        ]
        indexes = [models.Index(fields=["definition", "fed_to"], name="harvest_news_to_feed")]

    def __str__(self):
        return self.url
