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
    # Polite for a site on this machine (a real site gets the default, a second or more).
    assert configuration.template.name == "Test website (local: short delays)"
    assert (configuration.template.min_delay, configuration.template.max_delay) == (0.02, 0.2)
    other = DomainConfiguration.objects.exclude(domain__name="127.0.0.1").select_related("template")
    assert other.exists() and all(c.template.min_delay >= 1.0 for c in other)
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


def test_demo_reader_reads_only_the_access_area():
    from webarchive.permissions import STAFF_ROLES

    out = StringIO()
    call_command("demo", stdout=out)
    assert "  reader     reader-demo      Reader\n" in out.getvalue()
    request = RequestFactory().post("/login/")
    reader = authenticate(request, username="reader", password="reader-demo")
    assert reader is not None and not reader.is_superuser and not reader.is_staff
    assert user_roles(reader) == {Role.READER} and not user_roles(reader) & STAFF_ROLES


def test_demo_access_rules_open_the_test_website_and_keep_the_rest_for_readers(settings):
    from harvest.models import HarvestDefinition
    from storage import access
    from storage.models_access import AccessLevel, AccessRule
    from storage.selectors_reading_room import readable_collections

    settings.ACCESS_ANONYMOUS = True
    call_command("demo", stdout=StringIO())
    levels = {rule.collection.name: rule.level for rule in AccessRule.objects.all()}
    assert levels == {
        "Test website": AccessLevel.OPEN,
        "News and press": AccessLevel.READERS,
        "Science and research": AccessLevel.READING_ROOM,
    }
    assert all(rule.note and rule.embargo_until is None for rule in AccessRule.objects.all())
    definitions = {d.pk: d.name for d in HarvestDefinition.objects.all()}

    def readable(viewer):
        return (
            {definitions[pk] for pk in access.definitions_open_to(viewer)},
            {c.name for c in readable_collections(viewer)},
        )

    # The demo's crawl of the test website is replayable by anyone; the rest by readers, by level.
    assert readable(access.Viewer(access.ANONYMOUS)) == ({"Test website weekly"}, {"Test website"})
    assert readable(access.Viewer(access.READER)) == (
        {"Test website weekly", "News weekly"},
        {"Test website", "News and press", "Elections 2027"},
    )
    assert readable(access.Viewer(access.READER, in_reading_room=True)) == (
        {"Test website weekly", "News weekly", "Science twice a year"},
        {"Test website", "News and press", "Elections 2027", "Science and research"},
    )


def test_demo_excludes_a_page_of_the_test_website_that_its_crawl_reaches():
    import surt

    from selection.models import Record
    from storage.models_access import Exclusion, ExclusionKind
    from webarchive.testsite.layout import Layout

    call_command("demo", stdout=StringIO())
    (exclusion,) = Exclusion.objects.all()
    assert (exclusion.kind, exclusion.reason, exclusion.requested_by) == (
        ExclusionKind.URL,
        "Demo: a take-down request",
        "A person named on the page",
    )
    assert exclusion.is_active() and exclusion.created_by.username == "curator"
    # A numbered page of the generated site (100 pages with `manage.py testsite`'s defaults), under
    # the seed of the "Test website" record: the crawl of "Test website weekly" reaches it.
    (seed,) = Record.objects.filter(collection__name="Test website").values_list("url", flat=True)
    assert exclusion.target.startswith(seed)
    path = "/" + exclusion.target.split("/", 3)[3]
    layout = Layout(None, seed=0, pages=100, today=None)
    assert path in {layout.page_path(n) for n in range(1, 100)}
    assert exclusion.covers(surt.surt(exclusion.target))
    assert not exclusion.covers(surt.surt(seed))


def test_demo_access_runs_again_without_changing_anything():
    from storage.models_access import AccessLevel, AccessRule, Exclusion
    from storage.services.access import access_rule_save, exclusion_lift

    call_command("demo", stdout=StringIO())
    history = (AccessRule.history.count(), Exclusion.history.count())
    call_command("demo", stdout=StringIO())
    assert (AccessRule.objects.count(), Exclusion.objects.count()) == (3, 1)
    assert (AccessRule.history.count(), Exclusion.history.count()) == history  # nothing saved again

    # What curators decide afterwards stays: a closed collection, a lifted take-down.
    rule = AccessRule.objects.get(collection__name="News and press")
    access_rule_save(rule=rule, level=AccessLevel.STAFF)
    exclusion_lift(exclusion=Exclusion.objects.get())
    call_command("demo", stdout=StringIO())
    assert AccessRule.objects.get(pk=rule.pk).level == AccessLevel.STAFF
    (exclusion,) = Exclusion.objects.all()
    assert exclusion.lifted_at is not None
