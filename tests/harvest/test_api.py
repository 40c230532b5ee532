"""The planning API: every resource read and written through HTTP, writes through the services,
bad input refused at its field with nothing written, and the role rules."""

from datetime import datetime, timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from harvest.choices import HarvestKind, JobStatus, StopReason
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    HarvestRun,
    HarvestTemplate,
    Job,
    Schedule,
    SeedList,
    TransferReport,
)
from harvest.services.domains import configuration_save, domain_set_alias, seed_list_save
from harvest.services.jobs import harvest_info_record, job_transition
from harvest.services.launcher import jobs_generate
from harvest.services.planning import definition_configurations_change, definition_save
from selection.choices import Budget, Depth, Frequency, RecordStatus
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def curator():
    return UserFactory(username="claire", roles=[Role.CURATOR])


@pytest.fixture
def engineer():
    return UserFactory(username="eric", roles=[Role.ENGINEER])


@pytest.fixture
def api(client, curator):
    client.force_login(curator)
    return client


def post(client, url, data=None):
    return client.post(url, data or {}, content_type="application/json")


def read_version(client, url, data):
    """A change as a client sends it: over the version it has just read (unless the test gives one)."""
    if "version" in data:
        return data
    response = client.get(url)
    if response.status_code != 200 or "version" not in response.json():  # a mapping has none
        return data
    return {**data, "version": response.json()["version"]}


def patch(client, url, data):
    return client.patch(url, read_version(client, url, data), content_type="application/json")


def put(client, url, data):
    return client.put(url, read_version(client, url, data), content_type="application/json")


RENDER_TIMES = "The time per behaviour cannot be longer than the time per rendered page, which includes it."
# The template fields of browser rendering, as the API reads and writes them.
BROWSER_FIELDS = (
    "render",
    "behaviour_scroll",
    "behaviour_click",
    "behaviour_media",
    "render_page_seconds",
    "render_behaviour_seconds",
    "viewport_width",
    "viewport_height",
)


def detail(name, obj, **kwargs):
    return reverse(f"api:{name}-detail", kwargs={"pk": obj.pk, **kwargs})


def names(response):
    assert response.status_code == 200, response.json()
    return [item["name"] for item in response.json()["results"]]


# Domains ---------------------------------------------------------------------------------------


def test_domains_are_listed_filtered_and_read_with_their_configurations(api, make_domain):
    domain = make_domain("example.fr")
    make_domain("news.org", comments="Closed in 2019")
    url = reverse("api:domain-list")
    assert names(api.get(url)) == ["example.fr", "news.org"]
    assert names(api.get(url + "?q=exam")) == ["example.fr"]
    assert names(api.get(url + "?q=*.org")) == ["news.org"]
    assert names(api.get(url + "?comments=closed")) == ["news.org"]
    body = api.get(detail("domain", domain)).json()
    configuration = DomainConfiguration.objects.get(domain=domain)
    assert body["default_configuration"] == configuration.pk
    assert body["configurations"] == [{"id": configuration.pk, "name": "defaultconfig"}]
    assert body["seed_lists"] == [{"id": SeedList.objects.get(domain=domain).pk, "name": "defaultseeds"}]
    assert body["alias_of"] is None and body["is_live_alias"] is False


def test_creating_a_domain_gives_it_its_defaults(api, default_template):
    response = post(api, reverse("api:domain-list"), {"name": "Example.FR", "comments": "A test"})
    assert response.status_code == 201, response.json()
    domain = Domain.objects.get(name="example.fr")
    assert response.json()["id"] == domain.pk and domain.comments == "A test"
    assert domain.default_configuration.template == default_template
    assert SeedList.objects.get(domain=domain).seed_urls == [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]
    assert domain.history.first().history_user.username == "claire"


def test_a_new_domain_may_be_inactive_and_have_its_own_seeds(api):
    response = post(
        api,
        reverse("api:domain-list"),
        {"name": "closed.fr", "is_active": False, "seeds": "https://closed.fr/archive/"},
    )
    assert response.status_code == 201, response.json()
    domain = Domain.objects.get(name="closed.fr")
    assert domain.is_active is False
    assert SeedList.objects.get(domain=domain).seed_urls == ["https://closed.fr/archive/"]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("www.example.fr", "www.example.fr is a host, the domain is example.fr."),
        (
            "co.uk",
            "co.uk is a public suffix, not a domain: a domain is a name registered under it, "
            "such as example.co.uk.",
        ),
        (
            "https://example.fr/page",
            "“https://example.fr/page” is not a domain name: enter a name such as "
            "example.fr, without scheme, path or port. The domain of this URL is example.fr.",
        ),
    ],
)
def test_a_refused_domain_name_says_exactly_why_and_creates_nothing(api, name, reason):
    response = post(api, reverse("api:domain-list"), {"name": name})
    assert response.status_code == 400
    assert response.json() == {"name": [reason]}
    assert not Domain.objects.exists() and not SeedList.objects.exists()


def test_a_known_domain_is_not_created_twice(api, make_domain):
    make_domain("example.fr")
    response = post(api, reverse("api:domain-list"), {"name": "EXAMPLE.fr"})
    assert response.status_code == 400
    assert response.json() == {"name": ["The domain example.fr already exists."]}
    assert Domain.objects.count() == 1


