"""Jobs over the test website, made the way a curator and the launcher make them."""

from __future__ import annotations

import itertools
from datetime import timedelta

from django.apps import apps
from django.utils import timezone

from harvest.choices import HarvestKind
from harvest.defaults import planning_defaults_ensure
from harvest.models import Domain, Job
from harvest.services.domains import configuration_save, domain_create, seed_list_save
from harvest.services.launcher import definition_launch
from harvest.services.planning import definition_save, schedule_save, template_save

_names = itertools.count(1)


def job_for_sites(sites: list[tuple[str, str]], **template_fields) -> Job:
    """One submitted job crawling each (domain, seed URL); the template has no delay unless given."""
    planning_defaults_ensure(apps)  # a transactional test before may have flushed them
    number = next(_names)
    fields = {"depth_policy": "host", "min_delay": 0.0, "max_delay": 0.0, "delay_factor": 0.0}
    template = template_save(name=f"crawl-test-{number}", **{**fields, **template_fields})
    configurations = []
    for domain_name, seed in sites:
        domain = Domain.objects.filter(name=domain_name).first() or domain_create(name=domain_name)
        seeds = seed_list_save(domain=domain, name=f"seeds-{number}", seeds=seed)
        configurations.append(
            configuration_save(domain=domain, name=f"crawl-{number}", template=template, seed_lists=[seeds])
        )
    schedule = schedule_save(
        name=f"crawl-test-{number}", start=timezone.now() - timedelta(days=1), unit="day", at_hour=3
    )
    definition = definition_save(
        kind=HarvestKind.SELECTIVE,
        name=f"crawl-test-{number}",
        schedule=schedule,
        configurations=configurations,
    )
    run = definition_launch(definition_id=definition.pk, now=timezone.now() + timedelta(days=2))
    return run.jobs.get()
