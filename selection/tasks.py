"""Celery tasks of the selection side."""

from celery import shared_task

from selection.services_frequency import boosts_revert


@shared_task(name="selection.revert_boosts", ignore_result=True, soft_time_limit=600, time_limit=660)
def revert_boosts() -> int:
    """Boosts whose end has come: each record's frequency goes back to what it was (idempotent)."""
    return boosts_revert()