def test_updating_a_domain_persists_and_bad_traps_change_nothing(api, make_domain):
    domain = make_domain("example.fr")
    url = detail("domain", domain)
    response = patch(api, url, {"comments": "Regional news", "crawler_traps": r".*/calendar/.*"})
    assert response.status_code == 200, response.json()
    domain.refresh_from_db()
    assert domain.comments == "Regional news" and domain.trap_list == [r".*/calendar/.*"]

    response = patch(api, url, {"comments": "changed", "crawler_traps": "ok\n(unclosed"})
    assert response.status_code == 400
    assert response.json() == {
        "crawler_traps": ["Line 2: “(unclosed” is not a valid regular expression: missing ): (unclosed."]
    }
    domain.refresh_from_db()
    assert domain.comments == "Regional news" and domain.trap_list == [r".*/calendar/.*"]


def test_a_domain_keeps_its_name_and_a_default_configuration_of_its_own(api, make_domain):
    domain, other = make_domain("example.fr"), make_domain("other.fr")
    url = detail("domain", domain)
    response = patch(api, url, {"name": "example.com"})
    assert response.status_code == 400
    assert response.json() == {"name": ["This is set when the domain is created and cannot be changed."]}
    assert patch(api, url, {"name": "example.fr", "comments": "same name"}).status_code == 200

    response = patch(api, url, {"default_configuration": other.default_configuration_id})
    assert response.status_code == 400
    assert response.json() == {
        "default_configuration": ["The default configuration must be one of this domain's."]
    }
    domain.refresh_from_db()
    assert domain.name == "example.fr"
    assert domain.default_configuration.domain == domain


def test_a_put_of_what_get_gave_is_accepted(api, make_domain):
    domain = make_domain("example.fr")
    body = api.get(detail("domain", domain)).json()
    body["comments"] = "Put back"
    response = put(api, detail("domain", domain), body)
    assert response.status_code == 200, response.json()
    assert Domain.objects.get(pk=domain.pk).comments == "Put back"


def test_a_domain_cannot_be_deleted(api, make_domain):
    domain = make_domain("example.fr")
    response = api.delete(detail("domain", domain))
    assert response.status_code == 405
    assert Domain.objects.filter(pk=domain.pk).exists()


def test_alias_set_renewed_and_ended(api, make_domain):
    main, alias = make_domain("example.fr"), make_domain("example.com")
    url = reverse("api:domain-alias", kwargs={"pk": alias.pk})
    response = post(api, url, {"alias_of": "EXAMPLE.fr"})
    assert response.status_code == 200, response.json()
    assert response.json()["alias_of"] == "example.fr" and response.json()["is_live_alias"] is True
    alias.refresh_from_db()
    assert alias.alias_of == main
    first = alias.alias_updated_at

    response = post(api, reverse("api:domain-renew-alias", kwargs={"pk": alias.pk}))
    assert response.status_code == 200
    alias.refresh_from_db()
    assert alias.alias_updated_at > first

    response = post(api, url, {"alias_of": None})
    assert response.status_code == 200
    alias.refresh_from_db()
    assert alias.alias_of is None and alias.alias_updated_at is None


def test_alias_chains_and_bad_aliases_are_refused_with_the_reason(api, make_domain):
    main, alias, third = make_domain("example.fr"), make_domain("example.com"), make_domain("example.net")
    domain_set_alias(domain=alias, alias_of=main)
    response = post(api, reverse("api:domain-alias", kwargs={"pk": third.pk}), {"alias_of": "example.com"})
    assert response.status_code == 400
    assert response.json() == {
        "alias_of": [
            "example.com is itself an alias of example.fr; aliases cannot form chains, "
            "make example.net an alias of example.fr instead."
        ]
    }
    response = post(api, reverse("api:domain-alias", kwargs={"pk": third.pk}), {"alias_of": "nowhere.fr"})
    assert response.json() == {"alias_of": ["There is no domain named “nowhere.fr”."]}
    response = post(api, reverse("api:domain-alias", kwargs={"pk": third.pk}), {"alias_of": "example.net"})
    assert response.json() == {"alias_of": ["A domain cannot be an alias of itself."]}
    response = post(api, reverse("api:domain-alias", kwargs={"pk": third.pk}), {})
    assert response.json() == {"alias_of": ["This field is required."]}
    response = post(api, reverse("api:domain-renew-alias", kwargs={"pk": third.pk}))
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["example.net is not an alias."]}
    third.refresh_from_db()
    assert third.alias_of is None and third.alias_updated_at is None


def test_bulk_create_refuses_a_list_with_bad_lines_unless_asked_to_skip_them(api, make_domain):
    make_domain("known.fr")
    url = reverse("api:domain-bulk-create")
    text = "a.fr\nwww.b.fr\n# a comment\nknown.fr\nc.fr\n"
    response = post(api, url, {"text": text})
    assert response.status_code == 400
    assert response.json() == {"text": ["Line 2 (www.b.fr): www.b.fr is a host, the domain is b.fr."]}
    assert list(Domain.objects.values_list("name", flat=True)) == ["known.fr"]

    response = post(api, url, {"text": text, "skip_invalid": True})
    assert response.status_code == 201, response.json()
    assert response.json() == {
        "created": 2,
        "new": ["a.fr", "c.fr"],
        "existing": ["known.fr"],
        "errors": [{"line": 2, "text": "www.b.fr", "reason": "www.b.fr is a host, the domain is b.fr."}],
    }
    assert Domain.objects.get(name="c.fr").default_configuration.name == "defaultconfig"
    assert post(api, url, {"text": ""}).json() == {"text": ["This field may not be blank."]}


# Seed lists and configurations -----------------------------------------------------------------


