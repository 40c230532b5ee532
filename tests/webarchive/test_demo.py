"""The demo command: one user per role, an administrator, a few collections; safe to repeat."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.test import RequestFactory

from selection.models import Collection
from webarchive.permissions import Role, user_roles

pytestmark = pytest.mark.django_db


@pytest.mark.smoke
def test_demo_creates_a_user_per_role_and_prints_the_logins():
    out = StringIO()
    call_command("demo", stdout=out)
    request = RequestFactory().post("/login/")
    for role in Role:
        assert f"{role.value:<10} {role.value}-demo" in out.getvalue()
        user = authenticate(request, username=role.value, password=f"{role.value}-demo")
        assert user is not None, role
        assert user_roles(user) == {role}
    admin = authenticate(request, username="admin", password="admin-demo")
    assert admin.is_superuser
    assert Collection.objects.count() >= 2


def test_demo_can_run_again_without_duplicating():
    call_command("demo", stdout=StringIO())
    collections = Collection.objects.count()
    call_command("demo", stdout=StringIO())
    assert Collection.objects.count() == collections


def test_demo_plans_a_harvest_of_the_test_website():
    from harvest.models import DomainConfiguration, HarvestDefinition, TransferReport

    call_command("demo", stdout=StringIO())
    definition = HarvestDefinition.objects.get(name="Test website weekly")
    assert definition.is_active and definition.next_date is not None
    (configuration,) = definition.configurations.all()
    assert configuration.domain.name == "127.0.0.1"
    assert configuration.seed_lists.get().seed_urls[0].startswith("http://127.0.0.1:")
    first_run = TransferReport.objects.count()
    configurations = DomainConfiguration.objects.count()
    call_command("demo", stdout=StringIO())
    assert DomainConfiguration.objects.count() == configurations
    second_run = TransferReport.objects.order_by("pk")[first_run:]
    assert second_run and all(r.created == r.updated == r.detached == 0 for r in second_run)


def test_demo_has_two_storage_nodes_in_two_locations(settings):
    from storage.models import StorageNode

    call_command("demo", stdout=StringIO())
    call_command("demo", stdout=StringIO())
    nodes = list(StorageNode.objects.all())
    assert len(nodes) == 2 and len({node.location for node in nodes}) == 2
    for node in nodes:
        assert node.reachable and node.state == StorageNode.State.ONLINE
        assert str(settings.VAR_DIR) in node.root


def test_demo_harvests_the_script_built_section_in_a_browser():
    from harvest.models import BudgetMapping, DomainConfiguration, HarvestDefinition, HarvestTemplate
    from selection.models import Record

    call_command("demo", stdout=StringIO())
    template = HarvestTemplate.objects.get(name="Browser rendering")
    settings = template.crawler_settings()
    assert (settings["render"], settings["behaviours"]) == ("all", ["scroll", "click", "media"])
    definition = HarvestDefinition.objects.get(name="Script-built site weekly")
    plain = HarvestDefinition.objects.get(name="Test website weekly")
    assert definition.is_selective and definition.is_active and definition.next_date is not None
    assert definition.schedule == plain.schedule
    (configuration,) = definition.configurations.all()
    assert (configuration.domain.name, configuration.template, configuration.max_objects) == (
        "127.0.0.1",
        template,
        200,
    )
    (seed,) = configuration.seed_lists.get().seed_urls
    port = plain.configurations.get().seed_lists.get().seed_urls[0].split("/")[2].split(":")[1]
    assert seed == f"http://127.0.0.1:{port}/js/"

    # A record whose site needs a browser, transferred with the browser template of its mapping.
    (record,) = Record.objects.filter(needs_browser=True)
    mapping = BudgetMapping.objects.get(budget=record.budget, depth=record.depth)
    assert mapping.browser_template == template
    rendered = DomainConfiguration.objects.get(name__endswith="_browser")
    assert rendered.template == template
    assert rendered.seed_lists.get().seed_urls == [record.url]
    assert rendered.harvest_definitions.get().name == "News weekly"

    counts = (HarvestTemplate.objects.count(), DomainConfiguration.objects.count(), Record.objects.count())
    call_command("demo", stdout=StringIO())
    assert (
        HarvestTemplate.objects.count(),
        DomainConfiguration.objects.count(),
        Record.objects.count(),
    ) == counts
    assert definition.configurations.get() == configuration
