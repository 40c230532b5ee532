"""The interface's translation catalogues (locale/<lang>/LC_MESSAGES/django.po and .mo).

    python scripts/translations.py update   # extract the strings (Django's makemessages), compile the .mo
    python scripts/translations.py check    # make lint: every string of the code translated, .mo current

``check`` extracts the strings from a copy of the tracked files (so that the catalogue in the
working tree is not touched), and fails, naming them, when a string of the code is missing from a
catalogue, is untranslated or fuzzy there, or when a compiled .mo differs from its .po. Extracting
needs GNU gettext (xgettext), as Django's makemessages does; compiling is polib's (pure Python).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("fr",)
IGNORED = ("tests/*", "benchmarks/*", ".venv/*", "staticfiles/*", "var/*", "scripts/*")


def catalogue(root: Path, language: str) -> Path:
    return root / "locale" / language / "LC_MESSAGES" / "django.po"


def extract(root: Path) -> None:
    """Django's makemessages in ``root``: no locations (the catalogue does not change with line
    numbers), no obsolete entries."""
    command = [sys.executable, "manage.py", "makemessages", "--no-location", "--no-obsolete", "-v", "0"]
    for language in LANGUAGES:
        command += ["-l", language]
    for pattern in IGNORED:
        command += ["--ignore", pattern]
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "webarchive.settings"}
    subprocess.run(command, cwd=root, check=True, env=environment)  # noqa: S603 (our own command line)


def compiled(po_path: Path) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "django.mo"
        polib.pofile(str(po_path)).save_as_mofile(str(target))
        return target.read_bytes()


def update() -> int:
    extract(ROOT)
    for language in LANGUAGES:
        po_path = catalogue(ROOT, language)
        po_path.with_suffix(".mo").write_bytes(compiled(po_path))
        po = polib.pofile(str(po_path))
        untranslated, fuzzy = len(po.untranslated_entries()), len(po.fuzzy_entries())
        print(
            f"{language}: {po.percent_translated()}% translated, {untranslated} untranslated, {fuzzy} fuzzy"
        )
    return 0


def _entry_key(entry) -> tuple[str, str, str]:
    return (entry.msgctxt or "", entry.msgid, entry.msgid_plural or "")


def check() -> int:
    problems: list[str] = []
    git = shutil.which("git") or "git"
    tracked = subprocess.run([git, "ls-files"], cwd=ROOT, check=True, capture_output=True, text=True)  # noqa: S603
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder)
        for name in tracked.stdout.splitlines():
            source = ROOT / name
            if source.is_file() and not name.startswith(("tests/", "benchmarks/", "docs/")):
                (copy / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, copy / name)
        for language in LANGUAGES:
            catalogue(copy, language).unlink(missing_ok=True)  # extracted afresh, from the code only
        extract(copy)
        for language in LANGUAGES:
            po_path = catalogue(ROOT, language)
            if not po_path.exists():
                problems.append(f"{language}: no catalogue {po_path.relative_to(ROOT)}")
                continue
            po = polib.pofile(str(po_path))
            done = {_entry_key(e) for e in po if e.translated() and not e.obsolete}
            wanted = [e for e in polib.pofile(str(catalogue(copy, language))) if e.msgid]
            missing = [e.msgid for e in wanted if _entry_key(e) not in done]
            for msgid in missing[:50]:
                problems.append(f"{language}: not translated: {msgid!r}")
            if len(missing) > 50:
                problems.append(f"{language}: … and {len(missing) - 50} more")
            mo_path = po_path.with_suffix(".mo")
            if not mo_path.exists() or mo_path.read_bytes() != compiled(po_path):
                problems.append(
                    f"{language}: {mo_path.relative_to(ROOT)} is not compiled from its .po: run "
                    "`python scripts/translations.py update` (or `make messages`)"
                )
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(
            f"{len(problems)} translation problem(s): every string of the interface must be translated "
            "(docs/development.md, “Translations”).",
            file=sys.stderr,
        )
        return 1
    print("translations: every string of the code is translated in " + ", ".join(LANGUAGES))
    return 0


if __name__ == "__main__":
    commands = {"update": update, "check": check}
    if len(sys.argv) != 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    sys.exit(commands[sys.argv[1]]())
