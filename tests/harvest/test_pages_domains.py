"""The Planning pages for domains, seed lists, configurations, templates and global crawler traps,
through HTTP as a curator uses them. The rules themselves are tested on the services
(tests/harvest/test_services*.py); here: each page shows the service's answer and changes nothing else.
"""

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db.models import F
from django.urls import NoReverseMatch, resolve, reverse
from django.utils import timezone

from harvest.models import (
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestRun,
    HarvestTemplate,
    SeedList,
)
from harvest.services.domains import configuration_save, domain_set_alias, domains_create_bulk, seed_list_save
from harvest.services.launcher import jobs_generate
from harvest.services.planning import definition_configurations_change, template_save, trap_list_save
from tests.access import user_for
from tests.factories import UserFactory
from tests.webarchive.test_url_access import url_names
from webarchive.permissions import Role
from webarchive.versioning import version_field

pytestmark = pytest.mark.django_db


def post_edit(client, url, data, **options):
    """POST an edit form as a person does: with the version of the object the form showed."""
    seen = client.get(url).context["form"]["seen"].value()
    return client.post(url, {**data, "seen": seen}, **options)


@pytest.fixture
def curator():
    return UserFactory(username="camille", roles=[Role.CURATOR])


@pytest.fixture
def as_curator(client, curator):
    client.force_login(curator)
    return client


@pytest.fixture
def domain(make_domain):
    return make_domain("example.fr", comments="A news site", crawler_traps=r"/calendar/\d+")


@pytest.fixture
def trap_list(db):
    return trap_list_save(name="Calendars", traps=r"/calendar/\d{4}/")


# What the crawler's browser capture reads from a job's template settings.
BROWSER_KEYS = (
    "render",
    "behaviours",
    "render_page_seconds",
    "render_behaviour_seconds",
    "viewport_width",
    "viewport_height",
)


def errors_of(response, field="__all__"):
    return response.context["form"].errors.get(field, [])


def page_text(response) -> str:
    return response.content.decode()


def snapshot(model) -> list[dict]:
    """Every row of a model as values: "nothing changed" is this list staying equal."""
    return list(model.objects.order_by("pk").values())


# Every page renders for a curator; librarians and managers get 403 ----------------------------------


def page_urls(domain, template, trap_list):
    configuration = domain.default_configuration
    seed_list = domain.seed_lists.get()
    return {
        "harvest:domain_list": reverse("harvest:domain_list"),
        "harvest:domain_create": reverse("harvest:domain_create"),
        "harvest:domain_bulk_create": reverse("harvest:domain_bulk_create"),
        "harvest:domain_detail": reverse("harvest:domain_detail", args=[domain.pk]),
        "harvest:domain_edit": reverse("harvest:domain_edit", args=[domain.pk]),
        "harvest:domain_alias": reverse("harvest:domain_alias", args=[domain.pk]),
        "harvest:seedlist_create": reverse("harvest:seedlist_create", args=[domain.pk]),
        "harvest:seedlist_edit": reverse("harvest:seedlist_edit", args=[seed_list.pk]),
        "harvest:configuration_create": reverse("harvest:configuration_create", args=[domain.pk]),
        "harvest:configuration_detail": reverse("harvest:configuration_detail", args=[configuration.pk]),
        "harvest:configuration_edit": reverse("harvest:configuration_edit", args=[configuration.pk]),
        "harvest:configuration_bulk_limits": reverse("harvest:configuration_bulk_limits"),
        "harvest:template_list": reverse("harvest:template_list"),
        "harvest:template_create": reverse("harvest:template_create"),
        "harvest:template_detail": reverse("harvest:template_detail", args=[template.pk]),
        "harvest:template_edit": reverse("harvest:template_edit", args=[template.pk]),
        "harvest:trap_list_list": reverse("harvest:trap_list_list"),
        "harvest:trap_list_create": reverse("harvest:trap_list_create"),
        "harvest:trap_list_detail": reverse("harvest:trap_list_detail", args=[trap_list.pk]),
        "harvest:trap_list_edit": reverse("harvest:trap_list_edit", args=[trap_list.pk]),
    }


def post_urls(domain):
    configuration = domain.default_configuration
    return {
        "harvest:domain_alias_renew": reverse("harvest:domain_alias_renew", args=[domain.pk]),
        "harvest:seedlist_delete": reverse("harvest:seedlist_delete", args=[domain.seed_lists.get().pk]),
        "harvest:configuration_delete": reverse("harvest:configuration_delete", args=[configuration.pk]),
    }


@pytest.mark.smoke
@pytest.mark.parametrize("role", [Role.CURATOR, Role.ENGINEER])
def test_every_page_renders_for_planners(client, role, domain, template, trap_list):
    client.force_login(user_for(role))
    for name, url in page_urls(domain, template, trap_list).items():
        response = client.get(url)
        assert response.status_code == 200, f"{name}: {response.status_code}"


def test_the_list_names_are_the_pages_of_this_module(domain, template, trap_list):
    """The tests cover every page and form target that this module adds."""
    ours = {
        name
        for name in url_names()
        if name.startswith("harvest:")
        and name.split(":")[-1].startswith(
            ("domain_", "seedlist_", "configuration_", "template_", "trap_list_")
        )
    }
    assert ours == set(page_urls(domain, template, trap_list)) | set(post_urls(domain))


@pytest.mark.parametrize("role", [Role.LIBRARIAN, Role.MANAGER, None])
def test_librarians_and_managers_are_refused_everywhere(client, role, domain, template, trap_list):
    client.force_login(user_for(role))
    for name, url in page_urls(domain, template, trap_list).items():
        assert client.get(url).status_code == 403, name
        assert client.post(url, {"name": "x.fr", "text": "x.fr"}).status_code == 403, name
    before = [snapshot(m) for m in (Domain, SeedList, DomainConfiguration)]
    for name, url in post_urls(domain).items():
        assert client.post(url).status_code == 403, name
    assert [snapshot(m) for m in (Domain, SeedList, DomainConfiguration)] == before
    assert Domain.objects.count() == 1


def test_domains_have_no_delete_url_and_refuse_other_methods(as_curator, domain):
    pages = [name for name in url_names() if not name.startswith("admin:")]  # the admin is read-only
    assert not [name for name in pages if "domain" in name and "delete" in name]
    with pytest.raises(NoReverseMatch):
        reverse("harvest:domain_delete", args=[domain.pk])
    detail = reverse("harvest:domain_detail", args=[domain.pk])
    assert as_curator.delete(detail).status_code == 405
    assert as_curator.post(detail).status_code == 405
    # What the domain's page lets one post: its alias, and its seed lists' removal, nothing else.
    main = page_text(as_curator.get(detail)).split("<main", 1)[1]
    actions = re.findall(r'<form method="post" action="([^"]+)"', main)
    assert {resolve(action).url_name for action in actions} == {"domain_alias", "seedlist_delete"}
    assert Domain.objects.filter(pk=domain.pk).exists()


