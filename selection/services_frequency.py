"""Frequencies that follow measured change rates: suggestions accepted, and time-boxed boosts.

The suggestions themselves are measured by storage (storage.services.change_rates) and handed in;
selection only checks and records the change, in each record's history like any other edit.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from selection.choices import Frequency
from selection.models import Record
from selection.services import _check_settings_compatible, _save_record
from webarchive.permissions import VALIDATE, can


def _require_curator(user) -> None:
    if not can(user, VALIDATE, Record):
        raise PermissionDenied(_("Only curators may change frequencies from suggestions or boost them."))


def _set_frequency(record: Record, user, frequency: str, reason: str, expected_version: int | None) -> None:
    _check_settings_compatible(record.budget, frequency, record.depth)
    record.frequency = frequency
    if user is not None:
        record.modified_by = user
    record._change_reason = reason
    _save_record(record, user, record.version if expected_version is None else expected_version)


@transaction.atomic
def record_accept_suggestion(
    *, record: Record, user, suggested: str, expected_version: int | None = None, automatic: bool = False
) -> Record:
    """Set a record's frequency to the one suggested by its measured change rate."""
    if not automatic:
        _require_curator(user)
    if suggested not in Frequency.values:
        raise ValidationError({"frequency": _("There is no suggested frequency to accept.")})
    if record.boost_until is not None:
        raise ValidationError({"frequency": _("This record is boosted: cancel the boost first.")})
    if record.frequency == suggested:
        raise ValidationError({"frequency": _("The record already has the suggested frequency.")})
    reason = (
        _("Suggested frequency followed automatically.") if automatic else _("Suggested frequency accepted.")
    )
    _set_frequency(record, user, suggested, reason, expected_version)
    return record


@transaction.atomic
def records_accept_suggestions(
    *, suggestions: Mapping[int, tuple[str, int | None]], user, automatic: bool = False
) -> int:
    """Accept the suggested frequency of several records: {record id: (suggestion, version read)}.

    All or none: a record changed since it was listed (or refused) refuses the whole set.
    """
    if not automatic:
        _require_curator(user)
    if not suggestions:
        raise ValidationError(_("Choose at least one record."))
    records = Record.objects.select_related("collection").filter(pk__in=list(suggestions)).order_by("pk")
    errors = []
    count = 0
    for record in records:
        suggested, version = suggestions[record.pk]
        try:
            with transaction.atomic():
                record_accept_suggestion(
                    record=record,
                    user=user,
                    suggested=suggested,
                    expected_version=version,
                    automatic=automatic,
                )
                count += 1
        except ValidationError as error:
            errors.append(f"{record.url}: {' '.join(error.messages)}")
    if errors:
        raise ValidationError(errors)
    return count


def records_follow_suggestions(*, suggestions: Iterable[tuple[int, str]], user=None) -> int:
    """The periodic follow-up of collections that follow suggestions: each record whose suggestion
    differs and that is not boosted gets it, in its own transaction (one refusal does not stop the
    others)."""
    count = 0
    for record_id, suggested in suggestions:
        record = Record.objects.select_related("collection").filter(pk=record_id).first()
        if record is None or record.frequency == suggested or record.boost_until is not None:
            continue
        try:
            record_accept_suggestion(record=record, user=user, suggested=suggested, automatic=True)
            count += 1
        except ValidationError:
            continue  # a forbidden combination: the curators see the suggestion on the page
    return count


@transaction.atomic
def record_boost(
    *,
    record: Record,
    user,
    frequency: str,
    until: datetime.date,
    expected_version: int | None = None,
    today: datetime.date | None = None,
) -> Record:
    """Harvest a record at ``frequency`` until ``until``; then its frequency goes back to the present one."""
    _require_curator(user)
    today = today or timezone.localdate()
    errors = {}
    if frequency not in Frequency.values or frequency == Frequency.ONCE:
        errors["frequency"] = _("Choose the frequency of the boost.")
    elif frequency == record.frequency:
        errors["frequency"] = _("The record is already harvested at this frequency.")
    if until is None:
        errors["until"] = _("Say until when the boost lasts.")
    elif until <= today:
        errors["until"] = _("The end of the boost must be after today.")
    if record.boost_until is not None:
        errors["frequency"] = _("This record is already boosted: cancel that boost first.")
    if errors:
        raise ValidationError(errors)
    previous = record.frequency
    record.boost_until = until
    record.boost_return_frequency = previous
    _set_frequency(
        record,
        user,
        frequency,
        _("Boosted until %(date)s, then back to %(frequency)s.")
        % {"date": until.isoformat(), "frequency": Frequency(previous).label},
        expected_version,
    )
    return record


def _end_boost(record: Record, user, reason: str, expected_version: int | None) -> Record:
    if record.boost_until is None:
        raise ValidationError({"frequency": _("This record is not boosted.")})
    back = record.boost_return_frequency
    record.boost_until = None
    record.boost_return_frequency = ""
    record.frequency = back
    if user is not None:
        record.modified_by = user
    record._change_reason = reason
    # The frequency goes back to one the record had: no compatibility rule is applied again.
    _save_record(record, user, record.version if expected_version is None else expected_version)
    return record


@transaction.atomic
def record_boost_cancel(*, record: Record, user, expected_version: int | None = None) -> Record:
    """End a boost now: the record's frequency goes back to what it was before."""
    _require_curator(user)
    return _end_boost(record, user, _("Boost cancelled."), expected_version)


def boosts_revert(*, today: datetime.date | None = None) -> int:
    """Every boost whose end has come: the record's frequency goes back (the periodic task)."""
    today = today or timezone.localdate()
    count = 0
    for record_id in Record.objects.filter(boost_until__lte=today).values_list("pk", flat=True):
        with transaction.atomic():
            record = Record.objects.select_for_update().filter(pk=record_id, boost_until__lte=today).first()
            if record is None:
                continue
            _end_boost(record, None, _("The boost ended: frequency back automatically."), None)
            count += 1
    return count
