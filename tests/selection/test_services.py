"""Every selection rule, through the services. The online check is faked here (it is tested
against the local test website in test_urlcheck.py); all else is real."""

import re

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction

from selection import services
from selection.choices import CheckStatus, RecordStatus
from selection.models import CompatibilityRule, Keyword, Record, SavedSearch
from selection.urlcheck import UrlCheckResult
from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def answers(status=CheckStatus.OK, message="The server answered 200 OK"):
    return lambda url: UrlCheckResult(url=url, status=status, message=message)


@pytest.fixture
def librarian():
    return UserFactory(username="louise", roles=[Role.LIBRARIAN])


@pytest.fixture
def curator():
    return UserFactory(username="camille", roles=[Role.CURATOR])


@pytest.fixture
def collection(librarian):
    return CollectionFactory(
        name="News", members=[librarian], default_budget="medium", default_frequency="monthly"
    )


@pytest.fixture
def theme(collection):
    return ThemeFactory(collection=collection, name="National news")


def propose(user, collection, theme, url="http://www.example.org/", checker=None, **fields):
    return services.record_propose(
        user=user, collection=collection, theme=theme, url=url, checker=checker or answers(), **fields
    )


def field_errors(excinfo):
    return {field: " ".join(messages) for field, messages in excinfo.value.message_dict.items()}


# Proposing -----------------------------------------------------------------------------------------


@pytest.mark.smoke
def test_a_proposal_is_normalised_checked_and_filled_in(librarian, collection, theme):
    record = propose(
        librarian, collection, theme, url="HTTP://WWW.Exämple.FR:80/a/../b#top", keywords=["Press", " press "]
    )
    assert record.url == "http://www.xn--exmple-cua.fr/b"
    assert record.url_key == "xn--exmple-cua.fr/b"
    assert (record.host, record.registered_domain) == ("www.xn--exmple-cua.fr", "xn--exmple-cua.fr")
    assert (record.budget, record.frequency, record.depth) == ("medium", "monthly", collection.default_depth)
    assert record.created_by == record.modified_by == record.responsible == librarian
    assert record.status == RecordStatus.PROPOSED
    assert (
        record.check_status == CheckStatus.OK
        and record.check_result["message"] == "The server answered 200 OK"
    )
    assert [k.name for k in record.keywords.all()] == ["Press"]
    assert Keyword.objects.count() == 1


def test_keywords_are_shared_without_regard_to_case(librarian, collection, theme):
    propose(librarian, collection, theme, url="http://a.example.org/", keywords=["Elections"])
    second = propose(
        librarian, collection, theme, url="http://b.example.org/", keywords=["ELECTIONS", "Europe"]
    )
    assert sorted(k.name for k in second.keywords.all()) == ["Elections", "Europe"]
    assert Keyword.objects.count() == 2


def test_a_librarian_writes_only_in_their_collections(librarian, theme):
    elsewhere = CollectionFactory(name="Sport")
    with pytest.raises(PermissionDenied, match="not a member of the collection “Sport”"):
        propose(librarian, elsewhere, ThemeFactory(collection=elsewhere))
    assert not Record.objects.exists()


def test_a_curator_writes_in_every_collection(curator, collection, theme):
    assert propose(curator, collection, theme).collection == collection


@pytest.mark.parametrize("role", [Role.MANAGER, Role.ENGINEER, None])
def test_roles_without_the_right_cannot_propose_at_all(role, collection, theme):
    user = UserFactory(roles=[role] if role else [])
    collection.members.add(user)
    with pytest.raises(PermissionDenied):
        propose(user, collection, theme)
    assert not Record.objects.exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "Enter a URL."),
        ("ftp://example.org/", "Only http and https URLs can be harvested"),
        ("http://exa mple.org/", "A URL cannot contain spaces."),
        ("http://example/", "is not a full host name"),
        ("http://user:secret@example.org/", "cannot contain a user name or password"),
    ],
)
def test_a_bad_url_is_refused_at_the_url_field(librarian, collection, theme, url, message):
    with pytest.raises(ValidationError) as excinfo:
        propose(librarian, collection, theme, url=url)
    assert message in field_errors(excinfo)["url"]
    assert not Record.objects.exists()


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (CheckStatus.INVALID, "The server answered 404 Not Found"),
        (CheckStatus.INVALID, "No DNS entry for nowhere.example"),
        (CheckStatus.UNREACHABLE, "No answer within 10 s"),
        (CheckStatus.REFUSED, "10.0.0.1 is a private address"),
    ],
)
def test_a_url_that_fails_its_check_cannot_be_selected(librarian, collection, theme, status, message):
    with pytest.raises(ValidationError) as excinfo:
        propose(librarian, collection, theme, checker=answers(status, message))
    assert field_errors(excinfo)["url"] == f"This URL cannot be selected: {message}"
    assert not Record.objects.exists()


