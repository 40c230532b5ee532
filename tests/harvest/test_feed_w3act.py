"""The crawl feed as W3ACT writes it: W3ACT's field names, types and vocabulary, for its launchers.

``w3act_crawl_feed.json`` beside this file is an answer of W3ACT's
``/api/crawl/feed/ld/{frequency}`` as its CrawlFeedItem and CrawlSchedule classes
shape it (made-up targets: only the field names and the JSON types are W3ACT's;
the second target has the nulls W3ACT gives a target without login settings or
end date). Our answer must have exactly its keys, with its types, for selective
and snapshot definitions alike.
"""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token

from harvest.api import w3act
from harvest.choices import HarvestKind
from harvest.models import DomainConfiguration, HarvestDefinition, HarvestTemplate, Job
from harvest.services.domains import configuration_save, domain_create, domains_create_bulk, seed_list_save
from harvest.services.planning import (
    definition_configurations_change,
    definition_save,
    definition_set_active,
    schedule_save,
    template_save,
)
from tests.factories import UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

PARIS = ZoneInfo("Europe/Paris")
URL = "/api/crawl-feed/w3act/ld/"
FIXTURE = json.loads((Path(__file__).parent / "w3act_crawl_feed.json").read_text())
# W3ACT's vocabulary (its Const.CrawlFrequency, ScopeType and DepthType).
W3ACT_FREQUENCIES = {
    "DOMAINCRAWL",
    "ANNUAL",
    "SIXMONTHLY",
    "QUARTERLY",
    "MONTHLY",
    "WEEKLY",
    "DAILY",
    "NEVERCRAWL",
}
W3ACT_SCOPES = {"resource", "plus1", "root", "subdomains"}
W3ACT_DEPTHS = {"CAPPED", "CAPPED_LARGE", "DEEP"}
MONDAY = datetime(2025, 1, 6, tzinfo=PARIS)  # the start of the schedules that began in the past