# Finding domains ------------------------------------------------------------------------------


def test_find_domains_by_name_comment_trap_active_and_alias(as_curator, make_domain):
    news = make_domain("news-example.fr", comments="Daily press")
    make_domain("example.org", crawler_traps=r"/agenda/\d+")
    shop = make_domain("shop.co.uk")
    closed = make_domain("closed.fr")
    closed.is_active = False
    closed.save()
    domain_set_alias(domain=shop, alias_of=news)
    url = reverse("harvest:domain_list")

    def names(**query):
        response = as_curator.get(url, query)
        assert response.status_code == 200
        return [row.obj.name for row in response.context["table"].rows]

    assert names() == ["closed.fr", "example.org", "news-example.fr", "shop.co.uk"]
    assert names(q="example") == ["example.org", "news-example.fr"]
    assert names(q="*.fr") == ["closed.fr", "news-example.fr"]
    assert names(q="n*example.*") == ["news-example.fr"]
    assert names(comments="PRESS") == ["news-example.fr"]
    assert names(trap="agenda") == ["example.org"]
    assert names(is_active="false") == ["closed.fr"]
    assert names(is_alias="true") == ["shop.co.uk"]
    assert names(is_alias="false") == ["closed.fr", "example.org", "news-example.fr"]
    # Regular-expression characters in a search are plain text, even with wildcards.
    assert names(q="exa(*") == []
    assert names(q="news-example.f?") == []
    page = page_text(as_curator.get(url, {"q": "*.fr"}))
    assert "2 results" in page
    assert reverse("harvest:domain_create") in page and reverse("harvest:domain_bulk_create") in page


@pytest.mark.timeout(30)
def test_a_wildcard_search_takes_time_in_proportion_to_the_name(as_curator, make_domain):
    """Wildcards once became a regular expression, ^a.*a.*…b$, which Python's re (SQLite) backtracked on."""
    make_domain("a" * 60 + ".fr")
    make_domain("underxscore.fr")
    url = reverse("harvest:domain_list")

    def names(q):
        response = as_curator.get(url, {"q": q})
        assert response.status_code == 200
        return [row.obj.name for row in response.context["table"].rows]

    assert names("*a" * 13 + "*b") == []
    assert names("*a" * 13 + "*.fr") == ["a" * 60 + ".fr"]
    # SQL's own wildcards are plain text in a search.
    assert names("under*") == ["underxscore.fr"]
    assert names("under_*") == [] and names("*%*") == [] and names("*\\*") == []


def test_the_domain_list_is_paginated(as_curator, db):
    domains_create_bulk(names=[f"site{n:03}.fr" for n in range(120)])
    response = as_curator.get(reverse("harvest:domain_list"), {"q": "site", "page": 3})
    assert response.context["paginator"].count == 120
    shown = [row.obj.name for row in response.context["table"].rows]
    assert shown == [f"site{n:03}.fr" for n in range(100, 120)]
    assert "120 results" in page_text(response)


# Creating one domain --------------------------------------------------------------------------


def test_create_a_domain(as_curator, curator, db):
    response = as_curator.post(
        reverse("harvest:domain_create"),
        {"name": " Example.FR ", "comments": "Regional press", "crawler_traps": "# calendars\n/cal/\\d+"},
        follow=True,
    )
    domain = Domain.objects.get()
    assert response.redirect_chain == [(domain.get_absolute_url(), 302)]
    assert (domain.name, domain.comments, domain.trap_list) == ("example.fr", "Regional press", [r"/cal/\d+"])
    assert domain.default_configuration.seed_lists.get().seed_urls == [
        "http://example.fr/",
        "https://example.fr/",
        "http://www.example.fr/",
        "https://www.example.fr/",
    ]
    assert domain.history.first().history_user == curator
    page = page_text(response)
    assert "The domain example.fr was created with its default seed list and configuration." in page
    assert "defaultconfig" in page and "defaultseeds" in page


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("www.example.fr", "www.example.fr is a host, the domain is example.fr."),
        ("news.bbc.co.uk", "news.bbc.co.uk is a host, the domain is bbc.co.uk."),
        ("co.uk", "co.uk is a public suffix, not a domain: a domain is a name registered under it"),
        ("fr", "fr is a public suffix, not a domain"),
        (
            "https://www.example.fr/page",
            "“https://www.example.fr/page” is not a domain name: enter a name such as example.fr, "
            "without scheme, path or port. The domain of this URL is example.fr.",
        ),
        ("example.notasuffix", "does not end with a public suffix"),
        ("exa mple.fr", "is not a domain name"),
        ("", "This field is required."),
    ],
)
def test_a_refused_domain_name_shows_why_at_the_field(as_curator, name, message):
    response = as_curator.post(reverse("harvest:domain_create"), {"name": name})
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, "name")), errors_of(response, "name")
    assert message in page_text(response)
    assert not Domain.objects.exists() and not SeedList.objects.exists()


def test_an_existing_domain_is_not_created_twice(as_curator, domain):
    response = as_curator.post(reverse("harvest:domain_create"), {"name": "EXAMPLE.fr"})
    assert errors_of(response, "name") == ["The domain example.fr already exists."]
    assert Domain.objects.count() == 1


def test_a_bad_trap_or_seed_on_creation_creates_nothing(as_curator):
    response = as_curator.post(
        reverse("harvest:domain_create"), {"name": "example.fr", "crawler_traps": "/ok/\n/bad/(\n"}
    )
    assert errors_of(response, "crawler_traps")[0].startswith(
        "Line 2: “/bad/(” is not a valid regular expression"
    )
    response = as_curator.post(
        reverse("harvest:domain_create"),
        {"name": "example.fr", "seeds": "https://example.fr/\nftp://example.fr/"},
    )
    assert errors_of(response, "seeds") == ["Line 2: Only http and https URLs can be harvested, not “ftp”."]
    assert not Domain.objects.exists() and not SeedList.objects.exists()


# Creating many domains ------------------------------------------------------------------------

LIST = """# regional press
example.fr
www.other.fr
new-site.fr
NEW-SITE.FR

co.uk
known.org
"""


@pytest.fixture
def known(make_domain):
    return make_domain("known.org")


def bulk(client, **data):
    return client.post(reverse("harvest:domain_bulk_create"), data)


