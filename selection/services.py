"""Writes on the selection side. Every rule of BCWeb is enforced here, whatever the caller.

Each service checks the user's rights (webarchive.permissions and the
collection's members), validates with ``full_clean()``, and raises
``ValidationError`` (field by field) or ``PermissionDenied``; nothing is
written when it raises. Every change lands in the object's history.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from selection.choices import RECORD_TRANSITIONS, CheckStatus, CollectionKind, RecordStatus
from selection.models import Collection, CompatibilityRule, Keyword, Record, SavedSearch, Theme
from selection.selectors import incompatibility
from selection.urlcheck import UrlCheckResult, check_url
from webarchive.history import history_user, save_as
from webarchive.permissions import ADD, CHANGE, VALIDATE, can, require
from webarchive.urlnorm import InvalidURL, normalise_url, registered_domain, url_host, url_key
from webarchive.versioning import ConcurrentEditError as ConcurrentEditError  # what a stale write raises
from webarchive.versioning import version_take

Checker = Callable[[str], UrlCheckResult]


# Collections -----------------------------------------------------------------------------------


@transaction.atomic
def collection_create(
    *,
    user=None,
    name: str,
    description: str = "",
    kind: str = CollectionKind.DEPARTMENT,
    is_active: bool = True,
    members=(),
    **defaults,
) -> Collection:
    """Create a collection with its members and default technical settings."""
    collection = Collection(name=name, description=description, kind=kind, is_active=is_active, **defaults)
    _check_settings_compatible(
        collection.default_budget, collection.default_frequency, collection.default_depth, prefix="default_"
    )
    collection.full_clean()
    save_as(collection, user)
    collection.members.set(members)
    return collection


@transaction.atomic
def collection_update(
    *, collection: Collection, user=None, members=None, expected_version: int | None = None, **fields
) -> Collection:
    """Change a collection's fields and, when given, its members, over the version the writer read.

    With ``expected_version``, a collection saved since is refused (ConcurrentEditError, saying
    what changed); without it (the demo command), the change goes over what is stored.
    """
    require(user, CHANGE, Collection)  # before saying anything of the collection's changes
    version_take(collection, expected=expected_version)
    for name, value in fields.items():
        setattr(collection, name, value)
    _check_settings_compatible(
        collection.default_budget, collection.default_frequency, collection.default_depth, prefix="default_"
    )
    collection.full_clean()
    save_as(collection, user)
    if members is not None:
        collection.members.set(members)
    return collection


@transaction.atomic
def theme_create(*, collection: Collection, name: str, is_active: bool = True, user=None) -> Theme:
    """Add a theme to a collection's list."""
    theme = Theme(collection=collection, name=name.strip(), is_active=is_active)
    theme.full_clean()
    save_as(theme, user)
    return theme


# Compatibility of technical settings ----------------------------------------------------------


def _check_settings_compatible(budget: str, frequency: str, depth: str, *, prefix: str = "") -> None:
    rule = incompatibility(budget, frequency, depth)
    if rule is not None:
        raise ValidationError({f"{prefix}{name}": rule.refusal for name in rule.named_settings})


@transaction.atomic
def compatibility_rule_create(
    *, user, budget: str = "", frequency: str = "", depth: str = "", reason: str = ""
):
    """Forbid a combination of technical settings (curators)."""
    if not can(user, ADD, CompatibilityRule):
        raise PermissionDenied(_("Only curators may change the compatibility of settings."))
    rule = CompatibilityRule(budget=budget, frequency=frequency, depth=depth, reason=reason)
    rule.full_clean()
    save_as(rule, user)
    return rule


@transaction.atomic
def compatibility_rule_delete(*, user, rule: CompatibilityRule) -> None:
    """Allow a combination again (curators). Records saved meanwhile are unaffected."""
    if not can(user, "delete", CompatibilityRule):
        raise PermissionDenied(_("Only curators may change the compatibility of settings."))
    history_user(rule, user).delete()


# Records ---------------------------------------------------------------------------------------


def require_record_writable(user, collection: Collection, action: str = ADD) -> None:
    """Refuse (PermissionDenied) unless the user may create or change records in the collection."""
    if not can(user, action, Record):
        raise PermissionDenied(_("Your role does not allow you to change records."))
    if not Collection.objects.writable_by(user).filter(pk=collection.pk).exists():
        raise PermissionDenied(
            _("You are not a member of the collection “%(collection)s”.") % {"collection": collection}
        )


