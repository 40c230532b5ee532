"""The curators' pages of access rules and exclusions: made, changed and lifted through HTTP, bad input
refused at its field with nothing saved, stale pages refused, every change in the history, and no
write for any other role."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from harvest.services.planning import collection_mapping_save
from storage.models import Capture, WarcFile
from storage.models_access import AccessLevel, AccessRule, Exclusion
from storage.services.access import access_rule_save, exclusion_create, exclusion_lift
from tests.access import assert_sent_to_login, user_for
from tests.factories import CollectionFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db

COURT_ORDER = {
    "kind": "prefix",
    "target": "https://www.example.fr/private/",
    "reason": "A court order",
    "requested_by": "Tribunal judiciaire de Paris",
    "requested_on": "2026-11-20",
}


@pytest.fixture
def curator(client):
    user = user_for(Role.CURATOR)
    client.force_login(user)
    return user


def form_errors(response) -> dict:
    return response.context["form"].errors


def text(response) -> str:
    return response.content.decode()


def new_exclusion(**fields) -> Exclusion:
    values = {"kind": "url", "target": "http://example.fr/a", "reason": "r", "requested_by": "p", **fields}
    return exclusion_create(**values)


def url(name: str, obj=None) -> str:
    return reverse(f"storage:{name}", kwargs={"pk": obj.pk} if obj is not None else None)


# Access rules ---------------------------------------------------------------------------------------


def test_a_curator_gives_a_collection_a_rule_and_its_history_says_who(client, curator, selective):
    collection = CollectionFactory(name="Elections 2027")
    collection_mapping_save(collection=collection, frequency="weekly", harvest_definition=selective)
    answer = client.post(
        url("accessrule_create"),
        {"collection": collection.pk, "level": AccessLevel.READING_ROOM, "note": "Legal deposit, BnF"},
    )
    rule = AccessRule.objects.get(collection=collection)
    assert answer.status_code == 302 and answer["Location"] == rule.get_absolute_url()
    assert rule.level == AccessLevel.READING_ROOM

    page = text(client.get(rule.get_absolute_url()))
    assert "Reading room" in page and "selective-test" in page  # what it covers
    listed = text(client.get(url("accessrule_list")))
    assert "Elections 2027" in listed and "Reading room" in listed and rule.get_absolute_url() in listed

    assert client.get(url("accessrule_edit", rule)).status_code == 200
    embargo = timezone.localdate() + timedelta(days=30)
    answer = client.post(
        url("accessrule_edit", rule),
        {
            "level": AccessLevel.OPEN,
            "embargo_until": embargo.isoformat(),
            "note": "Opened",
            "seen": rule.version,
        },
    )
    assert answer.status_code == 302
    rule.refresh_from_db()
    assert (rule.level, rule.embargo_until, rule.version) == (AccessLevel.OPEN, embargo, 2)

    detail = client.get(rule.get_absolute_url())
    assert f"Embargoed until {embargo.isoformat()}, then Open" in text(detail)
    history = detail.context["history"]
    assert [entry["user"] for entry in history] == [curator, curator]
    changed = {str(change["field"]): (change["old"], change["new"]) for change in history[0]["changes"]}
    assert changed["access"] == ("Reading room: readers in a reading room, and staff", "Open: anyone")
    assert changed["note"] == ("Legal deposit, BnF", "Opened")
    # The page says it too: who, and the old and new value.
    assert curator.username in text(detail) and "Open: anyone" in text(detail)


def test_a_rule_for_a_harvest_definition_covers_its_captures_and_the_list_filters_by_target(
    client, curator, selective
):
    ruled = access_rule_save(collection=CollectionFactory(name="Some collection"), level=AccessLevel.STAFF)
    answer = client.post(url("accessrule_create"), {"harvest_definition": selective.pk, "level": "readers"})
    rule = AccessRule.objects.get(harvest_definition=selective)
    assert answer["Location"] == rule.get_absolute_url()
    detail = client.get(rule.get_absolute_url())
    assert list(detail.context["definitions"]) == [selective] and detail.context["captures"] == 0

    definitions = text(client.get(url("accessrule_list"), {"target": "definition"}))
    assert rule.get_absolute_url() in definitions and ruled.get_absolute_url() not in definitions
    collections = text(client.get(url("accessrule_list"), {"target": "collection", "level": "staff"}))
    assert ruled.get_absolute_url() in collections and rule.get_absolute_url() not in collections


def test_the_new_rule_form_starts_from_the_target_it_was_opened_for(client, curator):
    collection = CollectionFactory()
    form = client.get(url("accessrule_create"), {"collection": collection.pk}).context["form"]
    assert form.initial["collection"] == collection.pk


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"level": "open"}, None, "Choose a collection or a harvest definition: one of the two."),
        (
            {"level": "open", "collection": "both"},
            None,
            "Choose a collection or a harvest definition: one of the two.",
        ),
        ({"collection": "one"}, "level", "This field is required."),
        (
            {"collection": "one", "level": "everyone"},
            "level",
            "Select a valid choice. everyone is not one of",
        ),
        (
            {"collection": "one", "level": "open", "embargo_until": "soon"},
            "embargo_until",
            "Enter a valid date.",
        ),
        ({"collection": "99999999999999999999", "level": "open"}, "collection", "Select a valid choice."),
    ],
)
def test_a_bad_rule_is_refused_at_its_field_and_nothing_is_saved(
    client, curator, selective, data, field, message
):
    one = CollectionFactory()
    access_rule_save(collection=CollectionFactory(), level=AccessLevel.STAFF)
    data = {name: one.pk if value == "one" else value for name, value in data.items()}
    if data.get("collection") == "both":
        data.update(collection=one.pk, harvest_definition=selective.pk)
    answer = client.post(url("accessrule_create"), data)
    assert answer.status_code == 200
    errors = form_errors(answer).get(field or "__all__", [])
    assert any(error.startswith(message) for error in errors), errors
    assert message.split(".")[0] in text(answer)  # shown on the page
    assert AccessRule.objects.count() == 1


@pytest.mark.parametrize("target", ["collection", "harvest_definition"])
def test_a_second_rule_for_a_target_is_refused_with_a_link_to_the_first(client, curator, selective, target):
    subject = CollectionFactory(name="Elections 2027") if target == "collection" else selective
    first = access_rule_save(level=AccessLevel.STAFF, **{target: subject})
    form = client.get(url("accessrule_create")).context["form"]
    assert f"{subject} (has a rule)" in [label for _value, label in form.fields[target].choices]

    answer = client.post(url("accessrule_create"), {target: subject.pk, "level": "open"})
    assert answer.status_code == 200
    assert form_errors(answer)[target] == [
        f'{subject} already has an access rule: <a href="{first.get_absolute_url()}">Staff only</a>.'
    ]
    assert f'<a href="{first.get_absolute_url()}">Staff only</a>' in text(answer)  # a link, not escaped
    assert AccessRule.objects.get() == first and first.version == 1


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"level": ""}, "level", "This field is required."),
        ({"level": "public"}, "level", "Select a valid choice."),
        ({"embargo_until": "2027-02-30"}, "embargo_until", "Enter a valid date."),
        ({"seen": ""}, None, "The page did not say which version of this access rule it showed"),
        ({"seen": "7"}, None, "This access rule never had version 7"),
    ],
)
def test_a_bad_rule_edit_is_refused_and_nothing_is_saved(client, curator, data, field, message):
    rule = access_rule_save(collection=CollectionFactory(), level=AccessLevel.READERS, note="As agreed")
    values = {"level": "open", "note": "Changed", "seen": rule.version, **data}
    answer = client.post(url("accessrule_edit", rule), values)
    assert answer.status_code == 200
    errors = form_errors(answer).get(field or "__all__", [])
    assert any(error.startswith(message) for error in errors), errors
    rule.refresh_from_db()
    assert (rule.level, rule.note, rule.version) == (AccessLevel.READERS, "As agreed", 1)


def test_a_rule_edited_from_a_stale_page_is_refused(client, curator):
    rule = access_rule_save(collection=CollectionFactory(), level=AccessLevel.READERS)
    seen = rule.version
    access_rule_save(rule=rule, expected_version=seen, level=AccessLevel.STAFF)  # someone else, meanwhile
    answer = client.post(url("accessrule_edit", rule), {"level": AccessLevel.OPEN, "seen": seen})
    assert answer.status_code == 200
    assert "Someone else changed this access rule" in text(answer)
    rule.refresh_from_db()
    assert (rule.level, rule.version) == (AccessLevel.STAFF, 2)


# Exclusions -----------------------------------------------------------------------------------------


def test_a_curator_excludes_a_url_edits_and_lifts_it(client, curator):
    form = client.get(url("exclusion_create")).context["form"]
    assert form["requested_on"].value() == timezone.localdate()  # the request is today's, unless said

    answer = client.post(url("exclusion_create"), COURT_ORDER)
    exclusion = Exclusion.objects.get()
    assert answer.status_code == 302 and answer["Location"] == exclusion.get_absolute_url()
    assert (exclusion.key, exclusion.key_end) == ("fr,example)/private/", "fr,example)/private0")
    assert exclusion.created_by == curator and exclusion.is_active()
    page = text(client.get(exclusion.get_absolute_url()))
    assert "in force" in page and "fr,example)/private/ … fr,example)/private0" in page
    assert 'id="lift-form"' in page

    assert client.get(url("exclusion_edit", exclusion)).status_code == 200
    answer = client.post(
        url("exclusion_edit", exclusion),
        {**COURT_ORDER, "kind": "url", "target": "https://www.example.fr/private/page", "seen": 1},
    )
    assert answer.status_code == 302
    exclusion.refresh_from_db()
    assert (exclusion.kind, exclusion.key, exclusion.version) == ("url", "fr,example)/private/page", 2)

    lifted = client.post(url("exclusion_lift", exclusion), {"seen": exclusion.version}, follow=True)
    assert "was lifted: its captures are readable again" in text(lifted)
    exclusion.refresh_from_db()
    assert exclusion.lifted_by == curator and not exclusion.is_active() and exclusion.version == 3
    again = client.post(url("exclusion_lift", exclusion), {"seen": exclusion.version}, follow=True)
    assert "This exclusion was already lifted." in text(again)
    exclusion.refresh_from_db()
    assert exclusion.version == 3

    detail = client.get(exclusion.get_absolute_url())
    assert 'id="lift-form"' not in text(detail) and url("exclusion_edit", exclusion) not in text(detail)
    history = detail.context["history"]
    assert len(history) == 3 and all(entry["user"] == curator for entry in history)
    changed = {str(change["field"]) for change in history[1]["changes"]}
    assert {"excludes", "URL or domain"} <= changed
    assert {str(change["field"]) for change in history[0]["changes"]} >= {"lifted at", "lifted by"}

    listed = text(client.get(url("exclusion_list"), {"state": "lifted"}))
    assert "www.example.fr/private/page" in listed
    assert "www.example.fr/private/page" not in text(client.get(url("exclusion_list"), {"state": "in-force"}))


def test_an_exclusion_edited_from_a_stale_page_is_refused(client, curator):
    exclusion = new_exclusion(reason="A complaint")
    seen = exclusion.version
    client.post(url("exclusion_edit", exclusion), {**COURT_ORDER, "kind": "url", "seen": seen})
    answer = client.post(
        url("exclusion_edit", exclusion),
        {**COURT_ORDER, "kind": "url", "reason": "Mine", "seen": seen},
    )
    assert answer.status_code == 200
    assert "Someone else changed this exclusion" in text(answer)
    exclusion.refresh_from_db()
    assert (exclusion.reason, exclusion.version) == ("A court order", 2)


def test_a_lifted_exclusion_is_not_edited(client, curator):
    exclusion = exclusion_lift(exclusion=new_exclusion(), expected_version=1)
    page = client.get(url("exclusion_edit", exclusion), follow=True)
    assert page.redirect_chain[-1][0] == exclusion.get_absolute_url()
    assert "This exclusion was lifted; enter a new one." in text(page)
    answer = client.post(url("exclusion_edit", exclusion), {**COURT_ORDER, "seen": exclusion.version})
    assert answer.status_code == 200
    assert form_errors(answer)["__all__"] == ["This exclusion was lifted; enter a new one."]
    exclusion.refresh_from_db()
    assert (exclusion.target, exclusion.version) == ("http://example.fr/a", 2)


def test_lifting_from_a_stale_page_or_without_a_version_changes_nothing(client, curator):
    exclusion = new_exclusion()
    missing = "The page did not say which version of this exclusion it showed; reload it."
    for seen, message in [
        ("", missing),
        ("x", missing),
        ("0", missing),
        ("²", missing),
        ("99999999999", missing),
        ("7", "This exclusion never had version 7; it is at version 1."),
    ]:
        answer = client.post(url("exclusion_lift", exclusion), {"seen": seen}, follow=True)
        assert [str(m) for m in answer.context["messages"]] == [message]
    new_exclusion_change = client.post(
        url("exclusion_edit", exclusion), {**COURT_ORDER, "kind": "url", "seen": 1}
    )
    assert new_exclusion_change.status_code == 302  # someone else changed it meanwhile
    stale = client.post(url("exclusion_lift", exclusion), {"seen": 1}, follow=True)
    assert "Someone else changed this exclusion" in text(stale)
    exclusion.refresh_from_db()
    assert exclusion.lifted_at is None and exclusion.version == 2
    assert client.get(url("exclusion_lift", exclusion)).status_code == 405  # a change is a POST


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"target": ""}, "target", "This field is required."),
        ({"target": "   "}, "target", "This field is required."),
        ({"target": "http://exa mple.fr/"}, "target", "Type one URL or domain, without spaces."),
        ({"kind": "domain", "target": "localhost"}, "target", "“localhost” is not a domain name."),
        ({"kind": "everything"}, "kind", "Select a valid choice."),
        ({"reason": ""}, "reason", "This field is required."),
        ({"requested_by": ""}, "requested_by", "This field is required."),
        ({"ends_on": "2026-11-01"}, "ends_on", "The end date must come after the date of the request."),
        ({"ends_on": "2026-11-20"}, "ends_on", "The end date must come after the date of the request."),
        ({"requested_on": "yesterday"}, "requested_on", "Enter a valid date."),
        ({"requested_on": ""}, "requested_on", "This field is required."),
    ],
)
def test_a_bad_exclusion_is_refused_at_its_field_and_nothing_is_saved(client, curator, data, field, message):
    answer = client.post(url("exclusion_create"), {**COURT_ORDER, **data})
    assert answer.status_code == 200
    assert any(error.startswith(message) for error in form_errors(answer)[field]), form_errors(answer)
    assert not Exclusion.objects.exists()

    # The same mistake on the edit page: refused, the exclusion as it was.
    exclusion = new_exclusion()
    answer = client.post(url("exclusion_edit", exclusion), {**COURT_ORDER, **data, "seen": 1})
    assert answer.status_code == 200
    assert any(error.startswith(message) for error in form_errors(answer)[field]), form_errors(answer)
    exclusion.refresh_from_db()
    assert (exclusion.kind, exclusion.target, exclusion.version) == ("url", "http://example.fr/a", 1)


def test_an_exclusion_says_which_captures_it_covers(client, curator):
    warc = WarcFile.objects.create(name="imported.warc.gz", path="/nowhere", created_at=timezone.now())
    keys = [
        "fr,example)/",
        "fr,example,www)/page",
        "fr,example:8080)/",
        "fr,example-shop)/",  # another domain
        "fr,examples)/",  # another domain
        "com,example)/",
    ]
    Capture.objects.bulk_create(
        Capture(
            urlkey=key,
            timestamp=timezone.now(),
            url="http://example.fr/",
            record_type="response",
            length=1,
            offset=index,
            warc_file=warc,
        )
        for index, key in enumerate(keys)
    )
    domain = new_exclusion(kind="domain", target="example.fr")
    page = client.get(domain.get_absolute_url())
    assert page.context["covered"] == 3
    assert "3 captures, stored and indexed all the same" in text(page)
    assert "fr,example) … fr,example-; fr,example: … fr,example;" in text(page)
    assert client.get(new_exclusion(target="http://example.fr/").get_absolute_url()).context["covered"] == 1


def test_the_exclusions_in_force_come_first_and_only_those_can_be_lifted(client, curator):
    today = timezone.localdate()
    in_force = new_exclusion(target="http://example.fr/in-force", requested_on=today - timedelta(days=30))
    ended = new_exclusion(
        target="http://example.fr/ended",
        requested_on=today - timedelta(days=10),
        ends_on=today - timedelta(days=1),
    )
    lifted = exclusion_lift(exclusion=new_exclusion(target="http://example.fr/lifted"), expected_version=1)
    # The oldest, but in force: first; then the newest first.
    assert list(client.get(url("exclusion_list")).context["object_list"]) == [in_force, lifted, ended]
    for state, shown in [("in-force", [in_force]), ("lifted", [lifted]), ("ended", [ended])]:
        assert list(client.get(url("exclusion_list"), {"state": state}).context["object_list"]) == shown
    page = text(client.get(ended.get_absolute_url()))
    assert "· <strong>ended</strong>" in page and 'id="lift-form"' not in page  # nothing to lift
    assert url("exclusion_edit", ended) in page  # but its end may be moved


# Who may do what ------------------------------------------------------------------------------------


def test_the_curators_and_the_administrator_see_the_buttons(client):
    rule = access_rule_save(collection=CollectionFactory(), level=AccessLevel.READERS)
    exclusion = new_exclusion()
    for role in (Role.CURATOR, "admin"):
        client.force_login(user_for(role))
        assert url("accessrule_create") in text(client.get(url("accessrule_list")))
        assert url("accessrule_edit", rule) in text(client.get(rule.get_absolute_url()))
        assert url("exclusion_create") in text(client.get(url("exclusion_list")))
        page = text(client.get(exclusion.get_absolute_url()))
        assert url("exclusion_edit", exclusion) in page and url("exclusion_lift", exclusion) in page


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.ENGINEER, Role.MANAGER, Role.READER, None])
def test_only_curators_read_and_write_rules_and_exclusions(client, role):
    client.force_login(user_for(role))
    collection = CollectionFactory()
    rule = access_rule_save(collection=CollectionFactory(), level=AccessLevel.READERS)
    exclusion = new_exclusion()
    pages = [
        url("accessrule_list"),
        url("accessrule_create"),
        url("accessrule_detail", rule),
        url("accessrule_edit", rule),
        url("exclusion_list"),
        url("exclusion_create"),
        url("exclusion_detail", exclusion),
        url("exclusion_edit", exclusion),
    ]
    for page in pages:
        assert client.get(page).status_code == 403, page
    posts = [
        (url("accessrule_create"), {"collection": collection.pk, "level": "open"}),
        (url("accessrule_edit", rule), {"level": "open", "seen": rule.version}),
        (url("exclusion_create"), {**COURT_ORDER, "target": "http://example.fr/b"}),
        (url("exclusion_edit", exclusion), {**COURT_ORDER, "seen": exclusion.version}),
        (url("exclusion_lift", exclusion), {"seen": exclusion.version}),
    ]
    for page, data in posts:
        assert client.post(page, data).status_code == 403, page
    assert AccessRule.objects.get() == rule and rule.version == 1
    exclusion.refresh_from_db()
    assert Exclusion.objects.get() == exclusion and exclusion.lifted_at is None and exclusion.version == 1


def test_anonymous_visitors_are_sent_to_log_in(client):
    rule = access_rule_save(collection=CollectionFactory(), level=AccessLevel.OPEN)
    exclusion = new_exclusion()
    for name, obj in [
        ("accessrule_list", None),
        ("accessrule_create", None),
        ("accessrule_detail", rule),
        ("accessrule_edit", rule),
        ("exclusion_list", None),
        ("exclusion_create", None),
        ("exclusion_detail", exclusion),
        ("exclusion_edit", exclusion),
    ]:
        assert_sent_to_login(client.get(url(name, obj)), url(name, obj))
    assert_sent_to_login(client.post(url("exclusion_lift", exclusion), {"seen": 1}), "lift")
    assert_sent_to_login(client.post(url("accessrule_create"), {"level": "open"}), "create")
    exclusion.refresh_from_db()
    assert exclusion.lifted_at is None and AccessRule.objects.count() == 1