def test_the_check_of_a_list_shows_new_known_and_refused_lines_and_creates_nothing(as_curator, known):
    response = bulk(as_curator, text=LIST, check="1")
    assert response.status_code == 200
    report = response.context["report"]
    assert report.new == ["example.fr", "new-site.fr"]
    assert report.existing == ["known.org"]
    assert [(line, text) for line, text, _why in report.errors] == [(3, "www.other.fr"), (7, "co.uk")]
    page = page_text(response)
    assert "2 new domains" in page and "1 already known" in page and "2 refused lines" in page
    assert "www.other.fr is a host, the domain is other.fr." in page
    assert 'data-line="7"' in page and "co.uk is a public suffix" in page
    assert "Create 2 domains" in page
    assert list(Domain.objects.values_list("name", flat=True)) == ["known.org"]


def test_a_list_with_refused_lines_creates_nothing_unless_told_to_skip_them(as_curator, known):
    response = bulk(as_curator, text=LIST, create="1")
    assert response.status_code == 200
    assert errors_of(response) == [
        "2 lines are refused, so nothing was created: correct them, or tick "
        "“create the valid ones and skip the refused lines”."
    ]
    assert response.context["report"].errors  # the refused lines are still listed, with their reasons
    assert list(Domain.objects.values_list("name", flat=True)) == ["known.org"]

    response = bulk(as_curator, text=LIST, create="1", skip_invalid="on")
    assert response.status_code == 302 and response["Location"] == reverse("harvest:domain_list")
    assert sorted(Domain.objects.values_list("name", flat=True)) == ["example.fr", "known.org", "new-site.fr"]
    created = Domain.objects.get(name="new-site.fr")
    assert created.default_configuration.seed_lists.get().seed_urls[0] == "http://new-site.fr/"
    page = page_text(as_curator.get(response["Location"]))
    assert "2 domains created; 1 already known; 2 refused lines skipped." in page


def test_a_list_with_nothing_new_offers_nothing_to_create(as_curator, known):
    response = bulk(as_curator, text="# known already\nKNOWN.org\n", check="1")
    assert response.context["report"].existing == ["known.org"]
    page = page_text(response)
    assert "There is no new domain to create in this list." in page and 'id="create-form"' not in page


def test_a_clean_list_is_created_without_ticking_anything(as_curator):
    response = bulk(as_curator, text="a-site.fr\nb-site.fr\n", create="1")
    assert response.status_code == 302
    assert sorted(Domain.objects.values_list("name", flat=True)) == ["a-site.fr", "b-site.fr"]


def test_an_uploaded_file_is_checked_then_created(as_curator):
    upload = SimpleUploadedFile("domains.txt", "\ufeffélysée.fr\nexample.fr\n".encode(), "text/plain")
    response = bulk(as_curator, file=upload, check="1")
    assert response.context["report"].new == ["xn--lyse-9oad.fr", "example.fr"]
    # The commit form carries the file's text: creating needs no second upload.
    assert 'name="text" hidden' in page_text(response)
    response = bulk(as_curator, text=response.context["text"], create="1")
    assert response.status_code == 302
    assert Domain.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({}, "__all__", "Paste a list of domains or upload a file."),
        (
            {"text": "example.fr", "file": ("a.txt", b"other.fr")},
            "__all__",
            "Paste a list or upload a file, not both.",
        ),
        ({"file": ("a.txt", "exämple.fr".encode("latin-1"))}, "file", "The file is not UTF-8 text"),
        ({"text": "x.fr\n" * 450_000}, "text", "The list is larger than 2 MB"),
    ],
)
def test_a_list_that_cannot_be_read_says_why(as_curator, data, field, message):
    if "file" in data:
        name, content = data["file"]
        data = {**data, "file": SimpleUploadedFile(name, content, "text/plain")}
    response = bulk(as_curator, check="1", **data)
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
    assert "report" not in response.context
    assert not Domain.objects.exists()


def test_a_list_of_thousands_of_domains(as_curator, known):
    names = [f"site-{n:05}.fr" for n in range(5000)]
    text = "\n".join(["# five thousand", *names, "known.org", "www.bad.fr"])
    response = bulk(as_curator, text=text, check="1")
    report = response.context["report"]
    assert (len(report.new), report.existing, len(report.errors)) == (5000, ["known.org"], 1)
    page = page_text(response)
    assert "5000 new domains" in page and "Create 5000 domains" in page
    summary = page.split('id="new-domains">')[1].split("</p>")[0]
    assert summary.count("site-") == 200 and summary.endswith("…")  # the first names; the count says the rest
    response = bulk(as_curator, text=response.context["text"], create="1", skip_invalid="on")
    assert response.status_code == 302
    assert Domain.objects.count() == 5001
    assert SeedList.objects.count() == DomainConfiguration.objects.count() == 5001
    assert not Domain.objects.filter(default_configuration=None).exists()


# The domain page ------------------------------------------------------------------------------


def test_the_domain_page_shows_configurations_seed_lists_aliases_and_history(
    as_curator, domain, make_domain, selective, template
):
    news = seed_list_save(domain=domain, name="news", seeds="https://example.fr/news/")
    deep = configuration_save(
        domain=domain, name="deep", template=template, seed_lists=[news], max_objects=5000, max_bytes=-1
    )
    definition_configurations_change(definition=selective, add=[deep])
    alias = make_domain("example-fr.com")
    domain_set_alias(domain=alias, alias_of=domain)
    response = as_curator.get(domain.get_absolute_url())
    context = response.context
    assert [c.name for c in context["configurations"]] == ["deep", "defaultconfig"]
    assert [s.name for s in context["seed_lists"]] == ["defaultseeds", "news"]
    assert list(context["aliases"]) == [alias] and context["alias_count"] == 1
    page = page_text(response)
    assert 'data-configuration="defaultconfig"' in page
    default_row = page.split('data-configuration="defaultconfig"')[1].split("</tr>")[0]
    assert ">default<" in default_row
    deep_row = page.split('data-configuration="deep"')[1].split("</tr>")[0]
    assert "selective-test" in deep_row and "5000" in deep_row and "unlimited" in deep_row
    assert "test-template" in deep_row and ">default<" not in deep_row
    assert "https://example.fr/news/" in page and "/calendar/" in page and "A news site" in page
    assert "1 domain is an alias of this one" in page and "example-fr.com" in page
    assert len(context["history"]) >= 2  # created, then given its default configuration


def test_the_page_of_an_alias_says_until_when_and_whether_it_is_live(as_curator, make_domain, settings):
    target = make_domain("example.fr")
    alias = domain_set_alias(domain=make_domain("example.com"), alias_of=target)
    page = page_text(as_curator.get(alias.get_absolute_url()))
    expires = timezone.localtime(alias.alias_expires_at).strftime("%Y-%m-%d")
    assert f"expires on {expires}" in page and "live: snapshot harvests skip this domain" in page
    Domain.objects.filter(pk=alias.pk).update(
        alias_updated_at=timezone.now() - timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS + 1)
    )
    page = page_text(as_curator.get(alias.get_absolute_url()))
    assert "expired: snapshot harvests take this domain again" in page
    assert reverse("harvest:domain_alias_renew", args=[alias.pk]) in page


