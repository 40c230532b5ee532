"""The crawl feed: exactly the targets due in the window, with their seeds, schedule, scope and limits."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from harvest.choices import HarvestKind
from harvest.models import DomainConfiguration
from harvest.services.domains import configuration_save, domain_create, domains_create_bulk, seed_list_save
from harvest.services.planning import (
    definition_configurations_change,
    definition_save,
    definition_set_active,
    schedule_save,
    template_save,
    trap_list_save,
)
from tests.factories import UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

PARIS = ZoneInfo("Europe/Paris")
URL = "/api/crawl-feed/"


@pytest.fixture
def curator():
    return UserFactory(username="claire", roles=[Role.CURATOR])


@pytest.fixture
def api(client, curator):
    client.force_login(curator)
    return client


def day_start(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@pytest.fixture
def day():
    """The window's day: the day after tomorrow (UTC), so that the default window never reaches it."""
    return day_start(timezone.now() + timedelta(days=2))


def window(start, end=None, **params):
    end = end or start + timedelta(days=1)
    query = {"start": start.isoformat(), "end": end.isoformat(), **params}
    return URL + "?" + "&".join(f"{k}={v.replace('+', '%2B')}" for k, v in query.items())


@pytest.fixture
def plan(day, default_template):
    """Definitions with schedules that do and do not run on ``day``, and what they harvest."""
    now = timezone.now()
    daily = schedule_save(name="daily at 3", start=now - timedelta(days=3), unit="day", at_hour=3)
    weekly = schedule_save(
        name="weekly",
        start=now - timedelta(days=30),
        unit="week",
        at_weekday=day.weekday(),
        at_hour=12,
        end_kind="until",
        end_date=day + timedelta(days=60),
    )
    # Monthly on a day that is neither today, tomorrow, nor the window's day or the next.
    busy = {(now + timedelta(days=n)).astimezone(PARIS).day for n in range(4)}
    monthly = schedule_save(
        name="monthly",
        start=now - timedelta(days=90),
        unit="month",
        at_day=min(set(range(1, 29)) - busy),
        at_hour=12,
    )
    once = schedule_save(name="once", start=day + timedelta(hours=8), unit="day", end_kind="runs", max_runs=1)

    trap_list_save(name="calendars", traps=".*/calendar/.*")
    trap_list_save(name="old", traps=".*/old/.*", is_active=False)

    example = domain_create(name="example.fr", crawler_traps="# agendas\n.*/agenda/.*")
    news = domain_create(name="news.fr")
    old = domain_create(name="old.fr")
    robots_off = template_save(
        name="robots-off", depth_policy="clicks", clicks=2, max_hops=5, obey_robots=False
    )
    front = seed_list_save(
        domain=news, name="front", seeds="https://news.fr/\n# politics\nhttps://news.fr/politics/"
    )
    front_page = configuration_save(
        domain=news,
        name="front-page",
        template=robots_off,
        seed_lists=[front],
        max_objects=500,
        max_bytes=10**6,
        max_request_rate=30,
    )

    def definition(name, schedule, configurations, **fields):
        made = definition_save(kind=HarvestKind.SELECTIVE, name=name, schedule=schedule, **fields)
        definition_configurations_change(definition=made, add=configurations)
        return made

    definitions = {
        "daily": definition(
            "a-daily", daily, [example.default_configuration, front_page], crawler_traps=".*/print/.*"
        ),
        "weekly": definition("b-weekly", weekly, [front_page]),
        "monthly": definition("c-monthly", monthly, [old.default_configuration]),
        "inactive": definition("d-inactive", daily, [old.default_configuration]),
        "once": definition("e-once", once, [example.default_configuration]),
    }
    definition_set_active(definition=definitions["inactive"], is_active=False)
    definition_save(kind=HarvestKind.SNAPSHOT, name="broad")
    return {
        "definitions": definitions,
        "schedules": {"daily": daily, "weekly": weekly, "once": once},
        "example": example.default_configuration,
        "front_page": front_page,
        "template": robots_off,
    }


def dates(items):
    """The items with their dates parsed, to compare instants rather than their spelling."""
    for item in items:
        for schedule in item["schedules"]:
            schedule["startDate"] = datetime.fromisoformat(schedule["startDate"])
            if schedule["endDate"]:
                schedule["endDate"] = datetime.fromisoformat(schedule["endDate"])
            schedule["nextRuns"] = [datetime.fromisoformat(run) for run in schedule["nextRuns"]]
    return items