def keyword_names(names: Iterable[str]) -> list[str]:
    """Keywords as typed → their names: spaces tidied, empty ones dropped, each at most 100 characters."""
    cleaned = [" ".join(str(raw).split()) for raw in names]
    cleaned = list(dict.fromkeys(name for name in cleaned if name))
    limit = Keyword._meta.get_field("name").max_length
    if any(len(name) > limit for name in cleaned):
        raise ValidationError(
            {"keywords": _("A keyword cannot be longer than %(max)d characters.") % {"max": limit}}
        )
    return cleaned


def _keywords(names: Iterable[str]) -> list[Keyword]:
    keywords = []
    for name in keyword_names(names):
        keyword = Keyword.objects.annotate(lname=Lower("name")).filter(lname=name.lower()).first()
        keywords.append(keyword or Keyword.objects.create(name=name))
    return list(dict.fromkeys(keywords))


def _normalised(url: str, field: str = "url") -> str:
    try:
        return normalise_url(url)
    except InvalidURL as error:
        raise ValidationError({field: str(error)}) from error


def _normalised_lines(text: str) -> str:
    lines = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            lines.append(normalise_url(line))
        except InvalidURL as error:
            raise ValidationError(
                {"supplementary_urls": _("Line %(line)d: %(error)s") % {"line": number, "error": error}}
            ) from error
    return "\n".join(dict.fromkeys(lines))


def _apply_check(record: Record, user, result: UrlCheckResult, override_reason: str) -> None:
    """Store a check result; a URL that failed it is selectable only by a curator giving a reason."""
    record.check_status = result.status
    record.check_result = result.as_dict()
    record.checked_at = timezone.now()
    if result.selectable:
        record.check_override_reason = ""
        return
    if not override_reason.strip():
        raise ValidationError({"url": _("This URL cannot be selected: %(why)s") % {"why": result.message}})
    if not can(user, VALIDATE, Record):
        raise ValidationError(
            {"check_override_reason": _("Only a curator may select a URL that failed its check.")}
        )
    record.check_override_reason = override_reason.strip()


def _save_record(record: Record, user, expected_version: int | None = None) -> None:
    """Validate and save; for an existing record, only over the version the user started from."""
    record.full_clean(exclude=["url_key", "version"])
    previous_version = record.version
    try:
        with transaction.atomic():
            if expected_version is not None:
                version_take(record, expected=expected_version)
            save_as(record, user)
    except IntegrityError as error:
        record.version = previous_version
        # The unique constraint caught a duplicate created at the same moment.
        if Record.objects.filter(collection=record.collection, url_key=record.url_key).exclude(pk=record.pk):
            raise ValidationError({"url": _("This URL is already in this collection.")}) from error
        raise
    except ValidationError:
        record.version = previous_version
        raise


def _set_url(record: Record, url: str) -> None:
    record.url = url
    record.url_key = url_key(url)
    record.host = url_host(url)
    record.registered_domain = registered_domain(record.host)


def _check_record_rules(record: Record, *, settings_changed: bool = True) -> None:
    """Theme, compatibility of the settings (only when they change: a rule made after a record never
    blocks an edit of its notes, keywords or librarian) and duplicates."""
    errors = {}
    if record.theme_id and record.theme.collection_id != record.collection_id:
        errors["theme"] = _("The theme “%(theme)s” is not a theme of the collection “%(collection)s”.") % {
            "theme": record.theme,
            "collection": record.collection,
        }
    elif record.theme_id and not record.theme.is_active:
        errors["theme"] = _("The theme “%(theme)s” is no longer in use.") % {"theme": record.theme}
    if errors:
        raise ValidationError(errors)
    if settings_changed:
        _check_settings_compatible(record.budget, record.frequency, record.depth)
    same = Record.objects.filter(collection_id=record.collection_id, url_key=record.url_key).exclude(
        pk=record.pk
    )
    if same.exists():
        raise ValidationError(
            {"url": _("This URL is already in this collection (record #%(pk)s).") % {"pk": same.first().pk}}
        )


@transaction.atomic
def record_propose(
    *,
    user,
    collection: Collection,
    url: str,
    theme: Theme,
    budget: str | None = None,
    frequency: str | None = None,
    depth: str | None = None,
    needs_browser: bool = False,
    responsible=None,
    keywords: Iterable[str] = (),
    supplementary_urls: str = "",
    content_notes: str = "",
    technical_notes: str = "",
    is_active: bool = True,
    check_override_reason: str = "",
    checker: Checker = check_url,
) -> Record:
    """Propose a URL into a collection: normalised, checked online, de-duplicated, then saved."""
    require_record_writable(user, collection)
    record = Record(
        collection=collection,
        theme=theme,
        budget=budget or collection.default_budget,
        frequency=frequency or collection.default_frequency,
        depth=depth or collection.default_depth,
        needs_browser=needs_browser,
        responsible=responsible or user,
        supplementary_urls=_normalised_lines(supplementary_urls),
        content_notes=content_notes,
        technical_notes=technical_notes,
        is_active=is_active,
        created_by=user,
        modified_by=user,
    )
    _set_url(record, _normalised(url))
    _check_record_rules(record)
    _apply_check(record, user, checker(record.url), check_override_reason)
    _save_record(record, user)
    record.keywords.set(_keywords(keywords))
    return record