# Editing a domain -----------------------------------------------------------------------------


def test_edit_a_domain(as_curator, curator, domain, template):
    other = configuration_save(
        domain=domain, name="light", template=template, seed_lists=list(domain.seed_lists.all())
    )
    response = post_edit(
        as_curator,
        reverse("harvest:domain_edit", args=[domain.pk]),
        {"comments": "Closed in 2024", "crawler_traps": "/a/\n/b/\\d+", "default_configuration": other.pk},
        follow=True,
    )
    assert response.redirect_chain == [(domain.get_absolute_url(), 302)]
    domain.refresh_from_db()
    assert (domain.comments, domain.trap_list, domain.is_active, domain.default_configuration) == (
        "Closed in 2024",
        ["/a/", r"/b/\d+"],
        False,
        other,
    )
    assert "The domain example.fr was saved." in page_text(response)
    latest = response.context["history"][0]
    assert latest["user"] == curator
    assert {change["field"] for change in latest["changes"]} >= {
        "comments",
        "active",
        "default configuration",
    }
    # Related objects and choices are named in the history, not given as ids or codes.
    changes = {change["field"]: (change["old"], change["new"]) for change in latest["changes"]}
    assert changes["default configuration"] == ("example.fr / defaultconfig", "example.fr / light")


@pytest.mark.parametrize(
    ("traps", "reasons"),
    [
        ("# ok\n/fine/\n[unclosed", ["Line 3: “[unclosed” is not a valid regular expression"]),
        (  # what RE2, which the crawler runs traps with, cannot run
            "/fine/\n/(\\d+)/\\1/",
            [
                "Line 2: “/(\\d+)/\\1/” cannot be used: back-references (\\1, (?P=name))",
                "RE2 regular expressions, which run in time proportional to the text",
            ],
        ),
    ],
)
def test_a_bad_trap_names_its_line_says_why_and_changes_nothing(as_curator, domain, traps, reasons):
    before = snapshot(Domain)
    response = post_edit(
        as_curator,
        reverse("harvest:domain_edit", args=[domain.pk]),
        {
            "comments": "changed",
            "crawler_traps": traps,
            "is_active": "on",
            "default_configuration": domain.default_configuration_id,
        },
    )
    assert response.status_code == 200
    [error] = errors_of(response, "crawler_traps")
    assert error.startswith(reasons[0]) and all(reason in error for reason in reasons)
    assert error in page_text(response)
    assert snapshot(Domain) == before


def test_the_default_configuration_is_one_of_the_domains_own(as_curator, domain, make_domain):
    stranger = make_domain("other.fr").default_configuration
    before = snapshot(Domain)
    response = post_edit(
        as_curator,
        reverse("harvest:domain_edit", args=[domain.pk]),
        {"comments": "", "crawler_traps": "", "is_active": "on", "default_configuration": stranger.pk},
    )
    assert "Select a valid choice" in errors_of(response, "default_configuration")[0]
    assert snapshot(Domain) == before


# Aliases --------------------------------------------------------------------------------------


def set_alias(client, domain, name, **kwargs):
    return client.post(reverse("harvest:domain_alias", args=[domain.pk]), {"alias_of": name}, **kwargs)


def test_make_a_domain_an_alias_then_clear_it(as_curator, domain, make_domain):
    alias = make_domain("example.com")
    response = set_alias(as_curator, alias, "EXAMPLE.fr", follow=True)
    alias.refresh_from_db()
    assert alias.alias_of == domain and alias.is_live_alias
    expires = timezone.localtime(alias.alias_expires_at).strftime("%Y-%m-%d")
    assert f"example.com is an alias of example.fr until {expires}." in page_text(response)
    response = set_alias(as_curator, alias, "", follow=True)
    alias.refresh_from_db()
    assert alias.alias_of is None and alias.alias_updated_at is None
    assert "example.com is not an alias." in page_text(response)


@pytest.mark.parametrize(
    ("setup", "target", "message"),
    [
        (None, "example.fr", "A domain cannot be an alias of itself."),
        (None, "www.example.com", "www.example.com is a host, the domain is example.com."),
        (None, "unknown.fr", "There is no domain unknown.fr; create it first."),
        (
            "target-is-alias",
            "example.com",
            "example.com is itself an alias of example.org; aliases cannot form chains, "
            "make example.fr an alias of example.org instead.",
        ),
        (
            "has-aliases",
            "example.com",
            "example.net are aliases of example.fr; a domain that has aliases cannot become one.",
        ),
    ],
)
def test_a_refused_alias_shows_why_and_changes_nothing(
    as_curator, domain, make_domain, setup, target, message
):
    com, org, net = (make_domain(name) for name in ("example.com", "example.org", "example.net"))
    if setup == "target-is-alias":
        domain_set_alias(domain=com, alias_of=org)
    elif setup == "has-aliases":
        domain_set_alias(domain=net, alias_of=domain)
    before = snapshot(Domain)
    response = set_alias(as_curator, domain, target)
    assert response.status_code == 200
    assert errors_of(response, "alias_of") == [message]
    assert message in page_text(response)
    assert snapshot(Domain) == before


def test_renew_an_alias(as_curator, domain, make_domain, settings):
    alias = domain_set_alias(domain=make_domain("example.com"), alias_of=domain)
    old = timezone.now() - timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS + 3)
    Domain.objects.filter(pk=alias.pk).update(alias_updated_at=old)
    response = as_curator.post(reverse("harvest:domain_alias_renew", args=[alias.pk]), follow=True)
    assert response.redirect_chain == [(f"{alias.get_absolute_url()}#alias", 302)]
    alias.refresh_from_db()
    assert alias.is_live_alias and alias.alias_updated_at > old + timedelta(days=3)
    assert "The alias of example.com to example.fr is renewed until" in page_text(response)


def test_renewing_a_domain_that_is_no_alias_says_so(as_curator, domain):
    before = snapshot(Domain)
    response = as_curator.post(reverse("harvest:domain_alias_renew", args=[domain.pk]), follow=True)
    assert "example.fr is not an alias." in page_text(response)
    assert snapshot(Domain) == before
    assert as_curator.get(reverse("harvest:domain_alias_renew", args=[domain.pk])).status_code == 405


# Seed lists -----------------------------------------------------------------------------------


