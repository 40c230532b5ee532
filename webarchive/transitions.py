"""The legal status changes of a model: one table per model, checked the same way everywhere.

A model with a life (a record's validation, a job, a site crawl, a run, a storage node, a replica)
declares its table as a :class:`Transitions` next to its choices (after the model when the choices
are a class nested in it); its services move it only with :meth:`Transitions.apply` (or check with
:meth:`Transitions.check` first), so a change the table does not allow is refused with the same
message and code (``illegal_transition``) from a page, the API, a command or a task. Pages ask
:meth:`Transitions.may` to offer only the actions that are legal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext as _


class Transitions(Mapping[str, frozenset[str]]):
    """``status -> the statuses it may move to`` for one choices class; nothing else is legal."""

    def __init__(
        self,
        choices: type[models.TextChoices],
        table: Mapping[str, Iterable[str]],
        *,
        noun,
        field: str = "status",
        error_field: str | None = None,
    ):
        self.choices = choices
        self.noun = noun  # "job", "deduplication run"… (lazy: translated when a message is made)
        self.field = field  # the model's attribute
        self.error_field = error_field  # where a form shows the refusal (None: at the top)
        self.table = {
            choices(state): frozenset(choices(target) for target in targets)
            for state, targets in table.items()
        }
        missing = set(choices) - set(self.table)
        if missing:
            names = sorted(state.value for state in missing)
            raise ValueError(f"{choices.__name__}: no transitions given from {names}")

    # Read as the mapping it is: ``table[status]`` is what ``status`` may move to; a value that is
    # no status is a KeyError, as in any mapping (so ``in`` and ``get`` answer for it).
    def __getitem__(self, current: str) -> frozenset[str]:
        try:
            return self.allowed(current)
        except ValueError:
            raise KeyError(current) from None

    def __iter__(self):
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def allowed(self, current: str) -> frozenset[str]:
        """The statuses ``current`` may move to."""
        return self.table[self.choices(current)]

    def may(self, current: str, new: str) -> bool:
        return new in self.allowed(current)

    def check(self, current: str, new: str) -> None:
        """Raise ValidationError (code ``illegal_transition``) unless the move is legal."""
        if self.may(current, new):
            return
        error = ValidationError(
            _("A %(noun)s that is %(current)s cannot become %(new)s.")
            % {
                "noun": self.noun,
                "current": self.choices(current).label.lower(),
                "new": self.choices(new).label.lower(),
            },
            code="illegal_transition",
        )
        raise ValidationError({self.error_field: error}) if self.error_field else error

    def apply(self, obj: models.Model, new: str) -> None:
        """Check the move from the object's status and set the new one (saving is the caller's)."""
        self.check(getattr(obj, self.field), new)
        setattr(obj, self.field, new)

    def ended(self) -> frozenset[str]:
        """The statuses nothing follows."""
        return frozenset(state for state, targets in self.table.items() if not targets)