def test_seed_lists_are_created_updated_and_deleted_when_nothing_uses_them(api, make_domain):
    domain = make_domain("example.fr")
    response = post(
        api,
        reverse("api:seedlist-list"),
        {"domain": "example.fr", "name": "news", "seeds": "# the news\nhttps://example.fr/news/"},
    )
    assert response.status_code == 201, response.json()
    seed_list = SeedList.objects.get(domain=domain, name="news")
    assert response.json()["seed_urls"] == ["https://example.fr/news/"]
    assert names(api.get(reverse("api:seedlist-list") + "?domain=example.fr")) == ["defaultseeds", "news"]

    response = patch(api, detail("seedlist", seed_list), {"seeds": "ftp://example.fr/"})
    assert response.status_code == 400
    assert response.json() == {"seeds": ["Line 1: Only http and https URLs can be harvested, not “ftp”."]}
    response = patch(api, detail("seedlist", seed_list), {"domain": "other.fr"})
    assert response.status_code == 400 and "domain" in response.json()
    response = patch(api, detail("seedlist", seed_list), {"seeds": "https://example.fr/sport/"})
    assert response.status_code == 200
    seed_list.refresh_from_db()
    assert seed_list.seed_urls == ["https://example.fr/sport/"]

    assert api.delete(detail("seedlist", seed_list)).status_code == 204
    assert not SeedList.objects.filter(pk=seed_list.pk).exists()


@pytest.mark.parametrize("kind", ["seedlist", "domainconfiguration"])
def test_a_domain_named_with_a_null_character_is_refused_and_changes_nothing(api, make_domain, kind):
    """PostgreSQL cannot compare a text holding NUL: the name is refused before any lookup."""
    domain = make_domain("example.fr")
    obj = (
        SeedList.objects.filter(domain=domain).first()
        if kind == "seedlist"
        else domain.configurations.first()
    )
    before = obj.version
    for name in ("exa\x00mple.fr", 12):
        response = put(api, detail(kind, obj), {**api.get(detail(kind, obj)).json(), "domain": name})
        assert response.status_code == 400, response.content
        assert "domain" in response.json()
    response = put(api, detail(kind, obj), {**api.get(detail(kind, obj)).json(), "domain": "exa\x00mple.fr"})
    assert response.json() == {"domain": ["Null characters are not allowed."]}
    obj.refresh_from_db()
    assert obj.version == before and obj.domain_id == domain.pk


def test_a_seed_list_in_use_or_the_last_one_is_not_deleted(api, make_domain):
    domain = make_domain("example.fr")
    default = SeedList.objects.get(domain=domain)
    response = api.delete(detail("seedlist", default))
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["The seed list defaultseeds is used by the configurations defaultconfig."]
    }
    assert SeedList.objects.filter(pk=default.pk).exists()


def test_configurations_are_created_and_updated_through_the_service(api, make_domain, template):
    domain = make_domain("example.fr")
    news = seed_list_save(domain=domain, name="news", seeds="https://example.fr/news/")
    response = post(
        api,
        reverse("api:domainconfiguration-list"),
        {
            "domain": "example.fr",
            "name": "news-daily",
            "template": template.pk,
            "seed_lists": [news.pk],
            "max_objects": 500,
        },
    )
    assert response.status_code == 201, response.json()
    configuration = DomainConfiguration.objects.get(domain=domain, name="news-daily")
    assert list(configuration.seed_lists.all()) == [news]
    assert (configuration.max_objects, configuration.max_bytes) == (500, -1)
    assert response.json()["is_default"] is False

    response = patch(api, detail("domainconfiguration", configuration), {"max_bytes": 10**9})
    assert response.status_code == 200
    configuration.refresh_from_db()
    assert configuration.max_bytes == 10**9
    body = api.get(reverse("api:domainconfiguration-list") + "?domain=example&name=news").json()
    assert [(c["id"], c["max_bytes"]) for c in body["results"]] == [(configuration.pk, 10**9)]


def test_bad_configurations_are_refused_at_the_field(api, make_domain, template):
    domain, other = make_domain("example.fr"), make_domain("other.fr")
    url = reverse("api:domainconfiguration-list")
    base = {"domain": "example.fr", "name": "x", "template": template.pk}
    response = post(api, url, base)
    assert response.status_code == 400
    assert response.json() == {"seed_lists": ["Choose at least one seed list."]}
    response = post(api, url, {**base, "seed_lists": [SeedList.objects.get(domain=other).pk]})
    assert response.json() == {"seed_lists": ["A configuration uses seed lists of its own domain only."]}
    response = post(api, url, {**base, "seed_lists": [], "max_objects": -5})
    assert response.json() == {"max_objects": ["Ensure this value is greater than or equal to -1."]}
    response = post(
        api, url, {**base, "name": "defaultconfig", "seed_lists": [SeedList.objects.get(domain=domain).pk]}
    )
    assert response.json() == {
        "non_field_errors": ["This domain already has a configuration with this name."]
    }
    assert DomainConfiguration.objects.filter(domain=domain).count() == 1


def test_the_default_configuration_is_not_deleted_an_unused_one_is(api, make_domain, template):
    domain = make_domain("example.fr")
    response = api.delete(detail("domainconfiguration", domain.default_configuration))
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["This is the domain's default configuration; it cannot be removed."]
    }
    assert DomainConfiguration.objects.filter(pk=domain.default_configuration_id).exists()
    spare = configuration_save(
        domain=domain, name="spare", template=template, seed_lists=list(domain.seed_lists.all())
    )
    assert api.delete(detail("domainconfiguration", spare)).status_code == 204
    assert not DomainConfiguration.objects.filter(pk=spare.pk).exists()


