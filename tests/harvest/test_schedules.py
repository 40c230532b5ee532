"""Schedules: next run dates across month ends and daylight-saving changes, ends, and validation."""

import zoneinfo
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError

from harvest.models import Schedule
from harvest.services.planning import schedule_save

pytestmark = pytest.mark.django_db

PARIS = zoneinfo.ZoneInfo("Europe/Paris")


def paris(*args):
    return datetime(*args, tzinfo=PARIS)


def local(dates):
    return [d.astimezone(PARIS).replace(tzinfo=None) for d in dates]


@pytest.fixture(autouse=True)
def _paris(settings):
    settings.TIME_ZONE = "Europe/Paris"


def test_daily_at_a_fixed_hour_keeps_the_wall_clock_across_dst():
    schedule = schedule_save(name="s", start=paris(2026, 3, 27, 0, 0), unit="day", at_hour=10)
    runs = schedule.runs(paris(2026, 3, 27, 0, 0), count=4)
    assert local(runs) == [datetime(2026, 3, d, 10, 0) for d in (27, 28, 29, 30)]
    # 10:00 is 09:00 UTC before the change on 29 March, 08:00 UTC after.
    assert [r.hour for r in runs] == [9, 9, 8, 8]
    assert all(r.tzinfo == UTC for r in runs)
    autumn = schedule.runs(paris(2026, 10, 24, 11, 0), count=2)
    assert local(autumn) == [datetime(2026, 10, 25, 10, 0), datetime(2026, 10, 26, 10, 0)]
    assert [r.hour for r in autumn] == [9, 9]


def test_hourly_schedules_neither_double_nor_lose_a_run_when_clocks_change():
    schedule = schedule_save(
        name="s", start=datetime(2026, 10, 24, 22, 30, tzinfo=UTC), unit="hour", at_minute=30
    )
    runs = schedule.runs(datetime(2026, 10, 24, 23, 0, tzinfo=UTC), count=4)
    assert [r.isoformat() for r in runs] == [
        "2026-10-24T23:30:00+00:00",
        "2026-10-25T00:30:00+00:00",
        "2026-10-25T01:30:00+00:00",  # 02:30 summer time, then 02:30 winter time: both happen
        "2026-10-25T02:30:00+00:00",
    ]


def test_monthly_on_day_31_falls_on_the_last_day_of_shorter_months():
    schedule = schedule_save(
        name="s", start=paris(2026, 1, 1), unit="month", at_day=31, at_hour=2, at_minute=15
    )
    runs = local(schedule.runs(paris(2026, 1, 1), count=5))
    assert runs == [
        datetime(2026, 1, 31, 2, 15),
        datetime(2026, 2, 28, 2, 15),
        datetime(2026, 3, 31, 2, 15),
        datetime(2026, 4, 30, 2, 15),
        datetime(2026, 5, 31, 2, 15),
    ]
    leap = local(schedule.runs(paris(2028, 2, 1), count=1))
    assert leap == [datetime(2028, 2, 29, 2, 15)]


def test_monthly_any_day_from_a_start_on_the_31st_keeps_month_ends():
    schedule = schedule_save(name="s", start=paris(2026, 8, 31, 6, 0), unit="month", every=1)
    assert local(schedule.runs(paris(2026, 8, 31, 6, 0), count=3)) == [
        datetime(2026, 8, 31, 6, 0),
        datetime(2026, 9, 30, 6, 0),
        datetime(2026, 10, 31, 6, 0),
    ]


def test_every_two_weeks_on_a_weekday():
    schedule = schedule_save(
        name="s", start=paris(2026, 11, 2), unit="week", every=2, at_weekday=4, at_hour=20
    )
    assert local(schedule.runs(paris(2026, 11, 2), count=3)) == [
        datetime(2026, 11, 6, 20, 0),
        datetime(2026, 11, 20, 20, 0),
        datetime(2026, 12, 4, 20, 0),
    ]


def test_every_n_minutes_and_any_time():
    schedule = schedule_save(name="s", start=datetime(2026, 1, 1, 0, 7, tzinfo=UTC), unit="minute", every=45)
    assert [r.strftime("%H:%M") for r in schedule.runs(datetime(2026, 1, 1, tzinfo=UTC), count=3)] == [
        "00:07",
        "00:52",
        "01:37",
    ]


def test_until_a_date_ends_the_runs():
    schedule = schedule_save(
        name="s",
        start=paris(2026, 1, 1, 9, 0),
        unit="day",
        end_kind="until",
        end_date=paris(2026, 1, 3, 12, 0),
    )
    assert len(schedule.runs(paris(2026, 1, 1), count=10)) == 3
    assert schedule.next_run(paris(2026, 1, 4)) is None


def test_next_run_inclusive_and_exclusive():
    schedule = schedule_save(name="s", start=paris(2026, 1, 1, 9, 0), unit="day")
    at = paris(2026, 1, 5, 9, 0)
    assert schedule.next_run(at) == at
    assert schedule.next_run(at, inclusive=False) == paris(2026, 1, 6, 9, 0)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"unit": "day", "at_weekday": 2}, "at_weekday", "Not used with a period in days"),
        ({"unit": "week", "at_day": 3}, "at_day", "Not used with a period in weeks"),
        ({"unit": "minute", "at_minute": 3}, "at_minute", "Not used with a period in minutes"),
        ({"end_kind": "runs"}, "max_runs", "Give the number of runs."),
        ({"end_kind": "until"}, "end_date", "Give the date the schedule ends."),
        (
            {"end_kind": "until", "end_date": paris(2025, 1, 1)},
            "end_date",
            "The end must come after the start.",
        ),
        ({"every": 0}, "every", "greater than or equal to 1"),
        ({"at_hour": 24, "unit": "day"}, "at_hour", "less than or equal to 23"),
        ({"at_day": 32, "unit": "month"}, "at_day", "less than or equal to 31"),
    ],
)
def test_bad_schedules_are_refused_at_the_field(fields, field, message):
    with pytest.raises(ValidationError) as error:
        schedule_save(name="bad", start=paris(2026, 1, 1), **fields)
    assert message in " ".join(error.value.message_dict[field])
    assert not Schedule.objects.exists()


def test_names_are_unique_whatever_the_case():
    schedule_save(name="Daily")
    with pytest.raises(ValidationError, match="already exists"):
        schedule_save(name="daily")


@pytest.mark.parametrize(
    ("fields", "frequency"),
    [
        ({"unit": "day"}, "daily"),
        ({"unit": "week"}, "weekly"),
        ({"unit": "month"}, "monthly"),
        ({"unit": "month", "every": 6}, "twice-yearly"),
        ({"unit": "month", "every": 12}, "annual"),
        ({"unit": "day", "end_kind": "runs", "max_runs": 1}, "once"),
        ({"unit": "hour", "every": 3}, "custom"),
    ],
)
def test_frequency_names(fields, frequency):
    assert schedule_save(name="s", **fields).frequency == frequency
