"""The audit trail of an object (django-simple-history) as people read it."""

from django.db import models
from django.utils.translation import gettext_lazy as _

KIND_LABELS = {"+": _("created"), "~": _("changed"), "-": _("deleted")}


def history_entries(obj: models.Model, *, limit: int = 100) -> list[dict]:
    """Who changed what and when, newest first, with each changed field's old and new value."""
    records = list(
        obj.history.select_related("history_user").order_by("-history_date", "-history_id")[: limit + 1]
    )
    entries = []
    for index, record in enumerate(records[:limit]):
        previous = records[index + 1] if index + 1 < len(records) else record.prev_record
        changes = []
        if previous is not None and record.history_type == "~":
            for change in record.diff_against(previous).changes:
                field = obj._meta.get_field(change.field)
                changes.append(
                    {
                        "field": field.verbose_name,
                        "old": _readable(field, change.old),
                        "new": _readable(field, change.new),
                    }
                )
        entries.append(
            {
                "history_id": record.history_id,
                "date": record.history_date,
                "user": record.history_user,
                "kind": KIND_LABELS.get(record.history_type, record.history_type),
                "reason": record.history_change_reason or "",
                "changes": changes,
            }
        )
    return entries


def _readable(field, value):
    if field.many_to_many:
        # simple_history gives the through rows as dicts: name the related objects.
        key = field.m2m_reverse_field_name()
        ids = [row[key] for row in value or []]
        names = sorted(str(item) for item in field.related_model._default_manager.filter(pk__in=ids))
        return ", ".join(names) or "—"
    if value in (None, ""):
        return "—"
    if field.many_to_one or field.one_to_one:
        # The history holds the id: name the object (or say it is gone).
        related = field.related_model._default_manager.filter(pk=value).first()
        return str(related) if related is not None else f"#{value}"
    if field.choices:
        return dict(field.flatchoices).get(value, value)
    return value


def history_user(obj: models.Model, user):
    """Name ``user`` in the history rows of the writes of ``obj`` that follow (a save, a delete, a
    change of its many-to-many fields), even outside a web request; return ``obj``."""
    obj._history_user = user
    return obj


def save_as(obj: models.Model, user, **options) -> None:
    """Save (with ``save()``'s ``options``, such as ``update_fields``), recording ``user`` in the
    object's history even outside a web request."""
    history_user(obj, user).save(**options)