def ms(moment: datetime) -> int:
    """Whole milliseconds since 1970, the sub-millisecond part dropped."""
    return round(moment.replace(microsecond=moment.microsecond // 1000 * 1000).timestamp() * 1000)


@pytest.fixture
def curator():
    return UserFactory(username="claire", roles=[Role.CURATOR])


@pytest.fixture
def api(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def day():
    """The window's day: the day after tomorrow (UTC), beyond the default window."""
    moment = timezone.now() + timedelta(days=2)
    return moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def get(client, frequency="all", **params):
    query = "&".join(f"{k}={v.replace('+', '%2B')}" for k, v in params.items())
    return client.get(f"{URL}{frequency}/" + (f"?{query}" if query else ""))


def feed(client, frequency="all", **params) -> list:
    response = get(client, frequency, **params)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def window(day):
    return {"start": day.isoformat(), "end": (day + timedelta(days=1)).isoformat()}


@pytest.fixture
def plan(day, default_template):
    """Selective definitions of each kind of schedule, current in the window or not, and snapshots."""
    daily = schedule_save(name="daily at 3", start=MONDAY, unit="day", at_hour=3)
    weekly = schedule_save(
        name="weekly",
        start=MONDAY,
        unit="week",
        at_weekday=2,
        at_hour=12,
        end_kind="until",
        end_date=day + timedelta(days=60),
    )
    quarterly = schedule_save(name="quarterly", start=MONDAY, unit="month", every=3, at_day=15, at_hour=6)
    every_two_days = schedule_save(name="every 2 days", start=MONDAY, unit="day", every=2)
    once = schedule_save(name="once", start=day + timedelta(hours=8), unit="day", end_kind="runs", max_runs=1)
    three_runs = schedule_save(
        name="three runs", start=day, unit="day", at_hour=5, end_kind="runs", max_runs=3
    )
    ended = schedule_save(
        name="ended", start=MONDAY, unit="week", end_kind="until", end_date=datetime(2025, 3, 1, tzinfo=UTC)
    )
    later = schedule_save(name="later", start=day + timedelta(days=30), unit="day", at_hour=3)

    example = domain_create(name="example.fr")
    news = domain_create(name="news.fr")
    old = domain_create(name="old.fr")
    domain_create(name="closed.fr", is_active=False)  # not in a snapshot
    robots_off = template_save(
        name="robots-off", depth_policy="clicks", clicks=2, max_hops=5, obey_robots=False
    )
    front = seed_list_save(
        domain=news, name="front", seeds="https://news.fr/\n# politics\nhttps://news.fr/politics/"
    )
    front_page = configuration_save(
        domain=news, name="front-page", template=robots_off, seed_lists=[front], max_bytes=10**9
    )

    def selective(name, schedule, configurations):
        made = definition_save(kind=HarvestKind.SELECTIVE, name=name, schedule=schedule)
        definition_configurations_change(definition=made, add=configurations)
        return made

    example_default, old_default = example.default_configuration, old.default_configuration
    selective("a-daily", daily, [example_default, front_page])
    selective("b-weekly", weekly, [front_page])
    selective("c-quarterly", quarterly, [old_default])
    selective("d-every-2-days", every_two_days, [old_default])  # W3ACT has no word for it
    selective("e-once", once, [example_default])
    selective("f-three-runs", three_runs, [front_page])
    selective("g-ended", ended, [example_default])
    selective("h-later", later, [example_default])
    definition_set_active(definition=selective("i-inactive", daily, [old_default]), is_active=False)
    broad = definition_save(kind=HarvestKind.SNAPSHOT, name="broad")
    definition_set_active(
        definition=definition_save(kind=HarvestKind.SNAPSHOT, name="old-broad"), is_active=False
    )
    return {
        "broad": broad,
        "example": example_default,
        "news": news.default_configuration,
        "old": old_default,
        "front_page": front_page,
    }


def schedules(plan, day):
    """Each definition's schedule as the feed gives it."""
    paris_day = day.astimezone(PARIS).date()

    def at(days, hour):
        d = paris_day + timedelta(days=days)
        return datetime(d.year, d.month, d.day, hour, tzinfo=PARIS)

    return {
        "a-daily": {
            "startDate": ms(datetime(2025, 1, 6, 3, tzinfo=PARIS)),
            "endDate": None,
            "frequency": "DAILY",
        },
        "b-weekly": {
            "startDate": ms(datetime(2025, 1, 8, 12, tzinfo=PARIS)),
            "endDate": ms(day + timedelta(days=60)),
            "frequency": "WEEKLY",
        },
        "c-quarterly": {
            "startDate": ms(datetime(2025, 1, 15, 6, tzinfo=PARIS)),
            "endDate": None,
            "frequency": "QUARTERLY",
        },
        "e-once": {
            "startDate": ms(day + timedelta(hours=8)),
            "endDate": ms(day + timedelta(hours=8)),
            "frequency": "DAILY",
        },
        "f-three-runs": {"startDate": ms(at(0, 5)), "endDate": ms(at(2, 5)), "frequency": "DAILY"},
        "broad": {"startDate": ms(plan["broad"].created_at), "endDate": None, "frequency": "DOMAINCRAWL"},
    }


def expected_targets(plan, day, names=None):
    """The targets of the plan with the schedules of the definitions named (all by default)."""
    every = schedules(plan, day)
    wanted = every.keys() if names is None else names
    example_seeds = [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]

    def item(configuration, title, seeds, depth, scope, robots_ignored, definitions):
        return {
            "id": configuration.pk,
            "title": title,
            "seeds": seeds,
            "depth": depth,
            "scope": scope,
            "ignoreRobotsTxt": robots_ignored,
            "schedules": [every[name] for name in definitions if name in wanted],
            "watched": False,
            "documentUrlScheme": None,
            "loginPageUrl": None,
            "logoutUrl": None,
            "secretId": None,
        }

    targets = [
        item(
            plan["example"],
            "example.fr / defaultconfig",
            example_seeds,
            "DEEP",
            "subdomains",
            False,
            ["a-daily", "broad", "e-once"],
        ),
        item(
            plan["news"],
            "news.fr / defaultconfig",
            [seed.replace("example", "news") for seed in example_seeds],
            "DEEP",
            "subdomains",
            False,
            ["broad"],
        ),
        item(
            plan["old"],
            "old.fr / defaultconfig",
            [seed.replace("example", "old") for seed in example_seeds],
            "DEEP",
            "subdomains",
            False,
            ["broad", "c-quarterly"],
        ),
        item(
            plan["front_page"],
            "news.fr / front-page",
            ["https://news.fr/", "https://news.fr/politics/"],
            "CAPPED_LARGE",
            "plus1",
            True,
            ["a-daily", "b-weekly", "f-three-runs"],
        ),
    ]
    return sorted((t for t in targets if t["schedules"]), key=lambda t: t["id"])


# The shape: W3ACT's keys and types ---------------------------------------------------------------


def allowed_types(objects: list[dict]) -> dict[str, set[type]]:
    """For each key of the fixture's objects, the JSON types its values have there (null included)."""
    types: dict[str, set[type]] = {}
    for obj in objects:
        for key, value in obj.items():
            types.setdefault(key, set()).add(type(value))
    return types


def assert_w3act_shape(targets: list):
    target_types = allowed_types(FIXTURE)
    schedule_types = allowed_types([s for t in FIXTURE for s in t["schedules"]])
    assert isinstance(targets, list)
    for target in targets:
        assert list(target) == list(FIXTURE[0]), "W3ACT's keys, in its order"
        for key, value in target.items():
            assert type(value) in target_types[key], (key, value)  # bool is not taken for int here
        assert all(type(seed) is str for seed in target["seeds"])
        assert target["scope"] in W3ACT_SCOPES and target["depth"] in W3ACT_DEPTHS
        for schedule in target["schedules"]:
            assert schedule.keys() == FIXTURE[0]["schedules"][0].keys()
            for key, value in schedule.items():
                assert type(value) in schedule_types[key], (key, value)
            assert schedule["frequency"] in W3ACT_FREQUENCIES


def test_the_fixture_is_w3acts_shape():
    """The fixture itself: every field of W3ACT's feed item, of one JSON type (or null)."""
    assert [set(t) for t in FIXTURE] == [
        {
            "id",
            "title",
            "seeds",
            "depth",
            "scope",
            "ignoreRobotsTxt",
            "schedules",
            "watched",
            "documentUrlScheme",
            "loginPageUrl",
            "logoutUrl",
            "secretId",
        }
    ] * 2
    assert {t["schedules"][0]["frequency"] for t in FIXTURE} <= W3ACT_FREQUENCIES


def test_selective_and_snapshot_targets_have_w3acts_keys_and_types(api, plan, day):
    targets = feed(api, "all", **window(day))
    assert_w3act_shape(targets)
    frequencies = {s["frequency"] for t in targets for s in t["schedules"]}
    assert frequencies == {"DAILY", "WEEKLY", "QUARTERLY", "DOMAINCRAWL"}  # selective and snapshot


def test_the_feed_holds_the_schedules_current_in_the_window(api, plan, day):
    """Not the schedule W3ACT cannot say (every 2 days), the ended, the later, nor the inactive ones."""
    assert feed(api, "all", **window(day)) == expected_targets(plan, day)


@pytest.mark.parametrize(
    ("frequency", "names"),
    [
        ("DAILY", ["a-daily", "e-once", "f-three-runs"]),
        ("daily", ["a-daily", "e-once", "f-three-runs"]),
        ("WEEKLY", ["b-weekly"]),
        ("QUARTERLY", ["c-quarterly"]),
        ("monthly", []),
        ("ANNUAL", []),
        ("SIXMONTHLY", []),
        ("DOMAINCRAWL", ["broad"]),
        ("domaincrawl", ["broad"]),
        ("NEVERCRAWL", []),
        ("nevercrawl", []),
        ("frequent", ["a-daily", "b-weekly", "c-quarterly", "e-once", "f-three-runs"]),
        ("FREQUENT", ["a-daily", "b-weekly", "c-quarterly", "e-once", "f-three-runs"]),
        ("ALL", None),
    ],
)
def test_the_frequency_in_the_path(api, plan, day, frequency, names):
    assert feed(api, frequency, **window(day)) == expected_targets(plan, day, names)


def test_the_default_window_is_two_hours_either_side_of_now(api, plan, day):
    """As W3ACT's tolerance: the one-off run and the three runs start the day after tomorrow."""
    targets = {t["id"]: [s["frequency"] for s in t["schedules"]] for t in feed(api, "all")}
    assert targets == {
        plan["example"].pk: ["DAILY", "DOMAINCRAWL"],
        plan["news"].pk: ["DOMAINCRAWL"],
        plan["old"].pk: ["DOMAINCRAWL", "QUARTERLY"],
        plan["front_page"].pk: ["DAILY", "WEEKLY"],
    }
    assert feed(api, "all", start=(day + timedelta(hours=7)).isoformat()) == expected_targets(
        plan, day, ["a-daily", "b-weekly", "c-quarterly", "e-once", "f-three-runs", "broad"]
    )


def test_a_schedule_of_too_many_runs_left_has_no_end(api, plan, day, monkeypatch):
    monkeypatch.setattr(w3act, "MAX_RUNS_FOR_END", 2)
    [front_page] = [t for t in feed(api, "DAILY", **window(day)) if t["id"] == plan["front_page"].pk]
    three_runs = schedules(plan, day)["f-three-runs"]
    assert front_page["schedules"][1] == {**three_runs, "endDate": None}


def test_the_array_is_streamed_in_chunks_in_the_order_of_ids(api, plan, day, monkeypatch):
    """Many snapshot targets, read a few at a time: the same array, every active domain once."""
    domains_create_bulk(names=[f"site{n:02}.fr" for n in range(23)])
    whole = feed(api, "all", **window(day))
    monkeypatch.setattr(w3act, "CHUNK", 4)
    chunked = feed(api, "all", **window(day))
    assert chunked == whole
    ids = [t["id"] for t in chunked]
    assert ids == sorted(ids) and len(ids) == 4 + 23
    sites = [t for t in chunked if t["title"].startswith("site")]
    assert len(sites) == 23
    assert all(t["schedules"] == [schedules(plan, day)["broad"]] for t in sites)
    assert_w3act_shape(chunked)


def test_nothing_planned_is_an_empty_array(api):
    assert feed(api, "all") == []


def test_a_path_without_its_last_slash_is_redirected(api):
    response = api.get("/api/crawl-feed/w3act/ld/daily")
    assert response.status_code == 301 and response["Location"] == "/api/crawl-feed/w3act/ld/daily/"


# Our concepts in W3ACT's words ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "clicks", "scope"),
    [
        ("page", 1, "resource"),
        ("clicks", 0, "resource"),
        ("clicks", 1, "plus1"),
        ("clicks", 3, "plus1"),
        ("path", 1, "root"),
        ("host", 1, "root"),
        ("domain", 1, "subdomains"),
    ],
)
def test_scope_from_the_depth_policy(policy, clicks, scope):
    assert w3act.scope(HarvestTemplate(depth_policy=policy, clicks=clicks)) == scope


@pytest.mark.parametrize(
    ("max_bytes", "depth"),
    [
        (-1, "DEEP"),
        (0, "CAPPED"),
        (500 * 10**6, "CAPPED"),
        (500 * 10**6 + 1, "CAPPED_LARGE"),
        (2 * 10**9, "CAPPED_LARGE"),
        (2 * 10**9 + 1, "DEEP"),
    ],
)
def test_depth_from_the_byte_limit(max_bytes, depth):
    assert w3act.depth(DomainConfiguration(max_bytes=max_bytes)) == depth


def test_dates_are_exact_epoch_milliseconds():
    assert w3act.epoch_ms(datetime(2015, 7, 30, 9, tzinfo=UTC)) == 1438246800000
    assert w3act.epoch_ms(datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) == -1
    assert w3act.epoch_ms(datetime(2999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == 32503680000000 - 1


# Who may read it, and bad input -----------------------------------------------------------------


def test_a_token_opens_the_feed_to_planning_roles_only(client, plan, day):
    # The roles are our feed's (test_feed.py covers each); here, that a launcher's token reaches them.
    url = f"{URL}all/?start={day.isoformat().replace('+', '%2B')}"
    assert client.get(url).status_code == 401
    assert client.get(url, HTTP_AUTHORIZATION="Token not-a-token").status_code == 401
    for role, expected in [(Role.CURATOR, 200), (Role.LIBRARIAN, 403)]:
        token = Token.objects.create(user=UserFactory(roles=[role]))
        response = client.get(url, HTTP_AUTHORIZATION=f"Token {token.key}")
        assert response.status_code == expected, role
        if expected == 200:
            assert len(json.loads(b"".join(response.streaming_content))) == 4


FREQUENCY_MESSAGE = (
    "“{}” is not a W3ACT frequency: use DAILY, WEEKLY, MONTHLY, QUARTERLY, SIXMONTHLY, ANNUAL, "
    "DOMAINCRAWL, NEVERCRAWL, all or frequent (in capitals or in lower case)."
)
TAKES = "Unknown query parameter(s): {}. This endpoint takes: end, start."


@pytest.mark.parametrize(
    ("frequency", "query", "expected"),
    [
        ("hourly", "", {"frequency": [FREQUENCY_MESSAGE.format("hourly")]}),
        ("Daily", "", {"frequency": [FREQUENCY_MESSAGE.format("Daily")]}),
        ("once", "", {"frequency": [FREQUENCY_MESSAGE.format("once")]}),
        ("x" * 300, "", {"frequency": [FREQUENCY_MESSAGE.format("x" * 100)]}),
        ("all", "frequency=DAILY", {"detail": TAKES.format("frequency")}),
        ("all", "page=2&startdate=1", {"detail": TAKES.format("page, startdate")}),
        (
            "all",
            "start=yesterday",
            {"start": ["Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z."]},
        ),
        (
            "all",
            "end=2025-13-01",
            {"end": ["Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z."]},
        ),
        (
            "all",
            "start=2025-06-02T00:00:00Z&end=2025-06-01T00:00:00Z",
            {"end": ["The end must come after the start."]},
        ),
        (
            "all",
            "start=2025-06-01T00:00:00Z&end=2025-06-01T00:00:00Z",
            {"end": ["The end must come after the start."]},
        ),
        ("all", "end=2000-01-01T00:00:00Z", {"end": ["The end must come after the start."]}),
        (
            "all",
            "start=2025-01-01T00:00:00Z&end=2027-01-01T00:00:00Z",
            {"end": ["The window is at most 366 days long."]},
        ),
        ("all", "start=0001-01-01T00:00:00Z", {"start": ["Dates go from 1900-01-01 to 2999-12-31."]}),
        (
            "all",
            "start=&end=",
            {
                "start": ["Not a date and time: use ISO 8601, such as 2025-06-01T00:00:00Z."],
                "end": ["Not a date and time: use ISO 8601, such as 2025-06-02T00:00:00Z."],
            },
        ),
    ],
)
def test_bad_input_is_a_400_that_says_why_and_changes_nothing(api, plan, frequency, query, expected):
    def state():
        return (
            list(HarvestDefinition.objects.order_by("pk").values()),
            HarvestDefinition.history.count(),
            Job.objects.count(),
        )

    before = state()
    response = api.get(f"{URL}{frequency}/" + (f"?{query}" if query else ""))
    assert response.status_code == 400
    assert response.json() == expected
    assert state() == before


def test_the_schema_documents_w3acts_array(api):
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/crawl-feed/w3act/ld/{frequency}/"]["get"]
    [path_parameter] = [p for p in operation["parameters"] if p["in"] == "path"]
    assert set(path_parameter["schema"]["enum"]) == (
        W3ACT_FREQUENCIES | {f.lower() for f in W3ACT_FREQUENCIES} | {"all", "frequent", "ALL", "FREQUENT"}
    )
    assert {p["name"] for p in operation["parameters"] if p["in"] == "query"} == {"start", "end"}
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert answer == {"type": "array", "items": {"$ref": "#/components/schemas/W3actTarget"}}  # not paginated
    components = schema["components"]["schemas"]
    assert list(components["W3actTarget"]["properties"]) == list(FIXTURE[0])
    assert set(components["W3actTarget"]["required"]) == set(FIXTURE[0])
    assert set(components["W3actSchedule"]["properties"]) == set(FIXTURE[0]["schedules"][0])
    assert "400" in operation["responses"]
