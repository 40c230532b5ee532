"""Replay tickets: the application's signed, short-lived leave for one address to replay as one profile.

Plain Python (no Django, no pywb): the application makes tickets (storage.views.replay_entry) and the
replay gate, which runs in pywb's process (storage/replay_gate.py), checks them with the same key.
A ticket is ``profile.address.expiry.signature``, the signature an HMAC-SHA256 of the rest under
a key derived from the application's SECRET_KEY and written into the gate's configuration (0600).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time

PROFILE = re.compile(r"^[a-z][a-z-]{0,30}$")
COOKIE = "webarchive_replay"  # the replay gate's cookie that holds a ticket


def ticket_key(secret_key: str) -> str:
    """The key tickets are signed with, derived from the application's secret (never the secret)."""
    digest = hmac.new(secret_key.encode(), b"webarchive replay ticket", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _address_token(address: str) -> str:
    return base64.urlsafe_b64encode(address.encode()).decode().rstrip("=")


def _sign(key: str, payload: str) -> str:
    mac = hmac.new(key.encode(), payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def ticket_make(*, key: str, profile: str, address: str, seconds: int, now: float | None = None) -> str:
    """A ticket for ``address`` to replay as ``profile`` for ``seconds``."""
    if not PROFILE.match(profile):
        raise ValueError(f"not a profile: {profile!r}")
    expiry = int((time.time() if now is None else now) + seconds)
    payload = f"{profile}.{_address_token(address)}.{expiry}"
    return f"{payload}.{_sign(key, payload)}"


def ticket_profile(ticket: str, *, key: str, address: str, now: float | None = None) -> str | None:
    """The profile a ticket gives ``address`` now; None if it is forged, expired or for another address."""
    parts = (ticket or "").split(".")
    if len(parts) != 4:
        return None
    profile, address_token, expiry, signature = parts
    if not hmac.compare_digest(_sign(key, f"{profile}.{address_token}.{expiry}"), signature):
        return None
    if not expiry.isdigit() or int(expiry) < (time.time() if now is None else now):
        return None
    if not hmac.compare_digest(address_token, _address_token(address)):
        return None
    return profile if PROFILE.match(profile) else None


def miss_signature(key: str, body: bytes) -> str:
    """The signature of a replay gate's report of a missed URL (its body), under the ticket key."""
    mac = hmac.new(key.encode(), b"replay miss\n" + body, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")
