"""The archive's files and what is in them.

A :class:`WarcFile` is recorded when a crawler starts writing it (so that its
captures are searchable while it is written) and completed when it is closed;
files imported with ``index_warcs`` are recorded the same way. A
:class:`Capture` is one line of the capture index (a CDXJ line): what the CDX
API serves to pywb and the access pages read.

Where a file's bytes live: ``path`` is where it was written or imported (a crawler's spool, an
import directory); the ingest chain (storage.services.ingest) copies it onto
:class:`StorageNode` s as :class:`Replica` s, and from then on it is read from its replicas.
:class:`StorageEvent` is the storage's history: copies, audits, repairs, node changes, alerts.
"""

from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.core.validators import MaxLengthValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import LessThanOrEqual
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from storage.backends import BACKENDS
from webarchive.runs import Run
from webarchive.transitions import Transitions

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


class IngestStep(models.TextChoices):
    """The steps of the ingest chain, in order (storage.services.ingest)."""

    REGISTERED = "registered", _("registered")
    CHECKSUMMED = "checksummed", _("checksummed")
    INDEXED = "indexed", _("indexed")
    STORED = "stored", _("stored on its first node")
    REPLICATED = "replicated", _("replicated")
    CLEANED = "cleaned", _("done (spool cleaned)")


class WarcFile(models.Model):
    """A WARC or ARC file of the archive: its name (unique), where it is, its size and checksum."""

    class Origin(models.TextChoices):
        CRAWLED = "crawled", _("crawled")
        IMPORTED = "imported", _("imported")
        DEDUPLICATED = "deduplicated", _("deduplicated")  # written by the post-crawl dedup pipeline

    name = models.CharField(_("name"), max_length=255, unique=True)
    path = models.CharField(_("path"), max_length=1000, help_text=_("Where the file is."))
    machine = models.CharField(
        _("written on"),
        max_length=63,
        blank=True,
        help_text=_(
            "The crawl machine whose spool holds the file until its replicas are stored "
            "(WEBARCHIVE_MACHINE): its ingest chain runs there. Empty for files read from a shared path."
        ),
    )
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
    ingest_step = models.CharField(
        _("ingest step"),
        max_length=12,
        choices=IngestStep,
        default=IngestStep.REGISTERED,
        help_text=_("The last step of the ingest chain this file has completed."),
    )
    ingest_error = models.TextField(_("ingest error"), blank=True)
    ingest_updated_at = models.DateTimeField(_("ingest step reached at"), null=True, blank=True)
    replicas_wanted = models.PositiveSmallIntegerField(
        _("replicas wanted"),
        default=0,
        help_text=_(
            "Set when the file is ingested, from its harvest definition or collections (0: not yet)."
        ),
    )

    class Meta:
        verbose_name = _("WARC file")
        verbose_name_plural = _("WARC files")
        # Reading a file's bytes (/warcs/, a capture's raw record): engineers and the replay account.
        permissions = [("download_warcfile", _("Can download the bytes of WARC files"))]
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

    def spool_bytes(self) -> BinaryIO:
        """The bytes where the file was written or imported (``path``), not a replica."""
        try:
            return self.location().open("rb")
        except FileNotFoundError:
            if not self.is_open:
                raise
            return Path(self.path).open("rb")  # closed and renamed between the look and the open


class CaptureQuerySet(models.QuerySet):
    # Anonymous visitors may read open captures when the site allows it (ACCESS_ANONYMOUS):
    # webarchive.permissions.restrict() lets them through to restrict() below.
    public_view = True

    def restrict(self, user, action):
        """The captures the user may read from where the request came (storage.access); staff: all."""
        if (
            action == "view"
            and user is not None
            and not user.is_authenticated
            and not settings.ACCESS_ANONYMOUS
        ):
            return self.none()
        return access.visible_captures(self, access.viewer_of(user))


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

    objects = CaptureQuerySet.as_manager()

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


class DedupRun(Run):
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
    # Its stage is the pipeline's (storage.dedup.pipeline.STAGES), its units done and to do are
    # ``done`` and ``total``. A stop is a state, stopping, not a flag: the units already sent to
    # the workers finish, those not started are skipped, and the page shows it winding down.
    state = models.CharField(_("state"), max_length=10, choices=State, default=State.QUEUED)
    summary = models.JSONField(_("savings"), null=True, blank=True)
    validation = models.JSONField(_("validation report"), null=True, blank=True)

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