def test_create_and_edit_a_seed_list(as_curator, domain):
    response = as_curator.post(
        reverse("harvest:seedlist_create", args=[domain.pk]),
        {
            "name": "news",
            "seeds": "# the front pages\nhttps://example.fr/news/\nexample.fr/sport/",
            "comments": "",
        },
        follow=True,
    )
    seed_list = domain.seed_lists.get(name="news")
    assert response.redirect_chain == [(f"{domain.get_absolute_url()}#seed-lists", 302)]
    assert seed_list.seed_urls == ["https://example.fr/news/", "http://example.fr/sport/"]
    assert "The seed list news was created." in page_text(response)
    response = post_edit(
        as_curator,
        reverse("harvest:seedlist_edit", args=[seed_list.pk]),
        {"name": "press", "seeds": "https://example.fr/press/", "comments": "renamed"},
    )
    assert response.status_code == 302
    seed_list.refresh_from_db()
    assert (seed_list.name, seed_list.seeds, seed_list.comments) == (
        "press",
        "https://example.fr/press/",
        "renamed",
    )


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"seeds": "https://example.fr/\nftp://example.fr/files"},
            "seeds",
            "Line 2: Only http and https URLs",
        ),
        ({"seeds": "https://exa mple.fr/"}, "seeds", "Line 1: A URL cannot contain spaces."),
        ({"seeds": "http://localhost-only/"}, "seeds", "Line 1: “localhost-only” is not a full host name"),
        ({"seeds": ""}, "seeds", "A seed list needs at least one URL."),
        ({"seeds": "# nothing but a comment"}, "seeds", "A seed list needs at least one URL."),
        ({"name": "defaultseeds"}, "__all__", "This domain already has a seed list with this name."),
        ({"name": ""}, "name", "This field is required."),
    ],
)
def test_a_refused_seed_list_shows_why_and_changes_nothing(as_curator, domain, data, field, message):
    before = snapshot(SeedList)
    data = {"name": "news", "seeds": "https://example.fr/", "comments": "", **data}
    response = as_curator.post(reverse("harvest:seedlist_create", args=[domain.pk]), data)
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
    assert message in page_text(response)
    assert snapshot(SeedList) == before


def test_an_edited_seed_list_with_a_bad_url_is_not_saved(as_curator, domain):
    seed_list = domain.seed_lists.get()
    before = snapshot(SeedList)
    response = post_edit(
        as_curator,
        reverse("harvest:seedlist_edit", args=[seed_list.pk]),
        {"name": "renamed", "seeds": "https://example.fr/\nmailto:someone@example.fr", "comments": ""},
    )
    assert errors_of(response, "seeds") == [
        "Line 2: Only http and https URLs can be harvested, not “mailto”."
    ]
    assert snapshot(SeedList) == before


def test_remove_a_seed_list_nothing_uses(as_curator, domain):
    spare = seed_list_save(domain=domain, name="spare", seeds="https://example.fr/old/")
    response = as_curator.post(reverse("harvest:seedlist_delete", args=[spare.pk]), follow=True)
    assert response.redirect_chain == [(f"{domain.get_absolute_url()}#seed-lists", 302)]
    assert "The seed list spare was removed." in page_text(response)
    assert list(domain.seed_lists.values_list("name", flat=True)) == ["defaultseeds"]


def test_a_used_seed_list_is_not_removed(as_curator, domain, template):
    news = seed_list_save(domain=domain, name="news", seeds="https://example.fr/news/")
    configuration_save(domain=domain, name="deep", template=template, seed_lists=[news])
    before = snapshot(SeedList)
    response = as_curator.post(reverse("harvest:seedlist_delete", args=[news.pk]), follow=True)
    assert "The seed list news is used by the configurations deep." in page_text(response)
    # A domain's last seed list is always used by its default configuration: refused too.
    response = as_curator.post(
        reverse("harvest:seedlist_delete", args=[domain.seed_lists.get(name="defaultseeds").pk]), follow=True
    )
    assert "The seed list defaultseeds is used by the configurations defaultconfig." in page_text(response)
    assert snapshot(SeedList) == before
    assert as_curator.get(reverse("harvest:seedlist_delete", args=[news.pk])).status_code == 405


# Configurations -------------------------------------------------------------------------------


def configuration_data(domain, **fields):
    return {
        "name": "deep",
        "template": HarvestTemplate.objects.get(name="default").pk,
        "seed_lists": [domain.seed_lists.get(name="defaultseeds").pk],
        "max_objects": 10000,
        "max_bytes": -1,
        "max_request_rate": 0,
        "comments": "",
        **fields,
    }


def test_create_and_edit_a_configuration(as_curator, curator, domain, template):
    form = as_curator.get(reverse("harvest:configuration_create", args=[domain.pk])).context["form"]
    assert form.initial["template"] == domain.default_configuration.template_id  # starts from the default
    news = seed_list_save(domain=domain, name="news", seeds="https://example.fr/news/")
    response = as_curator.post(
        reverse("harvest:configuration_create", args=[domain.pk]),
        configuration_data(domain, template=template.pk, seed_lists=[news.pk], max_bytes=2**30),
        follow=True,
    )
    configuration = domain.configurations.get(name="deep")
    assert response.redirect_chain == [(configuration.get_absolute_url(), 302)]
    assert (configuration.template, list(configuration.seed_lists.all())) == (template, [news])
    assert (configuration.max_objects, configuration.max_bytes) == (10000, 2**30)
    assert "The configuration deep was created." in page_text(response)
    response = post_edit(
        as_curator,
        reverse("harvest:configuration_edit", args=[configuration.pk]),
        configuration_data(domain, name="deeper", max_objects=-1, max_request_rate=30, comments="more"),
        follow=True,
    )
    configuration.refresh_from_db()
    assert (configuration.name, configuration.max_objects, configuration.max_request_rate) == (
        "deeper",
        -1,
        30,
    )
    assert [s.name for s in configuration.seed_lists.all()] == ["defaultseeds"]
    page = page_text(response)
    assert "The configuration deeper was saved." in page and response.context["history"][0]["user"] == curator


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"max_objects": -2}, "max_objects", "A limit is a number of 0 or more, or -1 for no limit."),
        ({"max_bytes": -5}, "max_bytes", "A limit is a number of 0 or more, or -1 for no limit."),
        ({"seed_lists": []}, "seed_lists", "Choose at least one seed list."),
        ({"name": "defaultconfig"}, "__all__", "This domain already has a configuration with this name."),
        ({"template": "inactive"}, "template", "Select a valid choice."),
        ({"seed_lists": "stranger"}, "seed_lists", "Select a valid choice."),
    ],
)
def test_a_refused_configuration_shows_why_and_changes_nothing(
    as_curator, domain, make_domain, fields, field, message
):
    if fields.get("template") == "inactive":
        fields["template"] = template_save(name="old", is_active=False).pk
    if fields.get("seed_lists") == "stranger":
        fields["seed_lists"] = [make_domain("other.fr").seed_lists.get().pk]
    before = snapshot(DomainConfiguration)
    response = as_curator.post(
        reverse("harvest:configuration_create", args=[domain.pk]), configuration_data(domain, **fields)
    )
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
    assert snapshot(DomainConfiguration) == before


