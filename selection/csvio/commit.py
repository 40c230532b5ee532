"""CSV import, second step: create and update the records of a preview, all of them or the valid ones."""

from __future__ import annotations

import dataclasses

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import translation
from django.utils.translation import gettext as _

from selection import services
from selection.csvio.preview import ImportPreview, ImportResult, ImportRow
from selection.models import Collection, Record, Theme
from selection.urlcheck import UrlCheckResult, check_url

# Where a ValidationError of record_propose is shown: its field name -> the column.
_ERROR_COLUMN = {"is_active": "active", "check_override_reason": "url_check", "__all__": "row"}


# Import: writing -------------------------------------------------------------------------------


class _RollBack(Exception):
    pass


def _errors_of(error: ValidationError | PermissionDenied) -> dict[str, list[str]]:
    if isinstance(error, PermissionDenied):
        return {"row": [str(error)]}
    if hasattr(error, "error_dict"):
        return {_ERROR_COLUMN.get(name, name): messages for name, messages in error.message_dict.items()}
    return {"row": error.messages}


def import_commit(
    *, user, collection: Collection, preview: ImportPreview, all_or_nothing: bool
) -> ImportResult:
    """Create and update the records of a preview, in one transaction.

    ``all_or_nothing``: every row is written, or none when one of them has an
    error (at the preview, or now: someone may have added the same URL since, or
    saved a record the file updates — its version is the one the preview read).
    Otherwise the valid rows are written and the others reported in ``skipped``.
    The URLs are not checked again: each record gets its row's check result.
    Rights are checked per row, in the row's collection.
    """
    services.require_record_writable(user, collection)
    result = ImportResult(all_or_nothing=all_or_nothing)
    if preview.collection_id != collection.pk:
        result.errors.append(_("This preview was made for another collection; upload the file again."))
        return result
    if preview.errors:
        result.errors.extend(preview.errors)
        return result
    result.skipped = preview.invalid_rows
    if all_or_nothing and result.skipped:
        result.errors.append(_nothing_written(len(result.skipped)))
        return result

    rows = preview.valid_rows
    collections = Collection.objects.in_bulk({row.cleaned.get("collection", collection.pk) for row in rows})
    themes = Theme.objects.in_bulk({row.cleaned["theme"] for row in rows if row.cleaned.get("theme")})
    users = get_user_model().objects.in_bulk(
        {row.cleaned["responsible"] for row in rows if row.cleaned.get("responsible")}
    )
    records = Record.objects.in_bulk({row.cleaned["record"] for row in rows if row.action == "update"})
    failed: list[ImportRow] = []
    try:
        with transaction.atomic():
            for row in rows:
                try:
                    if row.action == "unchanged":
                        result.unchanged += 1
                    elif row.action == "update":
                        result.updated.append(
                            _update(user, records.get(row.cleaned["record"]), row, themes, users)
                        )
                    else:
                        target = collections.get(row.cleaned.get("collection", collection.pk))
                        if target is None:
                            raise ValidationError({"collection": _("This collection no longer exists.")})
                        result.created.append(_create(user, target, row, themes, users))
                except (ValidationError, PermissionDenied) as error:
                    failed.append(dataclasses.replace(row, errors=_errors_of(error)))
            if all_or_nothing and failed:
                raise _RollBack
    except _RollBack:
        result.created, result.updated, result.unchanged = [], [], 0
        result.errors.append(_nothing_written(len(failed)))
    result.skipped = sorted([*result.skipped, *failed], key=lambda row: row.line)
    return result


def _nothing_written(count: int) -> str:
    return translation.ngettext(
        "Nothing was imported: %(count)d row has an error.",
        "Nothing was imported: %(count)d rows have errors.",
        count,
    ) % {"count": count}


def _update(user, record: Record | None, row: ImportRow, themes: dict, users: dict) -> Record:
    """Write a row's changes to the record it names, over the version the preview read."""
    if record is None:
        raise ValidationError({"id": _("This record no longer exists.")})
    fields = dict(row.cleaned["update"])
    if "theme" in fields:
        fields["theme"] = themes.get(fields["theme"])
        if fields["theme"] is None:
            raise ValidationError({"theme": _("This theme no longer exists.")})
    if "responsible" in fields:
        fields["responsible"] = users.get(fields["responsible"])
        if fields["responsible"] is None:
            raise ValidationError({"responsible": _("This user no longer exists.")})
    stored = row.check

    def checker(url: str) -> UrlCheckResult:
        return stored if stored is not None else check_url(url)

    return services.record_update(
        record=record, user=user, expected_version=row.cleaned["version"], checker=checker, **fields
    )


def _create(user, collection: Collection, row: ImportRow, themes: dict, users: dict) -> Record:
    cleaned = row.cleaned
    theme = themes.get(cleaned.get("theme"))
    if theme is None:
        raise ValidationError({"theme": _("This theme no longer exists.")})
    responsible = None
    if cleaned.get("responsible"):
        responsible = users.get(cleaned["responsible"])
        if responsible is None:
            raise ValidationError({"responsible": _("This user no longer exists.")})
    stored = row.check

    def checker(url: str) -> UrlCheckResult:
        return stored if stored is not None else check_url(url)

    return services.record_propose(
        user=user,
        collection=collection,
        url=cleaned["url"],
        theme=theme,
        budget=cleaned["budget"],
        frequency=cleaned["frequency"],
        depth=cleaned["depth"],
        needs_browser=cleaned.get("needs_browser", False),
        responsible=responsible,
        keywords=cleaned.get("keywords", []),
        supplementary_urls=cleaned.get("supplementary_urls", ""),
        content_notes=cleaned.get("content_notes", ""),
        technical_notes=cleaned.get("technical_notes", ""),
        is_active=cleaned.get("is_active", True),
        checker=checker,
    )
