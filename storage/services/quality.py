"""Writes of the curators' quality review: notes on how a job harvested a record's site.

A note is written on a site of a job's quality view and kept once per selection record behind that
site; librarians read it on the record's page.
"""

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from storage.models import HarvestNote
from storage.selectors_quality import records_behind_site
from webarchive.permissions import ADD, require


@transaction.atomic
def harvest_note_add(*, record, job, user, text: str, domain=None) -> HarvestNote:
    """Attach a curator's note about how a job harvested the record's site to the record."""
    require(user, ADD, HarvestNote)
    note = HarvestNote(record=record, job=job, domain=domain, author=user, text=(text or "").strip())
    note.full_clean()
    note.save()
    return note


@transaction.atomic
def harvest_note_add_to_site(*, entry, user, text: str) -> list[HarvestNote]:
    """Attach a curator's note on a site crawl of a job to every record behind that site.

    The note is checked once, then written once per record in one bulk insert, all with the same
    time, so that the quality view can show it once.
    """
    require(user, ADD, HarvestNote)
    note = HarvestNote(job_id=entry.job_id, domain_id=entry.domain_id, author=user, text=(text or "").strip())
    note.full_clean(exclude=["record"])
    record_ids = list(records_behind_site(entry).order_by("pk").values_list("pk", flat=True))
    if not record_ids:
        raise ValidationError(
            _(
                "No selection record is behind the site %(domain)s, so the note would reach no librarian; "
                "it was not saved."
            )
            % {"domain": entry.domain.name}
        )
    return HarvestNote.objects.bulk_create(
        [
            HarvestNote(
                record_id=record_id,
                job_id=note.job_id,
                domain_id=note.domain_id,
                author=user,
                text=note.text,
                created_at=note.created_at,
            )
            for record_id in record_ids
        ],
        batch_size=1000,
    )
