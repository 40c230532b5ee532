"""CSV export of the record list, and CSV import of records into a collection (logic: selection.csvio).

The import is two steps: the upload gives a preview, kept in the session under
a random id (a few previews per session at most, each bounded in size and
valid for an hour); the commit writes it. Both steps are plain forms: they
work without JavaScript.
"""

import itertools
import json
import secrets
import time

from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, path
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View

from selection import csvio
from selection.choices import CheckStatus
from selection.filtersets import RecordFilterSet
from selection.forms import RecordImportForm
from selection.models import Collection, Record
from webarchive.permissions import ADD, VIEW, Area, restrict
from webarchive.views import AreaRequiredMixin

SESSION_KEY = "selection_csv_imports"
MAX_STORED_PREVIEWS = 3  # per session; the oldest goes first
MAX_STORED_BYTES = 8 * 1024 * 1024  # of one preview, as JSON (about 1 kB a row)
PREVIEW_MAX_AGE = 3600  # seconds: the URL checks of an older preview are stale
SETTINGS_COLUMNS = ("budget", "frequency", "depth")
SEPARATOR_NAMES = {",": ",", ";": ";", "\t": "tab"}
# The export's separators: comma (the default), semicolon (what Excel expects on French systems).
EXPORT_SEPARATORS = {"comma": ",", "semicolon": ";"}


# Export ----------------------------------------------------------------------------------------


