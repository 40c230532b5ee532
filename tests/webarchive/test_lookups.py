"""``AnyOf``: a membership test answering as ``__in`` does, its values sent as one array on PostgreSQL."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext

from webarchive.lookups import AnyOf

NAMES = ["curators", "engineers", "librarians", "managers", "o'brien; drop table x", "été"]


@pytest.fixture
def groups():
    return {name: Group.objects.create(name=name).pk for name in NAMES}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "wanted",
    [[], ["curators"], ["engineers", "nobody", "été"], NAMES, ["o'brien; drop table x"], ["nobody"]],
)
def test_it_finds_what_in_finds(groups, wanted):
    by_name = Group.objects.filter(AnyOf(F("name"), wanted)).order_by("name")
    assert list(by_name.values_list("name", flat=True)) == sorted(set(wanted) & set(NAMES))
    assert list(by_name) == list(Group.objects.filter(name__in=wanted).order_by("name"))
    keys = [groups[name] for name in wanted if name in groups] + [0, 10**12]
    by_key = Group.objects.filter(AnyOf(F("pk"), keys)).order_by("pk")
    assert list(by_key) == list(Group.objects.filter(pk__in=keys).order_by("pk"))


@pytest.mark.django_db
def test_on_postgresql_the_values_are_one_parameter(groups):
    with CaptureQueriesContext(connection) as queries:
        found = set(Group.objects.filter(AnyOf(F("name"), NAMES[:4])).values_list("name", flat=True))
    assert found == set(NAMES[:4])
    if connection.vendor == "postgresql":
        assert '"auth_group"."name" = ANY(' in queries[0]["sql"]
    else:
        assert '"auth_group"."name" IN (' in queries[0]["sql"]
