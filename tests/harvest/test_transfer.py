"""The transfer from selection: mapping, idempotence, updates and detachment."""

import pytest
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.test.utils import CaptureQueriesContext

from harvest.choices import RenderMode
from harvest.models import (
    BudgetMapping,
    Domain,
    DomainConfiguration,
    HarvestTemplate,
    SeedList,
    TransferReport,
)
from harvest.services.planning import (
    budget_mapping_save,
    collection_mapping_save,
    definition_save,
    template_save,
)
from harvest.services.transfer import configuration_name, transfer_collection, transfer_for_definition
from selection.choices import Budget, Depth, Frequency, RecordStatus
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def collection():
    return CollectionFactory(name="Elections 2027")


@pytest.fixture
def monthly(collection, schedule):
    definition = definition_save(kind="selective", name="monthly-elections", schedule=schedule)
    collection_mapping_save(collection=collection, frequency=Frequency.MONTHLY, harvest_definition=definition)
    return definition


def record(collection, url, **fields):
    fields.setdefault("status", RecordStatus.VALIDATED)
    return RecordFactory(collection=collection, url=url, **fields)


def attached(definition):
    return sorted(f"{c.domain.name}/{c.name}" for c in definition.configurations.select_related("domain"))


def test_validated_records_become_configurations_in_the_mapped_definition(collection, monthly):
    record(collection, "http://www.parti-a.fr/", supplementary_urls="http://www.parti-a.fr/sitemap.xml")
    record(collection, "http://blog.parti-a.fr/")  # same domain, same settings: same configuration
    record(collection, "http://parti-b.fr/programme/", depth=Depth.PATH)
    record(collection, "http://parti-c.fr/", status=RecordStatus.PROPOSED)
    record(collection, "http://parti-d.fr/", is_active=False)
    report = transfer_collection(collection=collection)
    name_a = configuration_name(collection, "monthly", "small", "host")
    assert name_a == "elections-2027_monthly_small_host"
    assert attached(monthly) == ["parti-a.fr/" + name_a, "parti-b.fr/elections-2027_monthly_small_path"]
    assert (report.created, report.updated, report.unchanged, report.detached, report.skipped) == (
        2,
        0,
        0,
        0,
        0,
    )
    assert sorted(report.details["domains_created"]) == ["parti-a.fr", "parti-b.fr"]
    configuration = DomainConfiguration.objects.get(domain__name="parti-a.fr", name=name_a)
    mapping = BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.HOST)
    assert configuration.template == mapping.template == HarvestTemplate.objects.get(name="selective-host")
    assert configuration.max_objects == mapping.max_objects == 10_000
    assert configuration.seed_lists.get().seed_urls == [
        "http://blog.parti-a.fr/",
        "http://www.parti-a.fr/",
        "http://www.parti-a.fr/sitemap.xml",
    ]
    # The new domain also has its defaults.
    assert Domain.objects.get(name="parti-a.fr").default_configuration.name == "defaultconfig"
    assert not Domain.objects.filter(name__in=["parti-c.fr", "parti-d.fr"]).exists()


def test_transfer_is_idempotent(collection, monthly):
    record(collection, "http://www.parti-a.fr/")
    record(collection, "http://parti-b.fr/")
    transfer_collection(collection=collection)
    history = sum(c.history.count() for c in DomainConfiguration.objects.all())
    second = transfer_collection(collection=collection)
    assert (second.created, second.updated, second.unchanged, second.detached) == (0, 0, 2, 0)
    assert sum(c.history.count() for c in DomainConfiguration.objects.all()) == history
    assert TransferReport.objects.count() == 2


