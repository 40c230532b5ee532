"""Optimistic locking of archival objects: a change is saved only over the version its writer read.

Each archival object has a version that every service save raises by one (the
model's ``VERSION_FIELD``, ``version`` unless it says otherwise: a template's
``version`` numbers its crawler settings, its edits are numbered by
``revision``). A writer — an edit page, an API client — reads the object with
its version and sends that version back with the change; the service calls
:func:`version_take`, which refuses the save with :class:`ConcurrentEditError`
if someone saved the object in between, saying who changed what. The pages
show the error on the form; the API answers 409 (``webarchive.api.exceptions``).
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import F, Model
from django.utils.translation import gettext as _

from webarchive.history import history_entries

VERSION_MAX = 2**31 - 1  # a PositiveIntegerField, on every database


def version_field(model: type[Model]) -> str:
    """The name of the field that numbers a model's saves."""
    return getattr(model, "VERSION_FIELD", "version")


def current_version(obj: Model) -> int:
    return getattr(obj, version_field(type(obj)))


class ConcurrentEditError(ValidationError):
    """The object was saved since the version the writer read; ``changes`` says what, who and when.

    ``version`` is the version stored now; each change is a dict: ``name`` (the
    field), ``field`` (its label), ``old``, ``new`` (as people read them),
    ``user`` (or None) and ``date``.
    """

    def __init__(self, obj: Model, *, version: int, changes: list[dict]):
        self.version = version
        self.changes = changes
        what = obj._meta.verbose_name
        summary = "; ".join(
            _("%(field)s changed to “%(new)s” by %(user)s")
            % {**change, "user": change["user"] or _("someone")}
            for change in changes
        ) or _("it was saved in the meantime")
        super().__init__(
            _(
                "Someone else changed this %(what)s while you were editing it: %(summary)s. "
                "Your changes were not saved; reload the %(what)s and make them again."
            )
            % {"what": what, "summary": summary},
            code="concurrent_edit",
        )


def changes_since(obj: Model, version: int) -> list[dict]:
    """What was changed in ``obj`` by the saves after ``version``, oldest first (from its history)."""
    model = type(obj)
    numbering = {version_field(model), "version"}  # the save counters themselves are no news
    fields = [*model._meta.concrete_fields, *model._meta.many_to_many]
    names = {str(field.verbose_name): field.name for field in fields}  # the history names them by label
    newer = set(
        obj.history.filter(**{f"{version_field(model)}__gt": version}).values_list("history_id", flat=True)
    )
    changes = []
    for entry in reversed(history_entries(obj)):
        if entry["history_id"] not in newer:
            continue
        for change in entry["changes"]:
            name = names.get(str(change["field"]), str(change["field"]))
            if name not in numbering:
                changes.append({"name": name, **change, "user": entry["user"], "date": entry["date"]})
    return changes


def version_take(obj: Model, *, expected: int | None = None) -> None:
    """Give ``obj`` its next version, for the save that follows in the same transaction.

    With ``expected``, the version the writer read: raise ``ConcurrentEditError``
    if the object was saved since (or ``ValidationError`` for a version it never
    had). The row is updated at once, so that a second writer with the same
    version waits for this transaction and is then refused. Without
    ``expected`` (a transfer, activating a definition), the save goes over
    whatever is stored, and still raises the version.
    """
    model = type(obj)
    field = version_field(model)
    row = model._default_manager.filter(pk=obj.pk)
    if expected is None:
        setattr(obj, field, row.select_for_update().values_list(field, flat=True).get() + 1)
        return
    if getattr(obj, field) == expected and row.filter(**{field: expected}).update(**{field: F(field) + 1}):
        setattr(obj, field, expected + 1)
        return
    stored = row.values_list(field, flat=True).get()
    if expected > stored or expected < 1:
        raise ValidationError(
            {
                "version": _("This %(what)s never had version %(expected)d; it is at version %(stored)d.")
                % {"what": model._meta.verbose_name, "expected": expected, "stored": stored}
            }
        )
    raise ConcurrentEditError(obj, version=stored, changes=changes_since(obj, expected))


class VersionFormMixin:
    """An edit form that carries the version of the object it showed (hidden field ``seen``).

    The page passes ``form.seen`` to the service as ``expected_version``: the
    service, not the page, refuses to save over a newer version.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen = None
        if self.instance.pk is not None:
            self.fields["seen"] = forms.IntegerField(
                widget=forms.HiddenInput,
                required=False,
                min_value=1,
                max_value=VERSION_MAX,
                initial=current_version(self.instance),
            )

    def clean(self):
        data = super().clean()
        self.seen = data.pop("seen", None)
        if self.instance.pk is not None and self.seen is None:
            # Said on top: a hidden field's own error (none, or not a version) is not shown.
            raise ValidationError(
                _("The page did not say which version of this %(what)s it showed; reload it.")
                % {"what": self.instance._meta.verbose_name},
                code="version_missing",
            )
        return data
