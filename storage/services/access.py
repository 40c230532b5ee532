"""Writes of the access rules and exclusions: curators' decisions of who may read what, with history."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.services import versioned_save
from storage.access import ExclusionTargetError, exclusion_keys
from storage.models_access import AccessRule, Exclusion
from webarchive.history import save_as
from webarchive.permissions import ADD, CHANGE, require
from webarchive.versioning import version_take

RULE_FIELDS = {"collection", "harvest_definition", "level", "embargo_until", "note"}
EXCLUSION_FIELDS = {"kind", "target", "reason", "requested_by", "requested_on", "ends_on"}


@transaction.atomic
def access_rule_save(
    *, user=None, rule: AccessRule | None = None, expected_version: int | None = None, **fields
) -> AccessRule:
    """Create or change the access rule of a collection or a harvest definition (one rule each)."""
    rule = rule or AccessRule()
    if rule.pk is not None and ({"collection", "harvest_definition"} & fields.keys()):
        target = (
            fields.get("collection", rule.collection),
            fields.get("harvest_definition", rule.harvest_definition),
        )
        if target != (rule.collection, rule.harvest_definition):
            raise ValidationError(
                _("A rule stays with its collection or harvest definition: make a new rule.")
            )
    return versioned_save(rule, user, fields, expected_version=expected_version, allowed=RULE_FIELDS)


def _exclusion_fields(fields: dict, exclusion: Exclusion) -> dict:
    """The fields with the SURT keys of the target; a target that cannot be excluded is a field error."""
    kind = fields.get("kind", exclusion.kind)
    target = fields.get("target", exclusion.target)
    try:
        keys = exclusion_keys(kind, target or "")
    except ExclusionTargetError as error:
        raise ValidationError({"target": str(error)}) from None
    ends_on = fields.get("ends_on", exclusion.ends_on)
    requested_on = fields.get("requested_on", exclusion.requested_on)
    if ends_on and requested_on and ends_on <= requested_on:
        raise ValidationError({"ends_on": _("The end date must come after the date of the request.")})
    return {**fields, "target": target.strip(), **keys}


@transaction.atomic
def exclusion_create(*, user=None, **fields) -> Exclusion:
    """Take URLs, a URL prefix or a domain out of access (a take-down): stored, indexed, unreadable."""
    require(user, ADD, Exclusion)
    if set(fields) - EXCLUSION_FIELDS:
        raise ValidationError(
            _("These fields cannot be set here: %(f)s.")
            % {"f": ", ".join(sorted(set(fields) - EXCLUSION_FIELDS))}
        )
    exclusion = Exclusion(created_by=user if user is not None and user.is_authenticated else None)
    for name, value in _exclusion_fields(fields, exclusion).items():
        setattr(exclusion, name, value)
    exclusion.full_clean()
    save_as(exclusion, user)
    return exclusion


@transaction.atomic
def exclusion_change(
    *, user=None, exclusion: Exclusion, expected_version: int | None = None, **fields
) -> Exclusion:
    """Change an exclusion in force (its URLs, reason, requester, end date) over the version read."""
    require(user, CHANGE, Exclusion)
    if set(fields) - EXCLUSION_FIELDS:
        raise ValidationError(
            _("These fields cannot be set here: %(f)s.")
            % {"f": ", ".join(sorted(set(fields) - EXCLUSION_FIELDS))}
        )
    if exclusion.lifted_at is not None:
        raise ValidationError(_("This exclusion was lifted; enter a new one."))
    values = _exclusion_fields(fields, exclusion)
    version_take(exclusion, expected=expected_version)
    for name, value in values.items():
        setattr(exclusion, name, value)
    exclusion.full_clean()
    save_as(exclusion, user)
    return exclusion


@transaction.atomic
def exclusion_lift(*, user=None, exclusion: Exclusion, expected_version: int | None = None) -> Exclusion:
    """Lift an exclusion: its URLs are readable again under their access rules; it stays on record."""
    require(user, CHANGE, Exclusion)
    if exclusion.lifted_at is not None:
        raise ValidationError(_("This exclusion was already lifted."))
    version_take(exclusion, expected=expected_version)
    exclusion.lifted_at = timezone.now()
    exclusion.lifted_by = user if user is not None and user.is_authenticated else None
    save_as(exclusion, user)
    return exclusion