def test_a_configuration_keeps_its_inactive_template_when_edited(as_curator, domain):
    old = template_save(name="old")
    configuration = configuration_save(
        domain=domain, name="legacy", template=old, seed_lists=list(domain.seed_lists.all())
    )
    template_save(template=old, is_active=False)
    response = post_edit(
        as_curator,
        reverse("harvest:configuration_edit", args=[configuration.pk]),
        configuration_data(domain, name="legacy", template=old.pk, max_objects=50),
    )
    assert response.status_code == 302
    configuration.refresh_from_db()
    assert (configuration.template, configuration.max_objects) == (old, 50)


def test_the_configuration_page(as_curator, domain, selective):
    configuration = domain.default_configuration
    definition_configurations_change(definition=selective, add=[configuration])
    response = as_curator.get(configuration.get_absolute_url())
    page = page_text(response)
    assert response.context["is_default"] and "default configuration" in page
    assert "Used by 1 harvest definition" in page and "selective-test" in page
    assert "https://www.example.fr/" in page and "in 0 jobs" in page


def test_removing_a_configuration(as_curator, domain, selective, template):
    def remove(configuration):
        return as_curator.post(reverse("harvest:configuration_delete", args=[configuration.pk]), follow=True)

    seeds = list(domain.seed_lists.all())
    before = snapshot(DomainConfiguration)
    page = page_text(remove(domain.default_configuration))
    assert "This is the domain&#x27;s default configuration; it cannot be removed." in page
    used = configuration_save(domain=domain, name="used", template=template, seed_lists=seeds)
    definition_configurations_change(definition=selective, add=[used])
    before = snapshot(DomainConfiguration)
    response = remove(used)
    assert response.redirect_chain == [(used.get_absolute_url(), 302)]
    assert "This configuration is used by the harvest definitions selective-test." in page_text(response)
    assert snapshot(DomainConfiguration) == before
    spare = configuration_save(domain=domain, name="spare", template=template, seed_lists=seeds)
    response = remove(spare)
    assert response.redirect_chain == [(f"{domain.get_absolute_url()}#configurations", 302)]
    assert "The configuration spare was removed." in page_text(response)
    assert not DomainConfiguration.objects.filter(pk=spare.pk).exists()
    assert as_curator.get(reverse("harvest:configuration_delete", args=[used.pk])).status_code == 405


# Bulk change of budget ------------------------------------------------------------------------


@pytest.fixture
def budget_domains(make_domain, template, selective):
    """Three domains on the default template, two of them with a configuration on ``template``."""
    domains = [make_domain(name) for name in ("alpha.fr", "beta.fr", "gamma.org")]
    for domain in domains[:2]:
        configuration = configuration_save(
            domain=domain, name="selective", template=template, seed_lists=list(domain.seed_lists.all())
        )
        definition_configurations_change(definition=selective, add=[configuration])
    return domains


def limits(model=DomainConfiguration):
    return sorted(model.objects.values_list("domain__name", "name", "max_objects", "max_bytes"))


def test_bulk_change_of_budget_for_a_templates_configurations(as_curator, budget_domains, template):
    url = reverse("harvest:configuration_bulk_limits")
    response = as_curator.get(url, {"template": template.pk})
    assert response.context["result_count"] == 2
    assert "2 configurations match." in page_text(response)
    query = response.context["query"]
    response = as_curator.post(
        url, {"query": query, "expected_count": 2, "max_objects": 500, "max_bytes": ""}, follow=True
    )
    assert response.redirect_chain == [(f"{url}?{query}", 302)]
    assert "The budget of 2 configurations was changed." in page_text(response)
    assert limits() == [
        ("alpha.fr", "defaultconfig", -1, -1),
        ("alpha.fr", "selective", 500, -1),
        ("beta.fr", "defaultconfig", -1, -1),
        ("beta.fr", "selective", 500, -1),
        ("gamma.org", "defaultconfig", -1, -1),
    ]


def test_bulk_change_of_budget_by_harvest_definition_and_by_domain(as_curator, budget_domains, selective):
    url = reverse("harvest:configuration_bulk_limits")
    query = f"harvest_definition={selective.pk}&domain=alpha"
    assert as_curator.get(f"{url}?{query}").context["result_count"] == 1
    response = as_curator.post(
        url, {"query": query, "expected_count": 1, "max_objects": "", "max_bytes": 2**20}
    )
    assert response.status_code == 302
    assert [row for row in limits() if row[3] != -1] == [("alpha.fr", "selective", -1, 2**20)]


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"max_objects": -2}, "max_objects", "A limit is a number of 0 or more, or -1 for no limit."),
        ({"max_bytes": -3}, "max_bytes", "A limit is a number of 0 or more, or -1 for no limit."),
        ({"max_objects": ""}, "__all__", "Give a new max objects, a new max bytes, or both."),
        ({"expected_count": 1}, "__all__", "The selection changed: 2 configurations match now, not 1."),
        ({"query": "template=999999"}, "__all__", "Correct the filters first."),
        (
            {"query": "domain=nowhere", "expected_count": 0},
            "__all__",
            "No configuration matches these filters.",
        ),
    ],
)
def test_a_refused_bulk_change_shows_why_and_changes_nothing(
    as_curator, budget_domains, template, data, field, message
):
    url = reverse("harvest:configuration_bulk_limits")
    data = {
        "query": f"template={template.pk}",
        "expected_count": 2,
        "max_objects": 100,
        "max_bytes": "",
        **data,
    }
    before = limits()
    response = as_curator.post(url, data)
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
    assert limits() == before


def test_without_filters_every_configuration_is_selected(as_curator, budget_domains):
    url = reverse("harvest:configuration_bulk_limits")
    assert as_curator.get(url).context["result_count"] == 5
    response = as_curator.post(url, {"query": "", "expected_count": 5, "max_objects": 100, "max_bytes": ""})
    assert response.status_code == 302
    assert {row[2] for row in limits()} == {100}


def test_a_filter_that_is_not_valid_selects_nothing(as_curator, budget_domains):
    response = as_curator.get(reverse("harvest:configuration_bulk_limits"), {"template": "999999"})
    assert response.context["page_obj"] is None
    assert "nothing is selected while one of them is not valid" in page_text(response)


# Templates ------------------------------------------------------------------------------------


