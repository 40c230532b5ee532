"""Writes on the planning side, one module per seam: domains, planning objects, transfer, jobs, launcher."""

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from webarchive.history import save_as
from webarchive.permissions import ADD, CHANGE, require
from webarchive.versioning import version_take


def validated_save(obj, user, fields: dict, *, allowed: set[str] | None = None):
    """Check the user may add or change ``obj``, set ``fields``, validate and save: the one write path
    of the planning objects that have no rule beyond their model's."""
    require(user, CHANGE if obj.pk else ADD, type(obj))
    if allowed is not None and set(fields) - allowed:
        raise ValidationError(
            _("These fields cannot be set here: %(f)s.") % {"f": ", ".join(sorted(set(fields) - allowed))}
        )
    for name, value in fields.items():
        setattr(obj, name, value)
    obj.full_clean()
    save_as(obj, user)
    return obj


def versioned_save(obj, user, fields: dict, *, expected_version: int | None = None, allowed=None):
    """``validated_save``, and for an object that exists, over the version its writer read
    (``expected_version``; without it, over whatever is stored): see webarchive.versioning."""
    if obj.pk is not None:
        require(user, CHANGE, type(obj))  # before saying anything of the object's changes
        version_take(obj, expected=expected_version)
    return validated_save(obj, user, fields, allowed=allowed)
