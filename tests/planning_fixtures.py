"""Fixtures of the planning side, built through the services (as a curator would)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import HarvestChannel, HarvestTemplate
from harvest.services.domains import domain_create
from harvest.services.planning import definition_save, schedule_save, template_save


@pytest.fixture
def make_domain(db):
    def make(name="example.fr", **fields):
        return domain_create(name=name, **fields)

    return make


@pytest.fixture
def template(db):
    return template_save(name="test-template", depth_policy="host")


@pytest.fixture
def default_template(db):
    """The template new domains get (created by the harvest migrations)."""
    return HarvestTemplate.objects.get(name="default")


@pytest.fixture
def schedule(db):
    return schedule_save(name="daily at 3", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3)


@pytest.fixture
def selective(db, schedule):
    return definition_save(kind=HarvestKind.SELECTIVE, name="selective-test", schedule=schedule)


@pytest.fixture
def snapshot(db):
    return definition_save(kind=HarvestKind.SNAPSHOT, name="snapshot-test")


@pytest.fixture
def channels(db):
    return {channel.name: channel for channel in HarvestChannel.objects.all()}
