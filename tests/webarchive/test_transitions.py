"""The status tables (webarchive.transitions): a legal move applies, any other is refused the same
way everywhere, a table must say what every status may become, and it reads as a mapping.

The refusals through each model's services are tested with those services."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.core.exceptions import ValidationError
from django.db import models

from harvest.choices import JOB_TRANSITIONS, SITE_CRAWL_TRANSITIONS
from harvest.models import Job, JobConfiguration, PreloadRun
from harvest.models.preload import PRELOAD_RUN_TRANSITIONS
from selection.choices import RECORD_TRANSITIONS
from selection.models import Record
from storage.models import (
    DEDUP_RUN_TRANSITIONS,
    REPLICA_TRANSITIONS,
    STORAGE_NODE_TRANSITIONS,
    DedupRun,
    Replica,
    StorageNode,
)
from webarchive.transitions import Transitions


class Door(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"
    LOCKED = "locked", "Locked"
    WALLED = "walled", "Walled up"


DOOR = {
    Door.OPEN: {Door.CLOSED},
    Door.CLOSED: {Door.OPEN, Door.LOCKED, Door.WALLED},
    Door.LOCKED: {Door.CLOSED},
    Door.WALLED: set(),
}


@pytest.fixture
def doors() -> Transitions:
    return Transitions(Door, DOOR, noun="door", field="state")


def test_a_legal_move_sets_the_new_status(doors):
    door = SimpleNamespace(state=Door.CLOSED)
    doors.apply(door, Door.LOCKED)
    assert door.state == Door.LOCKED
    doors.check(Door.LOCKED, Door.CLOSED)  # no error
    assert doors.may(Door.OPEN, Door.CLOSED) and not doors.may(Door.OPEN, Door.LOCKED)


def test_an_illegal_move_is_refused_with_its_code_and_leaves_the_object_as_it_was(doors):
    door = SimpleNamespace(state=Door.OPEN)
    with pytest.raises(ValidationError) as excinfo:
        doors.apply(door, Door.LOCKED)
    assert excinfo.value.messages == ["A door that is open cannot become locked."]
    assert excinfo.value.code == "illegal_transition"
    assert door.state == Door.OPEN
    with pytest.raises(ValidationError, match="A door that is walled up cannot become open"):
        doors.check("walled", "open")  # the stored values work as well as the members
    with pytest.raises(ValidationError, match="A door that is open cannot become open"):
        doors.apply(door, Door.OPEN)  # staying is a move too: legal only where the table says so


def test_a_refusal_goes_to_the_field_named():
    table = Transitions(Door, DOOR, noun="door", field="state", error_field="state")
    with pytest.raises(ValidationError) as excinfo:
        table.apply(SimpleNamespace(state=Door.LOCKED), Door.OPEN)
    assert excinfo.value.message_dict == {"state": ["A door that is locked cannot become open."]}
    assert excinfo.value.error_dict["state"][0].code == "illegal_transition"


def test_a_table_that_forgets_a_status_or_names_an_unknown_one_is_refused_when_declared():
    forgetful = {state: targets for state, targets in DOOR.items() if state != Door.WALLED}
    with pytest.raises(ValueError, match=r"Door: no transitions given from \['walled'\]"):
        Transitions(Door, forgetful, noun="door")
    with pytest.raises(ValueError, match="ajar"):
        Transitions(Door, {**DOOR, Door.OPEN: {"ajar"}}, noun="door")
    with pytest.raises(ValueError, match="ajar"):
        Transitions(Door, {**DOOR, "ajar": set()}, noun="door")


def test_a_table_reads_as_a_mapping_of_each_status_to_where_it_may_go(doors):
    assert len(doors) == 4
    assert list(doors) == [Door.OPEN, Door.CLOSED, Door.LOCKED, Door.WALLED]  # the choices' order
    assert doors[Door.CLOSED] == doors["closed"] == frozenset({Door.OPEN, Door.LOCKED, Door.WALLED})
    assert Door.LOCKED in doors[Door.CLOSED] and Door.LOCKED not in doors[Door.OPEN]
    assert "open" in doors and "ajar" not in doors
    assert doors.get("ajar") is None
    with pytest.raises(KeyError):
        doors["ajar"]
    assert dict(doors) == {state: frozenset(targets) for state, targets in DOOR.items()}
    assert doors.ended() == {Door.WALLED}


MODEL_TABLES = [
    (RECORD_TRANSITIONS, Record),
    (JOB_TRANSITIONS, Job),
    (SITE_CRAWL_TRANSITIONS, JobConfiguration),
    (PRELOAD_RUN_TRANSITIONS, PreloadRun),
    (DEDUP_RUN_TRANSITIONS, DedupRun),
    (STORAGE_NODE_TRANSITIONS, StorageNode),
    (REPLICA_TRANSITIONS, Replica),
]


@pytest.mark.parametrize(
    ("table", "model"), MODEL_TABLES, ids=[model.__name__ for _table, model in MODEL_TABLES]
)
def test_each_model_s_table_names_its_status_field_and_its_choices(table, model):
    field = model._meta.get_field(table.field)
    assert field.choices == table.choices.choices
    assert field.default in table  # a new object starts in a status of the table
