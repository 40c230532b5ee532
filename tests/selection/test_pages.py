"""The selection pages through HTTP: what a librarian and a curator do in a browser, without one.

URL checks go to the local test website (127.0.0.1), so private addresses are allowed here.
"""

import zoneinfo

import pytest
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selection.choices import CheckStatus, RecordStatus
from selection.models import CompatibilityRule, Record, SavedSearch
from selection.services import record_update
from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _local_checks(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.SELECTION_URL_CHECK_TIMEOUT = 2


@pytest.fixture
def librarian():
    return UserFactory(username="louise", roles=[Role.LIBRARIAN])


@pytest.fixture
def curator():
    return UserFactory(username="camille", roles=[Role.CURATOR])


@pytest.fixture
def collection(librarian):
    return CollectionFactory(name="News", members=[librarian])


@pytest.fixture
def theme(collection):
    return ThemeFactory(collection=collection, name="Press")


def stage1(client, collection, url):
    return client.post(
        reverse("selection:record_propose"), {"entry-collection": collection.pk, "entry-url": url}
    )


def stage2(client, collection, first_page, **fields):
    form = first_page.context["form"]
    data = {f"record-{name}": value for name, value in form.initial.items() if value is not None}
    data.update({f"record-{name}": value for name, value in fields.items()})
    data.update({"entry-collection": collection.pk, "entry-url": form.initial["url"]})
    data.setdefault("record-is_active", "on")
    return client.post(reverse("selection:record_propose"), data)


# Proposing ---------------------------------------------------------------------------------------


@pytest.mark.smoke
def test_the_two_stage_proposal(client, librarian, collection, theme, testsite):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/ok"))
    assert page.status_code == 200
    assert page.context["check"].status == CheckStatus.OK
    assert 'id="record-form"' in page.content.decode()
    assert not Record.objects.exists()  # stage 1 writes nothing
    saved = stage2(client, collection, page, theme=theme.pk, keywords="Press; Europe", content_notes="Daily")
    record = Record.objects.get()
    assert saved.status_code == 302 and saved["Location"] == record.get_absolute_url()
    assert (record.url, record.check_status, record.responsible) == (
        testsite.url("/ok"),
        CheckStatus.OK,
        librarian,
    )
    assert sorted(k.name for k in record.keywords.all()) == ["Europe", "Press"]
    assert record.history.count() >= 1


def test_a_redirect_is_shown_hop_by_hop_with_the_final_url_to_choose(client, librarian, collection, testsite):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/redirect/2"))
    html = page.content.decode()
    assert page.context["check"].status == CheckStatus.REDIRECT
    assert html.count("— 301") == 2 and "— 200" in html
    assert f"Use the final URL instead: {testsite.url('/ok')}" in html


def test_the_final_url_is_offered_only_when_it_differs(client, librarian, collection, testsite):
    client.force_login(librarian)
    # Sets a cookie and comes back to itself: a redirect that ends where it began.
    page = stage1(client, collection, testsite.url("/cookie-redirect"))
    assert page.context["check"].status == CheckStatus.REDIRECT
    assert 'id="use-final-url"' not in page.content.decode()
    # A redirect whose record form comes back with an error, proposing the final URL already.
    page = stage1(client, collection, testsite.url("/redirect/1"))
    again = stage2(client, collection, page, url=testsite.url("/ok"))  # no theme: the form is refused
    assert again.status_code == 200 and 'id="record-form"' in again.content.decode()
    assert 'id="use-final-url"' not in again.content.decode()


def test_an_invalid_url_cannot_be_selected_by_a_librarian(client, librarian, collection, theme, testsite):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/not-found"))
    html = page.content.decode()
    assert "The server answered 404 Not Found." in html
    assert 'id="record-form"' not in html
    # Posting stage 2 anyway is refused by the server, not only hidden by the page.
    forced = stage2(client, collection, page, theme=theme.pk)
    assert forced.status_code == 200
    assert "This URL cannot be selected: The server answered 404 Not Found." in forced.content.decode()
    assert not Record.objects.exists()


def test_a_forged_check_is_not_believed(client, librarian, collection, theme, testsite):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/ok"))
    # Same form, another URL, the token of the good one: the server checks the new URL itself.
    forged = stage2(client, collection, page, theme=theme.pk, url=testsite.url("/error"))
    assert "The server answered 500 Internal Server Error." in forged.content.decode()
    assert not Record.objects.exists()
    tampered = stage2(
        client, collection, page, theme=theme.pk, url=testsite.url("/not-found"), check_token="x:y"
    )
    assert "404 Not Found" in tampered.content.decode()
    assert not Record.objects.exists()


def test_duplicates_are_shown_and_the_same_url_is_refused_in_the_same_collection(
    client, librarian, collection, theme, testsite
):
    existing = RecordFactory(collection=collection, theme=theme, url=testsite.url("/ok"))
    other_collection = CollectionFactory(members=[librarian])
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/ok"))
    assert "This URL is already in this collection." in page.content.decode()
    refused = stage2(client, collection, page, theme=theme.pk)
    assert f"already in this collection (record #{existing.pk})" in refused.content.decode()
    elsewhere = stage1(client, other_collection, testsite.url("/ok"))
    assert "This URL is already in another collection." in elsewhere.content.decode()
    similar = stage1(client, collection, testsite.url("/redirect-302"))
    assert "Similar URLs are already selected." in similar.content.decode()
    assert Record.objects.count() == 1


def test_a_librarian_proposes_only_into_their_collections(client, librarian, testsite):
    other = CollectionFactory(name="Sport")
    client.force_login(librarian)
    page = stage1(client, other, testsite.url("/ok"))
    assert "Select a valid choice" in page.content.decode()  # "Sport" is not offered
    assert not Record.objects.exists()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(url=st.one_of(st.text(max_size=300), st.from_regex(r"[a-z]{0,8}:?/{0,3}[^\s]{0,40}", fullmatch=True)))
def test_whatever_is_typed_as_a_url_never_breaks_the_page_nor_writes(
    client, librarian, collection, theme, url
):
    client.force_login(librarian)
    page = stage1(client, collection, url)
    assert page.status_code == 200
    api = client.post(reverse("api:record-check-url"), {"url": url}, content_type="application/json")
    assert api.status_code in (200, 400)
    created = client.post(
        reverse("api:record-list"),
        {"collection": collection.pk, "theme": theme.pk, "url": url},
        content_type="application/json",
    )
    assert created.status_code == 400
    assert not Record.objects.exists()


# Editing -----------------------------------------------------------------------------------------


def edit_data(record, **changes):
    data = {
        "url": record.url,
        "responsible": record.responsible_id,
        "budget": record.budget,
        "frequency": record.frequency,
        "depth": record.depth,
        "theme": record.theme_id,
        "version": record.version,
        "is_active": "on",
    }
    data.update(changes)
    return data


def test_a_member_edits_and_the_second_of_two_editors_is_told_what_changed(
    client, librarian, collection, theme
):
    record = RecordFactory(collection=collection, theme=theme, url="http://site.example.org/")
    client.force_login(librarian)
    url = reverse("selection:record_edit", kwargs={"pk": record.pk})
    assert client.get(url).status_code == 200
    form_version = record.version
    # Meanwhile, a curator saves the same record.
    record_update(
        record=Record.objects.get(pk=record.pk),
        user=UserFactory(username="camille", roles=[Role.CURATOR]),
        expected_version=form_version,
        content_notes="Checked by phone",
    )
    response = client.post(url, edit_data(record, content_notes="Mine", version=form_version))
    assert response.status_code == 200
    assert "content notes changed to “Checked by phone” by camille" in response.content.decode()
    assert Record.objects.get(pk=record.pk).content_notes == "Checked by phone"


def test_incompatible_settings_are_refused_at_their_fields(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme)
    client.force_login(librarian)
    response = client.post(
        reverse("selection:record_edit", kwargs={"pk": record.pk}),
        edit_data(record, budget="large", frequency="daily"),
    )
    form = response.context["form"]
    assert form.errors["budget"][0].startswith("These settings cannot be combined: Large + Daily + any.")
    assert "frequency" in form.errors
    assert Record.objects.get(pk=record.pk).budget == record.budget


def test_the_edit_form_shows_the_forbidden_combinations(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme)
    client.force_login(librarian)
    html = client.get(reverse("selection:record_edit", kwargs={"pk": record.pk})).content.decode()
    assert 'id="compat-matrix"' in html and "large|daily|page" in html
    assert "Large + Daily + any" in html  # listed for readers without JavaScript


# The site needs a browser -----------------------------------------------------------------------


def test_a_librarian_says_when_the_proposed_site_needs_a_browser(
    client, librarian, collection, theme, testsite
):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/ok"))
    field = page.context["form"]["needs_browser"]
    assert field.label == "The site needs a browser"
    assert field.help_text.startswith("Its pages are built by JavaScript:")
    assert str(field.help_text) in page.content.decode()
    stage2(client, collection, page, theme=theme.pk, **{"needs_browser": "on"})
    assert Record.objects.get().needs_browser is True


def test_the_site_needs_a_browser_is_edited_shown_filtered_and_bulk_edited(
    client, librarian, collection, theme
):
    record = RecordFactory(collection=collection, theme=theme, status=RecordStatus.VALIDATED)
    other = RecordFactory(collection=collection, theme=theme)
    client.force_login(librarian)
    response = client.post(
        reverse("selection:record_edit", kwargs={"pk": record.pk}), edit_data(record, needs_browser="on")
    )
    assert response.status_code == 302
    record.refresh_from_db()
    # How the site is harvested changed: a curator validates it again.
    assert (record.needs_browser, record.status) == (True, RecordStatus.PROPOSED)
    assert record.status_reason == "Technical settings changed after validation."
    assert record.history.first().needs_browser is True

    page = client.get(record.get_absolute_url())
    assert ("the site needs a browser", "yes") in page.context["field_rows"]
    assert "The site needs a browser" in page.content.decode()
    edit = client.get(reverse("selection:record_edit", kwargs={"pk": record.pk}))
    assert edit.context["form"]["needs_browser"].value() is True

    listed = client.get(reverse("selection:record_list"), {"needs_browser": "true"})
    assert list(listed.context["object_list"]) == [record]
    listed = client.get(reverse("selection:record_list"), {"needs_browser": "false"})
    assert list(listed.context["object_list"]) == [other]

    url = reverse("selection:record_bulk_edit")
    done = client.post(
        url, {"scope": "all", "query": f"collection={collection.pk}", "apply": "1", "needs_browser": "true"}
    )
    assert done.status_code == 302
    assert set(Record.objects.values_list("needs_browser", flat=True)) == {True}
    done = client.post(
        url,
        {"scope": "all", "query": f"collection={collection.pk}", "apply": "1", "needs_browser": "false"},
        follow=True,
    )
    assert "2 record(s) checked; changes made — needs_browser: 2." in done.content.decode()
    assert set(Record.objects.values_list("needs_browser", flat=True)) == {False}


# Curators ----------------------------------------------------------------------------------------


def test_the_validation_queue_validates_and_rejects_in_bulk(client, curator, collection, theme):
    first, second = (RecordFactory(collection=collection, theme=theme) for _ in range(2))
    client.force_login(curator)
    queue = client.get(reverse("selection:validation_queue"))
    assert {obj.pk for obj in queue.context["object_list"]} == {first.pk, second.pk}
    decide = reverse("selection:validation_decide")
    response = client.post(decide, {"records": [first.pk, second.pk], "decision": "rejected"}, follow=True)
    assert "Nothing was changed." in response.content.decode()
    assert set(Record.objects.values_list("status", flat=True)) == {RecordStatus.PROPOSED}
    client.post(decide, {"records": [first.pk], "decision": "validated"})
    client.post(decide, {"records": [second.pk], "decision": "rejected", "reason": "Out of scope"})
    assert Record.objects.get(pk=first.pk).status == RecordStatus.VALIDATED
    assert Record.objects.get(pk=second.pk).status_reason == "Out of scope"
    assert not client.get(reverse("selection:validation_queue")).context["object_list"]


def test_a_curator_edits_the_compatibility_matrix(client, curator, librarian):
    client.force_login(curator)
    response = client.post(
        reverse("selection:compatibility"), {"budget": "small", "depth": "domain", "reason": "x"}
    )
    assert response.status_code == 302
    rule = CompatibilityRule.objects.get(budget="small", depth="domain")
    page = client.get(reverse("selection:compatibility"))
    assert "Small" in page.content.decode() and "table-danger" in page.content.decode()
    bad = client.post(reverse("selection:compatibility"), {"budget": "huge"})
    assert "Select a valid choice" in bad.content.decode()
    client.force_login(librarian)
    assert client.post(reverse("selection:compatibility"), {"budget": "large"}).status_code == 403
    assert (
        client.post(reverse("selection:compatibility_rule_delete", kwargs={"pk": rule.pk})).status_code == 403
    )
    assert CompatibilityRule.objects.filter(pk=rule.pk).exists()


def test_a_new_rule_shows_the_records_it_would_forbid_and_never_blocks_their_other_edits(
    client, curator, librarian, collection, theme
):
    caught = RecordFactory(
        collection=collection,
        theme=theme,
        url="https://caught.example.org/",
        budget="medium",
        frequency="weekly",
    )
    RecordFactory(collection=collection, theme=theme, url="https://free.example.org/", budget="small")
    client.force_login(curator)
    url = reverse("selection:compatibility")
    data = {"budget": "medium", "frequency": "weekly", "reason": "Too often for a medium site."}
    preview = client.post(url, {**data, "preview": "1"})
    html = preview.content.decode()
    assert "This rule would forbid the settings of 1 existing record:" in html
    assert "https://caught.example.org/" in html and "https://free.example.org/" not in html
    assert not CompatibilityRule.objects.filter(budget="medium", frequency="weekly").exists()  # not yet
    assert client.post(url, data).status_code == 302
    page = client.get(url).content.decode()
    assert "1 record has settings a rule now forbids" in page and "https://caught.example.org/" in page
    # The librarian edits the record's notes: saved; its settings stay as they were.
    client.force_login(librarian)
    caught.refresh_from_db()
    edit = reverse("selection:record_edit", kwargs={"pk": caught.pk})
    response = client.post(edit, edit_data(caught, content_notes="Checked by phone"))
    assert response.status_code == 302, response.content.decode()
    assert Record.objects.get(pk=caught.pk).content_notes == "Checked by phone"
    # Changing a setting to another forbidden combination is refused.
    caught.refresh_from_db()
    response = client.post(edit, edit_data(caught, depth="page"))
    assert "These settings cannot be combined: Medium + Weekly + any." in response.content.decode()


def test_a_curator_creates_a_collection_with_themes(client, curator, librarian):
    client.force_login(curator)
    response = client.post(
        reverse("selection:collection_create"),
        {
            "name": "Sport",
            "kind": "department",
            "default_budget": "small",
            "default_frequency": "monthly",
            "default_depth": "host",
            "members": [librarian.pk],
            "is_active": "on",
        },
    )
    collection = librarian.collections.get(name="Sport")
    assert response["Location"] == collection.get_absolute_url()
    client.post(reverse("selection:theme_create", kwargs={"pk": collection.pk}), {"name": "Football"})
    duplicate = client.post(
        reverse("selection:theme_create", kwargs={"pk": collection.pk}), {"name": "FOOTBALL"}
    )
    assert "This collection already has this theme." in duplicate.content.decode()
    assert [t.name for t in collection.themes.all()] == ["Football"]


# Bulk edit, saved searches -----------------------------------------------------------------------


def test_bulk_edit_from_the_list(client, librarian, collection, theme):
    records = [RecordFactory(collection=collection, theme=theme, responsible=librarian) for _ in range(3)]
    paul = UserFactory(username="paul", roles=[Role.LIBRARIAN])
    client.force_login(librarian)
    url = reverse("selection:record_bulk_edit")
    form = client.post(url, {"scope": "all", "query": "responsible=me"})
    assert form.context["count"] == 3
    done = client.post(
        url, {"scope": "all", "query": "responsible=me", "apply": "1", "responsible": paul.pk}, follow=True
    )
    assert "3 record(s) checked; changes made — responsible: 3." in done.content.decode()
    assert set(Record.objects.values_list("responsible__username", flat=True)) == {"paul"}
    outside = RecordFactory()
    refused = client.post(
        url,
        {"scope": "selected", "records": [records[0].pk, outside.pk], "apply": "1", "depth": "page"},
    )
    assert "You are not a member" in refused.content.decode()
    assert not Record.objects.filter(depth="page").exists()


def test_a_refused_bulk_edit_names_each_record_once_under_its_reason(client, librarian, collection, theme):
    daily = [
        RecordFactory(collection=collection, theme=theme, url=f"https://d{n}.example.org/", frequency="daily")
        for n in range(2)
    ]
    weekly = RecordFactory(
        collection=collection, theme=theme, url="https://w.example.org/", frequency="weekly"
    )
    outside = RecordFactory(url="https://outside.example.org/")
    client.force_login(librarian)
    response = client.post(
        reverse("selection:record_bulk_edit"),
        {"records": [r.pk for r in (*daily, weekly, outside)], "apply": "1", "budget": "large"},
    )
    errors = [str(e) for e in response.context["form"].non_field_errors()]
    rule = (
        "These settings cannot be combined: Large + Daily + any. A large site cannot be harvested every day."
    )
    assert errors == [
        f"{rule} — 2 records: https://d0.example.org/, https://d1.example.org/",
        f"You are not a member of the collection “{outside.collection}”. — 1 record: https://outside.example.org/",
    ]
    html = response.content.decode()
    assert html.count("https://d0.example.org/, https://d1.example.org/") == 1
    assert 'id="compat-matrix"' in html  # the page greys out impossible combinations as the edit form does
    assert Record.objects.filter(budget="large").count() == 0


def test_a_saved_search_is_kept_and_listed(client, librarian):
    client.force_login(librarian)
    response = client.post(
        reverse("selection:saved_search_create"), {"name": "Mine", "query": "responsible=me"}
    )
    assert response["Location"] == f"{reverse('selection:record_list')}?responsible=me"
    assert "Mine" in client.get(reverse("home")).content.decode()  # in the navigation menu
    again = client.post(reverse("selection:saved_search_create"), {"name": "mine", "query": ""}, follow=True)
    assert "You already have a saved search with this name." in again.content.decode()
    assert SavedSearch.objects.filter(user=librarian).count() == 1


def test_manager_reads_but_cannot_write(client, collection, theme):
    manager = UserFactory(roles=[Role.MANAGER])
    collection.members.add(manager)
    record = RecordFactory(collection=collection, theme=theme)
    client.force_login(manager)
    assert client.get(reverse("selection:record_detail", kwargs={"pk": record.pk})).status_code == 200
    assert client.get(reverse("selection:record_edit", kwargs={"pk": record.pk})).status_code == 403
    assert client.get(reverse("selection:record_propose")).status_code == 403
    assert client.post(reverse("selection:record_bulk_edit"), {"scope": "all"}).status_code == 403


def test_the_pages_offer_only_what_the_role_permits(client, librarian, curator, collection, theme):
    record = RecordFactory(collection=collection, theme=theme)
    elsewhere = CollectionFactory(name="Sport")
    manager = UserFactory(roles=[Role.MANAGER])
    records, collections = reverse("selection:record_list"), reverse("selection:collection_list")

    def page(user, url):
        client.force_login(user)
        return client.get(url).content.decode()

    # A manager reads: no checkbox column, no bulk edit, no proposal, import, edit nor status form.
    html = page(manager, records)
    assert 'id="records"' in html and record.url in html
    assert 'name="records"' not in html and "Edit the selected records" not in html
    assert "Propose a URL" not in html and "Import CSV" not in html
    assert "New collection" not in page(manager, collections)
    html = page(manager, record.get_absolute_url())
    assert "Transfer to another collection" not in html and 'id="status-form"' not in html
    # A librarian ticks records and proposes, in the collections they are a member of.
    html = page(librarian, records)
    assert f'name="records" value="{record.pk}"' in html and "Edit the selected records" in html
    assert "Propose a URL" in html and "Import CSV" in html
    assert "New collection" not in page(librarian, collections)
    html = page(librarian, record.get_absolute_url())
    assert "Transfer to another collection" in html and 'id="status-form"' not in html
    assert "Propose a URL" in page(librarian, collection.get_absolute_url())
    html = page(librarian, elsewhere.get_absolute_url())
    assert "Propose a URL" not in html and 'placeholder="New theme"' not in html
    # A curator also creates collections and themes, edits them and sets a record's status.
    assert "New collection" in page(curator, collections)
    html = page(curator, elsewhere.get_absolute_url())
    assert "Propose a URL" in html and 'placeholder="New theme"' in html
    assert reverse("selection:collection_edit", kwargs={"pk": elsewhere.pk}) in html
    assert 'id="status-form"' in page(curator, record.get_absolute_url())


def test_lists_count_their_results_and_dates_are_in_local_time(
    client, librarian, collection, theme, settings
):
    settings.TIME_ZONE = "Europe/Paris"
    record = RecordFactory(collection=collection, theme=theme)
    RecordFactory.create_batch(2, collection=collection, theme=theme)
    client.force_login(librarian)
    html = client.get(reverse("selection:record_list")).content.decode()
    assert "3 records" in html and "Edit all 3 records found" in html
    detail = client.get(reverse("selection:record_detail", kwargs={"pk": record.pk}))
    local = timezone.localtime(record.created_at, zoneinfo.ZoneInfo("Europe/Paris")).strftime(
        "%Y-%m-%d %H:%M:%S"
    )
    assert local in detail.content.decode()
    assert "+00:00" not in detail.content.decode()


def test_a_curator_may_select_a_failed_url_with_a_reason(client, curator, collection, theme, testsite):
    client.force_login(curator)
    page = stage1(client, collection, testsite.url("/error"))
    assert "check_override_reason" in page.context["form"].fields
    refused = stage2(client, collection, page, theme=theme.pk)
    assert "This URL cannot be selected" in refused.content.decode()
    saved = stage2(client, collection, page, theme=theme.pk, check_override_reason="Down for maintenance")
    assert saved.status_code == 302
    record = Record.objects.get()
    assert (record.check_status, record.check_override_reason) == (
        CheckStatus.INVALID,
        "Down for maintenance",
    )


def test_a_librarian_is_not_offered_the_override(client, librarian, collection, testsite):
    client.force_login(librarian)
    page = stage1(client, collection, testsite.url("/ok"))
    assert "check_override_reason" not in page.context["form"].fields


def test_an_idn_url_reads_in_unicode_beside_its_punycode(client, librarian, collection, theme):
    record = RecordFactory(collection=collection, theme=theme, url="https://xn--caf-dma.fr/menu")
    client.force_login(librarian)
    listed = client.get(reverse("selection:record_list")).content.decode()
    assert ">https://café.fr/menu</a>" in listed
    ascii_form = '<span class="small text-body-secondary record-url-ascii">https://xn--caf-dma.fr/menu</span>'
    assert ascii_form in listed
    detail = client.get(record.get_absolute_url()).content.decode()
    assert ">https://café.fr/menu</a>" in detail and "https://xn--caf-dma.fr/menu</small>" in detail
    # An ASCII name is shown once, as it is.
    RecordFactory(collection=collection, theme=theme, url="https://plain.fr/")
    listed = client.get(reverse("selection:record_list")).content.decode()
    assert listed.count("https://plain.fr/") == 2  # the link, and the label of its checkbox


def test_people_lists_offer_librarians_and_curators_only(client, curator, librarian, collection, theme):
    from storage.services.replay import replay_account_ensure

    replay_account_ensure()  # the replay process's account: no role, never a person to choose
    UserFactory(username="eve-engineer", roles=[Role.ENGINEER])
    UserFactory(username="rita-reader", roles=[Role.READER])
    UserFactory(username="gone", roles=[Role.LIBRARIAN], is_active=False)
    former = UserFactory(username="former-librarian")  # had the role once; still holds a record
    record = RecordFactory(collection=collection, theme=theme, responsible=former)
    client.force_login(curator)

    def options(url: str, field: str) -> set[str]:
        form = client.get(url).context["form"]
        return {user.username for user in form.fields[field].queryset}

    people = {curator.username, librarian.username}
    assert options(reverse("selection:collection_create"), "members") == people
    assert options(reverse("selection:record_edit", kwargs={"pk": record.pk}), "responsible") == people | {
        "former-librarian"
    }
    # Posting someone who is not offered is refused, and nothing changes.
    replay = UserFactory._meta.model.objects.get(username="replay")
    edit = reverse("selection:record_edit", kwargs={"pk": record.pk})
    response = client.post(edit, edit_data(record, responsible=replay.pk, content_notes="x"))
    assert "Select a valid choice" in response.content.decode()
    assert Record.objects.get(pk=record.pk).responsible == former
    # An edit that keeps the record's former librarian is accepted.
    response = client.post(edit, edit_data(record, content_notes="Checked"))
    assert response.status_code == 302
    assert Record.objects.get(pk=record.pk).content_notes == "Checked"
    # The API gives the same answer.
    client.force_login(librarian)
    api = client.patch(
        reverse("api:record-detail", kwargs={"pk": record.pk}),
        {"responsible": "replay", "version": Record.objects.get(pk=record.pk).version},
        content_type="application/json",
    )
    assert api.status_code == 400 and "responsible" in api.json()