def test_a_configuration_in_a_definition_is_not_deleted(api, make_domain, template, selective):
    domain = make_domain("example.fr")
    used = configuration_save(
        domain=domain, name="used", template=template, seed_lists=list(domain.seed_lists.all())
    )
    definition_configurations_change(definition=selective, add=[used])
    response = api.delete(detail("domainconfiguration", used))
    assert response.json() == {
        "non_field_errors": ["This configuration is used by the harvest definitions selective-test."]
    }


def test_bulk_limits_by_ids_or_by_filter_all_or_nothing(api, make_domain):
    a, b, c = make_domain("a.fr"), make_domain("b.fr"), make_domain("c.org")
    url = reverse("api:domainconfiguration-bulk-limits")
    response = post(
        api, url, {"ids": [a.default_configuration_id, b.default_configuration_id], "max_objects": 70}
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {"changed": 2}
    limits = dict(DomainConfiguration.objects.values_list("domain__name", "max_objects"))
    assert limits == {"a.fr": 70, "b.fr": 70, "c.org": -1}

    response = post(api, url, {"filter": {"domain": ".org"}, "max_bytes": 1000})
    assert response.json() == {"changed": 1}
    assert DomainConfiguration.objects.get(domain=c).max_bytes == 1000

    missing = c.default_configuration_id + 100
    refused = [
        (
            {"ids": [a.default_configuration_id, missing], "max_objects": 1},
            {"ids": [f"No configuration has the id {missing}."]},
        ),
        (
            {"filter": {}, "max_objects": 1},
            {"filter": ["Give at least one filter: a budget is not changed for every configuration."]},
        ),
        ({"filter": {"colour": "red"}, "max_objects": 1}, "filter"),
        ({"filter": {"template": 99999}, "max_objects": 1}, "filter"),
        ({"max_objects": 1}, {"non_field_errors": ["Give the ids of the configurations, or a filter."]}),
        (
            {"ids": [a.default_configuration_id]},
            {"non_field_errors": ["Give a new max objects, a new max bytes, or both."]},
        ),
        (
            {"ids": [a.default_configuration_id], "max_objects": -2},
            {"max_objects": ["Ensure this value is greater than or equal to -1."]},
        ),
    ]
    for body, expected in refused:
        response = post(api, url, body)
        assert response.status_code == 400, body
        if isinstance(expected, str):
            assert list(response.json()) == [expected], response.json()
        else:
            assert response.json() == expected
    assert dict(DomainConfiguration.objects.values_list("domain__name", "max_objects")) == limits


# Templates, schedules, channels, traps ----------------------------------------------------------


def test_templates_are_versioned_and_never_deleted(api):
    response = post(
        api,
        reverse("api:harvesttemplate-list"),
        {"name": "deep", "depth_policy": "clicks", "clicks": 3, "obey_robots": False},
    )
    assert response.status_code == 201, response.json()
    template = HarvestTemplate.objects.get(name="deep")
    assert response.json()["settings_version"] == 1 and template.clicks == 3 and template.obey_robots is False
    assert response.json()["version"] == 1
    assert "deep" in names(api.get(reverse("api:harvesttemplate-list") + "?name=dee"))

    response = patch(api, detail("harvesttemplate", template), {"description": "Deep crawls"})
    assert response.json()["settings_version"] == 1  # not a crawler setting
    assert response.json()["version"] == 2  # but a save
    response = patch(api, detail("harvesttemplate", template), {"clicks": 4})
    assert (response.json()["settings_version"], response.json()["version"]) == (2, 3)

    response = patch(api, detail("harvesttemplate", template), {"min_delay": 60, "max_delay": 10})
    assert response.status_code == 400
    assert response.json() == {
        "non_field_errors": ["The minimum delay cannot be longer than the maximum delay."]
    }
    response = patch(api, detail("harvesttemplate", template), {"reject_rules": "[bad"})
    assert list(response.json()) == ["reject_rules"]
    response = patch(api, detail("harvesttemplate", template), {"depth_policy": "everything"})
    assert response.json() == {"depth_policy": ['"everything" is not a valid choice.']}
    template.refresh_from_db()
    assert (template.version, template.min_delay, template.reject_rules) == (2, 1.0, "")

    assert api.delete(detail("harvesttemplate", template)).status_code == 405
    assert HarvestTemplate.objects.filter(pk=template.pk).exists()


def test_browser_rendering_is_written_through_the_api_and_frozen_into_a_job(api, make_domain, selective):
    response = post(
        api,
        reverse("api:harvesttemplate-list"),
        {
            "name": "rendered",
            "render": "all",
            "behaviour_media": False,
            "render_page_seconds": 45,
            "viewport_width": 390,
            "viewport_height": 844,
        },
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert {key: body[key] for key in BROWSER_FIELDS} == {
        "render": "all",
        "behaviour_scroll": True,
        "behaviour_click": True,
        "behaviour_media": False,
        "render_page_seconds": 45.0,
        "render_behaviour_seconds": 10.0,
        "viewport_width": 390,
        "viewport_height": 844,
    }
    template = HarvestTemplate.objects.get(name="rendered")
    response = patch(api, detail("harvesttemplate", template), {"behaviour_click": False})
    assert response.json()["settings_version"] == 2
    assert api.get(reverse("api:harvesttemplate-list") + "?render=all").json()["count"] == 1
    assert api.get(reverse("api:harvesttemplate-list") + "?render=seeds").json()["count"] == 0

    domain = make_domain("example.fr")
    configuration_save(configuration=domain.default_configuration, template=template)
    definition_configurations_change(definition=selective, add=[domain.default_configuration])
    run = HarvestRun.objects.create(harvest_definition=selective, number=1, scheduled_for=timezone.now())
    [job] = jobs_generate(definition=selective, run=run)
    frozen = api.get(detail("job", job)).json()["template_settings"]
    assert (frozen["render"], frozen["behaviours"], frozen["render_page_seconds"]) == (
        "all",
        ["scroll"],
        45.0,
    )
    assert (frozen["viewport_width"], frozen["viewport_height"], frozen["version"]) == (390, 844, 2)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"render_behaviour_seconds": 40},  # the page has 30
            {"render_behaviour_seconds": [RENDER_TIMES]},
        ),
        ({"render": "sometimes"}, {"render": ['"sometimes" is not a valid choice.']}),
        ({"viewport_width": 100}, {"viewport_width": ["Ensure this value is greater than or equal to 320."]}),
        (
            {"viewport_height": 4000},
            {"viewport_height": ["Ensure this value is less than or equal to 2160."]},
        ),
        (
            {"render_page_seconds": 301},
            {"render_page_seconds": ["Ensure this value is less than or equal to 300."]},
        ),
    ],
)
def test_bad_browser_rendering_is_refused_at_its_field_and_changes_nothing(api, template, body, expected):
    before = HarvestTemplate.objects.filter(pk=template.pk).values().get()
    response = patch(api, detail("harvesttemplate", template), body)
    assert response.status_code == 400
    assert response.json() == expected
    assert HarvestTemplate.objects.filter(pk=template.pk).values().get() == before


