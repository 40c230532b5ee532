"""Services are the only write path: no page, API view, command or task writes a model itself.

Writes go through a service (``<app>/services``), which checks the rules (permissions, versions,
transitions) and records who did it. This reads the code of every view, API view, management command
and task module and refuses a model write in it: ``save()``, ``delete()``, ``create()``,
``bulk_create()``, ``bulk_update()``, ``get_or_create()``, ``update_or_create()``, or ``update()`` /
many-to-many changes on a manager or a queryset.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("webarchive", "selection", "harvest", "storage")
ALWAYS_WRITES = {
    "save",
    "delete",
    "create",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
# Names shared with dicts and sets: writes when called on a manager, a queryset or a relation
# (``record.keywords.add``), not on a plain name (``seen.add``) or a widget's attributes.
QUERYSET_WRITES = {"update", "add", "remove", "set", "clear"}
QUERYSET_HINTS = ("objects", ".filter(", ".exclude(", ".all(", "_set", "queryset")
NOT_RELATIONS = ("attrs", "data", "initial", "headers")


def entry_modules() -> list[Path]:
    """The modules through which people and workers act: pages, API, commands, tasks."""
    found = []
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or "crawler" in parts:
                continue
            if (
                "views" in parts
                or path.name == "views.py"
                or "api" in parts
                or "commands" in parts
                or path.name == "tasks.py"
            ):
                found.append(path)
    return sorted(found)


def model_writes(source: str) -> list[tuple[int, str]]:
    writes = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, receiver = node.func.attr, ast.unparse(node.func.value)
        relation = isinstance(node.func.value, ast.Attribute) and not receiver.endswith(NOT_RELATIONS)
        if name in ALWAYS_WRITES or (
            name in QUERYSET_WRITES and (relation or any(hint in receiver for hint in QUERYSET_HINTS))
        ):
            writes.append((node.lineno, ast.unparse(node)))
    return writes


def test_the_check_finds_writes():
    source = """
def post(request, pk):
    Record.objects.filter(pk=pk).update(status="x")
    record.save(update_fields=["status"])
    Domain.objects.create(name="a.fr")
    record.keywords.add(keyword)
    collection.members.set([])
    options.update(extra)
    seen.add(url)
    form.fields["file"].widget.attrs.update({"class": "form-control"})
"""
    assert [line for line, _call in model_writes(source)] == [3, 4, 5, 6, 7]


def test_entry_modules_are_found():
    names = {str(path.relative_to(ROOT)) for path in entry_modules()}
    assert {"selection/views/records.py", "harvest/api/views.py", "harvest/tasks.py"} <= names
    assert "webarchive/management/commands/demo.py" in names


@pytest.mark.parametrize("path", entry_modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_page_api_command_or_task_writes_a_model_itself(path):
    assert model_writes(path.read_text()) == [], "write through a service (<app>/services) instead"
