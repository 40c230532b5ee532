"""benchmarks/preload_dns.py runs at a tiny size (--smoke): counts, never time."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.components import require_component
from tests.dns_server import dnsmasq_available

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "preload_dns.py"


def test_smoke_run_prints_the_figures():
    require_component("dnsmasq", dnsmasq_available(), "no /usr/sbin/dnsmasq (Debian package dnsmasq-base)")
    require_component(
        "dnsperf", Path("/usr/bin/dnsperf").exists(), "no /usr/bin/dnsperf (Debian package dnsperf)"
    )
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--smoke"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "## Broad-crawl preparation: DNS checks against dnsmasq and dnsperf" in out
    assert "- names: 3,000 (`d{i}.bench-preload.test`), 2,400 served (A), 600 missing (NXDOMAIN)" in out
    number = r"[\d,.]+"
    peer = re.search(
        rf"^\| `dnsperf -q 100` .* \| ({number}) \| ({number}) \| ({number}) \|", out, re.MULTILINE
    )
    assert peer, out
    ours = re.search(
        rf"^\| `check_domains`, concurrency 200, timeout 2 s, 1 retry \| {number} \| 3,000 \| ({number})"
        rf" \| ({number}) \| ({number}) \| ({number}) \|",
        out,
        re.MULTILINE,
    )
    assert ours, out
    queries = int(ours.group(1).replace(",", ""))
    assert queries >= 2400 + 2 * 600  # one query per live name, two per missing one, more if retried
    assert float(ours.group(4)) > 0  # the ratio to dnsperf
    assert "live 2,400, no such domain 600" in out
    assert "wrong results: 0" in out
