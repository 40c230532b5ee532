"""Who may read which capture, from where: the one place access decisions are made.

A *viewer* is who asks (anonymous, a reader, staff) and whether they ask from a reading room. A
capture is covered by the access rule of its job's harvest definition and by those of the collections
mapped to that definition (storage.models_access); the viewer may read it when one of them lets them
in today (the most open rule decides), unless an exclusion in force covers its URL. Staff read
everything: they curate the archive and check its quality. A capture no rule covers (an imported
file, a definition without a rule) is closed, so staff only.

Every reading path goes through here: the Access pages and search (``restrict()`` on captures), the
CDX API, the replay entry and the replay gate's tickets (one *profile* per kind of viewer, one pywb
collection each, whose index is the CDX API narrowed to that profile).
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass
from functools import lru_cache

import surt
from django.conf import settings
from django.core.checks import Error, register
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import CollectionMapping
from storage.cdx import CdxQuery, captures_lookup, key_range
from storage.models import Capture
from storage.models_access import LEVEL_ORDER, AccessLevel, AccessRule, Exclusion, ExclusionKind
from webarchive.permissions import Role, is_archive_staff, user_roles

ANONYMOUS, READER, STAFF = "anonymous", "reader", "staff"


@dataclass(frozen=True)
class Viewer:
    """Who reads (``anonymous``, ``reader``, ``staff``) and whether from a reading room."""

    kind: str
    in_reading_room: bool = False

    @property
    def profile(self) -> str:
        """The name of this kind of viewer: a pywb collection suffix and the CDX API's ``access``."""
        if self.kind == READER and self.in_reading_room:
            return "reader-room"
        return {ANONYMOUS: "public", READER: "reader", STAFF: "staff"}[self.kind]

    @property
    def is_staff(self) -> bool:
        return self.kind == STAFF

    def allowed_by(self, level: str) -> bool:
        """Whether a rule giving ``level`` lets this viewer in."""
        if self.kind == STAFF:
            return True
        if level == AccessLevel.OPEN:
            return self.kind == READER or settings.ACCESS_ANONYMOUS
        if level == AccessLevel.READERS:
            return self.kind == READER
        if level == AccessLevel.READING_ROOM:
            return self.kind == READER and self.in_reading_room
        return False

    def describe(self) -> str:
        where = _("in a reading room") if self.in_reading_room else _("outside the reading rooms")
        who = {ANONYMOUS: _("not logged in"), READER: _("reader"), STAFF: _("staff")}[self.kind]
        return f"{who}, {where}"


PROFILES = {
    viewer.profile: viewer
    for viewer in (
        Viewer(ANONYMOUS),
        Viewer(READER),
        Viewer(READER, in_reading_room=True),
        Viewer(STAFF),
    )
}


# Where a request comes from --------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _networks(networks: tuple[str, ...]) -> tuple:
    return tuple(
        ipaddress.ip_network(network.strip(), strict=False) for network in networks if network.strip()
    )


def reading_room_networks() -> tuple:
    """The reading rooms' networks (``ACCESS_READING_ROOMS``)."""
    return _networks(tuple(settings.ACCESS_READING_ROOMS))


def in_reading_room(address: str | None) -> bool:
    """Whether the address is in one of the reading rooms' networks."""
    try:
        ip = ipaddress.ip_address((address or "").strip())
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in network for network in reading_room_networks())


def client_address(meta) -> str:
    """The client's address: ``REMOTE_ADDR``, or behind a reverse proxy the last address of the
    header it adds (``ACCESS_CLIENT_ADDRESS_HEADER``, e.g. ``X-Forwarded-For``); the addresses before
    it were written by the client and prove nothing."""
    header = settings.ACCESS_CLIENT_ADDRESS_HEADER
    if header:
        value = meta.get("HTTP_" + header.upper().replace("-", "_"), "")
        forwarded = [part.strip() for part in value.split(",") if part.strip()]
        if forwarded:
            return forwarded[-1]
    return meta.get("REMOTE_ADDR", "")


def viewer_of(user, address: str | None = None) -> Viewer:
    """The viewer a user is, from ``address`` (or the address the request left on the user)."""
    if address is None:
        address = getattr(user, "access_address", "")
    room = in_reading_room(address)
    if user is not None and user.is_authenticated and user.is_active:
        if is_archive_staff(user):
            return Viewer(STAFF, room)
        if Role.READER in user_roles(user) or user.has_perm("storage.view_capture"):
            return Viewer(READER, room)
    return Viewer(ANONYMOUS, room)


