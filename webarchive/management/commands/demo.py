"""Demo data: users for each role, collections, records, their planning and access. Safe to run again."""

import os
from pathlib import Path

from django.apps import apps as django_apps
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from harvest.choices import DepthPolicy, RenderMode
from harvest.defaults import planning_defaults_ensure
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestDefinition,
    HarvestTemplate,
    Schedule,
    SeedList,
)
from harvest.services.domains import configuration_save, domain_create, seed_list_save
from harvest.services.planning import (
    budget_mapping_save,
    collection_mapping_save,
    definition_configurations_change,
    definition_save,
    schedule_save,
    template_save,
    trap_list_save,
)
from harvest.services.transfer import transfer_collection
from selection.choices import CheckStatus, CollectionKind
from selection.models import Collection, Record
from selection.services import (
    collection_create,
    collection_update,
    record_propose,
    record_set_status,
    theme_create,
)
from selection.urlcheck import UrlCheckResult
from storage.models import StorageNode
from storage.models_access import AccessLevel, AccessRule, Exclusion, ExclusionKind
from storage.services.access import access_rule_save, exclusion_create
from storage.services.nodes import node_create
from webarchive.permissions import Role
from webarchive.services import user_ensure

DEMO_USERS = [
    # username, roles, superuser, first name, last name
    ("librarian", {Role.LIBRARIAN}, False, "Louise", "Lefèvre"),
    ("curator", {Role.CURATOR}, False, "Camille", "Martin"),
    ("engineer", {Role.ENGINEER}, False, "Eric", "Nguyen"),
    ("manager", {Role.MANAGER}, False, "Marie", "Dubois"),
    ("reader", {Role.READER}, False, "Paul", "Lambert"),
    ("admin", set(), True, "Ada", "Admin"),
]

DEMO_COLLECTIONS = [
    # name, kind, description, members, themes
    (
        "News and press",
        CollectionKind.DEPARTMENT,
        "Regional and national news sites.",
        ["librarian"],
        ["National news", "Regional news", "Magazines"],
    ),
    (
        "Elections 2027",
        CollectionKind.EVENT,
        "Candidates, parties and campaign sites.",
        ["librarian"],
        ["Candidates", "Parties", "Commentary"],
    ),
    (
        "Science and research",
        CollectionKind.DEPARTMENT,
        "Laboratories, journals, scholarly blogs.",
        [],
        ["Laboratories", "Journals"],
    ),
    (
        "Test website",
        CollectionKind.PROJECT,
        "The synthetic website started with the demo (make run): what the demo can really harvest.",
        ["librarian"],
        ["Test pages"],
    ),
]


DEMO_NODES = [("node-1", "Building A"), ("node-2", "Building B")]


def testsite_url(path: str = "/site/") -> str:
    return f"http://127.0.0.1:{os.environ.get('WEBARCHIVE_TESTSITE_PORT', '8001')}{path}"


DEMO_RECORDS = [
    # collection, url, theme, budget, frequency, depth, keywords, status, the site needs a browser
    (
        "News and press",
        "https://www.example-news.fr/",
        "National news",
        "large",
        "weekly",
        "host",
        ["daily press"],
        "validated",
        False,
    ),
    (
        "News and press",
        "https://regional.example-news.fr/brittany/",
        "Regional news",
        "medium",
        "monthly",
        "path",
        ["Brittany"],
        "proposed",
        False,
    ),
    (
        "Elections 2027",
        "https://candidate-a.example.org/",
        "Candidates",
        "small",
        "weekly",
        "domain",
        ["presidential"],
        "proposed",
        False,
    ),
    (
        # A campaign site made as a single-page application: the transfer gives it the browser
        # template of its budget mapping, in a configuration of its own.
        "Elections 2027",
        "https://candidate-b.example.org/",
        "Candidates",
        "small",
        "weekly",
        "path",
        ["presidential"],
        "validated",
        True,
    ),
    (
        "Science and research",
        "https://lab.example.edu/",
        "Laboratories",
        "medium",
        "twice-yearly",
        "host",
        ["physics"],
        "validated",
        False,
    ),
    ("Test website", testsite_url(), "Test pages", "small", "weekly", "host", ["demo"], "validated", False),
]