def test_schedules_show_their_next_five_runs(api):
    start = timezone.now() - timedelta(days=40)
    response = post(
        api,
        reverse("api:schedule-list"),
        {"name": "end of month", "start": start.isoformat(), "unit": "month", "at_day": 31, "at_hour": 2},
    )
    assert response.status_code == 201, response.json()
    schedule = Schedule.objects.get(name="end of month")
    body = api.get(detail("schedule", schedule)).json()
    assert body["frequency"] == "monthly"
    runs = [datetime.fromisoformat(run) for run in body["next_runs"]]
    assert runs == schedule.runs(count=5)
    assert len(runs) == 5 and runs == sorted(runs)
    assert names(api.get(reverse("api:schedule-list") + "?unit=month")) == ["end of month"]


def test_a_bad_schedule_is_refused_at_the_field(api, schedule):
    response = post(api, reverse("api:schedule-list"), {"name": "bad", "unit": "day", "at_weekday": 2})
    assert response.status_code == 400
    assert response.json() == {"at_weekday": ["Not used with a period in days."]}
    response = patch(api, detail("schedule", schedule), {"end_kind": "until"})
    assert response.json() == {"end_date": ["Give the date the schedule ends."]}
    assert not Schedule.objects.filter(name="bad").exists()
    assert Schedule.objects.get(pk=schedule.pk).end_kind == "forever"
    assert api.delete(detail("schedule", schedule)).status_code == 405


def test_channels_are_created_and_never_deleted(api, channels):
    assert set(names(api.get(reverse("api:harvestchannel-list")))) == {"Selective", "Broad"}
    response = post(api, reverse("api:harvestchannel-list"), {"name": "Urgent", "queue": "crawl-high"})
    assert response.status_code == 201, response.json()
    response = post(api, reverse("api:harvestchannel-list"), {"name": "Odd", "queue": "nowhere"})
    assert response.status_code == 400
    assert response.json() == {"queue": ['"nowhere" is not a valid choice.']}
    response = patch(api, detail("harvestchannel", channels["Selective"]), {"name": "urgent"})
    assert response.json() == {"non_field_errors": ["A channel with this name already exists."]}
    assert sorted(HarvestChannel.objects.values_list("name", flat=True)) == ["Broad", "Selective", "Urgent"]
    assert api.delete(detail("harvestchannel", channels["Broad"])).status_code == 405


LOOK_AHEAD = (
    "look-ahead and look-behind ((?=…), (?!…), (?<=…), (?<!…)) are not supported: patterns are RE2 "
    "regular expressions, which run in time proportional to the text"
)
BACK_REFERENCE = "back-references (\\1, (?P=name)) are not supported: patterns are RE2 regular expressions"


@pytest.mark.timeout(30)
def test_traps_and_rules_re2_cannot_run_are_refused_with_the_reason_and_nothing_is_saved(api, make_domain):
    domain = make_domain("example.fr", crawler_traps="/calendar/")
    response = patch(api, detail("domain", domain), {"comments": "x", "crawler_traps": "ok\n(\\w+)/\\1/"})
    assert response.status_code == 400
    [error] = response.json()["crawler_traps"]
    assert error.startswith("Line 2: “(\\w+)/\\1/” cannot be used: ") and BACK_REFERENCE in error
    domain.refresh_from_db()
    assert (domain.comments, domain.crawler_traps) == ("", "/calendar/")

    template = post(api, reverse("api:harvesttemplate-list"), {"name": "deep", "depth_policy": "host"})
    template = HarvestTemplate.objects.get(pk=template.json()["id"])
    for field in ("accept_rules", "reject_rules"):
        response = patch(api, detail("harvesttemplate", template), {field: r"\.(?!html?$)[a-z]+$"})
        assert response.status_code == 400
        [error] = response.json()[field]
        assert error.startswith("Line 1: “\\.(?!html?$)[a-z]+$” cannot be used: ") and LOOK_AHEAD in error
    template.refresh_from_db()
    assert (template.version, template.accept_rules, template.reject_rules) == (1, "", "")

    url = reverse("api:globalcrawlertraplist-list")
    response = post(api, url, {"name": "sessions", "traps": "# ok\n;jsessionid=\n(?<=/)sid=.*"})
    assert response.status_code == 400
    [error] = response.json()["traps"]
    assert error.startswith("Line 3: “(?<=/)sid=.*” cannot be used: ") and LOOK_AHEAD in error
    # A catastrophic pattern for Python's re is an ordinary one for RE2: saved.
    response = post(api, url, {"name": "sessions", "traps": "(.+)+!\n(a|aa)+$"})
    assert response.status_code == 201, response.json()
    assert list(GlobalCrawlerTrapList.objects.values_list("name", flat=True)) == ["sessions"]


