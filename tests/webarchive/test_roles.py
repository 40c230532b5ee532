"""The role table: groups, their permissions, and what each role may enter."""

import pytest
from django.contrib.auth.models import Group, Permission

from tests.factories import UserFactory
from webarchive.permissions import (
    AREA_ROLES,
    ROLE_PERMISSIONS,
    Area,
    Role,
    areas_for,
    roles_sync,
    user_roles,
    user_set_roles,
)

pytestmark = pytest.mark.django_db


def group_permissions(role):
    return set(
        Group.objects.get(name=role.value).permissions.values_list("content_type__app_label", "codename")
    )


@pytest.mark.smoke
def test_migrations_create_one_group_per_role_with_the_table_permissions():
    for role in Role:
        expected = {
            (label.split(".")[0], f"{action}_{label.split('.')[1]}")
            for label, actions in ROLE_PERMISSIONS[role].items()
            for action in actions
        }
        assert expected, f"{role} has no permissions at all"
        assert group_permissions(role) == expected


def test_sync_removes_permissions_given_by_hand():
    group = Group.objects.get(name=Role.LIBRARIAN.value)
    group.permissions.add(Permission.objects.get(codename="add_collection"))
    roles_sync()
    assert ("selection", "add_collection") not in group_permissions(Role.LIBRARIAN)


# Configuration and personal objects, not archival ones: these may be deleted
# (the planning services refuse when something depends on them). Domains,
# harvest definitions, templates, schedules and jobs are not among them.
DELETABLE = {
    "delete_compatibilityrule",
    "delete_savedsearch",
    "delete_seedlist",
    "delete_domainconfiguration",
    "delete_collectionmapping",
    "delete_budgetmapping",
}


def test_no_role_may_delete_an_archival_object():
    for role in Role:
        deletes = {codename for _app, codename in group_permissions(role) if codename.startswith("delete_")}
        assert deletes <= DELETABLE, role


def test_set_roles_keeps_other_groups():
    other = Group.objects.create(name="reading room")
    user = UserFactory(roles=[Role.LIBRARIAN])
    user.groups.add(other)
    user_set_roles(user=user, roles={Role.CURATOR, Role.MANAGER})
    assert set(user.groups.values_list("name", flat=True)) == {"curator", "manager", "reading room"}
    assert user_roles(user) == {Role.CURATOR, Role.MANAGER}


def test_areas_follow_the_table():
    assert areas_for(UserFactory(roles=[Role.LIBRARIAN])) == [Area.SELECTION, Area.ACCESS]
    assert areas_for(UserFactory(roles=[Role.MANAGER])) == [Area.SELECTION, Area.REPORTS, Area.ACCESS]
    assert areas_for(UserFactory(roles=[Role.ENGINEER])) == [
        Area.SELECTION,
        Area.PLANNING,
        Area.OPERATIONS,
        Area.REPORTS,
        Area.ACCESS,
    ]
    assert areas_for(UserFactory()) == []
    assert areas_for(UserFactory(is_superuser=True)) == list(Area)
    assert areas_for(UserFactory(roles=[Role.MANAGER], is_active=False)) == []
    assert AREA_ROLES[Area.ADMIN] == frozenset()
