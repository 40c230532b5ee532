"""Who may see and do what: the one place where roles are decided.

A user's roles are Django groups named after :class:`Role`. Two rules apply to
every page and API endpoint:

- an *area* (Selection, Planning, …) is open to the roles in ``AREA_ROLES``;
- an *action* on a model (view, add, change) needs the model permission, and
  ``ROLE_PERMISSIONS`` is the table of which role holds which. The groups'
  permissions are kept equal to that table by :func:`roles_sync` (run after
  every migration), so the Django admin shows what the code says.

Querysets are narrowed with :func:`restrict`; a model whose rows depend on the
user (records and collection rights, later) gives its QuerySet a
``restrict(user, action)`` method and :func:`restrict` calls it.

Superusers are the administrators: every area, every action.
No role is given ``delete`` on an archival object (collections, records, and
later domains, harvest definitions, WARC files): they are never deleted.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.apps import apps
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Group, Permission
from django.db import models, transaction
from django.utils.translation import gettext_lazy as _


class Role(models.TextChoices):
    """The four roles of the people who run a web archive, and the readers who consult it."""

    LIBRARIAN = "librarian", _("Librarian")
    CURATOR = "curator", _("Digital curator")
    ENGINEER = "engineer", _("Crawl engineer")
    MANAGER = "manager", _("Manager")
    READER = "reader", _("Reader")


# The people a record or a collection is in the hands of: its responsible librarian, its members.
SELECTION_PEOPLE = frozenset({Role.LIBRARIAN, Role.CURATOR})

# The people who run the archive: they see every capture (access rules and exclusions bind readers
# and anonymous visitors, see storage.access), readers only what the rules open to them.
STAFF_ROLES = frozenset(Role) - {Role.READER}


class Area(models.TextChoices):
    """The parts of the application, one per entry of the navigation bar."""

    SELECTION = "selection", _("Selection")
    PLANNING = "planning", _("Planning")
    OPERATIONS = "operations", _("Operations")
    REPORTS = "reports", _("Reports")
    ACCESS = "access", _("Access")
    ADMIN = "admin", _("Admin")


AREA_ROLES: dict[Area, frozenset[Role]] = {
    # Everyone may consult the selection (BnF: managers overview their teams'
    # work); writing there is for librarians in their collections and curators.
    Area.SELECTION: STAFF_ROLES,
    Area.PLANNING: frozenset({Role.CURATOR, Role.ENGINEER}),
    Area.OPERATIONS: frozenset({Role.ENGINEER}),
    Area.REPORTS: frozenset({Role.MANAGER, Role.CURATOR, Role.ENGINEER}),
    # Readers see Access (search, captures, replay) and nothing else.
    Area.ACCESS: frozenset(Role),
    Area.ADMIN: frozenset(),  # superusers only
}

VIEW, ADD, CHANGE, DELETE, VALIDATE = "view", "add", "change", "delete", "validate"
ALL = (VIEW, ADD, CHANGE, DELETE)

# What everyone with a role may do on the selection side: read it all, and keep
# their own saved searches (which are not archival objects, so may be deleted).
_READER = {
    "selection.collection": (VIEW,),
    "selection.theme": (VIEW,),
    "selection.keyword": (VIEW,),
    "selection.record": (VIEW,),
    "selection.compatibilityrule": (VIEW,),
    "selection.savedsearch": ALL,
    # Curators' notes on how a record's site was harvested (the quality view writes them).
    "storage.harvestnote": (VIEW,),
}

# The archive itself (the Access area, open to every role): captures and the files they are in.
# Staff see the files' pages; downloading WARC bytes (``/warcs/``, a capture's raw record) is the
# engineers' (and the replay account's) alone: ``DOWNLOAD`` on WARC files.
DOWNLOAD = "download"
_ARCHIVE_READER = {"storage.warcfile": (VIEW,), "storage.capture": (VIEW,)}
# Readers: the captures their access rules open to them (storage.access), nothing else.
_CAPTURE_READER = {"storage.capture": (VIEW,)}

# Reading what was planned and harvested (reports, the planning pages).
_HARVEST_READER = {
    f"harvest.{name}": (VIEW,)
    for name in (
        "domain",
        "seedlist",
        "domainconfiguration",
        "harvesttemplate",
        "schedule",
        "harvestchannel",
        "harvestdefinition",
        "globalcrawlertraplist",
        "collectionmapping",
        "budgetmapping",
        "transferreport",
        "harvestrun",
        "job",
        "jobconfiguration",
        "harvestinfo",
        "jobstatistics",
        "statisticline",
        "nextrunaddition",
    )
}

# Planning (curators and engineers): domains and definitions are archival
# objects, never deleted; seed lists, configurations and mappings nothing
# depends on may be removed (the services say when something depends on them).
_PLANNER = {
    **_HARVEST_READER,
    "harvest.domain": (VIEW, ADD, CHANGE),
    "harvest.seedlist": ALL,
    "harvest.domainconfiguration": ALL,
    "harvest.harvesttemplate": (VIEW, ADD, CHANGE),
    "harvest.schedule": (VIEW, ADD, CHANGE),
    "harvest.harvestchannel": (VIEW, ADD, CHANGE),
    "harvest.harvestdefinition": (VIEW, ADD, CHANGE),
    "harvest.globalcrawlertraplist": (VIEW, ADD, CHANGE),
    "harvest.collectionmapping": ALL,
    "harvest.budgetmapping": ALL,
}

# Operations on the archive (crawl engineers): deduplication runs, and retiring a file whose
# deduplicated replacement is registered (a change of the file's row; nothing is deleted); reading the
# files' bytes (/warcs/, a capture's raw record).
_ARCHIVE_OPERATOR = {
    "storage.deduprun": (VIEW, ADD, CHANGE),
    "storage.warcfile": (VIEW, CHANGE, DOWNLOAD),
    # Index lines of files written by crawlers outside the archive (POST /api/cdx/).
    "storage.capture": (VIEW, ADD),
    # Storage: nodes are added, taken offline, brought back and drained (never deleted); replicas
    # are verified on demand; the storage's history is read.
    "storage.storagenode": (VIEW, ADD, CHANGE),
    "storage.replica": (VIEW, CHANGE),
    "storage.storageevent": (VIEW,),
}

# Role -> model label -> actions. Apps add their models here as they grow.
# Rows a role may act on are narrowed further by each QuerySet's restrict()
# (a librarian writes records only in the collections they are a member of).
ROLE_PERMISSIONS: dict[Role, dict[str, tuple[str, ...]]] = {
    Role.LIBRARIAN: {
        **_READER,
        **_ARCHIVE_READER,
        "selection.keyword": (VIEW, ADD),
        "selection.record": (VIEW, ADD, CHANGE),
    },
    Role.CURATOR: {
        **_READER,
        **_ARCHIVE_READER,
        **_PLANNER,
        "selection.collection": (VIEW, ADD, CHANGE),
        "selection.theme": (VIEW, ADD, CHANGE),
        "selection.keyword": (VIEW, ADD, CHANGE),
        "selection.record": (VIEW, ADD, CHANGE, VALIDATE),
        # Configuration, not an archival object: a rule may be withdrawn.
        "selection.compatibilityrule": ALL,
        "storage.harvestnote": (VIEW, ADD),
        # URLs missed in replay, added as seeds to a definition's next run.
        "harvest.nextrunaddition": (VIEW, ADD),
        # Who may read what in the archive: access rules and exclusions (take-downs), with history.
        "storage.accessrule": (VIEW, ADD, CHANGE),
        "storage.exclusion": (VIEW, ADD, CHANGE),
    },
    Role.ENGINEER: {
        **_READER,
        **_ARCHIVE_READER,
        **_PLANNER,
        **_ARCHIVE_OPERATOR,
        "harvest.job": (VIEW, CHANGE),
        # Broad-crawl preparation: runs are started, stopped and resumed (kept as the record of a snapshot).
        "harvest.preloadrun": (VIEW, ADD, CHANGE),
    },
    Role.MANAGER: {**_READER, **_ARCHIVE_READER, **_HARVEST_READER},
    Role.READER: {**_CAPTURE_READER},
}

METHOD_ACTIONS = {
    "GET": VIEW,
    "HEAD": VIEW,
    "OPTIONS": VIEW,
    "POST": ADD,
    "PUT": CHANGE,
    "PATCH": CHANGE,
    "DELETE": DELETE,
}

User = AbstractBaseUser | AnonymousUser


def user_roles(user: User) -> frozenset[Role]:
    """The roles a user holds (cached on the user object for the request)."""
    if not user.is_authenticated or not user.is_active:
        return frozenset()
    cached = getattr(user, "_webarchive_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = frozenset(role for role in Role if role.value in names)
        user._webarchive_roles = cached
    return cached


def people_with_roles(roles: Iterable[Role], *, keep: Iterable[int] = ()) -> models.QuerySet:
    """The active people who hold one of ``roles``, by name, for the lists people choose from (a
    record's responsible librarian, a collection's members). Service accounts hold no role and are
    never listed. ``keep``: the ids already chosen (a responsible librarian who changed role stays
    selectable on the records in their hands until someone else is chosen)."""
    from django.contrib.auth import get_user_model

    chosen = models.Q(groups__name__in=[Role(role).value for role in roles])
    kept = [pk for pk in keep if pk is not None]
    if kept:
        chosen |= models.Q(pk__in=kept)
    ids = get_user_model().objects.filter(chosen, is_active=True).values("pk")
    return get_user_model().objects.filter(pk__in=ids).order_by("last_name", "first_name", "username")


def is_administrator(user: User) -> bool:
    return bool(user.is_authenticated and user.is_active and user.is_superuser)


def is_archive_staff(user: User) -> bool:
    """Whether the user runs the archive (an administrator or any role but reader): staff see every
    capture, excluded and closed ones included; readers and anonymous visitors what the rules allow."""
    return is_administrator(user) or bool(user_roles(user) & STAFF_ROLES)


def can_enter(user: User, area: Area | str) -> bool:
    """Whether the user may open pages of an area."""
    if is_administrator(user):
        return True
    return bool(user_roles(user) & AREA_ROLES[Area(area)])


def areas_for(user: User) -> list[Area]:
    """The areas the user may open, in navigation order."""
    return [area for area in Area if can_enter(user, area)]


def permission_name(model: type[models.Model], action: str) -> str:
    return f"{model._meta.app_label}.{action}_{model._meta.model_name}"


def can(user: User, action: str, model: type[models.Model]) -> bool:
    """Whether the user may perform an action (view, add, change, delete) on a model."""
    if not user.is_authenticated or not user.is_active:
        return False
    return user.has_perm(permission_name(model, action))


def restrict(queryset: models.QuerySet, user: User, action: str = VIEW) -> models.QuerySet:
    """The part of a queryset the user may act on; empty when the role does not allow it."""
    # A model whose QuerySet says so (captures: ``public_view``) shows anonymous visitors the rows its
    # restrict() lets through (when the site allows anonymous reading at all: the QuerySet knows).
    public = action == VIEW and not user.is_authenticated and getattr(queryset, "public_view", False)
    if not can(user, action, queryset.model) and not public:
        return queryset.none()
    if hasattr(queryset, "restrict"):
        return queryset.restrict(user, action)
    return queryset


def permitted(user: User, subject, actions: Iterable[str]) -> dict[str, bool]:
    """Which of ``actions`` (view, add, change, delete, validate…) the user may do on ``subject``.

    ``subject`` is a model (may the role do it at all?) or an object: then the object must also be
    among the rows the user may act on (a record of a collection the user writes in), as
    :func:`restrict` decides. Pages declare their actions once (``actions`` on the view, see
    ``webarchive.views.PermittedActionsMixin``) and templates read the answer (``permitted.change``).
    """
    if isinstance(subject, models.Model):
        model, obj = type(subject), subject
    else:
        model, obj = subject, None
    answers = {}
    for action in actions:
        allowed = can(user, action, model)
        if (
            allowed
            and obj is not None
            and obj.pk is not None
            and hasattr(model._default_manager.all(), "restrict")
        ):
            allowed = restrict(model._default_manager.filter(pk=obj.pk), user, action).exists()
        answers[action] = allowed
    return answers


def user_set_roles(*, user: AbstractBaseUser, roles: Iterable[Role]) -> None:
    """Give a user exactly these roles, leaving any other groups alone."""
    wanted = {Role(role).value for role in roles}
    role_groups = {group.name: group for group in Group.objects.filter(name__in=Role.values)}
    missing = wanted - role_groups.keys()
    if missing:
        roles_sync()
        role_groups = {group.name: group for group in Group.objects.filter(name__in=Role.values)}
    with transaction.atomic():
        user.groups.remove(*[g for name, g in role_groups.items() if name not in wanted])
        user.groups.add(*[role_groups[name] for name in wanted])
    user.__dict__.pop("_webarchive_roles", None)
    for cache in ("_perm_cache", "_group_perm_cache", "_user_perm_cache"):
        user.__dict__.pop(cache, None)


def roles_sync() -> None:
    """Create the role groups and set their permissions to exactly ``ROLE_PERMISSIONS``."""
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        create_permissions(app_config, verbosity=0)
    with transaction.atomic():
        for role in Role:
            group, _created = Group.objects.get_or_create(name=role.value)
            wanted = []
            for label, actions in ROLE_PERMISSIONS.get(role, {}).items():
                try:
                    model = apps.get_model(label)
                except LookupError:
                    continue  # a model of a later migration; synced when it exists
                codenames = [f"{action}_{model._meta.model_name}" for action in actions]
                wanted.extend(
                    Permission.objects.filter(
                        content_type__app_label=model._meta.app_label,
                        codename__in=codenames,
                    )
                )
            group.permissions.set(wanted)


def require(user: User | None, action: str, model: type[models.Model]) -> None:
    """Raise PermissionDenied unless the user may act on the model; ``None`` is the system itself
    (the launcher, a management command), which services trust."""
    from django.core.exceptions import PermissionDenied

    if user is not None and not can(user, action, model):
        raise PermissionDenied(
            _("Your role does not allow you to %(action)s %(things)s.")
            % {"action": action, "things": model._meta.verbose_name_plural}
        )
