"""The reading room's reads: the collections a viewer may read, and their entry points (records' URLs)."""

from __future__ import annotations

from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from harvest.models import CollectionMapping
from selection.choices import RecordStatus
from selection.models import Collection, Record
from storage import access, selectors
from storage.models import Capture
from storage.models_access import AccessRule


def readable_collections(viewer: access.Viewer):
    """The collections the viewer may read: those whose own rule lets the viewer in today and, for a
    collection without a rule, those mapped to a harvest definition whose captures the viewer may read
    (a collection whose own rule keeps the viewer out is not listed, though another collection's rule
    may open the same captures). Staff: every collection."""
    collections = Collection.objects.all()
    if not viewer.is_staff:
        today = timezone.localdate()
        ruled, own = set(), set()
        for rule in AccessRule.objects.filter(collection__isnull=False):
            ruled.add(rule.collection_id)
            if viewer.allowed_by(rule.level_on(today)):
                own.add(rule.collection_id)
        definitions = access.definitions_open_to(viewer, today)
        through = CollectionMapping.objects.filter(harvest_definition_id__in=definitions).exclude(
            collection_id__in=ruled
        )
        collections = collections.filter(Q(pk__in=own) | Q(pk__in=through.values("collection_id")))
    selected = ~Q(records__status=RecordStatus.REJECTED)
    return collections.annotate(entry_points=Count("records", filter=selected, distinct=True)).order_by(
        "name", "pk"
    )


def entry_points(collection: Collection, viewer: access.Viewer, records) -> list[dict]:
    """The records among ``records`` (one page of the collection's) whose URL has captures the viewer
    may read, each with the number of those captures and the first and last: one grouped query."""
    keys = {record.pk: selectors.exact_key(record.url) for record in records}
    captures = access.visible_captures(Capture.objects.filter(urlkey__in=set(keys.values())), viewer)
    found = {
        row["urlkey"]: row
        for row in captures.values("urlkey").annotate(
            count=Count("pk"), first=Min("timestamp"), last=Max("timestamp")
        )
    }
    points = []
    for record in records:
        row = found.get(keys[record.pk])
        if row is not None:
            points.append({"record": record, "url": record.url, **row})
    return points


def collection_records(collection: Collection):
    """The collection's records in URL order: its entry points before their captures are counted."""
    return (
        Record.objects.filter(collection=collection).only("pk", "url", "collection_id").order_by("url", "pk")
    )
