"""The transfer from selection: mapping, idempotence, updates and detachment."""

import pytest
from django.core.exceptions import PermissionDenied

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
