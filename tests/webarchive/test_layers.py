"""The layers of docs/development.md, as `make lint` enforces them (contracts in pyproject.toml)."""

import pkgutil
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import harvest
import webarchive

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("webarchive", "selection", "harvest", "storage")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return {contract["id"]: contract for contract in config["tool"]["importlinter"]["contracts"]}


def layer_modules(layer: str) -> set[str]:
    return {name.strip() for name in layer.replace("|", ":").split(":")}


def children(package) -> set[str]:
    return {f"{package.__name__}.{module.name}" for module in pkgutil.iter_modules(package.__path__)}


def test_every_module_of_the_shared_package_is_in_one_layer():
    """webarchive/ holds both the core (bottom) and the project wiring (top): a new module must say which."""
    layers = contracts()["layers"]["layers"]
    wiring, core = layer_modules(layers[0]), layer_modules(layers[-1])
    assert not wiring & core
    assert children(webarchive) == wiring | core


def test_the_crawler_contract_forbids_every_other_module_of_harvest_and_of_the_core():
    forbidden = set(contracts()["crawler"]["forbidden_modules"])
    allowed_core = {"webarchive.netguard", "webarchive.urlnorm"}
    assert children(harvest) - {"harvest.crawler"} <= forbidden
    assert children(webarchive) - allowed_core <= forbidden
    assert {"django", "celery", "selection", "storage"} <= forbidden


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of the code (no tests, no data) on which imports can be broken."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def test_the_code_keeps_its_layers(tree):
    result = lint_imports(tree)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        # An app importing one above it.
        ("selection/probe.py", "import harvest.models\n", "selection is not allowed to import harvest"),
        ("harvest/probe.py", "from storage import models\n", "harvest is not allowed to import storage"),
        # The core importing an app, or an app the project wiring.
        ("webarchive/permissions.py", "import selection.models\n", "is not allowed to import selection"),
        (
            "storage/probe.py",
            "from webarchive import urls\n",
            "storage is not allowed to import webarchive.urls",
        ),
        # The crawler importing Django, or the app around it.
        (
            "harvest/crawler/probe.py",
            "import django.conf\n",
            "harvest.crawler is not allowed to import django",
        ),
        ("harvest/crawler/probe.py", "from harvest import models\n", "not allowed to import harvest.models"),
    ],
)
def test_an_import_that_breaks_a_layer_fails_the_lint(tree, module, line, broken):
    path = tree / module
    path.write_text((path.read_text() if path.exists() else "") + line)
    result = lint_imports(tree)
    assert result.returncode == 1
    assert broken in " ".join(result.stdout.split())
