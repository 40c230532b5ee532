"""Demo data: one user per role, an administrator, and a few collections. Safe to run again."""

from django.core.management.base import BaseCommand
from django.db import transaction

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
from webarchive.permissions import Role
from webarchive.services import user_ensure

DEMO_USERS = [
    # username, roles, superuser, first name, last name
    ("librarian", {Role.LIBRARIAN}, False, "Louise", "Lefèvre"),
    ("curator", {Role.CURATOR}, False, "Camille", "Martin"),
    ("engineer", {Role.ENGINEER}, False, "Eric", "Nguyen"),
    ("manager", {Role.MANAGER}, False, "Marie", "Dubois"),
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
]

DEMO_RECORDS = [
    # collection, url, theme, budget, frequency, depth, keywords, status
    (
        "News and press",
        "https://www.example-news.fr/",
        "National news",
        "large",
        "weekly",
        "host",
        ["daily press"],
        "validated",
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
    ),
]


def demo_checker(url: str) -> UrlCheckResult:
    """The demo has no internet: its records say so instead of pretending to be checked."""
    return UrlCheckResult(url=url, status=CheckStatus.UNCHECKED, message="Demo data: not checked online.")


def demo_password(username: str) -> str:
    return f"{username}-demo"


class Command(BaseCommand):
    help = "Create the demo users (one per role, plus an administrator) and demo collections."

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
        for collection_name, url, theme, budget, frequency, depth, keywords, status in DEMO_RECORDS:
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
                responsible=users["librarian"],
                keywords=keywords,
                check_override_reason="Demo data, created without an online check.",
                checker=demo_checker,
            )
            if status != record.status:
                record_set_status(record=record, user=curator, status=status)

        self.stdout.write(self.style.SUCCESS("Demo data loaded. Demo logins (user / password / role):"))
        for username, roles, superuser, _first, _last in DEMO_USERS:
            role = ", ".join(str(r.label) for r in roles) or ("Administrator" if superuser else "—")
            self.stdout.write(f"  {username:<10} {demo_password(username):<16} {role}")
