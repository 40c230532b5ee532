"""Writes on the selection side. Every change is recorded in the object's history."""

from django.db import transaction

from selection.choices import CollectionKind
from selection.models import Collection


@transaction.atomic
def collection_create(
    *,
    name: str,
    description: str = "",
    kind: str = CollectionKind.DEPARTMENT,
    is_active: bool = True,
    members=(),
) -> Collection:
    """Create a collection with its members."""
    collection = Collection(name=name, description=description, kind=kind, is_active=is_active)
    collection.full_clean()
    collection.save()
    collection.members.set(members)
    return collection


@transaction.atomic
def collection_update(*, collection: Collection, members=None, **fields) -> Collection:
    """Change a collection's fields and, when given, its members."""
    for name, value in fields.items():
        setattr(collection, name, value)
    collection.full_clean()
    collection.save()
    if members is not None:
        collection.members.set(members)
    return collection