def test_only_a_curator_may_override_a_failed_check_and_must_say_why(librarian, curator, collection, theme):
    failed = answers(CheckStatus.INVALID, "The server answered 500 Internal Server Error")
    with pytest.raises(ValidationError) as excinfo:
        propose(librarian, collection, theme, checker=failed, check_override_reason="I know the site")
    assert "Only a curator" in field_errors(excinfo)["check_override_reason"]
    record = propose(curator, collection, theme, checker=failed, check_override_reason="Back up tomorrow")
    assert record.check_status == CheckStatus.INVALID
    assert record.check_override_reason == "Back up tomorrow"


def test_a_redirecting_url_may_be_selected(librarian, collection, theme):
    record = propose(librarian, collection, theme, checker=answers(CheckStatus.REDIRECT, "Redirects to …"))
    assert record.check_status == CheckStatus.REDIRECT


def test_the_theme_must_be_an_active_theme_of_the_collection(librarian, collection):
    other = ThemeFactory(name="Elsewhere")
    with pytest.raises(ValidationError) as excinfo:
        propose(librarian, collection, other)
    assert "is not a theme of the collection “News”" in field_errors(excinfo)["theme"]
    retired = ThemeFactory(collection=collection, name="Old", is_active=False)
    with pytest.raises(ValidationError, match="no longer in use"):
        propose(librarian, collection, retired)


def test_incompatible_settings_cannot_be_saved(librarian, collection, theme):
    CompatibilityRule.objects.all().delete()  # the defaults of the migration
    CompatibilityRule.objects.create(budget="large", frequency="daily", reason="Too big.")
    with pytest.raises(ValidationError) as excinfo:
        propose(librarian, collection, theme, budget="large", frequency="daily", depth="page")
    errors = field_errors(excinfo)
    assert set(errors) == {"budget", "frequency"}
    assert errors["budget"] == "These settings cannot be combined: Large + Daily + any. Too big."
    assert propose(librarian, collection, theme, budget="large", frequency="weekly", depth="page")


def test_the_same_url_twice_in_a_collection_is_refused_whatever_its_spelling(librarian, collection, theme):
    first = propose(librarian, collection, theme, url="http://www.example.org/news/")
    for spelling in ("https://example.org/news", "HTTP://EXAMPLE.ORG:80/news/", "example.org/news#latest"):
        with pytest.raises(ValidationError) as excinfo:
            propose(librarian, collection, theme, url=spelling)
        assert f"already in this collection (record #{first.pk})" in field_errors(excinfo)["url"]
    assert Record.objects.count() == 1


def test_the_same_url_in_another_collection_is_allowed(librarian, collection, theme):
    other = CollectionFactory(members=[librarian])
    propose(librarian, collection, theme)
    assert propose(librarian, other, ThemeFactory(collection=other))


def test_two_proposals_at_the_same_moment_cannot_both_be_saved(librarian, collection, theme):
    """The database constraint, not only the check: another proposal lands between check and save."""

    def checker_while_someone_else_saves(url):
        RecordFactory(collection=collection, theme=theme, url="https://example.org/")
        return UrlCheckResult(url=url, status=CheckStatus.OK, message="ok")

    with pytest.raises(ValidationError) as excinfo:
        propose(
            librarian,
            collection,
            theme,
            url="http://www.example.org/",
            checker=checker_while_someone_else_saves,
        )
    assert field_errors(excinfo)["url"] == "This URL is already in this collection."


def test_the_database_refuses_a_duplicate_key_by_itself(collection, theme):
    RecordFactory(collection=collection, theme=theme, url="http://example.org/")
    with pytest.raises(IntegrityError), transaction.atomic():
        RecordFactory(collection=collection, theme=theme, url="https://www.example.org")


def test_bad_supplementary_urls_are_reported_by_line(librarian, collection, theme):
    with pytest.raises(ValidationError) as excinfo:
        propose(
            librarian,
            collection,
            theme,
            supplementary_urls="http://example.org/sitemap.xml\n\nmailto:x@y.org",
        )
    assert field_errors(excinfo)["supplementary_urls"].startswith("Line 3: Only http and https")


# Editing -------------------------------------------------------------------------------------------


