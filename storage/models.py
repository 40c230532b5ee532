"""The archive's files and what is in them.

A :class:`WarcFile` is recorded when a crawler starts writing it (so that its
captures are searchable while it is written) and completed when it is closed;
files imported with ``index_warcs`` are recorded the same way. A
:class:`Capture` is one line of the capture index (a CDXJ line): what the CDX
API serves to pywb and the access pages read. Where the copies of a file live
(storage nodes, replicas) comes with the storage issue; until then a file is
where ``path`` says.
"""

from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

OPEN_SUFFIX = ".open"  # harvest.crawler.warc.OPEN_SUFFIX: the name of a file being written


class SurtKeyField(models.TextField):
    """A SURT key: compared byte by byte (the "C" collation on PostgreSQL), as CDX servers sort them.

    Prefix and range lookups on the key then use its B-tree index whatever the
    database's own collation is; SQLite already compares bytes.
    """

    def db_parameters(self, connection):
        parameters = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            parameters["collation"] = "C"
        return parameters


class WarcFile(models.Model):
    """A WARC or ARC file of the archive: its name (unique), where it is, its size and checksum."""

    class Origin(models.TextChoices):
        CRAWLED = "crawled", _("crawled")
        IMPORTED = "imported", _("imported")
        DEDUPLICATED = "deduplicated", _("deduplicated")  # written by the post-crawl dedup pipeline

    name = models.CharField(_("name"), max_length=255, unique=True)
    path = models.CharField(_("path"), max_length=1000, help_text=_("Where the file is."))
    origin = models.CharField(_("origin"), max_length=12, choices=Origin, default=Origin.CRAWLED)
    size = models.BigIntegerField(_("size (bytes)"), default=0)
    sha256 = models.CharField(_("SHA-256"), max_length=64, blank=True)
    records = models.PositiveIntegerField(_("records"), default=0)
    job = models.ForeignKey(
        "harvest.Job",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="warc_files",
        verbose_name=_("job"),
    )
    created_at = models.DateTimeField(_("created at"))
    closed_at = models.DateTimeField(
        _("closed at"), null=True, blank=True, help_text=_("Empty while a crawler is still writing the file.")
    )
    recovered = models.BooleanField(
        _("recovered"),
        default=False,
        help_text=_("Closed after its writer died: a torn last record was cut off."),
    )
    registered_at = models.DateTimeField(_("registered at"), auto_now_add=True)
    indexed_at = models.DateTimeField(_("indexed at"), null=True, blank=True)
    replaced_by = models.ForeignKey(
        "self",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="replaces",
        verbose_name=_("replaced by"),
        help_text=_(
            "The deduplicated file that holds this file's captures now (the index lists them there)."
        ),
    )
    retired_at = models.DateTimeField(
        _("retired at"),
        null=True,
        blank=True,
        help_text=_("When its bytes were removed from disk, its replacement holding the same captures."),
    )
    retired_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("retired by"),
    )

    class Meta:
        verbose_name = _("WARC file")
        verbose_name_plural = _("WARC files")
        ordering = ["-created_at", "name"]
        indexes = [models.Index(fields=["job", "created_at"])]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("storage:warcfile_detail", kwargs={"pk": self.pk})

    @property
    def is_open(self) -> bool:
        return self.closed_at is None

    def location(self) -> Path:
        """Where the file's bytes are now: ``path``, or ``path.open`` while a crawler still writes it."""
        path = Path(self.path)
        if self.is_open:
            writing = path.with_name(path.name + OPEN_SUFFIX)
            # The writer renames the file when it closes it, a moment before the row says so.
            if writing.exists() or not path.exists():
                return writing
        return path

    def open_bytes(self) -> BinaryIO:
        """The file's bytes, opened for reading (OSError when they are not there)."""
        try:
            return self.location().open("rb")
        except FileNotFoundError:
            if not self.is_open:
                raise
            return Path(self.path).open("rb")  # closed and renamed between the look and the open


