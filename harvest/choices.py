from django.db import models
from django.utils.translation import gettext_lazy as _

from harvest.crawler import outcomes
from webarchive.transitions import Transitions


class DepthPolicy(models.TextChoices):
    """How far a site crawl goes from its seeds."""

    PAGE = "page", _("The page only")
    CLICKS = "clicks", _("The page and N clicks")
    PATH = "path", _("The directory (path)")
    HOST = "host", _("The host")
    DOMAIN = "domain", _("The whole domain")


class DedupPolicy(models.TextChoices):
    """Which earlier captures a crawl deduplicates against."""

    OFF = "off", _("No deduplication")
    ALL = "all", _("All earlier captures")
    SAME_DEFINITION = "same-definition", _("Captures of the same harvest definition")


class StreamVariants(models.TextChoices):
    """Which variants of a streamed video (HLS, DASH) a site crawl fetches the segments of."""

    ALL = "all", _("Every variant (every quality, every language)")
    BEST = "best", _("Only the best variant (the highest bandwidth)")


class DigestAlgorithm(models.TextChoices):
    SHA256 = "sha256", "SHA-256"
    SHA1 = "sha1", _("SHA-1 (legacy interoperability)")


class RenderMode(models.TextChoices):
    """Which pages a site crawl renders in a browser, archiving everything the browser loads."""

    OFF = "off", _("Off: pages are fetched as they are")
    SEEDS = "seeds", _("The seed pages only")
    ALL = "all", _("Every HTML page in scope")


class EndKind(models.TextChoices):
    """When a schedule stops: never, after N runs, or at a date."""

    FOREVER = "forever", _("Forever")
    RUNS = "runs", _("After a number of runs")
    UNTIL = "until", _("Until a date")


class Unit(models.TextChoices):
    """The unit of a schedule's period (“every N …”)."""

    MINUTE = "minute", _("minutes")
    HOUR = "hour", _("hours")
    DAY = "day", _("days")
    WEEK = "week", _("weeks")
    MONTH = "month", _("months")


class Weekday(models.IntegerChoices):
    MONDAY = 0, _("Monday")
    TUESDAY = 1, _("Tuesday")
    WEDNESDAY = 2, _("Wednesday")
    THURSDAY = 3, _("Thursday")
    FRIDAY = 4, _("Friday")
    SATURDAY = 5, _("Saturday")
    SUNDAY = 6, _("Sunday")


class HarvestKind(models.TextChoices):
    SELECTIVE = "selective", _("Selective")
    SNAPSHOT = "snapshot", _("Snapshot (broad)")


class JobStatus(models.TextChoices):
    """The life of a job; the legal changes are ``JOB_TRANSITIONS``."""

    NEW = "new", _("New")
    SUBMITTED = "submitted", _("Submitted")
    STARTED = "started", _("Started")
    DONE = "done", _("Done")
    STOPPED = "stopped", _("Stopped")
    FAILED = "failed", _("Failed")
    RESUBMITTED = "resubmitted", _("Resubmitted")


# Moved by harvest.services.jobs.job_transition only. A job an operator stopped ends stopped, not
# done. A failed or stopped job, or a submitted one that never started, is resubmitted as a new job;
# done and resubmitted are final.
JOB_TRANSITIONS = Transitions(
    JobStatus,
    {
        JobStatus.NEW: {JobStatus.SUBMITTED},
        JobStatus.SUBMITTED: {JobStatus.STARTED, JobStatus.RESUBMITTED},
        JobStatus.STARTED: {JobStatus.DONE, JobStatus.STOPPED, JobStatus.FAILED},
        JobStatus.STOPPED: {JobStatus.RESUBMITTED},
        JobStatus.FAILED: {JobStatus.RESUBMITTED},
        JobStatus.DONE: set(),
        JobStatus.RESUBMITTED: set(),
    },
    noun=_("job"),
)


class SiteState(models.TextChoices):
    """Where the site crawl of one domain configuration in a job stands (the legal changes:
    ``SITE_CRAWL_TRANSITIONS``)."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    ENDED = "ended", _("Ended")


# A JobConfiguration's state, moved by harvest.services.crawls. Running -> running is a crawl
# started over: its task redelivered after its worker died, or its heartbeat stopped. A queued
# site ends without running when its job is stopped (or the watchdog fails the job).
SITE_CRAWL_TRANSITIONS = Transitions(
    SiteState,
    {
        SiteState.QUEUED: {SiteState.RUNNING, SiteState.ENDED},
        SiteState.RUNNING: {SiteState.RUNNING, SiteState.ENDED},
        SiteState.ENDED: set(),
    },
    noun=_("site crawl"),
    field="state",
)


class JobFailure(models.TextChoices):
    """Why a job failed, as a code (the monitoring page explains it; ``Job.errors`` keeps the words).

    Sites say why they failed with the crawler's codes (``harvest.crawler.outcomes``) in their
    report; these are the failures of the job as a whole, and of a site the watchdog ended."""

    METADATA_NO_SPACE = "metadata-no-space", _("metadata not written: disk full")
    METADATA_PERMISSION = "metadata-permission", _("metadata not written: no write access")
    METADATA = "metadata", _("metadata not written")
    CRAWLER_BROKEN = "crawler-broken", _("the crawler broke")
    STALLED = "stalled", _("stalled: no progress, no worker")


class StopReason(models.TextChoices):
    """Why the crawl of one domain configuration in a job ended.

    The crawler's stop reasons (``harvest.crawler.outcomes``), and for a limit, whose it was: the
    crawler's "object-limit" and "byte-limit" are the harvest's or the configuration's.
    """

    COMPLETED = outcomes.COMPLETED, _("Completed")
    OBJECT_LIMIT = outcomes.OBJECT_LIMIT, _("Harvest object limit reached")
    BYTE_LIMIT = outcomes.BYTE_LIMIT, _("Harvest byte limit reached")
    CONFIG_OBJECT_LIMIT = "config-object-limit", _("Configuration object limit reached")
    CONFIG_BYTE_LIMIT = "config-byte-limit", _("Configuration byte limit reached")
    TIME_LIMIT = outcomes.TIME_LIMIT, _("Time limit reached")
    OPERATOR = outcomes.OPERATOR, _("Stopped by an operator")
    FAILED = outcomes.FAILED, _("Failed")

    @classmethod
    def harvest_wide_limits(cls) -> tuple[str, ...]:
        """The reasons a snapshot "continue from" harvest takes a domain up again."""
        return (cls.OBJECT_LIMIT, cls.BYTE_LIMIT)