def test_global_trap_lists_validate_each_pattern(api):
    url = reverse("api:globalcrawlertraplist-list")
    response = post(api, url, {"name": "calendars", "traps": "# calendars\n.*/calendar/\\d{4}/.*"})
    assert response.status_code == 201, response.json()
    assert response.json()["patterns"] == [".*/calendar/\\d{4}/.*"]
    response = post(api, url, {"name": "broken", "traps": "ok\n*bad"})
    assert response.status_code == 400
    assert response.json() == {
        "traps": ["Line 2: “*bad” is not a valid regular expression: no argument for repetition operator: *."]
    }
    assert list(GlobalCrawlerTrapList.objects.values_list("name", flat=True)) == ["calendars"]
    traps = GlobalCrawlerTrapList.objects.get()
    assert patch(api, detail("globalcrawlertraplist", traps), {"is_active": False}).status_code == 200
    assert names(api.get(url + "?is_active=false")) == ["calendars"]
    assert api.delete(detail("globalcrawlertraplist", traps)).status_code == 405


# Harvest definitions ---------------------------------------------------------------------------


def test_definitions_are_created_with_their_kind_and_defaults(api, schedule, channels):
    url = reverse("api:harvestdefinition-list")
    response = post(api, url, {"kind": "selective", "name": "news", "schedule": schedule.pk})
    assert response.status_code == 201, response.json()
    definition = HarvestDefinition.objects.get(name="news")
    assert definition.kind == HarvestKind.SELECTIVE and definition.channel == channels["Selective"]
    assert definition.next_date == schedule.next_run()
    assert response.json()["configuration_count"] == 0
    assert response.json()["configurations_url"].endswith(
        reverse("api:domainconfiguration-list") + f"?harvest_definition={definition.pk}"
    )
    response = post(api, url, {"kind": "snapshot", "name": "broad 2025", "max_objects_per_domain": 1000})
    assert response.status_code == 201, response.json()
    snapshot = HarvestDefinition.objects.get(name="broad 2025")
    assert snapshot.channel == channels["Broad"] and snapshot.max_objects_per_domain == 1000
    assert names(api.get(url + "?kind=snapshot")) == ["broad 2025"]


def test_bad_definitions_are_refused_at_the_field(api, schedule, selective, snapshot):
    url = reverse("api:harvestdefinition-list")
    refused = [
        (
            {"kind": "selective", "name": "no schedule"},
            {"schedule": ["A selective harvest needs a schedule."]},
        ),
        (
            {"kind": "selective", "name": "x", "schedule": schedule.pk, "max_objects_per_domain": 10},
            {"max_objects_per_domain": ["Not used by a selective harvest."]},
        ),
        ({"kind": "broad", "name": "x"}, {"kind": ['"broad" is not a valid choice.']}),
        ({"name": "x"}, {"kind": ["This field is required."]}),
        (
            {"kind": "selective", "name": "SELECTIVE-test", "schedule": schedule.pk},
            {"non_field_errors": ["A harvest definition with this name already exists."]},
        ),
        (
            {"kind": "snapshot", "name": "x", "continue_from": selective.pk},
            {"continue_from": ["A snapshot continues another snapshot only."]},
        ),
    ]
    for body, expected in refused:
        response = post(api, url, body)
        assert response.status_code == 400, body
        assert response.json() == expected
    assert HarvestDefinition.objects.count() == 2

    response = patch(api, detail("harvestdefinition", selective), {"kind": "snapshot"})
    assert response.json() == {
        "kind": ["This is set when the harvest definition is created and cannot be changed."]
    }
    response = patch(api, detail("harvestdefinition", snapshot), {"schedule": schedule.pk})
    assert response.json() == {"schedule": ["Not used by a snapshot (broad) harvest."]}
    assert HarvestDefinition.objects.get(pk=selective.pk).kind == HarvestKind.SELECTIVE
    assert HarvestDefinition.objects.get(pk=snapshot.pk).schedule is None


def test_a_definition_is_updated_by_put_of_what_get_gave_and_never_deleted(api, selective, snapshot):
    for definition in (selective, snapshot):
        body = api.get(detail("harvestdefinition", definition)).json()
        body["comments"] = "Checked"
        response = put(api, detail("harvestdefinition", definition), body)
        assert response.status_code == 200, response.json()
        assert HarvestDefinition.objects.get(pk=definition.pk).comments == "Checked"
        assert api.delete(detail("harvestdefinition", definition)).status_code == 405
    assert HarvestDefinition.objects.count() == 2


def test_definitions_are_activated_deactivated_and_run_now(api, selective):
    def action(name):
        return post(api, reverse(f"api:harvestdefinition-{name}", kwargs={"pk": selective.pk}))

    assert action("deactivate").json()["is_active"] is False
    response = action("run-now")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["selective-test is inactive; activate it first."]}
    assert action("activate").json()["is_active"] is True
    before = timezone.now()
    assert action("run-now").status_code == 200
    selective.refresh_from_db()
    assert before <= selective.next_date <= timezone.now()