EDITABLE_FIELDS = {
    "url",
    "supplementary_urls",
    "responsible",
    "budget",
    "frequency",
    "depth",
    "needs_browser",
    "theme",
    "keywords",
    "content_notes",
    "technical_notes",
    "is_active",
    "check_override_reason",
}


@transaction.atomic
def record_update(
    *, record: Record, user, expected_version: int, checker: Checker = check_url, **fields: Any
) -> Record:
    """Edit a record. Saving over someone else's newer save is refused (optimistic locking).

    A validated record whose technical settings change goes back to "proposed".
    """
    unknown = set(fields) - EDITABLE_FIELDS
    if unknown:
        raise ValidationError(
            _("These fields cannot be edited: %(fields)s.") % {"fields": ", ".join(sorted(unknown))}
        )
    require_record_writable(user, record.collection, CHANGE)
    keywords = fields.pop("keywords", None)
    override = fields.pop("check_override_reason", None)
    before = {name: getattr(record, name) for name in Record.TECHNICAL_FIELDS}
    if "url" in fields:
        new_url = _normalised(fields.pop("url"))
        if new_url != record.url:
            _set_url(record, new_url)
            _apply_check(record, user, checker(new_url), override or "")
    if "supplementary_urls" in fields:
        fields["supplementary_urls"] = _normalised_lines(fields["supplementary_urls"])
    for name, value in fields.items():
        setattr(record, name, value)
    if override is not None and record.check_status not in CheckStatus.selectable():
        record.check_override_reason = override
    technical_change = any(getattr(record, name) != before[name] for name in Record.TECHNICAL_FIELDS)
    if technical_change and record.status == RecordStatus.VALIDATED:
        _set_status(record, user, RecordStatus.PROPOSED, _("Technical settings changed after validation."))
    record.modified_by = user
    settings_changed = any(getattr(record, name) != before[name] for name in ("budget", "frequency", "depth"))
    _check_record_rules(record, settings_changed=settings_changed)
    _save_record(record, user, expected_version)
    if keywords is not None:
        record.keywords.set(_keywords(keywords))
    return record


def _set_status(record: Record, user, status: str, reason: str = "") -> None:
    RECORD_TRANSITIONS.check(record.status, status)  # a move that is not legal is refused before the reason
    if status == RecordStatus.REJECTED and not reason.strip():
        raise ValidationError({"status_reason": _("Say why the record is rejected.")})
    RECORD_TRANSITIONS.apply(record, status)
    record.status_reason = reason.strip() if status != RecordStatus.VALIDATED else ""
    record.status_changed_at = timezone.now()
    record.status_changed_by = user


@transaction.atomic
def record_set_status(
    *, record: Record, user, status: str, reason: str = "", expected_version: int | None = None
):
    """Validate or reject a record (curators), or send it back to "proposed"."""
    if not can(user, VALIDATE, Record):
        raise PermissionDenied(_("Only curators may validate or reject records."))
    _set_status(record, user, status, reason)
    record.modified_by = user
    _save_record(record, user, record.version if expected_version is None else expected_version)
    return record


@transaction.atomic
def records_set_status(*, records: Iterable[Record], user, status: str, reason: str = "") -> int:
    """Validate or reject several records at once: all of them, or none if one cannot."""
    count = 0
    errors = {}
    for record in _fresh(records):
        try:
            record_set_status(record=record, user=user, status=status, reason=reason)
            count += 1
        except ValidationError as error:
            errors[record.url] = error.messages
    if errors:
        raise ValidationError([f"{url}: {' '.join(messages)}" for url, messages in errors.items()])
    return count


@transaction.atomic
def record_transfer(
    *, record: Record, user, collection: Collection, theme: Theme, expected_version: int | None = None
) -> Record:
    """Move a record to another collection (the user must be able to write in both)."""
    require_record_writable(user, record.collection, CHANGE)
    require_record_writable(user, collection, CHANGE)
    record.collection = collection
    record.theme = theme
    record.modified_by = user
    _check_record_rules(record)
    _save_record(record, user, record.version if expected_version is None else expected_version)
    return record