def test_a_second_save_over_a_newer_version_is_refused_and_says_what_changed(
    librarian, curator, collection, theme
):
    record = propose(librarian, collection, theme)
    opened_by_both = record.version
    services.record_update(
        record=Record.objects.get(pk=record.pk),
        user=curator,
        expected_version=opened_by_both,
        content_notes="Hello",
    )
    with pytest.raises(services.ConcurrentEditError) as excinfo:
        services.record_update(
            record=Record.objects.get(pk=record.pk),
            user=librarian,
            expected_version=opened_by_both,
            depth="domain",
        )
    change = excinfo.value.changes[0]
    assert (change["field"], change["new"], str(change["user"])) == ("content notes", "Hello", "camille")
    assert "content notes changed to “Hello” by camille" in excinfo.value.messages[0]
    fresh = Record.objects.get(pk=record.pk)
    assert (fresh.depth, fresh.content_notes, fresh.version) == (record.depth, "Hello", opened_by_both + 1)


def test_changing_technical_settings_sends_a_validated_record_back(librarian, curator, collection, theme):
    record = propose(librarian, collection, theme)
    services.record_set_status(record=record, user=curator, status=RecordStatus.VALIDATED)
    record = services.record_update(
        record=record, user=librarian, expected_version=record.version, content_notes="x"
    )
    assert record.status == RecordStatus.VALIDATED
    record = services.record_update(
        record=record, user=librarian, expected_version=record.version, depth="domain"
    )
    assert record.status == RecordStatus.PROPOSED
    assert record.status_reason == "Technical settings changed after validation."


