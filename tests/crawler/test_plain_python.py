"""The crawler is plain Python: importing all of harvest/crawler/ loads no Django, no Celery, no app.

Checked in a fresh interpreter, without DJANGO_SETTINGS_MODULE, since the test process itself has
Django set up: what matters is what the crawler's own imports pull in.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# The plain-Python modules of the shared core the crawler may use.
ALLOWED_CORE = {"webarchive", "webarchive.netguard", "webarchive.urlnorm"}

IMPORT_ALL = """
import json, os, pkgutil, sys
import harvest.crawler
names = sorted(
    module.name for module in pkgutil.walk_packages(harvest.crawler.__path__, "harvest.crawler.")
)
for name in names:
    __import__(name)
print(json.dumps({
    "crawler": names,
    "modules": sorted(sys.modules),
    "settings": os.environ.get("DJANGO_SETTINGS_MODULE"),
}))
"""


def forbidden(name: str) -> bool:
    top = name.split(".")[0]
    if top in ("django", "celery", "selection", "storage") or top.startswith(("django", "celery")):
        return True
    if top == "harvest":
        return name not in ("harvest", "harvest.crawler") and not name.startswith("harvest.crawler.")
    if top == "webarchive":
        return name not in ALLOWED_CORE
    return False


def test_forbidden_names():
    assert forbidden("django.conf") and forbidden("celery") and forbidden("django_environ")
    assert forbidden("harvest.models") and forbidden("harvest.crawlers") and forbidden("storage.models")
    assert forbidden("webarchive.celery") and forbidden("selection")
    assert not forbidden("harvest") and not forbidden("harvest.crawler.site") and not forbidden("urllib3")
    assert not forbidden("webarchive.netguard")


def test_importing_the_crawler_loads_no_django_celery_or_app():
    environment = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"harvest.crawler.site", "harvest.crawler.extractors.html"} <= set(found["crawler"])
    assert [name for name in found["modules"] if forbidden(name)] == []
    assert found["settings"] is None