def _fresh(records: Iterable[Record]) -> list[Record]:
    """The records as stored now: a bulk change never uses, nor leaves changes in, the caller's copies."""
    ids = [record.pk for record in records]
    return list(Record.objects.filter(pk__in=ids).select_related("collection", "theme").order_by("url", "pk"))


BULK_FIELDS = {
    "responsible",
    "theme",
    "add_keywords",
    "remove_keywords",
    "budget",
    "frequency",
    "depth",
    "needs_browser",
    "is_active",
    "status",
    "status_reason",
    "collection",
}


@transaction.atomic
def records_bulk_update(*, records: Iterable[Record], user, changes: dict[str, Any]) -> dict:
    """Apply the same changes to many records: every record is checked, and all are saved or none.

    Returns a summary: how many records, and how many changed per field. On
    failure, raises a ValidationError listing each refused record and why.
    """
    changes = {name: value for name, value in changes.items() if value not in (None, "", [], ())}
    unknown = set(changes) - BULK_FIELDS
    if unknown:
        raise ValidationError(
            _("These fields cannot be bulk-edited: %(f)s.") % {"f": ", ".join(sorted(unknown))}
        )
    if not changes:
        raise ValidationError(_("Choose at least one change to make."))
    status = changes.pop("status", None)
    reason = changes.pop("status_reason", "")
    target = changes.pop("collection", None)
    add_keywords = _keywords(changes.pop("add_keywords", []))
    remove_keywords = [k.lower() for k in changes.pop("remove_keywords", [])]
    if target is not None and "theme" not in changes:
        raise ValidationError({"theme": _("Choose a theme of the collection the records move to.")})
    summary: Counter = Counter()
    refused: dict[str, list[str]] = {}  # reason -> the URLs of the records refused for it
    records = _fresh(records)
    for record in records:
        try:
            with transaction.atomic():
                fields = {name: value for name, value in changes.items() if getattr(record, name) != value}
                if target is not None and record.collection_id != target.pk:
                    record_transfer(record=record, user=user, collection=target, theme=changes["theme"])
                    summary["collection"] += 1
                    fields.pop("theme", None)
                current = {k.name.lower() for k in record.keywords.all()}
                keywords = None
                if add_keywords or remove_keywords:
                    wanted = [k for k in record.keywords.all() if k.name.lower() not in remove_keywords]
                    wanted += [k for k in add_keywords if k.name.lower() not in current]
                    if {k.name.lower() for k in wanted} != current:
                        keywords = [k.name for k in wanted]
                        summary["keywords"] += 1
                if fields or keywords is not None:
                    extra = {"keywords": keywords} if keywords is not None else {}
                    record_update(
                        record=record, user=user, expected_version=record.version, **fields, **extra
                    )
                    summary.update(fields.keys())
                if status and record.status != status:
                    record_set_status(record=record, user=user, status=status, reason=reason)
                    summary["status"] += 1
        except (ValidationError, PermissionDenied) as error:
            # One reason per record, said once (a forbidden combination names two or three fields).
            messages = error.messages if isinstance(error, ValidationError) else [str(error)]
            refused.setdefault(" ".join(dict.fromkeys(messages)), []).append(record.url)
    if refused:
        raise ValidationError([_refusal(reason, urls) for reason, urls in refused.items()])
    return {"records": len(records), "changed": dict(summary)}


SHOWN_REFUSED = 20  # URLs named under each reason a bulk edit was refused for


def _refusal(reason: str, urls: list[str]) -> str:
    """One reason of a refused bulk edit, with how many records and which (the first few)."""
    shown = ", ".join(urls[:SHOWN_REFUSED])
    if len(urls) > SHOWN_REFUSED:
        shown += ", " + _("and %(n)d more") % {"n": len(urls) - SHOWN_REFUSED}
    return ngettext(
        "%(reason)s — %(count)d record: %(urls)s",
        "%(reason)s — %(count)d records: %(urls)s",
        len(urls),
    ) % {"reason": reason, "count": len(urls), "urls": shown}


# Saved searches --------------------------------------------------------------------------------


@transaction.atomic
def saved_search_create(*, user, name: str, query: str) -> SavedSearch:
    """Keep a search of the record list under a name, for this user only."""
    search = SavedSearch(user=user, name=name.strip(), query=query.lstrip("?"))
    if SavedSearch.objects.filter(user=user, name__iexact=search.name).exists():
        raise ValidationError({"name": _("You already have a saved search with this name.")})
    search.full_clean()
    search.save()
    return search


@transaction.atomic
def saved_search_delete(*, user, search: SavedSearch) -> None:
    if search.user_id != user.pk:
        raise PermissionDenied(_("This is not your saved search."))
    search.delete()