def expected_items(plan, day):
    definitions, schedules = plan["definitions"], plan["schedules"]
    example_seeds = [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]

    def ref(key):
        return {"id": definitions[key].pk, "name": definitions[key].name}

    def schedule(key, frequency, runs, end=None):
        return [{"frequency": frequency, "startDate": schedules[key].start, "endDate": end, "nextRuns": runs}]

    at_three = datetime(day.year, day.month, day.day, 3, tzinfo=PARIS)
    at_noon = datetime(day.year, day.month, day.day, 12, tzinfo=PARIS)
    default = {"template": {"name": "default", "version": 1}, "scope": "domain", "depth": 20, "maxHops": 20}
    robots_off = {
        "template": {"name": "robots-off", "version": 1},
        "scope": "clicks",
        "depth": 2,
        "maxHops": 5,
    }
    unlimited = {"maxObjects": -1, "maxBytes": -1, "maxRequestRate": 0}
    budget = {"maxObjects": 500, "maxBytes": 10**6, "maxRequestRate": 30}
    news_seeds = ["https://news.fr/", "https://news.fr/politics/"]
    return [
        {
            "id": plan["example"].pk,
            "title": "example.fr / defaultconfig",
            "domain": "example.fr",
            "harvestDefinition": ref("daily"),
            "seeds": example_seeds,
            "schedules": schedule("daily", "daily", [at_three]),
            **default,
            "ignoreRobotsTxt": False,
            "limits": unlimited,
            "traps": [".*/calendar/.*", ".*/print/.*", ".*/agenda/.*"],
        },
        {
            "id": plan["front_page"].pk,
            "title": "news.fr / front-page",
            "domain": "news.fr",
            "harvestDefinition": ref("daily"),
            "seeds": news_seeds,
            "schedules": schedule("daily", "daily", [at_three]),
            **robots_off,
            "ignoreRobotsTxt": True,
            "limits": budget,
            "traps": [".*/calendar/.*", ".*/print/.*"],
        },
        {
            "id": plan["front_page"].pk,
            "title": "news.fr / front-page",
            "domain": "news.fr",
            "harvestDefinition": ref("weekly"),
            "seeds": news_seeds,
            "schedules": schedule("weekly", "weekly", [at_noon], end=day + timedelta(days=60)),
            **robots_off,
            "ignoreRobotsTxt": True,
            "limits": budget,
            "traps": [".*/calendar/.*"],
        },
        {
            "id": plan["example"].pk,
            "title": "example.fr / defaultconfig",
            "domain": "example.fr",
            "harvestDefinition": ref("once"),
            "seeds": example_seeds,
            "schedules": schedule("once", "once", [day + timedelta(hours=8)]),
            **default,
            "ignoreRobotsTxt": False,
            "limits": unlimited,
            "traps": [".*/calendar/.*", ".*/agenda/.*"],
        },
    ]


def test_the_feed_holds_exactly_what_runs_in_the_window(api, plan, day):
    assert reverse("api:crawl-feed") == URL
    response = api.get(window(day))
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["count"] == 4 and body["next"] is None
    # Not the monthly (no run that day), the inactive definition, nor the snapshot.
    assert dates(body["results"]) == expected_items(plan, day)


@pytest.mark.parametrize(
    ("frequency", "indexes"),
    [("daily", [0, 1]), ("weekly", [2]), ("once", [3]), ("monthly", []), ("annual", []), ("custom", [])],
)
def test_the_frequency_filter(api, plan, day, frequency, indexes):
    body = api.get(window(day, frequency=frequency)).json()
    expected = expected_items(plan, day)
    assert dates(body["results"]) == [expected[i] for i in indexes]