class Capture(models.Model):
    """One record of the archive as the CDX API serves it: SURT key, timestamp, where its bytes are."""

    class RecordType(models.TextChoices):
        RESPONSE = "response", _("response")
        REVISIT = "revisit", _("revisit")
        RESOURCE = "resource", _("resource")
        METADATA = "metadata", _("metadata")

    urlkey = SurtKeyField(_("SURT key"))
    timestamp = models.DateTimeField(_("captured at"))
    url = models.TextField(_("URL"))
    record_type = models.CharField(_("record type"), max_length=10, choices=RecordType)
    mime = models.CharField(_("MIME type"), max_length=255, blank=True)
    status = models.PositiveSmallIntegerField(_("HTTP status"), null=True, blank=True)
    digest = models.CharField(_("payload digest"), max_length=140, blank=True)
    length = models.BigIntegerField(_("record length"))
    offset = models.BigIntegerField(_("offset"))
    record_id = models.CharField(_("WARC record ID"), max_length=140, blank=True)
    warc_file = models.ForeignKey(
        WarcFile, on_delete=models.PROTECT, related_name="captures", verbose_name=_("WARC file")
    )
    job = models.ForeignKey(
        "harvest.Job",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="captures",
        verbose_name=_("job"),
        db_index=False,  # the (job, urlkey) index below serves it
    )

    class Meta:
        verbose_name = _("capture")
        verbose_name_plural = _("captures")
        indexes = [
            models.Index(fields=["urlkey", "timestamp"], name="capture_key_time"),
            models.Index(fields=["job", "urlkey"], name="capture_job_key"),
            # Crawl-time dedup looks the original of a payload up by its digest.
            models.Index(
                fields=["digest", "timestamp"],
                name="capture_response_digest",
                condition=models.Q(record_type="response"),
            ),
        ]

    def __str__(self):
        return f"{self.url} {self.timestamp:%Y%m%d%H%M%S}"

    def get_absolute_url(self):
        return reverse("storage:capture_detail", kwargs={"pk": self.pk})

    @property
    def timestamp14(self) -> str:
        return self.timestamp.strftime("%Y%m%d%H%M%S")


class DedupRun(models.Model):
    """One run of the post-crawl deduplication pipeline (storage.dedup): its inputs, state and results.

    The pipeline keeps its own progress in files under ``out_dir``; this row is what people and
    the Celery tasks see: the state, the stage and its units done, the savings and the validation.
    """

    class State(models.TextChoices):
        QUEUED = "queued", _("queued")
        RUNNING = "running", _("running")
        STOPPING = "stopping", _("stopping")
        STOPPED = "stopped", _("stopped")
        FAILED = "failed", _("failed")
        VALIDATED = "validated", _("validated and registered")
        DONE = "done", _("finished, nothing registered")

    # The pipeline keeps a run's state and output in this directory: one run per directory.
    out_dir = models.CharField(_("output directory"), max_length=1000, unique=True)
    inputs = models.JSONField(_("input files"), default=list)
    options = models.JSONField(_("options"), default=dict, blank=True)
    dry_run = models.BooleanField(_("dry run"), default=False, help_text=_("Report the savings only."))
    register_output = models.BooleanField(
        _("register the output"),
        default=True,
        help_text=_("Register the validated output in the archive in place of the inputs."),
    )
    state = models.CharField(_("state"), max_length=10, choices=State, default=State.QUEUED)
    stage = models.CharField(_("stage"), max_length=20, blank=True)
    units_done = models.PositiveIntegerField(_("units done"), default=0)
    units_total = models.PositiveIntegerField(_("units of the stage"), default=0)
    summary = models.JSONField(_("savings"), null=True, blank=True)
    validation = models.JSONField(_("validation report"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("started by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)

    ACTIVE = (State.QUEUED, State.RUNNING, State.STOPPING)
    UNFINISHED = (*ACTIVE, State.STOPPED, State.FAILED)

    class Meta:
        verbose_name = _("deduplication run")
        verbose_name_plural = _("deduplication runs")
        ordering = ["-created_at", "-pk"]

    def __str__(self):
        return _("Deduplication run %(pk)s") % {"pk": self.pk}

    def get_absolute_url(self):
        return reverse("storage:dedup_detail", kwargs={"pk": self.pk})

    @property
    def is_active(self) -> bool:
        return self.state in self.ACTIVE
