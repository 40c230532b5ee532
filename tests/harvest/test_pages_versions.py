"""The Planning edit pages save over the version they showed.

The form carries the version (hidden ``seen``, in the page's HTML); the service
refuses to save over a newer one and the page says who changed what, with
nothing written. Reloaded, the form carries the new version and the edit goes
through.
"""

import html
import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import BudgetMapping, DomainConfiguration
from harvest.services import domains as domain_services
from harvest.services import planning as planning_services
from harvest.services.domains import domain_create
from harvest.services.planning import template_save
from harvest.services.transfer import transfer_collection
from selection.choices import Frequency, RecordStatus
from tests.factories import CollectionFactory, RecordFactory, UserFactory
from webarchive.permissions import Role
from webarchive.versioning import current_version

pytestmark = pytest.mark.django_db


@pytest.fixture
def as_curator(client):
    client.force_login(UserFactory(username="claire", roles=[Role.CURATOR]))
    return client


@pytest.fixture
def camille():
    return UserFactory(username="camille", roles=[Role.CURATOR])


def _objects():
    domain = domain_create(name="example.fr")
    template = template_save(name="deep", depth_policy="host")
    return {
        "domain": (domain, "harvest:domain_edit", "comments", domain_services.domain_update, "domain"),
        "seed list": (
            domain.seed_lists.get(),
            "harvest:seedlist_edit",
            "comments",
            domain_services.seed_list_save,
            "seed_list",
        ),
        "configuration": (
            domain.default_configuration,
            "harvest:configuration_edit",
            "comments",
            domain_services.configuration_save,
            "configuration",
        ),
        "template": (
            template,
            "harvest:template_edit",
            "description",
            planning_services.template_save,
            "template",
        ),
        "trap list": (
            planning_services.trap_list_save(name="calendars", traps=".*/calendar/.*"),
            "harvest:trap_list_edit",
            "description",
            planning_services.trap_list_save,
            "trap_list",
        ),
        "schedule": (
            planning_services.schedule_save(
                name="daily", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3
            ),
            "harvest:schedule_edit",
            "comments",
            planning_services.schedule_save,
            "schedule",
        ),
        "harvest definition": (
            planning_services.definition_save(kind=HarvestKind.SNAPSHOT, name="yearly snapshot"),
            "harvest:definition_edit",
            "comments",
            planning_services.definition_save,
            "definition",
        ),
        "channel": (
            planning_services.channel_save(name="urgent", queue="crawl-high"),
            "harvest:channel_edit",
            "comments",
            planning_services.channel_save,
            "channel",
        ),
    }


EDIT_PAGES = [
    "domain",
    "seed list",
    "configuration",
    "template",
    "trap list",
    "schedule",
    "harvest definition",
    "channel",
]


def form_data(form) -> dict:
    """What the browser sends for the form as shown."""
    data = {}
    for field in form:
        value = field.value()
        if field.widget_type == "checkbox":
            if value:
                data[field.html_name] = "on"
        elif value is not None:
            data[field.html_name] = value
    return data


HIDDEN_INPUT = re.compile(r'<input type="hidden" name="(?P<name>[^"]+)" value="(?P<value>[^"]*)"')


def hidden_inputs(response) -> dict:
    """The hidden inputs of the page's content, as the browser reads them from its HTML (the CSRF token
    and the navigation bar's language switch aside)."""
    page = response.content.decode()
    content = page[page.index("<main") :] if "<main" in page else page
    return {
        match["name"]: html.unescape(match["value"])
        for match in HIDDEN_INPUT.finditer(content)
        if match["name"] != "csrfmiddlewaretoken"
    }


def browser_data(response) -> dict:
    """What the browser sends for the page's form: the hidden inputs of the HTML, the fields as shown."""
    hidden = hidden_inputs(response)
    shown = {name: value for name, value in form_data(response.context["form"]).items() if name not in hidden}
    return {**shown, **hidden}


