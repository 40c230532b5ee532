"""``manage.py testsite``: its options for the generated website, its errors, and serving several hosts."""

import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.core.management import CommandError, call_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--port", "70000"], "port must be between 0 and 65535"),
        (["--port", "-1"], "port must be between 0 and 65535"),
        (["--pages", "0"], "--pages must be between 1 and 1,000,000"),
        (["--pages", "2000000"], "--pages must be between 1 and 1,000,000"),
        (["--hosts", "0"], "--hosts must be between 1 and 3"),
        (["--hosts", "4"], "--hosts must be between 1 and 3"),
        (["--large-file-bytes", "-5"], "cannot be negative"),
        (["--slow-seconds", "-1"], "cannot be negative"),
        (["--pages", "many"], "invalid int value"),
        (["--seed", "1.5"], "invalid int value"),
    ],
)
def test_bad_arguments_are_refused_before_serving(arguments, message):
    with pytest.raises(CommandError, match=message):
        call_command("testsite", *arguments)


def test_serves_the_generated_site_on_three_addresses():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "manage.py", "testsite", "--port", "0", "--seed", "3", "--pages", "40"]
    command += ["--hosts", "3", "--slow-seconds", "0"]
    # Unbuffered, so that select() sees every line that has come (a buffer would hide the ones it holds).
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
    )
    try:
        lines = []
        while len(lines) < 4:
            ready, _w, _x = select.select([process.stdout], [], [], 20)
            assert ready, f"the command printed only {lines}"
            lines.append(process.stdout.readline().decode())
        port = re.search(r"http://127\.0\.0\.1:(\d+)/ \(seed 3\)", lines[0])[1]
        assert lines[1].strip() == f"Generated website: http://127.0.0.1:{port}/site/ (40 pages)."
        assert lines[2].strip() == f"Its CDN: http://127.0.0.2:{port}/cdn/"
        assert lines[3].strip() == f"An external site: http://127.0.0.3:{port}/ext/"
        home = requests.get(f"http://127.0.0.1:{port}/site/", timeout=5)
        assert home.status_code == 200
        assert f"http://127.0.0.2:{port}/cdn/img/logo.png" in home.text
        assert requests.get(f"http://127.0.0.2:{port}/cdn/img/logo.png", timeout=5).status_code == 200
        assert requests.get(f"http://127.0.0.3:{port}/ext/", timeout=5).status_code == 200
        assert requests.get(f"http://127.0.0.1:{port}/site/sport/38.html", timeout=5).status_code == 200
        assert requests.get(f"http://127.0.0.1:{port}/site/sport/42.html", timeout=5).status_code == 404
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert process.stdout.read() == b""  # no request is logged without -v 2