def test_changes_are_carried_over_and_stale_configurations_detached(collection, monthly, schedule):
    a = record(collection, "http://www.parti-a.fr/")
    b = record(collection, "http://parti-b.fr/")
    weekly = definition_save(kind="selective", name="weekly-elections", schedule=schedule)
    collection_mapping_save(collection=collection, frequency=Frequency.WEEKLY, harvest_definition=weekly)
    transfer_collection(collection=collection)
    # A new URL on a domain, a frequency change, and a rejection.
    record(collection, "http://news.parti-a.fr/")
    type(b).objects.filter(pk=b.pk).update(frequency=Frequency.WEEKLY)
    type(a).objects.filter(pk=a.pk).update(status=RecordStatus.REJECTED, status_reason="out of scope")
    report = transfer_collection(collection=collection)
    assert attached(monthly) == ["parti-a.fr/elections-2027_monthly_small_host"]
    assert attached(weekly) == ["parti-b.fr/elections-2027_weekly_small_host"]
    seeds = DomainConfiguration.objects.get(
        domain__name="parti-a.fr", name__contains="monthly"
    ).seed_lists.get()
    assert seeds.seed_urls == ["http://news.parti-a.fr/"]
    assert (report.created, report.updated, report.detached) == (1, 1, 1)
    assert report.details["detached"] == [
        {
            "domain": "parti-b.fr",
            "configuration": "elections-2027_monthly_small_host",
            "definition": "monthly-elections",
        }
    ]
    # Once nothing backs a configuration it is detached, and stays so.
    type(a).objects.filter(collection=collection).update(is_active=False)
    report = transfer_collection(collection=collection)
    assert attached(monthly) == attached(weekly) == []
    assert report.detached == 2
    assert transfer_collection(collection=collection).detached == 0


def test_template_mapping_change_updates_the_configuration(collection, monthly, template):
    record(collection, "http://parti-a.fr/")
    transfer_collection(collection=collection)
    BudgetMapping.objects.filter(budget=Budget.SMALL, depth=Depth.HOST).update(
        template=template, max_objects=42
    )
    report = transfer_collection(collection=collection)
    assert report.updated == 1
    configuration = DomainConfiguration.objects.get(domain__name="parti-a.fr", name__contains="monthly")
    assert (configuration.template, configuration.max_objects) == (template, 42)


def test_records_without_a_mapping_are_reported_as_skipped(collection, monthly):
    record(collection, "http://parti-a.fr/", frequency=Frequency.DAILY)
    BudgetMapping.objects.filter(budget=Budget.LARGE, depth=Depth.DOMAIN).delete()
    large = record(collection, "http://parti-b.fr/", budget=Budget.LARGE, depth=Depth.DOMAIN)
    report = transfer_collection(collection=collection)
    assert report.skipped == 2 and report.created == 0
    reasons = {item["url"]: item["reason"] for item in report.details["skipped"]}
    assert "frequency “Daily”" in reasons["http://parti-a.fr/"]
    assert "budget “Large” with the depth “The whole domain”" in reasons[large.url]
    assert not Domain.objects.exists()


def test_a_manual_attachment_elsewhere_is_left_alone(collection, monthly, schedule):
    record(collection, "http://parti-a.fr/")
    transfer_collection(collection=collection)
    other = definition_save(kind="selective", name="hand-made", schedule=schedule)
    configuration = DomainConfiguration.objects.get(domain__name="parti-a.fr", name__contains="monthly")
    other.configurations.add(configuration)
    transfer_collection(collection=collection)
    assert attached(other) == attached(monthly)


def test_transfer_for_a_definition_covers_its_collections(monthly, collection, schedule):
    second = CollectionFactory(name="Sport")
    collection_mapping_save(collection=second, frequency=Frequency.MONTHLY, harvest_definition=monthly)
    record(collection, "http://parti-a.fr/")
    record(second, "http://club.fr/")
    reports = transfer_for_definition(definition=monthly)
    assert [r.collection for r in reports] == [collection, second]
    assert all(r.harvest_definition == monthly for r in reports)
    assert len(attached(monthly)) == 2


def test_only_planners_may_transfer(collection, monthly):
    record(collection, "http://parti-a.fr/")
    with pytest.raises(PermissionDenied):
        transfer_collection(collection=collection, user=UserFactory(roles=[Role.LIBRARIAN]))
    assert not DomainConfiguration.objects.exists()
    report = transfer_collection(collection=collection, user=UserFactory(roles=[Role.CURATOR]))
    assert report.created == 1 and report.user is not None


# Sites that need a browser ---------------------------------------------------------------------


@pytest.fixture
def browser_template():
    return template_save(name="rendered-host", depth_policy="host", render=RenderMode.ALL)


@pytest.fixture
def small_host(browser_template):
    mapping = BudgetMapping.objects.get(budget=Budget.SMALL, depth=Depth.HOST)
    return budget_mapping_save(mapping=mapping, browser_template=browser_template)


