"""The full-text index: the text of each archived document once, and where and when it was captured.

:class:`SearchText` holds one payload's text (by its payload digest: identical payloads are read and
indexed once) with its search vector; :class:`SearchEntry` says which URL held that payload, in
which harvest definition and year, how many times and when: what a hit is made of, what the access
rules and the filters read. Both are derived from the capture index and the WARC files, and can be
rebuilt from them (``index_warcs``). The search vector and the tables' layout on each database are
the business of :mod:`storage.search`, the one module that knows the backend.
"""

from django.db import models
from django.utils.translation import gettext_lazy as _

from storage.models import SurtKeyField


class SearchText(models.Model):
    """The text of one payload (by digest), as the full-text index holds it; ``error`` says why a
    payload that could not be read was skipped (it is not read again)."""

    digest = models.CharField(_("payload digest"), max_length=140, primary_key=True)
    mime = models.CharField(_("MIME type"), max_length=255, blank=True)
    language = models.CharField(_("language"), max_length=8, blank=True)
    title = models.TextField(_("title"), blank=True)
    headings = models.TextField(_("headings"), blank=True)
    body = models.TextField(_("text"), blank=True)
    truncated = models.BooleanField(_("truncated"), default=False)
    error = models.CharField(_("why it was skipped"), max_length=300, blank=True)
    extracted_at = models.DateTimeField(_("extracted at"))

    class Meta:
        verbose_name = _("indexed text")
        verbose_name_plural = _("indexed texts")

    def __str__(self):
        return self.title or self.digest


class SearchEntry(models.Model):
    """A URL that held an indexed payload in one harvest definition (0: none) and year (in the site's
    time zone): its captures' count, first and last date; what the search groups, filters and checks
    the access rules on."""

    urlkey = SurtKeyField(_("SURT key"))
    url = models.TextField(_("URL"))
    domain = models.CharField(_("domain"), max_length=255, blank=True)
    digest = models.CharField(_("payload digest"), max_length=140)
    harvest_definition_id = models.IntegerField(_("harvest definition"), default=0)
    year = models.PositiveSmallIntegerField(_("year"))
    mime = models.CharField(_("MIME type"), max_length=255, blank=True)
    language = models.CharField(_("language"), max_length=8, blank=True)
    captures = models.PositiveIntegerField(_("captures"))
    first_capture = models.DateTimeField(_("first captured"))
    last_capture = models.DateTimeField(_("last captured"))

    class Meta:
        verbose_name = _("search entry")
        verbose_name_plural = _("search entries")
        constraints = [
            models.UniqueConstraint(
                fields=["urlkey", "digest", "harvest_definition_id", "year"], name="search_entry_unique"
            )
        ]
        indexes = [
            models.Index(fields=["digest"], name="search_entry_digest"),
            models.Index(fields=["domain"], name="search_entry_domain"),
            # Not by harvest definition: the access rules let readers see most of them, and an index
            # there only tempts the planner into reading a bitmap of most entries.
            models.Index(fields=["year"], name="search_entry_year"),
        ]

    def __str__(self):
        return f"{self.url} ({self.year})"


class SearchAnchor(models.Model):
    """The text of a link pointing to a URL, in an indexed page (by its digest): a page is also found
    by the words other pages link to it with, by those who may read the pages that say them."""

    target_urlkey = SurtKeyField(_("SURT key of the target"))
    text = models.CharField(_("anchor text"), max_length=200)
    source_digest = models.CharField(_("payload digest of the linking page"), max_length=140)

    class Meta:
        verbose_name = _("link anchor")
        verbose_name_plural = _("link anchors")
        constraints = [
            models.UniqueConstraint(
                fields=["target_urlkey", "text", "source_digest"], name="search_anchor_unique"
            )
        ]

    def __str__(self):
        return self.text