# A run's state, moved by storage.services.dedup_runs. Stopped and failed runs are queued again by
# Resume (Celery), or run again at once by the same ``dedup_warcs`` command (running); a run made
# with --no-register is done, and validated when its output is registered later.
DEDUP_RUN_TRANSITIONS = Transitions(
    DedupRun.State,
    {
        DedupRun.State.QUEUED: {DedupRun.State.RUNNING, DedupRun.State.STOPPED, DedupRun.State.FAILED},
        DedupRun.State.RUNNING: {
            DedupRun.State.STOPPING,
            DedupRun.State.STOPPED,
            DedupRun.State.FAILED,
            DedupRun.State.VALIDATED,
            DedupRun.State.DONE,
        },
        DedupRun.State.STOPPING: {
            DedupRun.State.STOPPED,
            DedupRun.State.FAILED,
            DedupRun.State.VALIDATED,
            DedupRun.State.DONE,
        },
        DedupRun.State.STOPPED: {DedupRun.State.QUEUED, DedupRun.State.RUNNING},
        DedupRun.State.FAILED: {DedupRun.State.QUEUED, DedupRun.State.RUNNING},
        DedupRun.State.DONE: {DedupRun.State.VALIDATED},
        DedupRun.State.VALIDATED: set(),
    },
    noun=_("deduplication run"),
    field="state",
)