def test_a_site_that_needs_a_browser_gets_the_browser_template_in_a_configuration_of_its_own(
    collection, monthly, small_host, browser_template
):
    record(collection, "http://www.parti-a.fr/")
    record(collection, "http://app.parti-a.fr/", needs_browser=True)  # same domain and settings
    record(collection, "http://spa.parti-a.fr/", needs_browser=True)
    report = transfer_collection(collection=collection)
    plain = configuration_name(collection, "monthly", "small", "host")
    browser = configuration_name(collection, "monthly", "small", "host", needs_browser=True)
    assert browser == "elections-2027_monthly_small_host_browser"
    assert attached(monthly) == [f"parti-a.fr/{plain}", f"parti-a.fr/{browser}"]
    assert (report.created, report.skipped) == (2, 0)
    rendered = DomainConfiguration.objects.get(domain__name="parti-a.fr", name=browser)
    assert rendered.template == browser_template
    assert (rendered.max_objects, rendered.max_bytes) == (small_host.max_objects, small_host.max_bytes)
    assert rendered.seed_lists.get().seed_urls == ["http://app.parti-a.fr/", "http://spa.parti-a.fr/"]
    assert rendered.source_collection == collection
    fetched = DomainConfiguration.objects.get(domain__name="parti-a.fr", name=plain)
    assert fetched.template == small_host.template
    assert fetched.seed_lists.get().seed_urls == ["http://www.parti-a.fr/"]


def test_the_transfer_of_sites_that_need_a_browser_is_idempotent(collection, monthly, small_host):
    record(collection, "http://www.parti-a.fr/", needs_browser=True)
    record(collection, "http://parti-b.fr/")
    transfer_collection(collection=collection)
    configurations = list(DomainConfiguration.objects.order_by("pk").values())
    seed_lists = list(SeedList.objects.order_by("pk").values())
    history = sum(c.history.count() for c in DomainConfiguration.objects.all())
    second = transfer_collection(collection=collection)
    assert (second.created, second.updated, second.unchanged, second.detached, second.skipped) == (
        0,
        0,
        2,
        0,
        0,
    )
    assert list(DomainConfiguration.objects.order_by("pk").values()) == configurations
    assert list(SeedList.objects.order_by("pk").values()) == seed_lists
    assert sum(c.history.count() for c in DomainConfiguration.objects.all()) == history


def test_a_site_that_needs_a_browser_without_a_browser_template_is_skipped(collection, monthly):
    record(collection, "http://www.parti-a.fr/")
    needing = record(collection, "http://parti-b.fr/", needs_browser=True)
    report = transfer_collection(collection=collection)
    assert (report.created, report.skipped) == (1, 1)
    assert report.details["skipped"] == [
        {
            "record": needing.pk,
            "url": "http://parti-b.fr/",
            "reason": "the site needs a browser, and no browser template is mapped to the budget “Small” "
            "with the depth “The host”",
        }
    ]
    assert not Domain.objects.filter(name="parti-b.fr").exists()
    assert transfer_collection(collection=collection).skipped == 1  # and stays so, changing nothing


def test_a_record_that_comes_to_need_a_browser_moves_to_the_browser_configuration(
    collection, monthly, small_host, browser_template
):
    site = record(collection, "http://www.parti-a.fr/")
    transfer_collection(collection=collection)
    type(site).objects.filter(pk=site.pk).update(needs_browser=True)
    report = transfer_collection(collection=collection)
    assert (report.created, report.detached) == (1, 1)
    assert attached(monthly) == ["parti-a.fr/elections-2027_monthly_small_host_browser"]
    # The mapping's browser template changes: the configuration follows at the next transfer.
    budget_mapping_save(mapping=small_host, browser_template=template_save(name="other", render="seeds"))
    assert transfer_collection(collection=collection).updated == 1
    assert DomainConfiguration.objects.get(name__endswith="_browser").template.name == "other"


# At volume: set-based, and nothing written when nothing changed --------------------------------