DEMO_SCHEDULES = [
    # name, fields
    ("Weekly, Monday 02:00", {"unit": "week", "at_weekday": 0, "at_hour": 2, "at_minute": 0}),
    ("Monthly, 1st at 03:00", {"unit": "month", "at_day": 1, "at_hour": 3, "at_minute": 0}),
    ("Twice a year", {"unit": "month", "every": 6, "at_day": 15, "at_hour": 1, "at_minute": 0}),
]

SCRIPT_BUILT_DEFINITION = "Script-built site weekly"

DEMO_DEFINITIONS = [
    # name, schedule, [(collection, frequency)]
    ("News weekly", "Weekly, Monday 02:00", [("News and press", "weekly"), ("Elections 2027", "weekly")]),
    ("Test website weekly", "Weekly, Monday 02:00", [("Test website", "weekly")]),
    ("Science twice a year", "Twice a year", [("Science and research", "twice-yearly")]),
    # Its one configuration is made by hand (see Command._script_built_site), not transferred.
    (SCRIPT_BUILT_DEFINITION, "Weekly, Monday 02:00", []),
]

# The template that renders pages in a browser: the script-built section of the test website
# is harvested with it, and the (small, path) budget mapping gives it to the records whose
# site needs a browser.
BROWSER_TEMPLATE = {
    "name": "Browser rendering",
    "description": "Sites whose pages are built by JavaScript: every HTML page under the seed's "
    "directory is rendered in a browser, which scrolls, clicks and plays media.",
    "depth_policy": DepthPolicy.PATH,
    "render": RenderMode.ALL,
    "behaviour_scroll": True,
    "behaviour_click": True,
    "behaviour_media": True,
}
BROWSER_MAPPING = ("small", "path")
# The test website runs on this machine: the crawler's default politeness (a second or more between
# two requests, made for sites on the internet) would make its 600-odd pages take ten minutes. Its
# record (small, host: no other demo record has that pair) is mapped to a template polite for a
# local site, so that "Run now" gives a finished job, its statistics and its replay in about a minute.
LOCAL_TEMPLATE = {
    "name": "Test website (local: short delays)",
    "description": "The demo's test website, on this machine: a few hundredths of a second between two "
    "requests. Never for a site on the internet.",
    "depth_policy": DepthPolicy.HOST,
    "min_delay": 0.02,
    "max_delay": 0.2,
    "delay_factor": 1.0,
}
LOCAL_MAPPING = ("small", "host")
SCRIPT_BUILT_OBJECTS = 200  # a small budget: a rendered page is slow to harvest
# The test website's news front page (its articles change every hour) every 15 minutes, one click deep,
# new articles only, feeding a daily deeper crawl (docs/curation.md, "Frequent shallow crawls for news").
NEWS_DEFINITION = "Test news front page every 15 minutes"
NEWS_DEEPER_DEFINITION = "Test news articles daily"

# Who may read what, so that anonymous visitors, readers and readers in a reading room see different
# things. "Elections 2027" has no rule of its own: it shares "News weekly" with "News and press", so
# its captures are read as those of that harvest definition (the most open rule decides).
DEMO_ACCESS_RULES = [
    # collection, level, note
    (
        "Test website",
        AccessLevel.OPEN,
        "Demo: the test website is ours, so what the demo harvests of it is open to everyone.",
    ),
    (
        "News and press",
        AccessLevel.READERS,
        "Demo: an agreement with the publishers lets registered readers read it from anywhere.",
    ),
    (
        "Science and research",
        AccessLevel.READING_ROOM,
        "Demo: legal deposit only, so it is read in the library's reading rooms.",
    ),
]

# A take-down of one page of the test website that the demo's crawl reaches (page 5 of the
# generated site, in the tree of its "news" section): captured, indexed, but no reader sees it.
DEMO_EXCLUSION = {
    "kind": ExclusionKind.URL,
    "path": "/site/news/5.html",
    "reason": "Demo: a take-down request",
    "requested_by": "A person named on the page",
}


def demo_checker(url: str) -> UrlCheckResult:
    """The demo has no internet: its records say so instead of pretending to be checked."""
    return UrlCheckResult(url=url, status=CheckStatus.UNCHECKED, message="Demo data: not checked online.")


def demo_password(username: str) -> str:
    return f"{username}-demo"