class StorageNode(models.Model):
    """A place that keeps replicas of WARC files: a directory now, an object store later.

    ``location`` is the site or room (replicas prefer distinct locations). Capacity and free
    space are measured by the node check. A node with a local worker has its own Celery queue
    (``storage-<name>``), so that its copies and audits read its disks locally.
    """

    class Backend(models.TextChoices):
        DIRECTORY = "directory", _("local or mounted directory")
        S3 = "s3", _("S3-compatible object store")

    class State(models.TextChoices):
        ONLINE = "online", _("online")
        DRAINING = "draining", _("draining")
        OFFLINE = "offline", _("offline")
        RETIRED = "retired", _("retired")

    name = models.SlugField(_("name"), max_length=50, unique=True)
    location = models.CharField(
        _("location"), max_length=100, help_text=_("Site or room: replicas prefer distinct locations.")
    )
    backend = models.CharField(_("backend"), max_length=20, choices=Backend, default=Backend.DIRECTORY)
    root = models.CharField(
        _("root"),
        max_length=1000,
        help_text=_(
            "The directory (local or mounted) that holds the replicas; for an S3 node, s3://bucket/prefix."
        ),
    )
    # An S3 node's endpoint and keys are a profile of the STORAGE_S3_PROFILES setting (from the
    # environment), named here: keys are never in the database.
    credentials = models.CharField(
        _("S3 credentials profile"),
        max_length=100,
        blank=True,
        help_text=_("S3 nodes: the name of a profile of the STORAGE_S3_PROFILES setting."),
    )
    quota = models.BigIntegerField(
        _("quota (bytes)"),
        null=True,
        blank=True,
        help_text=_("S3 nodes: the space it may use (an object store has no disk size); empty: unknown."),
    )
    state = models.CharField(_("state"), max_length=10, choices=State, default=State.ONLINE)
    reachable = models.BooleanField(_("reachable"), default=True)
    unreachable_reason = models.TextField(_("why unreachable"), blank=True)
    capacity = models.BigIntegerField(_("capacity (bytes)"), null=True, blank=True)
    free = models.BigIntegerField(_("free space (bytes)"), null=True, blank=True)
    measured_at = models.DateTimeField(_("measured at"), null=True, blank=True)
    local_worker = models.BooleanField(
        _("has a local worker"),
        default=False,
        help_text=_(
            "Its copies and audits run on its own queue, storage-<name>, served by a worker on the node."
        ),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("storage node")
        verbose_name_plural = _("storage nodes")
        ordering = ["name"]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("storage:node_detail", kwargs={"pk": self.pk})

    @property
    def queue(self) -> str:
        return f"storage-{self.name}" if self.local_worker else "default"

    @property
    def usable(self) -> bool:
        """Replicas here count and can be read (draining nodes still serve until emptied)."""
        return self.reachable and self.state in (self.State.ONLINE, self.State.DRAINING)

    @property
    def used_percent(self) -> float | None:
        if not self.capacity or self.free is None:
            return None
        return round(100 * (self.capacity - self.free) / self.capacity, 1)

    @property
    def is_s3(self) -> bool:
        return self.backend == self.Backend.S3

    @property
    def bucket_and_prefix(self) -> tuple[str, str]:
        """An S3 node's bucket and prefix (from its root, ``s3://bucket/prefix``)."""
        bucket, _slash, prefix = self.root.removeprefix("s3://").partition("/")
        return bucket, prefix

    @property
    def s3_bucket(self) -> str:
        return self.bucket_and_prefix[0] if self.is_s3 else ""

    @property
    def s3_prefix(self) -> str:
        return self.bucket_and_prefix[1] if self.is_s3 else ""

    @property
    def endpoint_url(self) -> str:
        """An S3 node's endpoint, from its credentials profile (never the keys)."""
        profile = settings.STORAGE_S3_PROFILES.get(self.credentials) or {}
        return profile.get("endpoint_url", "")

    def backend_instance(self):
        return BACKENDS[self.backend].for_node(self)


# A node's state, moved by storage.services.nodes: by an engineer (offline, online, drain) and by
# the node check (a drained node is retired). Asking again for offline or draining is not refused
# (marking offline again counts its replicas missing again). Retired is final.
STORAGE_NODE_TRANSITIONS = Transitions(
    StorageNode.State,
    {
        StorageNode.State.ONLINE: {StorageNode.State.OFFLINE, StorageNode.State.DRAINING},
        StorageNode.State.OFFLINE: {
            StorageNode.State.OFFLINE,
            StorageNode.State.ONLINE,
            StorageNode.State.DRAINING,
        },
        StorageNode.State.DRAINING: {
            StorageNode.State.DRAINING,
            StorageNode.State.OFFLINE,
            StorageNode.State.ONLINE,
            StorageNode.State.RETIRED,
        },
        StorageNode.State.RETIRED: set(),
    },
    noun=_("storage node"),
    field="state",
)


class Replica(models.Model):
    """One copy of a WARC file on a storage node, with its checksum and last verification."""

    class State(models.TextChoices):
        COPYING = "copying", _("copying")
        OK = "ok", _("ok")
        MISSING = "missing", _("missing")
        CORRUPT = "corrupt", _("corrupt")

    warc_file = models.ForeignKey(
        WarcFile, on_delete=models.PROTECT, related_name="replicas", verbose_name=_("WARC file")
    )
    node = models.ForeignKey(
        StorageNode, on_delete=models.PROTECT, related_name="replicas", verbose_name=_("node")
    )
    relative_path = models.CharField(_("path on the node"), max_length=1000)
    state = models.CharField(_("state"), max_length=8, choices=State, default=State.COPYING)
    sha256 = models.CharField(_("SHA-256 found"), max_length=64, blank=True)
    size = models.BigIntegerField(_("size (bytes)"), default=0)
    verified_at = models.DateTimeField(_("last verified"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("replica")
        verbose_name_plural = _("replicas")
        ordering = ["warc_file", "node__name"]
        constraints = [
            # Never two replicas of one file on one node.
            models.UniqueConstraint(fields=["warc_file", "node"], name="replica_one_per_node"),
        ]
        indexes = [models.Index(fields=["state", "verified_at"], name="replica_audit_order")]

    def __str__(self):
        return f"{self.warc_file.name} @ {self.node.name}"


# A replica's state, moved by storage.services.replication (copies), audits (verification) and
# nodes (a node lost or marked offline). Any replica may be claimed for a copy, even one found ok
# meanwhile (a repair racing a verification: it is copied again, harmlessly), and copying ->
# copying is a claim taken over from a dead worker. A verification may find any replica that is
# not being copied ok, missing or corrupt; finding it as it was is not a change.
REPLICA_TRANSITIONS = Transitions(
    Replica.State,
    {
        Replica.State.COPYING: {
            Replica.State.COPYING,
            Replica.State.OK,
            Replica.State.MISSING,
            Replica.State.CORRUPT,
        },
        Replica.State.OK: {Replica.State.COPYING, Replica.State.MISSING, Replica.State.CORRUPT},
        Replica.State.MISSING: {Replica.State.COPYING, Replica.State.OK, Replica.State.CORRUPT},
        Replica.State.CORRUPT: {Replica.State.COPYING, Replica.State.OK, Replica.State.MISSING},
    },
    noun=_("replica"),
    field="state",
)


class StorageEvent(models.Model):
    """What happened to the storage: a copy, an audit's finding, a repair, a node change, an alert."""

    class Kind(models.TextChoices):
        COPIED = "copied", _("replica copied")
        VERIFIED = "verified", _("replica verified")
        CORRUPT = "corrupt", _("replica corrupt")
        MISSING = "missing", _("replica missing")
        REPAIRED = "repaired", _("replica repaired")
        REMOVED = "removed", _("replica removed")
        COPY_FAILED = "copy_failed", _("copy failed")
        NO_GOOD_REPLICA = "lost", _("no good replica left")
        NODE_ADDED = "node_added", _("node added")
        NODE_OFFLINE = "node_offline", _("node offline")
        NODE_UNREACHABLE = "unreachable", _("node unreachable")
        NODE_ONLINE = "node_online", _("node back online")
        NODE_DRAINING = "draining", _("node draining")
        NODE_RETIRED = "node_retired", _("node retired")
        VERIFY_ASKED = "verify_asked", _("verification asked")
        SPOOL_CLEANED = "cleaned", _("spool copy deleted")

    ALERTS = (Kind.NO_GOOD_REPLICA, Kind.NODE_UNREACHABLE, Kind.COPY_FAILED)

    at = models.DateTimeField(_("at"), auto_now_add=True, db_index=True)
    kind = models.CharField(_("event"), max_length=12, choices=Kind)
    node = models.ForeignKey(
        StorageNode,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="events",
        verbose_name=_("node"),
    )
    warc_file = models.ForeignKey(
        WarcFile,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="storage_events",
        verbose_name=_("WARC file"),
    )
    detail = models.TextField(_("detail"), blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("by"),
    )

    class Meta:
        verbose_name = _("storage event")
        verbose_name_plural = _("storage events")
        ordering = ["-at", "-pk"]

    def __str__(self):
        return f"{self.at:%Y-%m-%d %H:%M} {self.get_kind_display()}"

    @property
    def is_alert(self) -> bool:
        return self.kind in self.ALERTS


HARVEST_NOTE_MAX_LENGTH = 2000


class HarvestNote(models.Model):
    """A curator's note on how a record's site was harvested in a job, shown on the record's page.

    A note written on a site of a job's quality view is stored once per record behind that site,
    so each record keeps it whatever later becomes of the site's configuration.
    """

    record = models.ForeignKey(
        "selection.Record", on_delete=models.PROTECT, related_name="harvest_notes", verbose_name=_("record")
    )
    job = models.ForeignKey(
        "harvest.Job", on_delete=models.PROTECT, related_name="harvest_notes", verbose_name=_("job")
    )
    domain = models.ForeignKey(
        "harvest.Domain",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="harvest_notes",
        verbose_name=_("domain"),
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="harvest_notes",
        verbose_name=_("author"),
    )
    text = models.TextField(
        _("note"),
        max_length=HARVEST_NOTE_MAX_LENGTH,
        validators=[MaxLengthValidator(HARVEST_NOTE_MAX_LENGTH)],
        error_messages={"blank": _("Write the note: an empty note is not saved.")},
    )
    created_at = models.DateTimeField(_("written at"), default=timezone.now, editable=False)

    class Meta:
        db_table = "selection_harvestnote"  # where it was created, before it moved with the quality review
        verbose_name = _("harvest note")
        verbose_name_plural = _("harvest notes")
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(~Q(text=""), LessThanOrEqual(Length("text"), HARVEST_NOTE_MAX_LENGTH)),
                name="selection_harvestnote_text_length",
                violation_error_message=_("A note has between 1 and 2000 characters."),
            )
        ]
        indexes = [models.Index(fields=["job", "domain"])]

    def __str__(self):
        return f"{self.record} / {self.job}: {self.text[:50]}"


# Access rules and exclusions live in their own module; imported here so that Django finds them.
# Who may read which capture (CaptureQuerySet.restrict); it reads the models above.
from storage import access  # noqa: E402
from storage.models_access import AccessRule, Exclusion  # noqa: E402, F401
from storage.models_change_rates import ChangeEstimate, Confidence  # noqa: E402, F401
from storage.models_misses import MissKind, ReplayMiss  # noqa: E402, F401
from storage.models_search import SearchAnchor, SearchEntry, SearchText  # noqa: E402, F401
