"""Demo data: one user per role, an administrator, and a few collections. Safe to run again."""

from django.core.management.base import BaseCommand
from django.db import transaction

from selection.choices import CollectionKind
from selection.models import Collection
from selection.services import collection_create, collection_update
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
    ("News and press", CollectionKind.DEPARTMENT, "Regional and national news sites.", ["librarian"]),
    ("Elections 2027", CollectionKind.EVENT, "Candidates, parties and campaign sites.", ["librarian"]),
    ("Science and research", CollectionKind.DEPARTMENT, "Laboratories, journals, scholarly blogs.", []),
]


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
        for name, kind, description, members in DEMO_COLLECTIONS:
            member_users = [users[m] for m in members]
            existing = Collection.objects.filter(name=name).first()
            if existing is None:
                collection_create(name=name, kind=kind, description=description, members=member_users)
            else:
                collection_update(
                    collection=existing, kind=kind, description=description, members=member_users
                )

        self.stdout.write(self.style.SUCCESS("Demo data loaded. Demo logins (user / password / role):"))
        for username, roles, superuser, _first, _last in DEMO_USERS:
            role = ", ".join(str(r.label) for r in roles) or ("Administrator" if superuser else "—")
            self.stdout.write(f"  {username:<10} {demo_password(username):<16} {role}")
