"""Declared tables (webarchive.tables): what a cell shows, where it links, and how table.html draws it.

The objects are real models left unsaved (a pk given where a link needs one): a table only reads them.
"""

import datetime
import re

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.models import HarvestDefinition, Schedule
from webarchive.tables import Column, Table

pytestmark = pytest.mark.smoke


class DefinitionTable(Table):
    id = "definition-table"
    columns = (
        Column("name", link=True),
        Column("kind"),
        Column("is_active"),
        Column("schedule.name", "Schedule", link="schedule"),
        Column("next_date", "Next run", time_format="Y-m-d H:i"),
    )


def definition(**fields) -> HarvestDefinition:
    values = {"pk": 7, "name": "news", "kind": HarvestKind.SELECTIVE, "is_active": True}
    return HarvestDefinition(**{**values, **fields})


def render(table: Table) -> str:
    return render_to_string("webarchive/table.html", {"table": table})


def cells(table: Table) -> list[list]:
    return [[cell.value for cell in row.cells] for row in table.rows]


def test_a_dotted_accessor_follows_relations_and_shows_a_dash_for_none():
    planned = definition(schedule=Schedule(pk=3, name="daily at 3"))
    snapshot = definition(pk=8, name="broad", kind=HarvestKind.SNAPSHOT, schedule=None)
    table = DefinitionTable([planned, snapshot], model=HarvestDefinition)
    assert [row[3] for row in cells(table)] == ["daily at 3", "—"]


def test_choices_show_their_label_booleans_yes_or_no_and_times_in_the_columns_format():
    when = datetime.datetime(2030, 1, 1, 2, 30, 45, tzinfo=datetime.UTC)
    inactive = definition(is_active=False, next_date=when)
    table = DefinitionTable([inactive])
    (row,) = cells(table)
    assert row[1:3] == ["Selective", "no"]
    assert row[4] == timezone.localtime(when).strftime("%Y-%m-%d %H:%M")  # no seconds
    assert row[1] != HarvestKind.SELECTIVE.value
    # Without a time format, a time is shown to the second.
    (plain,) = cells(type("Plain", (Table,), {"columns": (Column("next_date"),)})([inactive]))
    assert plain == [timezone.localtime(when).strftime("%Y-%m-%d %H:%M:%S")]


def test_links_go_to_the_object_or_to_the_object_at_an_attribute():
    planned = definition(schedule=Schedule(pk=3, name="daily at 3"))
    unplanned = definition(pk=8, schedule=None)
    table = DefinitionTable([planned, unplanned])
    hrefs = [[cell.href for cell in row.cells] for row in table.rows]
    assert hrefs[0] == [planned.get_absolute_url(), "", "", "/harvest/schedules/3/", ""]
    assert hrefs[1] == [unplanned.get_absolute_url(), "", "", "", ""]  # no schedule: nothing to link to
    html = render(table)
    assert f'<a href="{planned.get_absolute_url()}">news</a>' in html
    assert '<a href="/harvest/schedules/3/">daily at 3</a>' in html


def test_headers_are_the_labels_given_or_the_fields_verbose_names():
    table = DefinitionTable([], model=HarvestDefinition)
    headers = [str(header) for _column, header in table.headers]
    assert headers == ["name", "kind", "active", "Schedule", "Next run"]
    drawn = re.findall(r"<th[^>]*>([^<]*)</th>", render(table))
    assert drawn == ["Name", "Kind", "Active", "Schedule", "Next run"]


def test_an_empty_table_says_so_across_all_its_columns():
    html = render(DefinitionTable([], model=HarvestDefinition))
    assert '<td colspan="5" class="text-body-secondary">Nothing matches.</td>' in html
    nothing = type("Nothing", (DefinitionTable,), {"empty": "No harvest definition yet."})
    assert "No harvest definition yet." in render(nothing([]))


def test_a_cells_text_is_escaped_in_the_rendered_table():
    hostile = definition(name="<script>alert(1)</script>", comments='"><img src=x onerror=alert(1)>')
    table = type("Hostile", (DefinitionTable,), {"columns": (Column("name", link=True), Column("comments"))})
    html = render(table([hostile]))
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;</a>" in html  # a linked cell too
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html


def test_the_table_has_its_id_and_greys_inactive_rows_when_asked():
    rows = [definition(), definition(pk=8, name="old", is_active=False)]
    html = render(DefinitionTable(rows))
    assert 'id="definition-table"' in html and "text-body-secondary" not in html
    dimmed = type("Dimmed", (DefinitionTable,), {"dim_inactive": True})
    assert render(dimmed(rows)).count('<tr class="text-body-secondary"') == 1
