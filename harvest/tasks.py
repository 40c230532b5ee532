"""Celery tasks of the planning side: the launcher, run by beat every HARVEST_LAUNCHER_INTERVAL."""

from celery import shared_task

from harvest.services.launcher import launch_due


@shared_task(name="harvest.launch_due", ignore_result=True, time_limit=3600, soft_time_limit=3500)
def launch_due_task() -> list[int]:
    """Turn due harvest definitions into runs and jobs (safe if two run at once)."""
    return [run.pk for run in launch_due()]