class RecordExportView(AreaRequiredMixin, View):
    """The records of the list page, with the same filters, as a CSV file streamed as it is read."""

    area = Area.SELECTION
    model_permission = (VIEW, Record)

    def get(self, request):
        queryset = restrict(Record.objects.all(), request.user, VIEW)
        filterset = RecordFilterSet(request.GET, queryset=queryset, request=request)
        if not filterset.is_valid():
            # Exporting everything instead of what was asked for would be worse than nothing.
            problems = "; ".join(
                f"{filterset.form.fields[name].label if name in filterset.form.fields else name}: "
                f"{' '.join(errors)}"
                for name, errors in filterset.errors.items()
            )
            return HttpResponse(
                _("The filters are not valid, nothing was exported: %(problems)s") % {"problems": problems},
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        separator = request.GET.get("separator", "comma")
        if separator not in EXPORT_SEPARATORS:
            return HttpResponse(
                _("Unknown separator “%(separator)s”: choose comma or semicolon.") % {"separator": separator},
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        headers = request.GET.get("headers", "keys")
        if headers not in ("keys", "labels"):
            return HttpResponse(
                _("Unknown header style “%(headers)s”: choose keys or labels.") % {"headers": headers},
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        # The CSV streams after this view returns: its header is written in the page's language now.
        rows = csvio.records_csv_stream(
            filterset.qs, delimiter=EXPORT_SEPARATORS[separator], labels=headers == "labels"
        )
        first = next(rows)
        response = StreamingHttpResponse(
            itertools.chain([first], rows), content_type="text/csv; charset=utf-8"
        )
        filename = timezone.localtime().strftime("records-%Y%m%d-%H%M.csv")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        # How many records the file holds (the list page shows the same count beside the buttons): a
        # file with fewer rows was cut short.
        response["X-Record-Count"] = str(filterset.qs.count())
        return response


# Import ----------------------------------------------------------------------------------------


class ImportRightsMixin:
    """Importing is proposing records: for the roles that may add them."""

    model_permission = (ADD, Record)
    permission_denied_message = gettext_lazy("Your role does not allow you to import records.")


def _keep(request, preview: csvio.ImportPreview) -> str | None:
    """Keep a preview in the session until it is committed; None when it is too large to keep."""
    data = preview.as_dict(compact=True)
    if len(json.dumps(data, separators=(",", ":"))) > MAX_STORED_BYTES:  # as the session stores it
        return None
    now = time.time()
    stored = {
        token: entry
        for token, entry in request.session.get(SESSION_KEY, {}).items()
        if now - entry.get("created", 0) < PREVIEW_MAX_AGE
    }
    while len(stored) >= MAX_STORED_PREVIEWS:
        stored.pop(min(stored, key=lambda token: stored[token]["created"]))
    token = secrets.token_urlsafe(16)
    stored[token] = {"user": request.user.pk, "created": now, "preview": data}
    request.session[SESSION_KEY] = stored
    return token


def _find(request, token: str) -> csvio.ImportPreview | None:
    entry = request.session.get(SESSION_KEY, {}).get(token)
    if not entry or entry.get("user") != request.user.pk or time.time() - entry["created"] > PREVIEW_MAX_AGE:
        return None
    return csvio.ImportPreview.from_dict(entry["preview"])


def _forget(request, token: str) -> None:
    stored = request.session.get(SESSION_KEY, {})
    if stored.pop(token, None) is not None:
        request.session[SESSION_KEY] = stored


def _cell(value: str, errors: list[str], note: str = "") -> dict:
    return {"value": value, "errors": errors, "note": note}


def preview_table(preview: csvio.ImportPreview) -> dict:
    """The preview as a table: a row per line, each cell with its value and its errors."""
    first = ("id", "collection", "url", "theme")
    columns = [
        *(c for c in first if c in ("url", "theme") or c in preview.columns),
        *SETTINGS_COLUMNS,
        *(c for c in preview.columns if c not in first),
    ]
    columns = list(dict.fromkeys(columns))
    shown = {*columns, "url_check", "row"}
    rows = []
    for row in preview.rows:
        cells = []
        for key in columns:
            value = row.values.get(key, "")
            if key in SETTINGS_COLUMNS and not value.strip() and key in row.cleaned:
                cells.append(_cell(row.cleaned[key], row.errors.get(key, []), _("collection default")))
            else:
                cells.append(_cell(value, row.errors.get(key, [])))
        check = row.check
        cells.append(
            _cell(
                str(CheckStatus(check.status).label) if check and check.status in CheckStatus.values else "",
                row.errors.get("url_check", []),
                check.message if check and check.selectable else "",
            )
        )
        other = [message for key, messages in row.errors.items() if key not in shown for message in messages]
        errors = [*row.errors.get("row", []), *other]
        rows.append(
            {
                "line": row.line,
                "valid": row.valid,
                "errors": errors,
                "cells": cells,
                "action": row.action,
                "changes": [
                    {"field": csvio.column_label(column), "old": old, "new": new}
                    for column, old, new in row.changes
                ],
            }
        )
    headers = [csvio.column_label(key) for key in columns] + [csvio.column_label("url_check")]
    return {"headers": headers, "rows": rows}


class RecordImportView(ImportRightsMixin, AreaRequiredMixin, View):
    """Upload a CSV file into a collection, and see line by line what would be imported."""

    area = Area.SELECTION

    def get(self, request):
        form = RecordImportForm(user=request.user, initial={"collection": request.GET.get("collection")})
        return self.form_page(request, form)

    def form_page(self, request, form, status=200):
        context = {
            "form": form,
            "columns": csvio.IMPORT_COLUMNS,
            "required": csvio.REQUIRED_COLUMNS,
            "max_rows": csvio.MAX_ROWS,
        }
        return render(request, "selection/record_import.html", context, status=status)

    def post(self, request):
        form = RecordImportForm(request.POST, request.FILES, user=request.user)
        if not form.is_valid():
            return self.form_page(request, form)
        collection = form.cleaned_data["collection"]
        content, filename = form.cleaned_data["file"]
        # Each URL is checked by selection.csvio.preview.check_url, looked up at each call.
        preview = csvio.import_preview(
            user=request.user, collection=collection, content=content, filename=filename
        )
        if preview.errors:
            for error in preview.errors:
                form.add_error("file", error)
            return self.form_page(request, form)
        token = _keep(request, preview)
        context = {
            "collection": collection,
            "preview": preview,
            "token": token,
            "table": preview_table(preview),
            "valid_count": len(preview.valid_rows),
            "invalid_count": len(preview.invalid_rows),
            "counts": {
                action: sum(1 for row in preview.valid_rows if row.action == action)
                for action in ("new", "update", "unchanged")
            },
            "separator": SEPARATOR_NAMES.get(preview.delimiter, preview.delimiter),
            "ignored_columns": preview.ignored_columns,
        }
        return render(request, "selection/record_import_preview.html", context)


def _link(record: Record) -> str:
    try:
        return record.get_absolute_url()
    except NoReverseMatch:  # the record pages may not be installed
        return ""


class RecordImportCommitView(ImportRightsMixin, AreaRequiredMixin, View):
    """Write a previewed import: the valid rows, or all or nothing."""

    area = Area.SELECTION

    def post(self, request):
        token = request.POST.get("preview", "")
        mode = request.POST.get("mode", "")
        if mode not in ("valid", "all"):
            messages.error(request, _("Choose how to import: the valid rows only, or all or nothing."))
            return redirect("selection:record_import")
        preview = _find(request, token)
        collection = Collection.objects.filter(pk=preview.collection_id).first() if preview else None
        if preview is None or collection is None:
            messages.error(request, _("This import has expired or was already done; upload the file again."))
            return redirect("selection:record_import")
        result = csvio.import_commit(
            user=request.user, collection=collection, preview=preview, all_or_nothing=mode == "all"
        )
        if result.created or result.updated:
            _forget(request, token)  # done: posting the form again does not import twice
        context = {
            "collection": collection,
            "result": result,
            "created": [(record, _link(record)) for record in result.created],
            "updated": [(record, _link(record)) for record in result.updated],
            "skipped": [
                {"line": row.line, "url": row.values.get("url", ""), "messages": row.messages}
                for row in result.skipped
            ],
            # Nothing written: the same preview may still be imported another way.
            "token": None if result.created or result.updated else token,
            "valid_count": len(preview.valid_rows),
            "invalid_count": len(preview.invalid_rows),
        }
        return render(request, "selection/record_import_result.html", context)


urlpatterns = [
    path("records/export/", RecordExportView.as_view(), name="record_export"),
    path("records/import/", RecordImportView.as_view(), name="record_import"),
    path("records/import/commit/", RecordImportCommitView.as_view(), name="record_import_commit"),
]