@pytest.mark.parametrize("kind", EDIT_PAGES)
def test_the_page_sends_back_the_version_written_in_its_html(kind, as_curator):
    obj, url_name, field, _save, _argument = _objects()[kind]
    url = reverse(url_name, args=[obj.pk])
    page = as_curator.get(url)
    version = current_version(obj)
    assert hidden_inputs(page)["seen"] == str(version)
    data = browser_data(page)

    response = as_curator.post(url, {**data, field: "mine"})
    assert response.status_code == 302, response.context["form"].errors
    fresh = type(obj).objects.get(pk=obj.pk)
    assert (getattr(fresh, field), current_version(fresh)) == ("mine", version + 1)

    # The same page sent again (a second click, the back button) carries a version saved since.
    response = as_curator.post(url, {**data, field: "again"})
    assert response.status_code == 200
    [error] = response.context["form"].non_field_errors()
    assert error.startswith(f"Someone else changed this {obj._meta.verbose_name} while you were editing it: ")
    assert error in html.unescape(response.content.decode())  # said on the page
    fresh = type(obj).objects.get(pk=obj.pk)
    assert (getattr(fresh, field), current_version(fresh)) == ("mine", version + 1)


@pytest.mark.parametrize("kind", EDIT_PAGES)
def test_an_edit_over_a_version_saved_since_is_refused_saying_what_changed(kind, as_curator, camille):
    obj, url_name, field, save, argument = _objects()[kind]
    url = reverse(url_name, args=[obj.pk])
    data = form_data(as_curator.get(url).context["form"])
    assert data["seen"] == current_version(obj)
    # Camille saves in the meantime, over the version she read.
    save(**{argument: obj, "user": camille, "expected_version": data["seen"], field: "theirs"})

    response = as_curator.post(url, {**data, field: "mine"})
    assert response.status_code == 200
    [error] = response.context["form"].non_field_errors()
    assert error.startswith(f"Someone else changed this {obj._meta.verbose_name} while you were editing it: ")
    assert "changed to “theirs” by camille" in error
    fresh = type(obj).objects.get(pk=obj.pk)
    assert (getattr(fresh, field), current_version(fresh)) == ("theirs", data["seen"] + 1)

    data = form_data(as_curator.get(url).context["form"])
    assert as_curator.post(url, {**data, field: "mine"}).status_code == 302
    fresh = type(obj).objects.get(pk=obj.pk)
    assert (getattr(fresh, field), current_version(fresh)) == ("mine", data["seen"] + 1)


@pytest.mark.parametrize("seen", [None, "", "two", "0"])
def test_an_edit_that_does_not_say_its_version_is_refused(seen, as_curator):
    domain = domain_create(name="example.fr")
    url = reverse("harvest:domain_edit", args=[domain.pk])
    data = form_data(as_curator.get(url).context["form"])
    data.pop("seen")
    if seen is not None:
        data["seen"] = seen
    response = as_curator.post(url, {**data, "comments": "mine"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == [
        "The page did not say which version of this domain it showed; reload it."
    ]
    domain.refresh_from_db()
    assert (domain.comments, domain.version) == ("", 1)


def test_a_transfer_raises_the_versions_it_changes_so_a_page_opened_before_is_refused(as_curator, selective):
    collection = CollectionFactory(name="Elections")
    planning_services.collection_mapping_save(
        collection=collection, frequency=Frequency.MONTHLY, harvest_definition=selective
    )
    record = RecordFactory(collection=collection, url="http://www.parti-a.fr/", status=RecordStatus.VALIDATED)
    transfer_collection(collection=collection)
    configuration = DomainConfiguration.objects.get(source_collection=collection)
    seed_list = configuration.seed_lists.get()
    pages = {
        obj: as_curator.get(reverse(url_name, args=[obj.pk]))
        for obj, url_name in [
            (configuration, "harvest:configuration_edit"),
            (seed_list, "harvest:seedlist_edit"),
        ]
    }

    # A second record on the domain (new seeds) and a new budget (new limits): the next transfer
    # rewrites both, over whatever is stored.
    RecordFactory(
        collection=collection,
        url="http://blog.parti-a.fr/",
        status=RecordStatus.VALIDATED,
        budget=record.budget,
        depth=record.depth,
        frequency=record.frequency,
    )
    mapping = BudgetMapping.objects.get(budget=record.budget, depth=record.depth)
    planning_services.budget_mapping_save(mapping=mapping, max_objects=123)
    report = transfer_collection(collection=collection)
    assert report.updated == 1
    for obj, page in pages.items():
        fresh = type(obj).objects.get(pk=obj.pk)
        assert current_version(fresh) == current_version(obj) + 1, obj
        response = as_curator.post(page.request["PATH_INFO"], {**browser_data(page), "comments": "mine"})
        assert response.status_code == 200, obj
        [error] = response.context["form"].non_field_errors()
        assert error.startswith(
            f"Someone else changed this {obj._meta.verbose_name} while you were editing it"
        )
        assert type(obj).objects.get(pk=obj.pk).comments == fresh.comments