def many_records(collection, count, *, domains, start=0):
    """``count`` validated records of ``collection`` written in bulk over ``domains`` registered
    domains (``site<n>.fr``), two hosts a domain, settings varying with the number."""
    from selection.models import Record

    model = record(collection, f"http://model-{start}.example.org/", status=RecordStatus.PROPOSED)
    rows = []
    for number in range(start, start + count):
        domain = f"site{number % domains}.fr"
        host = f"{'www' if number % 2 else 'blog'}{number // domains}.{domain}"
        rows.append(
            Record(
                collection=collection,
                url=f"http://{host}/",
                url_key=f"fr,site{number % domains},{host})/",
                host=host,
                registered_domain=domain,
                supplementary_urls=f"http://{host}/sitemap.xml" if number % 5 == 0 else "",
                theme_id=model.theme_id,
                responsible_id=model.responsible_id,
                created_by_id=model.responsible_id,
                modified_by_id=model.responsible_id,
                budget=Budget.SMALL,
                frequency=Frequency.MONTHLY,
                depth=Depth.PATH if number % 3 == 0 else Depth.HOST,
                status=RecordStatus.VALIDATED,
            )
        )
    Record.objects.bulk_create(rows)
    return Record.objects.filter(collection=collection).exclude(pk=model.pk)


def written(queries) -> list[str]:
    """The statements of ``queries`` that write."""
    return [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().split(" ", 1)[0].upper() in {"INSERT", "UPDATE", "DELETE"}
    ]


def history_rows() -> int:
    return sum(model.history.count() for model in (Domain, SeedList, DomainConfiguration))


def test_a_large_collection_is_transferred_in_a_bounded_number_of_statements(
    collection, monthly, django_assert_max_num_queries
):
    from harvest.services.domains import domains_create_bulk

    domains_create_bulk(names=[f"site{n}.fr" for n in range(0, 1500, 3)])  # a third known already
    many_records(collection, 3000, domains=1500)
    curator = UserFactory(roles=[Role.CURATOR])
    # Per target, the transfer used to make 10 to 15 statements; now a few per thousand rows (on
    # SQLite more: a statement takes at most 999 values there, a few hundred rows).
    with django_assert_max_num_queries(60 if connection.vendor == "postgresql" else 250):
        report = transfer_collection(collection=collection, user=curator)
    assert (report.created, report.updated, report.unchanged, report.skipped) == (1500, 0, 0, 0)
    assert len(report.details["domains_created"]) == 1000
    assert Domain.objects.count() == 1500
    assert DomainConfiguration.objects.filter(source_collection=collection).count() == 1500
    assert monthly.configurations.count() == 1500
    configuration = DomainConfiguration.objects.get(domain__name="site5.fr", name__endswith="_host")
    assert configuration.seed_lists.get().seed_urls == [
        "http://www0.site5.fr/",
        "http://www0.site5.fr/sitemap.xml",
        "http://www1.site5.fr/",
        "http://www1.site5.fr/sitemap.xml",
    ]
    assert configuration.version == 1
    # One history row for each object created, naming the curator, the seed list in the configuration's.
    [entry] = configuration.history.all()
    assert (entry.history_type, entry.history_user) == ("+", curator)
    assert [row.seedlist_id for row in entry.seed_lists.all()] == [configuration.seed_lists.get().pk]
    assert configuration.seed_lists.get().history.get().history_user == curator


def test_a_second_run_writes_nothing_but_its_report(collection, monthly, small_host):
    many_records(collection, 300, domains=100)
    record(collection, "http://app.site1.fr/", needs_browser=True)
    transfer_collection(collection=collection)
    history = history_rows()
    with CaptureQueriesContext(connection) as queries:
        report = transfer_collection(collection=collection)
    assert (report.created, report.updated, report.unchanged, report.detached) == (0, 0, 201, 0)
    [insert] = written(queries.captured_queries)
    assert "harvest_transferreport" in insert
    assert history_rows() == history


