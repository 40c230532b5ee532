"""Discovered sites: the external links of site crawls folded by registered domain, ranked per
collection (its own sites weigh most), filtered, blacklisted, dismissed, proposed and added as domains."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import call_command
from django.urls import reverse

from harvest.models import (
    DiscoveredLink,
    DiscoveredSite,
    DiscoveryAction,
    DiscoveryBlock,
    DiscoveryDecision,
    Domain,
    ExternalLink,
)
from harvest.selectors_discovery import discovery_queue
from harvest.services.crawls import site_crawl_begin, site_crawl_end
from harvest.services.discovery import (
    discovered_site_add_domain,
    discovered_site_dismiss,
    discovered_site_propose,
    discovered_sites_fold,
    discovery_block_add,
    discovery_decision_undo,
)
from harvest.services.domains import domain_create
from harvest.worker import run_site_crawl
from selection.choices import CheckStatus, RecordStatus
from selection.models import Record
from selection.urlcheck import UrlCheckResult
from tests.factories import CollectionFactory, RecordFactory, ThemeFactory, UserFactory
from tests.harvest.crawljobs import job_for_sites
from tests.harvest.sitecrawls import progress
from webarchive.permissions import Role
from webarchive.testsite import TestSite

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def site():
    with TestSite(port=0, seed=3, pages=30, hosts=3) as site:
        yield site


@pytest.fixture(autouse=True)
def _crawl_settings(settings):
    settings.WEBARCHIVE_ALLOW_PRIVATE_ADDRESSES = True
    settings.HARVEST_PROGRESS_INTERVAL = 0.2


@pytest.fixture
def curator():
    return UserFactory(roles=[Role.CURATOR])


def crawl_ends(links: dict[str, dict[str, int]]) -> None:
    """One job whose sites (domain → {external URL: count}) end with those links, each found on a page
    of the linking site."""
    job = job_for_sites([(domain, f"http://{domain}/") for domain in links])
    for entry in job.configurations.select_related("domain"):
        found = links[entry.domain.name]
        assert site_crawl_begin(entry_id=entry.pk, worker="w") is not None
        site_crawl_end(
            entry_id=entry.pk,
            stop_reason="completed",
            progress=progress(urls_done=1),
            report={},
            external_links=found,
            external_sources={
                url: [f"http://{entry.domain.name}/page{n}" for n in range(4)] for url in found
            },
        )


def ok(url):
    return UrlCheckResult(url=url, status=CheckStatus.OK, final_url=url, message="OK")


def test_a_crawl_of_the_test_website_is_folded_by_registered_domain(site):
    job = job_for_sites([("127.0.0.1", site.url("/site/"))])
    entry = job.configurations.get()
    run_site_crawl(entry.pk)
    external = list(ExternalLink.objects.filter(entry=entry))
    assert external and all(link.url.startswith(site.host_url(2)) for link in external)
    # The crawler kept the first pages linking to each external URL: pages of the crawled site.
    assert all(1 <= len(link.sources) <= 3 for link in external)
    assert all(page.startswith(site.url("/")) for link in external for page in link.sources)

    call_command("discover_sites")
    candidate = DiscoveredSite.objects.get()
    assert candidate.registered_domain == "127.0.0.3" and candidate.tld == ""
    assert candidate.site_count == 1
    assert candidate.link_count == sum(link.count for link in external)
    link = DiscoveredLink.objects.get()
    assert link.source_domain.name == "127.0.0.1" and link.link_count == candidate.link_count
    assert link.source_pages and set(link.source_pages) <= {page for e in external for page in e.sources}
    assert all(url.startswith(site.host_url(2)) for url in link.urls)

    # Counted once: a second run folds nothing more.
    assert discovered_sites_fold() == 0
    candidate.refresh_from_db()
    assert candidate.link_count == sum(link.count for link in external)


def test_in_links_from_the_collection_s_own_sites_weigh_most():
    crawl_ends(
        {
            "own.fr": {"https://www.small.com/a": 1, "http://own.fr.example/x": 1},
            "other1.fr": {"https://popular.org/": 1, "https://news.popular.org/b": 1},
            "other2.fr": {"https://popular.org/": 1},
            "other3.fr": {"https://self.other3.fr/": 9},
        }
    )
    crawl_ends({"other4.de": {"https://small.com/b": 1}})
    assert discovered_sites_fold() == 5
    popular = DiscoveredSite.objects.get(registered_domain="popular.org")
    assert (popular.site_count, popular.link_count, popular.tld) == (2, 3, "org")
    small = DiscoveredSite.objects.get(registered_domain="small.com")
    assert (small.site_count, small.link_count) == (2, 2)
    # A link to the linking site's own registered domain is no discovery.
    assert not DiscoveredSite.objects.filter(registered_domain="other3.fr").exists()

    mine = CollectionFactory()
    RecordFactory(collection=mine, url="https://own.fr/")
    ranked = list(discovery_queue(mine))
    assert [site.registered_domain for site in ranked] == ["small.com", "own.fr.example", "popular.org"]
    assert ranked[0].own_sites == 1 and ranked[0].score == 10 + 3 + 2
    assert ranked[2].own_sites == 0 and ranked[2].score == 2 * 3 + 3
    # For a collection without that site, the most linked comes first (small.com: 2 * 3 + 2).
    assert next(iter(discovery_queue(CollectionFactory()))).registered_domain == "popular.org"
    # The collection's own records are never candidates.
    RecordFactory(collection=mine, url="https://popular.org/")
    assert [s.registered_domain for s in discovery_queue(mine)] == ["small.com", "own.fr.example"]
    # Filters: TLD, language from the TLD, name.
    assert [s.registered_domain for s in discovery_queue(mine, tld="com")] == ["small.com"]
    assert not discovery_queue(mine, language="fr").exists()
    assert [s.registered_domain for s in discovery_queue(mine, search="example")] == ["own.fr.example"]


def test_the_blacklist_and_dismissals_hide_candidates(curator):
    crawl_ends({"a.fr": {"https://one.com/": 1, "https://two.gov.uk/": 1, "https://three.net/": 1}})
    discovered_sites_fold()
    mine, theirs = CollectionFactory(), CollectionFactory()
    names = lambda c: sorted(s.registered_domain for s in discovery_queue(c))  # noqa: E731
    assert names(mine) == ["one.com", "three.net", "two.gov.uk"]

    discovery_block_add(user=curator, pattern="*.UK", reason="not ours")
    discovery_block_add(user=curator, pattern="one.com")
    assert names(mine) == ["three.net"]
    for bad in ["", "com", "*.", "ex ample.com", "(a+)+$", "*.*.com", "a" * 300 + ".com", "one.com"]:
        with pytest.raises(ValidationError):
            discovery_block_add(user=curator, pattern=bad)
    with pytest.raises(PermissionDenied):
        discovery_block_add(user=UserFactory(roles=[Role.LIBRARIAN]), pattern="three.net")
    assert DiscoveryBlock.objects.count() == 2

    three = DiscoveredSite.objects.get(registered_domain="three.net")
    decision = discovered_site_dismiss(user=curator, collection=mine, site=three)
    assert names(mine) == [] and names(theirs) == ["three.net"]
    assert (decision.decided_by, decision.action) == (curator, DiscoveryAction.DISMISSED)
    with pytest.raises(ValidationError):
        discovered_site_dismiss(user=curator, collection=mine, site=three)
    # Folding more links never brings a dismissed site back.
    crawl_ends({"b.fr": {"https://three.net/x": 7}})
    discovered_sites_fold()
    assert names(mine) == []

    discovery_decision_undo(user=curator, decision=decision)
    assert names(mine) == ["three.net"]
    decision.refresh_from_db()
    assert decision.undone_by == curator and decision.undone_at is not None
    with pytest.raises(ValidationError):
        discovery_decision_undo(user=curator, decision=decision)


def test_accepting_proposes_a_record_through_selection_and_adds_a_domain(curator):
    crawl_ends({"a.fr": {"https://found.org/page": 2, "https://other.org/": 1}})
    discovered_sites_fold()
    collection = CollectionFactory()
    theme = ThemeFactory(collection=collection)
    found = DiscoveredSite.objects.get(registered_domain="found.org")

    record = discovered_site_propose(user=curator, collection=collection, site=found, theme=theme, checker=ok)
    assert record.status == RecordStatus.PROPOSED and record.url == "https://found.org/"
    assert record.created_by == curator and record.history.count() == 1
    decision = DiscoveryDecision.objects.get(record=record)
    assert decision.action == DiscoveryAction.PROPOSED and decision.collection == collection
    assert not discovery_queue(collection).filter(pk=found.pk).exists()

    other = DiscoveredSite.objects.get(registered_domain="other.org")
    domain = discovered_site_add_domain(user=curator, collection=collection, site=other)
    assert domain.name == "other.org" and domain.is_active and domain.default_configuration_id
    assert domain in Domain.objects.snapshot_candidates()
    assert DiscoveryDecision.objects.get(domain=domain).action == DiscoveryAction.DOMAIN_ADDED


def test_bad_proposals_are_refused_and_change_nothing(curator):
    crawl_ends({"a.fr": {"https://found.org/page": 2}})
    discovered_sites_fold()
    collection = CollectionFactory()
    found = DiscoveredSite.objects.get()
    refused = [
        {"theme": None},
        {"theme": ThemeFactory()},  # another collection's theme
        {"theme": ThemeFactory(collection=collection), "url": "https://elsewhere.org/"},
        {"theme": ThemeFactory(collection=collection), "url": "javascript:alert(1)"},
    ]
    for fields in refused:
        with pytest.raises(ValidationError):
            discovered_site_propose(user=curator, collection=collection, site=found, checker=ok, **fields)
    failed = lambda url: UrlCheckResult(url=url, status=CheckStatus.UNREACHABLE, message="no answer")  # noqa: E731
    with pytest.raises(ValidationError):
        discovered_site_propose(
            user=curator,
            collection=collection,
            site=found,
            theme=ThemeFactory(collection=collection),
            checker=failed,
        )
    with pytest.raises(PermissionDenied):
        discovered_site_propose(
            user=UserFactory(roles=[Role.ENGINEER]),
            collection=collection,
            site=found,
            theme=ThemeFactory(collection=collection),
            checker=ok,
        )
    with pytest.raises(PermissionDenied):
        discovered_site_add_domain(
            user=UserFactory(roles=[Role.LIBRARIAN]), collection=collection, site=found
        )
    assert not Record.objects.exists() and not DiscoveryDecision.objects.exists()
    assert not Domain.objects.filter(name="found.org").exists()


def test_the_queue_over_http(client, curator, site):
    crawl_ends({"own.fr": {site.host_url(2, "/ext/"): 3}})
    discovered_sites_fold()
    collection = CollectionFactory()
    theme = ThemeFactory(collection=collection)
    RecordFactory(collection=collection, url="https://own.fr/")
    candidate = DiscoveredSite.objects.get()
    queue = reverse("harvest:discovery_queue", args=[collection.pk])

    for role, status in [(Role.ENGINEER, 200), (Role.LIBRARIAN, 403), (Role.MANAGER, 403)]:
        client.force_login(UserFactory(roles=[role]))
        assert client.get(queue).status_code == status
    action = lambda name: reverse("harvest:discovery_action", args=[collection.pk, candidate.pk, name])  # noqa: E731
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    assert client.post(action("dismiss")).status_code == 403
    assert not DiscoveryDecision.objects.exists()

    client.force_login(curator)
    page = client.get(queue)
    assert page.status_code == 200
    text = page.content.decode()
    assert "127.0.0.3" in text and "http://own.fr/page0" in text and "score 13" in text
    assert "Add as a domain for the next snapshot" in text
    # A site the archive has as a domain already: no button to add it.
    domain_create(name="127.0.0.3", user=curator)
    text = client.get(queue).content.decode()
    assert "Already a domain of the archive" in text and action("domain") not in text

    # The live check reaches the test website.
    response = client.post(action("check"), {"url": site.host_url(2, "/ext/")}, follow=True)
    assert "Live check of" in response.content.decode()
    # Bad input: an unknown action, a theme of another collection, a URL elsewhere.
    for name, data in [
        ("explode", {}),
        ("propose", {"theme": ThemeFactory().pk}),
        ("propose", {"theme": theme.pk, "url": "https://elsewhere.org/"}),
    ]:
        response = client.post(action(name), data, follow=True)
        assert response.status_code == 200 and response.context["messages"]
        assert not Record.objects.exclude(url__contains="own.fr").exists()
    assert not DiscoveryDecision.objects.exists()

    response = client.post(
        action("propose"), {"theme": theme.pk, "url": site.host_url(2, "/ext/")}, follow=True
    )
    assert "is proposed in" in response.content.decode()
    record = Record.objects.get(registered_domain="127.0.0.3")
    assert record.status == RecordStatus.PROPOSED and record.collection == collection
    assert "127.0.0.3" not in client.get(queue).content.decode().split('id="discovery-decisions"')[0]

    blacklist = reverse("harvest:discovery_blacklist")
    assert client.post(blacklist, {"pattern": "(a+)+$"}).status_code == 400
    assert not DiscoveryBlock.objects.exists()
    assert client.post(blacklist, {"pattern": "*.gov"}).status_code == 302
    assert DiscoveryBlock.objects.get().created_by == curator
    client.force_login(UserFactory(roles=[Role.ENGINEER]))
    assert client.post(blacklist, {"pattern": "*.org"}).status_code == 403
    assert client.get(blacklist).status_code == 200