def test_configurations_are_attached_and_detached(api, make_domain, selective, snapshot):
    a, b = make_domain("a.fr"), make_domain("b.fr")
    url = reverse("api:harvestdefinition-change-configurations", kwargs={"pk": selective.pk})
    response = post(api, url, {"add": [a.default_configuration_id, b.default_configuration_id]})
    assert response.status_code == 200, response.json()
    assert response.json()["configuration_count"] == 2
    configurations = api.get(response.json()["configurations_url"]).json()["results"]
    assert {c["domain"] for c in configurations} == {"a.fr", "b.fr"}

    response = post(api, url, {"remove": [a.default_configuration_id]})
    assert response.json()["configuration_count"] == 1
    assert list(selective.configurations.all()) == [b.default_configuration]

    assert post(api, url, {}).json() == {"non_field_errors": ["Give configurations to add or to remove."]}
    response = post(api, url, {"add": [a.default_configuration_id, 999999]})
    assert response.json() == {"add": ["No configuration has the id 999999."]}
    response = post(
        api,
        reverse("api:harvestdefinition-change-configurations", kwargs={"pk": snapshot.pk}),
        {"add": [a.default_configuration_id]},
    )
    assert response.json() == {
        "non_field_errors": ["A snapshot harvest takes every domain; it has no configuration list."]
    }
    assert list(selective.configurations.all()) == [b.default_configuration]
    assert not snapshot.configurations.exists()


# Mappings and transfers ------------------------------------------------------------------------


def test_collection_mappings_crud(api, selective, snapshot):
    collection = CollectionFactory(name="News")
    url = reverse("api:collectionmapping-list")
    body = {"collection": collection.pk, "frequency": "monthly", "harvest_definition": selective.pk}
    response = post(api, url, body)
    assert response.status_code == 201, response.json()
    mapping = CollectionMapping.objects.get()
    assert post(api, url, body).json() == {
        "non_field_errors": ["This collection and frequency are already mapped."]
    }
    response = post(api, url, {**body, "frequency": "daily", "harvest_definition": snapshot.pk})
    assert response.json() == {"harvest_definition": ["Records are transferred to selective harvests only."]}
    assert CollectionMapping.objects.count() == 1
    assert patch(api, detail("collectionmapping", mapping), {"frequency": "weekly"}).status_code == 200
    assert api.get(url + "?frequency=weekly").json()["count"] == 1
    assert api.delete(detail("collectionmapping", mapping)).status_code == 204
    assert not CollectionMapping.objects.exists()


def test_budget_mappings_crud(api, template):
    url = reverse("api:budgetmapping-list")
    assert api.get(url + "?budget=small&depth=host").json()["count"] == 1
    mapping = BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.HOST)
    response = patch(api, detail("budgetmapping", mapping), {"template": template.pk, "max_objects": 42})
    assert response.status_code == 200, response.json()
    mapping.refresh_from_db()
    assert (mapping.template, mapping.max_objects) == (template, 42)
    response = patch(api, detail("budgetmapping", mapping), {"browser_template": template.pk})
    assert response.json()["browser_template"] == template.pk
    assert api.get(url + f"?browser_template={template.pk}").json()["count"] == 1
    response = patch(api, detail("budgetmapping", mapping), {"browser_template": None})
    assert response.status_code == 200 and response.json()["browser_template"] is None
    response = patch(api, detail("budgetmapping", mapping), {"browser_template": 999_999})
    assert list(response.json()) == ["browser_template"]
    response = patch(api, detail("budgetmapping", mapping), {"max_bytes": -3})
    assert response.json() == {"max_bytes": ["Ensure this value is greater than or equal to -1."]}
    assert api.delete(detail("budgetmapping", mapping)).status_code == 204
    body = {"budget": "small", "depth": "host", "template": template.pk, "max_objects": 7}
    assert post(api, url, body).status_code == 201
    assert post(api, url, body).json() == {"non_field_errors": ["This budget and depth are already mapped."]}
    assert BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.HOST).max_objects == 7


def test_a_transfer_runs_through_the_api_and_reports(api, selective):
    collection = CollectionFactory(name="News")
    CollectionMapping.objects.create(
        collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective
    )
    RecordFactory(
        collection=collection,
        url="https://www.lemonde.fr/",
        status=RecordStatus.VALIDATED,
        frequency=Frequency.MONTHLY,
        budget=Budget.SMALL,
        depth=Depth.HOST,
    )
    url = reverse("api:transferreport-list")
    response = post(api, url, {"collection": collection.pk})
    assert response.status_code == 201, response.json()
    [report] = response.json()
    assert (report["created"], report["updated"], report["user"]) == (1, 0, "claire")
    configuration = DomainConfiguration.objects.get(domain__name="lemonde.fr", name="news_monthly_small_host")
    assert list(selective.configurations.all()) == [configuration]

    response = post(api, url, {"harvest_definition": selective.pk})
    assert response.status_code == 201
    assert [(r["created"], r["unchanged"]) for r in response.json()] == [(0, 1)]
    assert api.get(url + f"?collection={collection.pk}").json()["count"] == 2
    assert api.get(detail("transferreport", TransferReport.objects.first())).status_code == 200

    assert post(api, url, {}).json() == {
        "non_field_errors": ["Give either a collection or a harvest definition."]
    }
    response = post(api, url, {"collection": collection.pk, "harvest_definition": selective.pk})
    assert response.status_code == 400
    assert TransferReport.objects.count() == 2


