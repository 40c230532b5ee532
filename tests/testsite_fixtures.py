"""The ``testsite`` fixture: the synthetic test website (webarchive.testsite) on 127.0.0.1.

Imported by tests/conftest.py. One server for the whole session, on a free port;
``testsite.url("/ok")`` gives a URL on it, ``testsite.url("/site/")`` its generated
website (100 pages, 127.0.0.1 only; tests that need other sizes or the CDN and
external hosts make their own ``TestSite(pages=…, hosts=3)``).
``self_signed_certificate`` makes what ``TestSite(tls=…)`` needs to serve HTTPS.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.components import require_component
from webarchive.testsite import TestSite


@pytest.fixture(scope="session")
def testsite():
    with TestSite(port=0, seed=0) as site:
        yield site


def self_signed_certificate(folder: Path, host: str) -> tuple[str, str]:
    """A certificate and key for ``host`` in ``folder``, made by the openssl command (skip without it)."""
    openssl = shutil.which("openssl")
    require_component("openssl", bool(openssl), "the openssl command makes the test certificates")
    cert, key = folder / "cert.pem", folder / "key.pem"
    san = f"IP:{host}" if host.replace(".", "").isdigit() else f"DNS:{host}"
    command = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    command += ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", f"/CN={host}"]
    command += ["-addext", f"subjectAltName={san}"]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
        timeout=30,
    )
    return str(cert), str(key)
