from django.db import models
from django.utils.translation import gettext_lazy as _


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
    """The life of a job; the legal transitions are ``harvest.services.jobs.JOB_TRANSITIONS``."""

    NEW = "new", _("New")
    SUBMITTED = "submitted", _("Submitted")
    STARTED = "started", _("Started")
    DONE = "done", _("Done")
    FAILED = "failed", _("Failed")
    RESUBMITTED = "resubmitted", _("Resubmitted")


class SiteState(models.TextChoices):
    """Where the site crawl of one domain configuration in a job stands."""

    QUEUED = "queued", _("Queued")
    RUNNING = "running", _("Running")
    ENDED = "ended", _("Ended")


class StopReason(models.TextChoices):
    """Why the crawl of one domain configuration in a job ended."""

    COMPLETED = "completed", _("Completed")
    OBJECT_LIMIT = "object-limit", _("Harvest object limit reached")
    BYTE_LIMIT = "byte-limit", _("Harvest byte limit reached")
    CONFIG_OBJECT_LIMIT = "config-object-limit", _("Configuration object limit reached")
    CONFIG_BYTE_LIMIT = "config-byte-limit", _("Configuration byte limit reached")
    TIME_LIMIT = "time-limit", _("Time limit reached")
    OPERATOR = "operator", _("Stopped by an operator")
    FAILED = "failed", _("Failed")

    @classmethod
    def harvest_wide_limits(cls) -> tuple[str, ...]:
        """The reasons a snapshot "continue from" harvest takes a domain up again."""
        return (cls.OBJECT_LIMIT, cls.BYTE_LIMIT)