class Command(BaseCommand):
    help = "Create the demo users (one per role, plus an administrator), collections and their access rules."

    @transaction.atomic
    def handle(self, *args, **options):
        users = {}
        for username, roles, superuser, first, last in DEMO_USERS:
            users[username] = user_ensure(
                username=username,
                password=demo_password(username),
                roles=roles,
                superuser=superuser,
                first_name=first,
                last_name=last,
                email=f"{username}@example.org",
            )
        collections = {}
        for name, kind, description, members, themes in DEMO_COLLECTIONS:
            member_users = [users[m] for m in members]
            collection = Collection.objects.filter(name=name).first()
            if collection is None:
                collection = collection_create(
                    name=name, kind=kind, description=description, members=member_users
                )
            else:
                collection_update(
                    collection=collection, kind=kind, description=description, members=member_users
                )
            for theme in themes:
                if not collection.themes.filter(name=theme).exists():
                    theme_create(collection=collection, name=theme)
            collections[name] = collection
        curator = users["curator"]
        for collection_name, url, theme, budget, frequency, depth, keywords, status, browser in DEMO_RECORDS:
            collection = collections[collection_name]
            if Record.objects.filter(collection=collection, url=url).exists():
                continue
            record = record_propose(
                user=curator,
                collection=collection,
                url=url,
                theme=collection.themes.get(name=theme),
                budget=budget,
                frequency=frequency,
                depth=depth,
                needs_browser=browser,
                responsible=users["librarian"],
                keywords=keywords,
                check_override_reason="Demo data, created without an online check.",
                checker=demo_checker,
            )
            if status != record.status:
                record_set_status(record=record, user=curator, status=status)

        self._planning(collections, curator)
        self._access(collections, curator)
        self._storage(users["engineer"])

        self.stdout.write(self.style.SUCCESS("Demo data loaded. Demo logins (user / password / role):"))
        for username, roles, superuser, _first, _last in DEMO_USERS:
            role = ", ".join(str(r.label) for r in roles) or ("Administrator" if superuser else "—")
            self.stdout.write(f"  {username:<10} {demo_password(username):<16} {role}")

    def _access(self, collections, curator):
        """The access rules of the demo's collections, one exclusion; curators' later changes are kept."""
        for name, level, note in DEMO_ACCESS_RULES:
            if not AccessRule.objects.filter(collection=collections[name]).exists():
                access_rule_save(user=curator, collection=collections[name], level=level, note=note)
        target = testsite_url(DEMO_EXCLUSION["path"])
        # Lifted or not: a curator who lifted it decided so.
        if not Exclusion.objects.filter(kind=DEMO_EXCLUSION["kind"], target=target).exists():
            exclusion_create(
                user=curator,
                kind=DEMO_EXCLUSION["kind"],
                target=target,
                reason=DEMO_EXCLUSION["reason"],
                requested_by=DEMO_EXCLUSION["requested_by"],
            )

    def _storage(self, engineer):
        """Two storage nodes in two "buildings" under var/storage: every WARC file gets two replicas."""
        for name, location in DEMO_NODES:
            if not StorageNode.objects.filter(name=name).exists():
                root = Path(settings.VAR_DIR) / "storage" / name
                node_create(name=name, location=location, root=str(root), user=engineer)

    def _planning(self, collections, curator):
        """Schedules, harvest definitions mapped from the collections, a snapshot, and the transfer."""
        planning_defaults_ensure(django_apps)
        browser_template = HarvestTemplate.objects.filter(
            name=BROWSER_TEMPLATE["name"]
        ).first() or template_save(user=curator, **BROWSER_TEMPLATE)
        mapping = BudgetMapping.objects.filter(budget=BROWSER_MAPPING[0], depth=BROWSER_MAPPING[1]).first()
        if mapping is not None and mapping.browser_template_id is None:  # a curator's choice is kept
            budget_mapping_save(user=curator, mapping=mapping, browser_template=browser_template)
        local_template = HarvestTemplate.objects.filter(name=LOCAL_TEMPLATE["name"]).first() or template_save(
            user=curator, **LOCAL_TEMPLATE
        )
        mapping = BudgetMapping.objects.filter(budget=LOCAL_MAPPING[0], depth=LOCAL_MAPPING[1]).first()
        # Only while it maps to its default template: a curator's choice is kept.
        if mapping is not None and mapping.template.name == f"selective-{LOCAL_MAPPING[1]}":
            budget_mapping_save(user=curator, mapping=mapping, template=local_template)
        schedules = {}
        for name, fields in DEMO_SCHEDULES:
            schedules[name] = Schedule.objects.filter(name=name).first() or schedule_save(
                user=curator, name=name, **fields
            )
        for name, schedule, mappings in DEMO_DEFINITIONS:
            definition = HarvestDefinition.objects.filter(name=name).first() or definition_save(
                user=curator, kind="selective", name=name, schedule=schedules[schedule]
            )
            for collection, frequency in mappings:
                if not CollectionMapping.objects.filter(
                    collection=collections[collection], frequency=frequency
                ).exists():
                    collection_mapping_save(
                        user=curator,
                        collection=collections[collection],
                        frequency=frequency,
                        harvest_definition=definition,
                    )
        self._script_built_site(curator, browser_template)
        self._news_site(curator, local_template)
        if not HarvestDefinition.objects.filter(name="Broad crawl 2026").exists():
            definition_save(
                user=curator,
                kind="snapshot",
                name="Broad crawl 2026",
                comments="The yearly snapshot of the national domain; started with “Run now”.",
                max_objects_per_domain=10_000,
                max_bytes_per_domain=500_000_000,
            )
        if not GlobalCrawlerTrapList.objects.filter(name="Calendars").exists():
            trap_list_save(
                user=curator,
                name="Calendars",
                description="Calendar pages that go on for ever.",
                traps="\n".join(
                    [
                        "# Day pages of calendars",
                        r".*/calendar/\d{4}-\d{2}-\d{2}.*",
                        r".*[?&]month=\d+&year=\d+.*",
                    ]
                ),
            )
        for collection in collections.values():
            transfer_collection(collection=collection, user=curator)

    def _news_site(self, curator, template):
        """The test website's news front page, in a news definition feeding a daily deeper one."""
        if HarvestDefinition.objects.filter(name=NEWS_DEFINITION).exists():
            return  # made once; a curator's later changes are kept
        domain = Domain.objects.filter(name="127.0.0.1").first() or domain_create(
            name="127.0.0.1", user=curator
        )
        configurations = {}
        for name, path in (("news-front", "/news/"), ("news-articles", "/news/about")):
            seed_list = SeedList.objects.filter(domain=domain, name=name).first() or seed_list_save(
                user=curator, domain=domain, name=name, seeds=testsite_url(path)
            )
            configurations[name] = DomainConfiguration.objects.filter(
                domain=domain, name=name
            ).first() or configuration_save(
                user=curator, domain=domain, name=name, template=template, seed_lists=[seed_list]
            )
        daily = Schedule.objects.filter(name="Daily at 04:00").first() or schedule_save(
            user=curator, name="Daily at 04:00", unit="day", at_hour=4, at_minute=0
        )
        every_15 = Schedule.objects.filter(name="Every 15 minutes").first() or schedule_save(
            user=curator, name="Every 15 minutes", unit="minute", every=15
        )
        deeper = HarvestDefinition.objects.filter(name=NEWS_DEEPER_DEFINITION).first() or definition_save(
            user=curator,
            kind="selective",
            name=NEWS_DEEPER_DEFINITION,
            schedule=daily,
            comments="Each run starts from the articles the news front page crawls found since the last one.",
            configurations=[configurations["news-articles"]],
        )
        definition_save(
            user=curator,
            kind="selective",
            name=NEWS_DEFINITION,
            schedule=every_15,
            news=True,
            news_feeds=deeper,
            comments="The front page and its new articles, one click deep; they feed the daily crawl.",
            configurations=[configurations["news-front"]],
        )

    def _script_built_site(self, curator, template):
        """The test website's script-built section, rendered in a browser, in its own definition."""
        domain = Domain.objects.filter(name="127.0.0.1").first() or domain_create(
            name="127.0.0.1", user=curator
        )
        seed_list = SeedList.objects.filter(domain=domain, name="script-built").first() or seed_list_save(
            user=curator, domain=domain, name="script-built", seeds=testsite_url("/js/")
        )
        configuration = DomainConfiguration.objects.filter(
            domain=domain, name="script-built"
        ).first() or configuration_save(
            user=curator,
            domain=domain,
            name="script-built",
            template=template,
            seed_lists=[seed_list],
            max_objects=SCRIPT_BUILT_OBJECTS,
        )
        definition = HarvestDefinition.objects.get(name=SCRIPT_BUILT_DEFINITION)
        if not definition.configurations.filter(pk=configuration.pk).exists():
            definition_configurations_change(definition=definition, add=[configuration], user=curator)
