"""Schedules: when a selective harvest definition runs (python-dateutil's rrule computes the dates)."""

from __future__ import annotations

import zoneinfo
from datetime import UTC, datetime
from itertools import islice

from dateutil import rrule
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from simple_history.models import HistoricalRecords

from harvest.choices import EndKind, Unit, Weekday

_FREQ = {
    Unit.MINUTE: rrule.MINUTELY,
    Unit.HOUR: rrule.HOURLY,
    Unit.DAY: rrule.DAILY,
    Unit.WEEK: rrule.WEEKLY,
    Unit.MONTH: rrule.MONTHLY,
}

# Which "at" fields make sense for which period unit.
_AT_FIELDS = {
    "at_minute": {Unit.HOUR, Unit.DAY, Unit.WEEK, Unit.MONTH},
    "at_hour": {Unit.DAY, Unit.WEEK, Unit.MONTH},
    "at_weekday": {Unit.WEEK},
    "at_day": {Unit.MONTH},
}

# (unit, every) → the selection's frequency names, for the crawl feed.
_FREQUENCY_NAMES = {
    (Unit.DAY, 1): "daily",
    (Unit.WEEK, 1): "weekly",
    (Unit.MONTH, 1): "monthly",
    (Unit.MONTH, 6): "twice-yearly",
    (Unit.MONTH, 12): "annual",
}


class Schedule(models.Model):
    """Every N minutes/hours/days/weeks/months, any time or at a fixed time, from a start date."""

    name = models.CharField(_("name"), max_length=200)
    comments = models.TextField(_("comments"), blank=True)
    start = models.DateTimeField(_("start"), default=timezone.now)
    every = models.PositiveIntegerField(_("every"), default=1, validators=[MinValueValidator(1)])
    unit = models.CharField(_("unit"), max_length=10, choices=Unit, default=Unit.DAY)
    at_minute = models.PositiveSmallIntegerField(
        _("at minute"), null=True, blank=True, validators=[MaxValueValidator(59)]
    )
    at_hour = models.PositiveSmallIntegerField(
        _("at hour"), null=True, blank=True, validators=[MaxValueValidator(23)]
    )
    at_weekday = models.PositiveSmallIntegerField(_("on weekday"), null=True, blank=True, choices=Weekday)
    at_day = models.PositiveSmallIntegerField(
        _("on day of month"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(31)],
        help_text=_("In a shorter month, the run is on its last day."),
    )
    end_kind = models.CharField(_("ends"), max_length=10, choices=EndKind, default=EndKind.FOREVER)
    max_runs = models.PositiveIntegerField(
        _("number of runs"), null=True, blank=True, validators=[MinValueValidator(1)]
    )
    end_date = models.DateTimeField(_("until"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    version = models.PositiveIntegerField(_("version"), default=1, db_default=1, editable=False)

    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        verbose_name = _("schedule")
        verbose_name_plural = _("schedules")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                Lower("name"),
                name="harvest_schedule_name_unique_ci",
                violation_error_message=_("A schedule with this name already exists."),
            ),
            models.CheckConstraint(
                condition=~Q(end_kind=EndKind.RUNS) | Q(max_runs__gte=1),
                name="harvest_schedule_runs_has_count",
                violation_error_message=_("Give the number of runs."),
            ),
            models.CheckConstraint(
                condition=~Q(end_kind=EndKind.UNTIL) | Q(end_date__isnull=False),
                name="harvest_schedule_until_has_date",
                violation_error_message=_("Give the date the schedule ends."),
            ),
        ]

    def __str__(self):
        return self.name

    def get_absolute_url(self):
        return reverse("harvest:schedule_detail", kwargs={"pk": self.pk})

    def clean(self):
        errors = {}
        for field, units in _AT_FIELDS.items():
            if getattr(self, field) is not None and self.unit not in units:
                errors[field] = _("Not used with a period in %(unit)s.") % {"unit": Unit(self.unit).label}
        if self.end_kind == EndKind.RUNS and not self.max_runs:
            errors["max_runs"] = _("Give the number of runs.")
        if self.end_kind == EndKind.UNTIL:
            if not self.end_date:
                errors["end_date"] = _("Give the date the schedule ends.")
            elif self.start and self.end_date <= self.start:
                errors["end_date"] = _("The end must come after the start.")
        if errors:
            raise ValidationError(errors)

    @property
    def frequency(self) -> str:
        """The selection's frequency name this schedule amounts to ("once", "daily", …, or "custom")."""
        if self.end_kind == EndKind.RUNS and self.max_runs == 1:
            return "once"
        return _FREQUENCY_NAMES.get((Unit(self.unit), self.every), "custom")

    def _clock(self):
        """The time zone the recurrence is computed in."""
        if Unit(self.unit) in (Unit.MINUTE, Unit.HOUR):
            return UTC
        return zoneinfo.ZoneInfo(settings.TIME_ZONE)

    def rule(self) -> rrule.rrule:
        """The recurrence as an rrule.

        Periods of days or more follow the wall clock of ``TIME_ZONE`` (a daily
        run at 10:00 stays at 10:00 across daylight-saving changes); minutes and
        hours follow UTC, so no run is doubled or lost when clocks change. A
        run on day 29 to 31 falls on the last day of a shorter month.
        """
        unit = Unit(self.unit)
        start = self.start.astimezone(self._clock())
        options: dict = {"freq": _FREQ[unit], "interval": self.every, "dtstart": start.replace(microsecond=0)}
        if unit != Unit.MINUTE:
            options["bysecond"] = 0
            if self.at_minute is not None:
                options["byminute"] = self.at_minute
            else:  # "at 03h" means 03:00; "any time" keeps the start's minute
                options["byminute"] = 0 if self.at_hour is not None else start.minute
        if unit in (Unit.DAY, Unit.WEEK, Unit.MONTH):
            options["byhour"] = self.at_hour if self.at_hour is not None else start.hour
        if unit == Unit.WEEK:
            options["byweekday"] = self.at_weekday if self.at_weekday is not None else start.weekday()
        if unit == Unit.MONTH:
            day = self.at_day or start.day
            if day > 28:
                options["bymonthday"] = list(range(28, day + 1))
                options["bysetpos"] = -1
            else:
                options["bymonthday"] = day
        if self.end_kind == EndKind.UNTIL and self.end_date:
            options["until"] = self.end_date.astimezone(start.tzinfo)
        return rrule.rrule(**options)

    def runs(
        self, after: datetime | None = None, count: int = 5, *, inclusive: bool = True
    ) -> list[datetime]:
        """The next ``count`` run dates from ``after`` (now by default), in UTC."""
        after = (after or timezone.now()).astimezone(UTC)
        dates = self.rule().xafter(after.astimezone(self._clock()), count=count, inc=inclusive)
        return [date.astimezone(UTC) for date in islice(dates, count)]

    def next_run(self, after: datetime | None = None, *, inclusive: bool = True) -> datetime | None:
        """The first run at or after ``after`` (strictly after if not inclusive); None once ended."""
        runs = self.runs(after, count=1, inclusive=inclusive)
        return runs[0] if runs else None

    def runs_between(self, start: datetime, end: datetime) -> list[datetime]:
        """The run dates in [start, end], in UTC."""
        clock = self._clock()
        dates = self.rule().between(start.astimezone(clock), end.astimezone(clock), inc=True)
        return [date.astimezone(UTC) for date in dates]