def test_a_record_changed_between_runs_updates_exactly_its_configuration(collection, monthly):
    records = many_records(collection, 300, domains=100)
    transfer_collection(collection=collection)
    versions = dict(SeedList.objects.values_list("pk", "version"))
    configurations = dict(DomainConfiguration.objects.values_list("pk", "version"))
    history = history_rows()
    changed = records.get(url="http://www1.site7.fr/")
    type(changed).objects.filter(pk=changed.pk).update(supplementary_urls="http://www1.site7.fr/feed")
    report = transfer_collection(collection=collection)
    assert (report.created, report.updated, report.unchanged) == (0, 1, 199)
    name = configuration_name(collection, "monthly", "small", "host")
    assert report.details["updated"] == [
        {"domain": "site7.fr", "configuration": name, "definition": "monthly-elections"}
    ]
    seed_list = SeedList.objects.get(domain__name="site7.fr", name=name)
    assert seed_list.seed_urls == [
        "http://www0.site7.fr/",
        "http://www1.site7.fr/",
        "http://www1.site7.fr/feed",
    ]
    assert dict(SeedList.objects.values_list("pk", "version")) == {**versions, seed_list.pk: 2}
    assert dict(DomainConfiguration.objects.values_list("pk", "version")) == configurations
    assert history_rows() == history + 1
    assert seed_list.history.first().history_type == "~"


def test_edits_made_between_runs_are_handled_as_before(collection, monthly, schedule):
    from harvest.services.domains import configuration_save, seed_list_save

    record(collection, "http://www.parti-a.fr/")
    record(collection, "http://parti-b.fr/")
    curator = UserFactory(roles=[Role.CURATOR])
    transfer_collection(collection=collection, user=curator)
    name = configuration_name(collection, "monthly", "small", "host")
    a = DomainConfiguration.objects.get(domain__name="parti-a.fr", name=name)
    b = DomainConfiguration.objects.get(domain__name="parti-b.fr", name=name)
    # On a: a comment (not the transfer's), and a budget of its own (the transfer's: put back).
    configuration_save(configuration=a, expected_version=1, comments="watch it", max_objects=5)
    # On b: another seed list added (the transfer's seed lists are its own), and a hand-made comment
    # in its seed list; b is also detached from its definition by hand.
    other = seed_list_save(domain=b.domain, name="extra", seeds="http://parti-b.fr/extra")
    configuration_save(configuration=b, expected_version=1, seed_lists=[*b.seed_lists.all(), other])
    seed_list_save(seed_list=b.seed_lists.get(name=name), expected_version=1, comments="mine")
    monthly.configurations.remove(b)
    report = transfer_collection(collection=collection, user=curator)
    assert (report.created, report.updated, report.unchanged) == (0, 2, 0)
    a.refresh_from_db()
    assert (a.comments, a.max_objects, a.version) == ("watch it", 10_000, 3)
    assert a.history.first().history_user == curator
    b.refresh_from_db()
    assert [s.name for s in b.seed_lists.all()] == [name]
    assert b.version == 3
    assert b.seed_lists.get().comments == "mine"
    assert attached(monthly) == [f"parti-a.fr/{name}", f"parti-b.fr/{name}"]
    # The configuration's history says what the transfer changed, as people read it.
    from webarchive.history import history_entries

    changes = {str(change["field"]): change for change in history_entries(b)[0]["changes"]}
    assert changes["seed lists"]["new"] == f"parti-b.fr / {name}"
    assert changes["seed lists"]["old"] == f"parti-b.fr / {name}, parti-b.fr / extra"
    assert transfer_collection(collection=collection).unchanged == 2


def test_domains_created_get_their_defaults_and_history(collection, monthly):
    record(collection, "http://www.parti-a.fr/")
    curator = UserFactory(roles=[Role.CURATOR])
    transfer_collection(collection=collection, user=curator)
    domain = Domain.objects.get(name="parti-a.fr")
    default = domain.default_configuration
    assert default.name == "defaultconfig"
    assert default.seed_lists.get().name == "defaultseeds"
    assert default.seed_lists.get().seed_urls == [
        "http://parti-a.fr/",
        "https://parti-a.fr/",
        "http://www.parti-a.fr/",
        "https://www.parti-a.fr/",
    ]
    # As domain_create leaves it: the domain created, then given its default configuration; the
    # default seed list and configuration created; all by the curator.
    assert [(h.history_type, h.default_configuration_id) for h in domain.history.order_by("history_id")] == [
        ("+", None),
        ("~", default.pk),
    ]
    assert {h.history_user for h in domain.history.all()} == {curator}
    [created] = default.history.all()
    assert (created.history_type, created.history_user) == ("+", curator)
    assert [row.seedlist_id for row in created.seed_lists.all()] == [default.seed_lists.get().pk]
    assert default.seed_lists.get().history.get().history_user == curator