def viewer_of_request(request) -> Viewer:
    return viewer_of(request.user, client_address(request.META))


class AccessAddressMiddleware:
    """Leaves the client's address on ``request.user`` (``access_address``), where ``restrict()`` on
    captures reads it: the reading-room rule depends on where a request comes from."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.user.access_address = client_address(request.META)
        return self.get_response(request)


# Which captures a viewer may read -------------------------------------------------------------------


def definitions_open_to(viewer: Viewer, day=None) -> set[int]:
    """The harvest definitions whose captures the viewer may read on ``day`` (today): those a rule
    names for the viewer (access_labels, which also says which rule)."""
    return set(access_labels(viewer, day))


def _covering(urlkey) -> Q:
    """The exclusions whose URLs hold ``urlkey`` (a key, or ``OuterRef("urlkey")`` in a subquery)."""
    return (
        Q(kind=ExclusionKind.URL, key=urlkey)
        | Q(~Q(kind=ExclusionKind.URL), key__lte=urlkey, key_end__gt=urlkey)
        | Q(kind=ExclusionKind.DOMAIN, port_key__lte=urlkey, port_key_end__gt=urlkey)
    )


def excluded(day=None) -> Exists:
    """Whether an exclusion in force covers the capture (for ``Capture`` querysets)."""
    return Exists(Exclusion.objects.active(day).filter(_covering(OuterRef("urlkey"))))


def visible_captures(queryset, viewer: Viewer, day=None):
    """The captures of ``queryset`` the viewer may read (staff: all of them)."""
    if viewer.is_staff:
        return queryset
    definitions = definitions_open_to(viewer, day)
    if not definitions:
        return queryset.none()
    return queryset.filter(job__harvest_definition_id__in=definitions).exclude(excluded(day))


# One capture: the decision and the rule behind it --------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """Whether a viewer may read a capture, the rule that decides (None: no rule, closed) and the
    exclusion that hides it, if any."""

    allowed: bool
    rule: AccessRule | None
    exclusion: Exclusion | None = None

    def describe(self) -> str:
        if self.exclusion is not None:
            return _("Excluded from access (%(reason)s)") % {"reason": self.exclusion.get_kind_display()}
        if self.rule is None:
            return _("No access rule: staff only")
        return self.rule.describe()

    @property
    def source(self) -> str:
        """What the deciding rule is for: "collection X", "harvest definition Y"."""
        if self.rule is None:
            return ""
        if self.rule.collection_id:
            return _("collection “%(name)s”") % {"name": self.rule.collection}
        return _("harvest definition “%(name)s”") % {"name": self.rule.harvest_definition}


def capture_rules(capture: Capture) -> list[AccessRule]:
    """The rules that cover a capture: its definition's and its collections', the most open first."""
    definition_id = capture.job.harvest_definition_id if capture.job_id else None
    if definition_id is None:
        return []
    collections = CollectionMapping.objects.filter(harvest_definition_id=definition_id).values(
        "collection_id"
    )
    rules = list(
        AccessRule.objects.filter(Q(harvest_definition_id=definition_id) | Q(collection_id__in=collections))
        .select_related("collection", "harvest_definition")
        .order_by("pk")
    )
    day = timezone.localdate()
    return sorted(rules, key=lambda rule: LEVEL_ORDER.index(rule.level_on(day)))


def exclusion_of(urlkey: str, day=None) -> Exclusion | None:
    """The exclusion in force that covers a capture key, if any (the oldest)."""
    return Exclusion.objects.active(day).filter(_covering(urlkey)).order_by("created_at", "pk").first()


def capture_decision(capture: Capture, viewer: Viewer) -> Decision:
    """Whether the viewer may read the capture, and why."""
    rules = capture_rules(capture)
    day = timezone.localdate()
    deciding = next((rule for rule in rules if viewer.allowed_by(rule.level_on(day))), None)
    exclusion = exclusion_of(capture.urlkey, day)
    if viewer.is_staff:
        return Decision(True, deciding or (rules[0] if rules else None), exclusion)
    if exclusion is not None:
        return Decision(False, rules[0] if rules else None, exclusion)
    if deciding is not None:
        return Decision(True, deciding)
    return Decision(False, rules[0] if rules else None)


def access_labels(viewer: Viewer, day=None) -> dict[int, str]:
    """Harvest definition id → the rule that lets the viewer read its captures (the most open), as
    people read it: what the replay banner shows."""
    day = day or timezone.localdate()
    labels: dict[int, tuple[int, str]] = {}
    mapped = {}
    for mapping in CollectionMapping.objects.values("collection_id", "harvest_definition_id"):
        mapped.setdefault(mapping["collection_id"], []).append(mapping["harvest_definition_id"])
    for rule in AccessRule.objects.all():
        level = rule.level_on(day)
        if not viewer.allowed_by(level):
            continue
        rank = LEVEL_ORDER.index(level)
        targets = (
            [rule.harvest_definition_id] if rule.harvest_definition_id else mapped.get(rule.collection_id, [])
        )
        for definition_id in targets:
            if definition_id not in labels or rank < labels[definition_id][0]:
                labels[definition_id] = (rank, rule.describe())
    return {definition_id: label for definition_id, (_rank, label) in labels.items()}


def replay_cdx_lines(query: CdxQuery, viewer: Viewer):
    """The CDX lines the replay process gets for one kind of viewer: the captures it may read, each with
    the rule that lets it read them (``"access_rule": "Open"``, which the replay banner shows; not
    ``access``, which pywb reads as its own access control). Staff also get excluded captures, said so."""
    labels = access_labels(viewer)
    closed = _("No access rule: staff only")
    excluded_label = _("Excluded from access: staff only")
    captures = visible_captures(Capture.objects.all(), viewer).annotate(
        definition_id=F("job__harvest_definition_id")
    )
    if viewer.is_staff:
        captures = captures.annotate(is_excluded=excluded())
    for capture in captures_lookup(query, captures):
        label = (
            excluded_label
            if getattr(capture, "is_excluded", False)
            else labels.get(capture.definition_id, closed)
        )
        line = query.line(capture)
        field = json.dumps({"access_rule": label})[1:-1]
        yield line[:-3] + "{" + field + "}\n" if line.endswith("{}\n") else line[:-2] + ", " + field + "}\n"


# Exclusion keys --------------------------------------------------------------------------------------


class ExclusionTargetError(ValueError):
    """What the curator typed is not a URL, prefix or domain that can be excluded."""


def exclusion_keys(kind: str, target: str) -> dict[str, str]:
    """The SURT key (and the ends of the key ranges) of what an exclusion takes out of access:
    ``key``, ``key_end``, ``port_key``, ``port_key_end``, as the Exclusion's fields."""
    text = target.strip()
    if not text or any(character.isspace() for character in text) or len(text) > 2000:
        raise ExclusionTargetError(_("Type one URL or domain, without spaces."))
    if kind == ExclusionKind.DOMAIN:
        host = text.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0].lower().strip(".")
        if host.startswith("*."):
            host = host[2:]
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            host = ""
        if not host or "." not in host or not all(label for label in host.split(".")):
            raise ExclusionTargetError(_("“%(text)s” is not a domain name.") % {"text": text})
        start = ",".join(reversed(host.removeprefix("www.").split(".")))
        # The host itself ("com,example)…") and every subdomain ("com,example,www)…"), as ")" and ","
        # come before "-" (not "com,example-shop)", nor "com,examples)"); and its ports ("com,example:8080)").
        return {
            "key": start + ")",
            "key_end": start + "-",
            "port_key": start + ":",
            "port_key_end": start + ";",
        }
    try:
        key = surt.surt(text)
    except Exception:  # the surt library raises many kinds of errors on what is not a URL
        raise ExclusionTargetError(_("“%(text)s” is not a URL.") % {"text": text}) from None
    if not key or ")" not in key:
        raise ExclusionTargetError(_("“%(text)s” is not a URL.") % {"text": text})
    if kind == ExclusionKind.URL:
        return {"key": key, "key_end": "", "port_key": "", "port_key_end": ""}
    # The keys the CDX API's matchType=prefix covers (a trailing "/" narrows: not "/privateer").
    start, end = key_range(text, "prefix")
    return {"key": start, "key_end": end, "port_key": "", "port_key_end": ""}


@register()
def check_reading_rooms(app_configs=None, **kwargs):
    """ACCESS_READING_ROOMS must be networks: a typo would silently close the reading rooms."""
    errors = []
    for network in settings.ACCESS_READING_ROOMS:
        try:
            ipaddress.ip_network(network.strip(), strict=False)
        except ValueError:
            errors.append(
                Error(
                    f"ACCESS_READING_ROOMS: {network!r} is not a network (e.g. 192.0.2.0/24, 2001:db8::/32).",
                    id="storage.E001",
                )
            )
    return errors