# Jobs and harvest infos ------------------------------------------------------------------------


@pytest.fixture
def job(make_domain, selective):
    domain = make_domain("example.fr", crawler_traps=".*/agenda/.*")
    selective = definition_save(definition=selective, crawler_traps=".*/print/.*")
    definition_configurations_change(definition=selective, add=[domain.default_configuration])
    # The launcher's own steps, without its row lock (tested in test_launcher.py).
    run = HarvestRun.objects.create(harvest_definition=selective, number=1, scheduled_for=timezone.now())
    [job] = jobs_generate(definition=selective, run=run)
    return job


def test_jobs_are_read_with_their_frozen_settings_and_configurations(client, engineer, job):
    client.force_login(engineer)
    body = client.get(reverse("api:job-list") + "?status=submitted").json()
    assert [j["id"] for j in body["results"]] == [job.pk]
    assert "template_settings" not in body["results"][0]
    assert client.get(reverse("api:job-list") + "?status=done").json()["count"] == 0

    body = client.get(detail("job", job)).json()
    assert body["status"] == "submitted" and body["domain_count"] == 1
    assert body["template_settings"]["template"] == "default"
    assert body["template_settings"]["depth_policy"] == "domain"
    assert body["crawler_traps"] == [".*/print/.*"]
    entries = client.get(body["configurations_url"]).json()
    assert entries["count"] == 1
    [entry] = entries["results"]
    assert entry["domain"] == "example.fr" and entry["configuration_name"] == "defaultconfig"
    assert entry["seeds"] == [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]
    assert entry["crawler_traps"] == [".*/agenda/.*"]


def test_an_engineer_resubmits_a_job_a_done_one_is_refused(client, engineer, job):
    client.force_login(engineer)
    response = post(client, reverse("api:job-resubmit", kwargs={"pk": job.pk}))
    assert response.status_code == 201, response.json()
    copy = Job.objects.get(pk=response.json()["id"])
    job.refresh_from_db()
    assert job.status == JobStatus.RESUBMITTED and job.resubmitted_as == copy
    assert copy.status == JobStatus.SUBMITTED and copy.configurations.count() == 1

    job_transition(job=copy, status=JobStatus.STARTED)
    job_transition(job=copy, status=JobStatus.DONE)
    response = post(client, reverse("api:job-resubmit", kwargs={"pk": copy.pk}))
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["A job that is done cannot become resubmitted."]}
    assert Job.objects.count() == 2


def test_curators_read_jobs_but_do_not_resubmit_them(api, job):
    assert api.get(reverse("api:job-list")).status_code == 200
    assert api.get(detail("job", job)).status_code == 200
    assert post(api, reverse("api:job-resubmit", kwargs={"pk": job.pk})).status_code == 403
    job.refresh_from_db()
    assert job.status == JobStatus.SUBMITTED and job.resubmitted_as is None


def test_harvest_infos_are_read_by_reports_roles(client, job):
    configuration = job.configurations.get().configuration
    harvest_info_record(
        job=job,
        configuration=configuration,
        object_count=120,
        byte_count=4096,
        stop_reason=StopReason.COMPLETED,
    )
    for role in (Role.MANAGER, Role.CURATOR, Role.ENGINEER):
        client.force_login(UserFactory(roles=[role]))
        body = client.get(reverse("api:harvestinfo-list") + f"?job={job.pk}").json()
        assert [(i["domain"], i["object_count"], i["stop_reason"]) for i in body["results"]] == [
            ("example.fr", 120, "completed")
        ]
    client.force_login(UserFactory(roles=[Role.LIBRARIAN]))
    assert client.get(reverse("api:harvestinfo-list")).status_code == 403


# Roles -----------------------------------------------------------------------------------------

PLANNING_LISTS = [
    "domain",
    "seedlist",
    "domainconfiguration",
    "harvesttemplate",
    "schedule",
    "harvestchannel",
    "harvestdefinition",
    "globalcrawlertraplist",
    "collectionmapping",
    "budgetmapping",
    "transferreport",
]


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER, None], ids=str)
def test_roles_outside_planning_get_403_and_write_nothing(client, role, make_domain):
    """Managers may view harvest models, but the Planning area is not theirs (reports are)."""
    domain = make_domain("example.fr")
    client.force_login(UserFactory(roles=[role] if role else []))
    for name in PLANNING_LISTS:
        assert client.get(reverse(f"api:{name}-list")).status_code == 403, name
    assert client.get(reverse("api:job-list")).status_code == 403
    assert client.get(detail("domain", domain)).status_code == 403
    assert post(client, reverse("api:domain-list"), {"name": "new.fr"}).status_code == 403
    assert patch(client, detail("domain", domain), {"comments": "x"}).status_code == 403
    response = post(client, reverse("api:domain-bulk-create"), {"text": "new.fr"})
    assert response.status_code == 403
    assert list(Domain.objects.values_list("name", "comments")) == [("example.fr", "")]


@pytest.mark.parametrize("role", [Role.CURATOR, Role.ENGINEER], ids=str)
def test_planning_roles_read_every_planning_list(client, role, make_domain):
    make_domain("example.fr")
    client.force_login(UserFactory(roles=[role]))
    for name in PLANNING_LISTS:
        assert client.get(reverse(f"api:{name}-list")).status_code == 200, name


def test_anonymous_clients_get_401(client):
    assert client.get(reverse("api:domain-list")).status_code == 401
    assert post(client, reverse("api:domain-list"), {"name": "new.fr"}).status_code == 401
    assert Domain.objects.count() == 0