def template_data(template=None, **fields):
    data = {
        "name": "news-sites",
        "description": "",
        "is_active": "on",
        "depth_policy": "clicks",
        "clicks": 2,
        "max_hops": 20,
        "accept_rules": "",
        "reject_rules": r"\.iso$",
        "obey_robots": "on",
        "min_delay": 1.0,
        "max_delay": 30.0,
        "delay_factor": 5.0,
        "extract_javascript": "on",
        "extract_sitemaps": "on",
        "stream_variants": "all",
        "dedup": "all",
        "digest_algorithm": "sha256",
        "render": "off",
        "behaviour_scroll": "on",
        "behaviour_click": "on",
        "behaviour_media": "on",
        "render_page_seconds": 30,
        "render_behaviour_seconds": 10,
        "viewport_width": 1366,
        "viewport_height": 768,
    }
    data.update(fields)
    return {key: value for key, value in data.items() if value is not None}


def test_create_a_template_then_a_settings_change_is_a_new_version(as_curator, curator):
    response = as_curator.post(reverse("harvest:template_create"), template_data(), follow=True)
    template = HarvestTemplate.objects.get(name="news-sites")
    assert response.redirect_chain == [(template.get_absolute_url(), 302)]
    assert (template.version, template.clicks, template.obey_robots, template.extract_forms) == (
        1,
        2,
        True,
        False,
    )
    assert "version 1" in page_text(response)

    edit = reverse("harvest:template_edit", args=[template.pk])
    assert "This is version 1." in page_text(as_curator.get(edit))
    response = post_edit(as_curator, edit, template_data(obey_robots=None, min_delay=2.5), follow=True)
    template.refresh_from_db()
    assert (template.version, template.obey_robots, template.min_delay) == (2, False, 2.5)
    assert "The template news-sites was saved as version 2." in page_text(response)
    assert response.context["history"][0]["user"] == curator

    response = post_edit(
        as_curator,
        edit,
        template_data(obey_robots=None, min_delay=2.5, description="For the press"),
        follow=True,
    )
    template.refresh_from_db()
    assert (template.version, template.description) == (2, "For the press")
    assert "no crawler setting changed, it stays version 2" in page_text(response)


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"min_delay": 40}, "__all__", "The minimum delay cannot be longer than the maximum delay."),
        ({"accept_rules": "ok\n(bad"}, "accept_rules", "Line 2: “(bad” is not a valid regular expression"),
        (
            {"reject_rules": r"\.(?!html?$)\w+$"},
            "reject_rules",
            "Line 1: “\\.(?!html?$)\\w+$” cannot be used: look-ahead and look-behind ((?=…), (?!…), (?<=…), "
            "(?<!…)) are not supported: patterns are RE2 regular expressions",
        ),
        (
            {"accept_rules": "# ok\n/a/\n(\\w+)/\\1"},
            "accept_rules",
            "Line 3: “(\\w+)/\\1” cannot be used: back-references (\\1, (?P=name)) are not supported",
        ),
        ({"name": "DEFAULT"}, "__all__", "A template with this name already exists."),
        ({"clicks": 51}, "clicks", "Ensure this value is less than or equal to 50."),
        ({"depth_policy": "galaxy"}, "depth_policy", "Select a valid choice."),
        (
            {"render_page_seconds": 20, "render_behaviour_seconds": 25},
            "render_behaviour_seconds",
            "The time per behaviour cannot be longer than the time per rendered page, which includes it.",
        ),
        (
            {"render_page_seconds": 2},
            "render_page_seconds",
            "Ensure this value is greater than or equal to 5.",
        ),
        ({"render_behaviour_seconds": 0.5}, "render_behaviour_seconds", "greater than or equal to 1."),
        ({"viewport_width": 5000}, "viewport_width", "Ensure this value is less than or equal to 3840."),
        ({"viewport_height": 100}, "viewport_height", "Ensure this value is greater than or equal to 240."),
        ({"render": "sometimes"}, "render", "Select a valid choice."),
    ],
)
def test_a_refused_template_shows_why_and_changes_nothing(as_curator, template, fields, field, message):
    for url in (reverse("harvest:template_create"), reverse("harvest:template_edit", args=[template.pk])):
        before = snapshot(HarvestTemplate)
        response = as_curator.post(url, template_data(**fields))
        assert response.status_code == 200, url
        assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
        assert snapshot(HarvestTemplate) == before


def test_the_times_of_rendering_are_refused_at_the_behaviour_field_only(as_curator):
    response = as_curator.post(
        reverse("harvest:template_create"),
        template_data(render="all", render_page_seconds=20, render_behaviour_seconds=25),
    )
    errors = response.context["form"].errors
    assert list(errors) == ["render_behaviour_seconds"]  # once, where it is put right
    assert "is-invalid" in str(response.context["form"]["render_behaviour_seconds"])
    assert not HarvestTemplate.objects.filter(name="news-sites").exists()


def test_browser_rendering_is_saved_shown_as_a_group_and_frozen_into_a_job(as_curator, domain, selective):
    data = template_data(
        render="all",
        behaviour_click=None,  # unticked
        render_page_seconds=60,
        render_behaviour_seconds=15,
        viewport_width=1920,
        viewport_height=1080,
    )
    response = as_curator.post(reverse("harvest:template_create"), data, follow=True)
    template = HarvestTemplate.objects.get(name="news-sites")
    assert (
        template.render,
        template.behaviour_scroll,
        template.behaviour_click,
        template.behaviour_media,
    ) == (
        "all",
        True,
        False,
        True,
    )
    assert (template.render_page_seconds, template.render_behaviour_seconds) == (60.0, 15.0)
    assert (template.viewport_width, template.viewport_height) == (1920, 1080)
    rows = dict(dict(response.context["groups"])["Browser rendering"])
    assert rows["render pages in a browser"] == "Every HTML page in scope"
    assert (rows["scroll to the end"], rows["click in-page controls"], rows["play audio and video"]) == (
        "yes",
        "no",
        "yes",
    )
    assert "Browser rendering" in page_text(response)

    edit = reverse("harvest:template_edit", args=[template.pk])
    form_page = page_text(as_curator.get(edit))
    assert "Render pages in a browser: for sites whose pages are built by JavaScript" in form_page
    post_edit(as_curator, edit, {**data, "render": "seeds"})
    template.refresh_from_db()
    assert (template.version, template.render) == (2, "seeds")  # a crawler setting: a new version

    configuration = configuration_save(
        domain=domain, name="rendered", template=template, seed_lists=list(domain.seed_lists.all())
    )
    definition_configurations_change(definition=selective, add=[configuration])
    run = HarvestRun.objects.create(harvest_definition=selective, number=1, scheduled_for=timezone.now())
    [job] = jobs_generate(definition=selective, run=run)
    settings = job.template_settings
    assert {key: settings[key] for key in BROWSER_KEYS} == {
        "render": "seeds",
        "behaviours": ["scroll", "media"],
        "render_page_seconds": 60.0,
        "render_behaviour_seconds": 15.0,
        "viewport_width": 1920,
        "viewport_height": 1080,
    }
    assert isinstance(settings["render_page_seconds"], float)
    assert not any(key.startswith("behaviour_") for key in settings)
    assert settings["version"] == 2


