"""Tests needing a component outside Python (slapd, chromium, dnsmasq, ffmpeg) skip without it, saying why.

CI sets WEBARCHIVE_REQUIRE_ALL_COMPONENTS=1: there a missing component fails
the test instead, so that a green CI run has really run everything.
"""

import os

import pytest

REQUIRE_ALL = os.environ.get("WEBARCHIVE_REQUIRE_ALL_COMPONENTS", "") not in ("", "0")


def require_component(name: str, available: bool, reason: str) -> None:
    """Skip (or, in CI, fail) the current test when a component is missing."""
    if available:
        return
    message = f"missing component {name}: {reason}"
    if REQUIRE_ALL:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
