"""Tables of objects, declared once per list: which columns, how each cell reads, where it links.

A list page declares its table in its app's ``tables.py``::

    class DefinitionTable(Table):
        id = "definitions"
        columns = (
            Column("name", link=True),
            Column("kind"),                                   # a choice: its label
            Column("configuration_count", _("Configurations"), align="end"),
            Column("schedule", link="schedule"),              # links to the schedule's page
            Column("last_run", template="harvest/cells/last_run.html"),
        )

and gives it to its view (``ObjectListView.table_class``); ``templates/webarchive/table.html`` draws
any table, so no list writes its own ``<table>``. A cell is the object's attribute (a dotted path
follows relations), shown as people read it (:func:`display_value`: choice labels, yes/no, local
dates, "—" for nothing), or a template fragment given ``obj`` and ``value`` when it needs more.
Crawled text in a cell is only ever text: templates escape it.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.translation import gettext as _

from webarchive.permissions import permitted


def display_value(obj, name: str, *, time_format: str = "Y-m-d H:i:s"):
    """A field's value as people read it: the label of a choice, not its code; a date and time,
    local, in ``time_format`` (Django's date format)."""
    get_display = getattr(obj, f"get_{name}_display", None)
    value = get_display() if get_display else getattr(obj, name)
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, datetime.datetime):
        return date_format(timezone.localtime(value), time_format)
    return "—" if value in (None, "") else value


@dataclass(frozen=True)
class Column:
    """One column: ``accessor`` is an attribute of the object (``schedule.name`` follows relations).

    ``link``: True links the cell to the object's page, a string to the page of the object at that
    attribute (``"schedule"``); ``template`` renders the cell instead (with ``obj`` and ``value``);
    ``align="end"`` for numbers; ``label`` defaults to the model field's verbose name
    (``hidden_label``: read by screen readers only, for a column of checkboxes or links);
    ``action``: the column is shown only to users permitted that action on the table's model
    (the checkboxes of a bulk edit), as :func:`webarchive.permissions.permitted` answers;
    ``time_format``: how a date and time is written (``"Y-m-d H:i"`` where seconds do not matter);
    ``wide``: a secondary column, shown on screens from a tablet's width up, left out on a phone's
    (the list stays readable there without scrolling sideways).
    """

    accessor: str
    label: Any = None
    link: bool | str = False
    template: str | None = None
    align: str = ""
    css: str = ""
    hidden_label: bool = False
    action: str | None = None
    time_format: str = "Y-m-d H:i:s"
    wide: bool = False

    @property
    def screen_css(self) -> str:
        """The classes that leave a wide column out on a phone's width."""
        return "d-none d-md-table-cell" if self.wide else ""

    def header(self, model: type[models.Model] | None) -> Any:
        if self.label is not None:
            return self.label
        if model is not None:
            try:
                return model._meta.get_field(self.accessor.split(".")[0]).verbose_name
            except FieldDoesNotExist:
                pass
        return self.accessor.replace("_", " ")

    def value(self, obj) -> Any:
        *path, name = self.accessor.split(".")
        for step in path:
            obj = getattr(obj, step, None)
            if obj is None:
                return "—"
        return display_value(obj, name, time_format=self.time_format)

    def href(self, obj) -> str:
        if self.link is True:
            target = obj
        elif self.link:
            target = obj
            for step in self.link.split("."):
                target = getattr(target, step, None)
        else:
            return ""
        get_url = getattr(target, "get_absolute_url", None)
        return get_url() if get_url else ""


@dataclass(frozen=True)
class Cell:
    column: Column
    obj: Any
    value: Any
    href: str


@dataclass(frozen=True)
class Row:
    obj: Any
    cells: list[Cell]
    attrs: dict[str, Any]


class Table:
    """A declared table over some objects (a page of a list)."""

    id: str = ""  # the table's HTML id
    columns: tuple[Column, ...] = ()
    empty = None  # what an empty table says; default "Nothing matches."
    row_template: str | None = None  # a template for the whole row instead (rare: rows with actions)
    dim_inactive = False  # rows of objects with is_active False are greyed

    def __init__(self, objects, *, model: type[models.Model] | None = None, user=None):
        self.objects = objects
        self.model = model or getattr(objects, "model", None)
        actions = {column.action for column in self.columns if column.action}
        allowed = permitted(user, self.model, actions) if actions and user and self.model else {}
        self.columns = tuple(
            column for column in self.columns if not column.action or allowed.get(column.action)
        )

    def row_attrs(self, obj) -> dict[str, Any]:
        """HTML attributes of an object's row (``data-…`` that tests and scripts find it by)."""
        return {}

    @property
    def headers(self) -> list[tuple[Column, Any]]:
        return [(column, column.header(self.model)) for column in self.columns]

    @property
    def rows(self) -> list[Row]:
        return [
            Row(
                obj,
                [Cell(column, obj, column.value(obj), column.href(obj)) for column in self.columns],
                self.row_attrs(obj),
            )
            for obj in self.objects
        ]

    @property
    def empty_text(self):
        return self.empty if self.empty is not None else _("Nothing matches.")