def test_an_existing_template_renders_nothing_and_its_job_says_so(default_template):
    settings = default_template.crawler_settings()
    assert {key: settings[key] for key in BROWSER_KEYS} == {
        "render": "off",
        "behaviours": ["scroll", "click", "media"],
        "render_page_seconds": 30.0,
        "render_behaviour_seconds": 10.0,
        "viewport_width": 1366,
        "viewport_height": 768,
    }


def test_the_template_page_groups_every_setting_and_counts_its_configurations(as_curator, domain, template):
    configuration_save(
        domain=domain, name="deep", template=template, seed_lists=list(domain.seed_lists.all())
    )
    response = as_curator.get(template.get_absolute_url())
    groups = dict(response.context["groups"])
    assert list(groups) == [
        "Scope",
        "Robots",
        "Politeness",
        "Extractors",
        "Deduplication and digest",
        "Browser rendering",
    ]
    assert [label for label, _value in groups["Browser rendering"]] == [
        "render pages in a browser",
        "scroll to the end",
        "click in-page controls",
        "play audio and video",
        "time per rendered page (s)",
        "time per behaviour (s)",
        "browser window width (px)",
        "browser window height (px)",
    ]
    shown = [label for rows in groups.values() for label, _value in rows]
    assert sorted(shown) == sorted(
        HarvestTemplate._meta.get_field(n).verbose_name for n in HarvestTemplate.SETTINGS
    )
    page = page_text(response)
    assert "1 configuration" in page
    assert f"{reverse('harvest:configuration_bulk_limits')}?template={template.pk}" in page
    listing = as_curator.get(reverse("harvest:template_list"), {"name": "test-"})
    assert [row.obj for row in listing.context["table"].rows] == [template]
    assert listing.context["table"].rows[0].obj.configuration_count == 1
    # The count links to the bulk change of budget of those configurations.
    link = f'href="{reverse("harvest:configuration_bulk_limits")}?template={template.pk}">1</a>'
    assert link in listing.content.decode()


# Global crawler traps -------------------------------------------------------------------------


def test_create_and_edit_a_trap_list(as_curator, curator):
    response = as_curator.post(
        reverse("harvest:trap_list_create"),
        {
            "name": "Sessions",
            "description": "Session ids in paths",
            "is_active": "on",
            "traps": r";jsessionid=",
        },
        follow=True,
    )
    trap_list = GlobalCrawlerTrapList.objects.get()
    assert response.redirect_chain == [(trap_list.get_absolute_url(), 302)]
    assert "The trap list Sessions was created." in page_text(response)
    response = post_edit(
        as_curator,
        reverse("harvest:trap_list_edit", args=[trap_list.pk]),
        {"name": "Sessions", "description": "", "traps": ";jsessionid=\n/sid/[0-9a-f]+/"},
        follow=True,
    )
    trap_list.refresh_from_db()
    assert (trap_list.is_active, trap_list.trap_list) == (False, [";jsessionid=", "/sid/[0-9a-f]+/"])
    assert "2 traps" in page_text(response) and response.context["history"][0]["user"] == curator
    listing = as_curator.get(reverse("harvest:trap_list_list"), {"is_active": "false"})
    assert [row.obj for row in listing.context["table"].rows] == [trap_list]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"traps": "/ok/\n*bad"}, "traps", "Line 2: “*bad” is not a valid regular expression"),
        (
            {"traps": "(?<=/)sid=\\w+"},
            "traps",
            "Line 1: “(?<=/)sid=\\w+” cannot be used: look-ahead and look-behind ((?=…), (?!…), (?<=…), "
            "(?<!…)) are not supported: patterns are RE2 regular expressions, which run in time "
            "proportional to the text",
        ),
        ({"traps": "/(a+)++/"}, "traps", "atomic groups and possessive quantifiers"),
        ({"traps": ""}, "traps", "This field is required."),
        ({"name": "CALENDARS"}, "__all__", "A trap list with this name already exists."),
    ],
)
def test_a_refused_trap_list_shows_why_and_changes_nothing(as_curator, trap_list, fields, field, message):
    data = {"name": "Other", "description": "", "is_active": "on", "traps": "/x/", **fields}
    before = snapshot(GlobalCrawlerTrapList)
    response = as_curator.post(reverse("harvest:trap_list_create"), data)
    assert response.status_code == 200
    assert any(message in error for error in errors_of(response, field)), response.context["form"].errors
    assert snapshot(GlobalCrawlerTrapList) == before


@pytest.mark.parametrize("kind", ["domain", "seed list", "configuration", "template"])
def test_an_edit_never_overwrites_a_change_made_since_the_form_was_shown(as_curator, domain, template, kind):
    seed_list = domain.seed_lists.get()
    configuration = domain.default_configuration
    url, data, obj, field = {
        "domain": (
            reverse("harvest:domain_edit", args=[domain.pk]),
            {"comments": "mine", "is_active": "on", "default_configuration": configuration.pk},
            domain,
            "comments",
        ),
        "seed list": (
            reverse("harvest:seedlist_edit", args=[seed_list.pk]),
            {"name": seed_list.name, "seeds": "http://example.fr/mine"},
            seed_list,
            "seeds",
        ),
        "configuration": (
            reverse("harvest:configuration_edit", args=[configuration.pk]),
            {
                "name": configuration.name,
                "template": configuration.template_id,
                "seed_lists": [seed_list.pk],
                "max_objects": 5,
                "max_bytes": -1,
                "max_request_rate": 0,
                "comments": "mine",
            },
            configuration,
            "comments",
        ),
        "template": (
            reverse("harvest:template_edit", args=[template.pk]),
            template_data(),
            template,
            "description",
        ),
    }[kind]
    seen = as_curator.get(url).context["form"]["seen"].value()
    # Someone else saves in the meantime.
    counter = version_field(type(obj))  # their save raises the version, as every save does
    type(obj).objects.filter(pk=obj.pk).update(**{field: "theirs", counter: F(counter) + 1})
    response = as_curator.post(url, {**data, "seen": seen})
    assert response.status_code == 200
    assert "Someone else changed this" in page_text(response)
    obj.refresh_from_db()
    assert getattr(obj, field) == "theirs"