def test_editing_the_url_checks_it_again(librarian, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(ValidationError, match="cannot be selected"):
        services.record_update(
            record=record,
            user=librarian,
            expected_version=record.version,
            url="http://gone.example.org/",
            checker=answers(CheckStatus.INVALID, "The server answered 410 Gone"),
        )
    assert Record.objects.get(pk=record.pk).url == "http://www.example.org/"


def test_a_librarian_cannot_edit_records_of_other_collections(librarian, theme):
    record = RecordFactory()
    with pytest.raises(PermissionDenied):
        services.record_update(
            record=record, user=librarian, expected_version=record.version, content_notes="x"
        )


def test_fields_that_are_not_editable_are_refused(librarian, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(ValidationError, match="cannot be edited: created_by, status"):
        services.record_update(
            record=record, user=librarian, expected_version=1, status="validated", created_by=None
        )


# Validation ----------------------------------------------------------------------------------------


def test_only_curators_validate(librarian, curator, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(PermissionDenied):
        services.record_set_status(record=record, user=librarian, status=RecordStatus.VALIDATED)
    record = services.record_set_status(record=record, user=curator, status=RecordStatus.VALIDATED)
    assert (record.status, record.status_changed_by) == (RecordStatus.VALIDATED, curator)


def test_rejecting_needs_a_reason(librarian, curator, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(ValidationError) as excinfo:
        services.record_set_status(record=record, user=curator, status=RecordStatus.REJECTED, reason=" ")
    assert field_errors(excinfo) == {"status_reason": "Say why the record is rejected."}
    record = services.record_set_status(
        record=record, user=curator, status=RecordStatus.REJECTED, reason="Out of scope"
    )
    assert (record.status, record.status_reason) == (RecordStatus.REJECTED, "Out of scope")


def test_a_status_cannot_be_set_to_itself(librarian, curator, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(ValidationError) as excinfo:
        services.record_set_status(record=record, user=curator, status=RecordStatus.PROPOSED)
    assert field_errors(excinfo) == {"status": "A record that is proposed cannot become proposed."}
    assert excinfo.value.error_dict["status"][0].code == "illegal_transition"
    record.refresh_from_db()
    assert (record.status, record.version, record.status_changed_by) == (RecordStatus.PROPOSED, 1, None)


def test_bulk_validation_is_all_or_nothing(librarian, curator, collection, theme):
    good = propose(librarian, collection, theme, url="http://a.example.org/")
    rejected = propose(librarian, collection, theme, url="http://b.example.org/")
    services.record_set_status(record=rejected, user=curator, status=RecordStatus.REJECTED, reason="No")
    services.record_set_status(record=rejected, user=curator, status=RecordStatus.VALIDATED)
    with pytest.raises(ValidationError, match=re.escape("http://b.example.org/")):
        services.records_set_status(records=[good, rejected], user=curator, status=RecordStatus.VALIDATED)
    assert Record.objects.get(pk=good.pk).status == RecordStatus.PROPOSED


# Bulk edit and transfer ----------------------------------------------------------------------------


def test_bulk_edit_changes_everything_or_nothing(librarian, collection, theme):
    mine = [propose(librarian, collection, theme, url=f"http://s{i}.example.org/") for i in range(3)]
    not_mine = RecordFactory(url="http://other.example.org/")
    new_owner = UserFactory(username="paul", roles=[Role.LIBRARIAN])
    with pytest.raises(ValidationError) as excinfo:
        services.records_bulk_update(
            records=[*mine, not_mine], user=librarian, changes={"responsible": new_owner}
        )
    assert "You are not a member" in excinfo.value.messages[0]
    assert excinfo.value.messages[0].endswith("— 1 record: http://other.example.org/")
    assert not Record.objects.filter(responsible=new_owner).exists()
    summary = services.records_bulk_update(
        records=mine,
        user=librarian,
        changes={"responsible": new_owner, "add_keywords": ["Europe"], "depth": "path"},
    )
    assert summary == {"records": 3, "changed": {"responsible": 3, "keywords": 3, "depth": 3}}
    assert Record.objects.filter(responsible=new_owner, depth="path", keywords__name="Europe").count() == 3


def test_bulk_edit_checks_the_compatibility_of_each_record(librarian, collection, theme):
    assert CompatibilityRule.objects.filter(budget="large", frequency="daily", depth="").exists()  # a default
    records = [
        propose(
            librarian, collection, theme, url="http://a.example.org/", budget="large", frequency="weekly"
        ),
        propose(
            librarian, collection, theme, url="http://b.example.org/", budget="small", frequency="weekly"
        ),
    ]
    refused = r"These settings cannot be combined: .* — 1 record: http://a\.example\.org/"
    with pytest.raises(ValidationError, match=refused):
        services.records_bulk_update(records=records, user=librarian, changes={"frequency": "daily"})
    assert set(Record.objects.values_list("frequency", flat=True)) == {"weekly"}


def test_bulk_status_is_for_curators_only(librarian, collection, theme):
    record = propose(librarian, collection, theme)
    with pytest.raises(ValidationError, match="Only curators"):
        services.records_bulk_update(records=[record], user=librarian, changes={"status": "validated"})


def test_bulk_move_needs_rights_on_both_sides_and_a_theme_there(librarian, collection, theme):
    record = propose(librarian, collection, theme)
    target = CollectionFactory(name="Target", members=[librarian])
    target_theme = ThemeFactory(collection=target)
    with pytest.raises(ValidationError, match="Choose a theme"):
        services.records_bulk_update(records=[record], user=librarian, changes={"collection": target})
    summary = services.records_bulk_update(
        records=[record], user=librarian, changes={"collection": target, "theme": target_theme}
    )
    assert summary["changed"] == {"collection": 1}
    assert Record.objects.get(pk=record.pk).collection == target


def test_transfer_checks_rights_theme_and_duplicates(librarian, collection, theme):
    record = propose(librarian, collection, theme)
    outside = CollectionFactory(name="Outside")
    with pytest.raises(PermissionDenied, match="“Outside”"):
        services.record_transfer(
            record=record, user=librarian, collection=outside, theme=ThemeFactory(collection=outside)
        )
    target = CollectionFactory(name="Target", members=[librarian])
    with pytest.raises(ValidationError, match="not a theme of the collection “Target”"):
        services.record_transfer(record=record, user=librarian, collection=target, theme=theme)
    target_theme = ThemeFactory(collection=target)
    RecordFactory(collection=target, theme=target_theme, url="https://example.org")
    with pytest.raises(ValidationError, match="already in this collection"):
        services.record_transfer(record=record, user=librarian, collection=target, theme=target_theme)
    assert Record.objects.get(pk=record.pk).collection == collection


# Saved searches and the compatibility matrix -------------------------------------------------------


def test_saved_searches_are_per_user_with_unique_names(librarian, curator):
    services.saved_search_create(user=librarian, name="Mine", query="?responsible=me")
    with pytest.raises(ValidationError, match="already have a saved search"):
        services.saved_search_create(user=librarian, name="MINE", query="status=proposed")
    services.saved_search_create(user=curator, name="Mine", query="")
    assert SavedSearch.objects.get(user=librarian).query == "responsible=me"
    with pytest.raises(PermissionDenied):
        services.saved_search_delete(user=curator, search=SavedSearch.objects.get(user=librarian))


def test_only_curators_change_the_matrix(librarian, curator):
    with pytest.raises(PermissionDenied):
        services.compatibility_rule_create(user=librarian, budget="large", frequency="daily")
    with pytest.raises(ValidationError, match="at least one setting"):
        services.compatibility_rule_create(user=curator)
    rule = services.compatibility_rule_create(user=curator, budget="small", depth="domain")
    assert rule.matches("small", "weekly", "domain") and not rule.matches("small", "weekly", "host")
    services.compatibility_rule_delete(user=curator, rule=rule)
    assert not CompatibilityRule.objects.filter(pk=rule.pk).exists()


def test_a_host_name_with_an_underscore_can_be_selected(librarian, collection, theme):
    """Not valid by the RFCs, but real sites have such names: the archive must take them."""
    assert (
        propose(librarian, collection, theme, url="http://my_site.example.org/").host == "my_site.example.org"
    )
