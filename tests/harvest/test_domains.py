"""Domains, seed lists and configurations through their services: every rule of the planning model."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import ProtectedError
from django.utils import timezone

from harvest.models import Domain, DomainConfiguration, SeedList
from harvest.services.domains import (
    configuration_delete,
    configuration_save,
    configurations_set_limits,
    domain_alias_renew,
    domain_create,
    domain_list_check,
    domain_set_alias,
    domain_update,
    domains_create_from_list,
    seed_list_delete,
    seed_list_save,
)
from harvest.services.planning import definition_configurations_change, template_save
from harvest.validators import domain_name_normalise
from tests.factories import UserFactory
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("www.example.fr", "www.example.fr is a host, the domain is example.fr."),
        ("news.bbc.co.uk", "news.bbc.co.uk is a host, the domain is bbc.co.uk."),
        ("fr", "fr is a public suffix, not a domain"),
        ("co.uk", "co.uk is a public suffix, not a domain"),
        ("example.invalid", "does not end with a public suffix"),
        ("http://www.example.fr/page", "The domain of this URL is example.fr."),
        ("example.fr:8080", "without scheme, path or port"),
        ("exa mple.fr", "is not a domain name"),
        ("-bad.fr", "is not a valid domain name"),
        ("", "Enter a domain name."),
    ],
)
def test_refused_domain_names_say_why(name, message):
    with pytest.raises(ValidationError) as error:
        domain_name_normalise(name)
    assert message in " ".join(error.value.messages)


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        ("Example.FR", "example.fr"),
        ("example.fr.", "example.fr"),
        ("bbc.co.uk", "bbc.co.uk"),
        ("bücher.de", "xn--bcher-kva.de"),
        ("127.0.0.1", "127.0.0.1"),
        ("[::1]", "::1"),
    ],
)
def test_accepted_domain_names_are_normalised(name, stored):
    assert domain_name_normalise(name) == stored


def test_new_domain_gets_default_seed_list_and_configuration(default_template):
    domain = domain_create(name="Example.fr", comments="a comment")
    assert domain.name == "example.fr"
    configuration = domain.default_configuration
    assert configuration.domain == domain and configuration.template == default_template
    assert configuration.max_objects == configuration.max_bytes == -1
    (seeds,) = configuration.seed_lists.all()
    assert seeds.seed_urls == [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]
    assert domain.history.count() >= 1


def test_an_address_domain_has_no_www_seeds():
    domain = domain_create(name="127.0.0.1")
    assert domain.default_configuration.seed_lists.get().seed_urls == [
        "http://127.0.0.1/",
        "https://127.0.0.1/",
    ]


def test_duplicate_domain_refused_and_nothing_written(make_domain):
    make_domain("example.fr")
    before = (Domain.objects.count(), SeedList.objects.count(), DomainConfiguration.objects.count())
    with pytest.raises(ValidationError) as error:
        domain_create(name="EXAMPLE.fr")
    assert "already exists" in str(error.value)
    assert (Domain.objects.count(), SeedList.objects.count(), DomainConfiguration.objects.count()) == before


def test_crawler_traps_must_compile_and_the_error_names_the_line(make_domain):
    domain = make_domain()
    with pytest.raises(ValidationError) as error:
        domain_update(domain=domain, crawler_traps=".*/calendar/.*\n# a comment\n.*(unclosed")
    assert "Line 3" in str(error.value) and "(unclosed" in str(error.value)
    domain.refresh_from_db()
    assert domain.crawler_traps == ""
    domain_update(domain=domain, crawler_traps=".*/calendar/.*\n# comment\n")
    domain.refresh_from_db()
    assert domain.trap_list == [".*/calendar/.*"]


def test_domains_are_never_deleted(make_domain):
    domain = make_domain()
    with pytest.raises(ProtectedError):
        domain.delete()  # its seed lists and configurations protect it, and no role may delete
    curator = UserFactory(roles=[Role.CURATOR])
    assert not curator.has_perm("harvest.delete_domain")
    assert not UserFactory(roles=[Role.ENGINEER]).has_perm("harvest.delete_domain")


def test_roles_without_planning_rights_cannot_create_domains():
    with pytest.raises(PermissionDenied):
        domain_create(name="example.fr", user=UserFactory(roles=[Role.LIBRARIAN]))
    with pytest.raises(PermissionDenied):
        domain_create(name="example.fr", user=AnonymousUser())
    assert not Domain.objects.exists()
    domain = domain_create(name="example.fr", user=UserFactory(roles=[Role.CURATOR]))
    assert domain.history.first().history_user is not None


# Aliases -----------------------------------------------------------------------------------------


def test_alias_rules(make_domain):
    a, b, c = make_domain("a.fr"), make_domain("b.fr"), make_domain("c.fr")
    with pytest.raises(ValidationError, match="alias of itself"):
        domain_set_alias(domain=a, alias_of=a)
    domain_set_alias(domain=a, alias_of=b)
    a.refresh_from_db()
    assert a.alias_of == b and a.is_live_alias
    # No chains, either way round.
    with pytest.raises(ValidationError, match=r"itself an alias of b\.fr"):
        domain_set_alias(domain=c, alias_of=a)
    with pytest.raises(ValidationError, match=r"a\.fr are aliases of b\.fr"):
        domain_set_alias(domain=b, alias_of=c)
    b.refresh_from_db()
    c.refresh_from_db()
    assert b.alias_of is None and c.alias_of is None
    domain_set_alias(domain=a, alias_of=None)
    a.refresh_from_db()
    assert a.alias_of is None and a.alias_updated_at is None


def test_alias_expires_unless_renewed(make_domain, settings):
    settings.HARVEST_ALIAS_TIMEOUT_DAYS = 30
    a, b = make_domain("a.fr"), make_domain("b.fr")
    domain_set_alias(domain=a, alias_of=b)
    Domain.objects.filter(pk=a.pk).update(alias_updated_at=timezone.now() - timedelta(days=31))
    a.refresh_from_db()
    assert not a.is_live_alias
    assert not Domain.objects.live_aliases().exists()
    assert set(Domain.objects.snapshot_candidates()) == {a, b}
    domain_alias_renew(domain=a)
    a.refresh_from_db()
    assert a.is_live_alias and a.alias_expires_at > timezone.now() + timedelta(days=29)
    assert set(Domain.objects.snapshot_candidates()) == {b}
    with pytest.raises(ValidationError, match="not an alias"):
        domain_alias_renew(domain=b)


# Bulk creation --------------------------------------------------------------------------------------


def test_domain_list_check_reports_each_line(make_domain):
    make_domain("known.fr")
    report = domain_list_check("# a list\nnew.fr\nwww.other.fr\nKNOWN.fr\n\nfr\nnew.fr\nthird.co.uk\n")
    assert report.new == ["new.fr", "third.co.uk"]
    assert report.existing == ["known.fr"]
    assert [(line, text) for line, text, _why in report.errors] == [(3, "www.other.fr"), (6, "fr")]
    assert "the domain is other.fr" in report.errors[0][2]


def test_bulk_creation_with_refused_lines_creates_nothing_unless_asked(make_domain):
    text = "new.fr\nwww.other.fr\nsecond.fr"
    with pytest.raises(ValidationError) as error:
        domains_create_from_list(text=text)
    assert "Line 2 (www.other.fr)" in str(error.value)
    assert not Domain.objects.exists()
    report = domains_create_from_list(text=text, skip_invalid=True)
    assert report.created == 2
    for name in ("new.fr", "second.fr"):
        domain = Domain.objects.get(name=name)
        assert domain.default_configuration.seed_lists.get().seed_urls[0] == f"http://{name}/"
        assert domain.history.exists()
    assert domains_create_from_list(text=text, skip_invalid=True).created == 0


# Seed lists -----------------------------------------------------------------------------------------


def test_seed_list_rules(make_domain):
    domain = make_domain()
    default = domain.default_configuration.seed_lists.get()
    with pytest.raises(ValidationError) as error:
        seed_list_save(domain=domain, name="extra", seeds="http://example.fr/a\nftp://example.fr/\n")
    assert "Line 2" in str(error.value) and "ftp" in str(error.value)
    with pytest.raises(ValidationError, match="at least one URL"):
        seed_list_save(domain=domain, name="extra", seeds="# only a comment\n")
    with pytest.raises(ValidationError, match="already has a seed list with this name"):
        seed_list_save(domain=domain, name=default.name, seeds="http://example.fr/")
    assert domain.seed_lists.count() == 1
    extra = seed_list_save(
        domain=domain, name="extra", seeds="http://example.fr/a\n# c\n\nhttp://EXAMPLE.fr/b"
    )
    assert extra.seed_urls == ["http://example.fr/a", "http://example.fr/b"]
    # Used by a configuration: cannot be removed.
    with pytest.raises(ValidationError, match="used by the configurations defaultconfig"):
        seed_list_delete(seed_list=default)
    seed_list_delete(seed_list=extra)
    assert list(domain.seed_lists.all()) == [default]


def test_a_seed_line_with_trailing_text_is_refused(make_domain):
    domain = make_domain()
    with pytest.raises(ValidationError, match="Line 1"):
        seed_list_save(domain=domain, name="x", seeds="http://example.fr/a # comment")


def test_the_last_seed_list_cannot_be_removed(make_domain, default_template):
    domain = make_domain()
    default = domain.default_configuration.seed_lists.get()
    other = seed_list_save(domain=domain, name="other", seeds="http://example.fr/x")
    configuration_save(configuration=domain.default_configuration, seed_lists=[other])
    seed_list_delete(seed_list=default)
    with pytest.raises(ValidationError):
        seed_list_delete(seed_list=other)  # used, and the last one
    assert domain.seed_lists.count() == 1


# Configurations -------------------------------------------------------------------------------------


def test_configuration_rules(make_domain, template, selective):
    domain, other = make_domain("example.fr"), make_domain("other.fr")
    seeds = domain.seed_lists.get()
    with pytest.raises(ValidationError, match="already has a configuration with this name"):
        configuration_save(domain=domain, name="defaultconfig", template=template, seed_lists=[seeds])
    with pytest.raises(ValidationError, match="seed lists of its own domain"):
        configuration_save(domain=domain, name="x", template=template, seed_lists=[other.seed_lists.get()])
    with pytest.raises(ValidationError, match="at least one seed list"):
        configuration_save(domain=domain, name="x", template=template, seed_lists=[])
    with pytest.raises(ValidationError, match="-1 for no limit"):
        configuration_save(domain=domain, name="x", template=template, seed_lists=[seeds], max_objects=-2)
    assert domain.configurations.count() == 1
    config = configuration_save(
        domain=domain, name="deep", template=template, seed_lists=[seeds], max_objects=500, max_bytes=10**9
    )
    # The default configuration cannot be removed.
    with pytest.raises(ValidationError, match="default configuration"):
        configuration_delete(configuration=domain.default_configuration)
    # Nor one used by a harvest definition.
    definition_configurations_change(definition=selective, add=[config])
    with pytest.raises(ValidationError, match="selective-test"):
        configuration_delete(configuration=config)
    definition_configurations_change(definition=selective, remove=[config])
    configuration_delete(configuration=config)
    assert list(domain.configurations.all()) == [domain.default_configuration]


def test_an_inactive_template_cannot_be_chosen(make_domain, template):
    domain = make_domain()
    template_save(template=template, is_active=False)
    with pytest.raises(ValidationError, match="inactive"):
        configuration_save(
            domain=domain, name="x", template=template, seed_lists=list(domain.seed_lists.all())
        )


def test_bulk_limits_change_all_or_none(make_domain):
    configurations = [make_domain(f"d{i}.fr").default_configuration for i in range(3)]
    with pytest.raises(ValidationError):
        configurations_set_limits(configurations=configurations, max_objects=-5)
    with pytest.raises(ValidationError, match="Give a new max objects"):
        configurations_set_limits(configurations=configurations)
    assert set(DomainConfiguration.objects.values_list("max_objects", flat=True)) == {-1}
    curator = UserFactory(roles=[Role.CURATOR])
    assert configurations_set_limits(configurations=configurations[:2], max_objects=2000, user=curator) == 2
    assert sorted(DomainConfiguration.objects.values_list("max_objects", flat=True)) == [-1, 2000, 2000]
    assert configurations[0].history.first().history_user == curator