def test_runs_are_listed_up_to_the_schedules_end(api, plan, day):
    """Over three days the daily runs three times; the one-off once, though its rule repeats daily."""
    body = api.get(window(day, day + timedelta(days=3))).json()
    runs = {
        (item["harvestDefinition"]["name"], item["domain"]): item["schedules"][0]["nextRuns"]
        for item in dates(body["results"])
    }
    three = [
        datetime(d.year, d.month, d.day, 3, tzinfo=PARIS) for d in (day + timedelta(days=n) for n in range(3))
    ]
    assert runs[("a-daily", "example.fr")] == three
    assert runs[("e-once", "example.fr")] == [day + timedelta(hours=8)]
    assert len(runs[("b-weekly", "news.fr")]) == 1


def test_the_default_window_is_the_next_day(api, plan):
    before = timezone.now()
    body = dates(api.get(URL).json()["results"])
    after = timezone.now()
    assert [(i["harvestDefinition"]["name"], i["domain"]) for i in body] == [
        ("a-daily", "example.fr"),
        ("a-daily", "news.fr"),
    ]
    [run] = body[0]["schedules"][0]["nextRuns"]
    assert before <= run <= after + timedelta(days=1)
    assert run.astimezone(PARIS).hour == 3


def test_the_feed_is_paginated(api, plan, day):
    domains_create_bulk(names=[f"site{n:02}.fr" for n in range(55)])
    extra = list(DomainConfiguration.objects.filter(domain__name__startswith="site"))
    definition_configurations_change(definition=plan["definitions"]["daily"], add=extra)
    first = api.get(window(day)).json()
    assert first["count"] == 59 and len(first["results"]) == 50 and first["previous"] is None
    second = api.get(first["next"]).json()
    assert len(second["results"]) == 9 and second["next"] is None
    items = [(i["harvestDefinition"]["name"], i["domain"]) for i in first["results"] + second["results"]]
    daily_domains = ["example.fr", "news.fr", *[f"site{n:02}.fr" for n in range(55)]]
    assert items == [
        *sorted(("a-daily", name) for name in daily_domains),
        ("b-weekly", "news.fr"),
        ("e-once", "example.fr"),
    ]


def test_a_token_opens_the_feed_to_planning_roles_only(client, plan, day):
    url = window(day)
    assert client.get(url).status_code == 401
    assert client.get(url, HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    for role, expected in [
        (Role.CURATOR, 200),
        (Role.ENGINEER, 200),
        ("admin", 200),
        (Role.LIBRARIAN, 403),
        (Role.MANAGER, 403),
        (None, 403),
    ]:
        if role == "admin":
            user = UserFactory(is_superuser=True, is_staff=True)
        else:
            user = UserFactory(roles=[role] if role else [])
        token = Token.objects.create(user=user)
        response = client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}")
        assert response.status_code == expected, role
        if expected == 200:
            assert response.json()["count"] == 4


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("start=yesterday", {"start": ["Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z."]}),
        # Empty is not "left out": a script that lost its variable must not be answered with today.
        ("start=", {"start": ["Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z."]}),
        (
            "start=2025-06-01T00:00:00Z&end=",
            {"end": ["Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z."]},
        ),
        ("frequency=", {"frequency": ["Empty: give a value or leave the parameter out."]}),
        ("end=2025-13-01", {"end": ["Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z."]}),
        (
            "start=2025-06-02T00:00:00Z&end=2025-06-01T00:00:00Z",
            {"end": ["The end must come after the start."]},
        ),
        (
            "start=2025-06-01T00:00:00Z&end=2025-06-01T00:00:00Z",
            {"end": ["The end must come after the start."]},
        ),
        (
            "start=2025-01-01T00:00:00Z&end=2027-01-01T00:00:00Z",
            {"end": ["The window is at most 366 days long."]},
        ),
        (
            "frequency=hourly",
            {
                "frequency": [
                    "“hourly” is not a frequency: use daily, weekly, monthly, twice-yearly, annual, "
                    "once or custom."
                ]
            },
        ),
    ],
)
def test_bad_parameters_are_a_400_that_says_why(api, query, expected):
    response = api.get(f"{URL}?{query}")
    assert response.status_code == 400
    assert response.json() == expected


def test_dates_without_a_time_or_a_zone_are_understood(api, plan, day):
    start = day.astimezone(timezone.get_current_timezone()).replace(tzinfo=None)
    body = api.get(
        f"{URL}?start={start.isoformat()}&end={(day + timedelta(days=1)).date().isoformat()}"
    ).json()
    assert body["count"] == 4
    assert dates(body["results"]) == expected_items(plan, day)
