"""Writes on templates, schedules, channels, harvest definitions, global traps and the mappings.

Harvest definitions and templates are never deleted, only deactivated. A
template's version goes up with every change of its crawler settings, so a
job's frozen copy says which version it ran with.

A change of an existing object is made over the version its writer read
(``expected_version``, see webarchive.versioning): if someone saved the object
since, it is refused and says what they changed. Without it (internal writes),
the change goes over what is stored; either way the object's version goes up.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import HarvestKind
from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestChannel,
    HarvestDefinition,
    HarvestTemplate,
    Schedule,
)
from harvest.services import validated_save, versioned_save
from harvest.services.news import news_check, news_schedule_check
from webarchive.history import history_user, save_as
from webarchive.permissions import CHANGE, DELETE, require
from webarchive.tasks import enqueue


@transaction.atomic
def template_save(
    *, user=None, template: HarvestTemplate | None = None, expected_version: int | None = None, **fields
) -> HarvestTemplate:
    """Create or change a harvest template; a change of its crawler settings is a new version."""
    template = template or HarvestTemplate()
    if template.pk:
        template = HarvestTemplate.objects.select_for_update().get(pk=template.pk)
        if any(
            name in HarvestTemplate.SETTINGS and getattr(template, name) != value
            for name, value in fields.items()
        ):
            template.version += 1
    return versioned_save(template, user, fields, expected_version=expected_version)


@transaction.atomic
def schedule_save(
    *, user=None, schedule: Schedule | None = None, expected_version: int | None = None, **fields
) -> Schedule:
    """Create or change a schedule; the definitions using it get their next run recomputed."""
    schedule = versioned_save(schedule or Schedule(), user, fields, expected_version=expected_version)
    news_schedule_check(schedule=schedule)
    now = timezone.now()
    for definition in schedule.harvest_definitions.filter(is_active=True):
        definition.next_date = schedule.next_run(max(now, schedule.start))
        save_as(definition, user, update_fields=["next_date"])
    return schedule


@transaction.atomic
def channel_save(
    *, user=None, channel: HarvestChannel | None = None, expected_version: int | None = None, **fields
) -> HarvestChannel:
    """Create or change a harvest channel; making one the default takes it from the previous one."""
    channel = channel or HarvestChannel()
    if fields.get("is_default"):
        kind = fields.get("is_snapshot", channel.is_snapshot)
        previous = HarvestChannel.objects.filter(is_snapshot=kind, is_default=True).exclude(pk=channel.pk)
        previous.update(is_default=False, version=F("version") + 1)
    return versioned_save(channel, user, fields, expected_version=expected_version)


@transaction.atomic
def trap_list_save(
    *,
    user=None,
    trap_list: GlobalCrawlerTrapList | None = None,
    expected_version: int | None = None,
    **fields,
) -> GlobalCrawlerTrapList:
    """Create or change a global crawler trap list."""
    return versioned_save(
        trap_list or GlobalCrawlerTrapList(), user, fields, expected_version=expected_version
    )


# Harvest definitions ---------------------------------------------------------------------------

SELECTIVE_FIELDS = {
    "name",
    "comments",
    "is_active",
    "channel",
    "schedule",
    "crawler_traps",
    "news",
    "news_feeds",
}
SNAPSHOT_FIELDS = {
    "name",
    "comments",
    "is_active",
    "channel",
    "crawler_traps",
    "max_objects_per_domain",
    "max_bytes_per_domain",
    "max_job_seconds",
    "continue_from",
}


def default_channel(kind: str) -> HarvestChannel | None:
    return HarvestChannel.objects.filter(is_snapshot=kind == HarvestKind.SNAPSHOT, is_default=True).first()


@transaction.atomic
def definition_save(
    *,
    user=None,
    definition: HarvestDefinition | None = None,
    kind: str | None = None,
    configurations=None,
    expected_version: int | None = None,
    **fields,
) -> HarvestDefinition:
    """Create (with ``kind``) or change a harvest definition.

    A selective definition's next run follows its schedule; a snapshot has no
    schedule and runs when an operator says "run now".
    """
    if definition is None:
        definition = HarvestDefinition(kind=HarvestKind(kind))
        fields.setdefault("channel", default_channel(definition.kind))
    else:
        definition = HarvestDefinition.objects.select_for_update().get(pk=definition.pk)
    allowed = SELECTIVE_FIELDS if definition.is_selective else SNAPSHOT_FIELDS
    schedule_changed = "schedule" in fields and fields["schedule"] != definition.schedule
    activated = fields.get("is_active") and not definition.is_active
    if fields.get("channel") is None and "channel" in fields:
        raise ValidationError({"channel": _("Choose a channel.")})
    continue_from = fields.get("continue_from")
    if continue_from is not None:
        if continue_from.kind != HarvestKind.SNAPSHOT:
            raise ValidationError({"continue_from": _("A snapshot continues another snapshot only.")})
        if definition.pk and continue_from.pk == definition.pk:
            raise ValidationError({"continue_from": _("A snapshot cannot continue itself.")})
    if configurations is not None and not definition.is_selective:
        raise ValidationError(_("A snapshot harvest takes every domain; it has no configuration list."))
    news_check(definition=definition, fields=fields)
    is_new = definition.pk is None
    versioned_save(definition, user, fields, expected_version=expected_version, allowed=allowed)
    if definition.is_selective and (is_new or schedule_changed or activated):
        schedule = definition.schedule
        definition.next_date = schedule.next_run(max(timezone.now(), schedule.start))
        save_as(definition, user, update_fields=["next_date"])
    if configurations is not None:
        definition.configurations.set(configurations)
    return definition


@transaction.atomic
def definition_set_active(*, definition: HarvestDefinition, is_active: bool, user=None) -> HarvestDefinition:
    """Activate or deactivate a harvest definition (definitions are never deleted)."""
    return definition_save(definition=definition, user=user, is_active=is_active)


@transaction.atomic
def definition_run_now(*, definition: HarvestDefinition, user=None) -> HarvestDefinition:
    """Make a definition due now: the launcher makes its jobs within a minute."""
    require(user, CHANGE, HarvestDefinition)
    definition = HarvestDefinition.objects.select_for_update().get(pk=definition.pk)
    if not definition.is_active:
        raise ValidationError(_("%(name)s is inactive; activate it first.") % {"name": definition})
    definition.next_date = timezone.now()
    save_as(definition, user, update_fields=["next_date"])
    enqueue("harvest.launch_due")  # now, not at the launcher's next beat
    return definition


@transaction.atomic
def definition_configurations_change(
    *,
    definition: HarvestDefinition,
    user=None,
    add: list[DomainConfiguration] = (),
    remove: list[DomainConfiguration] = (),
) -> HarvestDefinition:
    """Attach configurations to, or detach them from, a selective definition (a domain once at most)."""
    require(user, CHANGE, HarvestDefinition)
    if not definition.is_selective:
        raise ValidationError(_("A snapshot harvest takes every domain; it has no configuration list."))
    definition.configurations.remove(*remove)
    definition.configurations.add(*add)
    return definition


# Mappings from selection -----------------------------------------------------------------------


@transaction.atomic
def collection_mapping_save(
    *, user=None, mapping: CollectionMapping | None = None, **fields
) -> CollectionMapping:
    """Map a (collection, frequency) to a selective harvest definition."""
    definition = fields.get("harvest_definition")
    if definition is not None and definition.kind != HarvestKind.SELECTIVE:
        raise ValidationError(
            {"harvest_definition": _("Records are transferred to selective harvests only.")}
        )
    return validated_save(mapping or CollectionMapping(), user, fields)


@transaction.atomic
def budget_mapping_save(*, user=None, mapping: BudgetMapping | None = None, **fields) -> BudgetMapping:
    """Map a (budget, depth) to a template and limits."""
    return validated_save(mapping or BudgetMapping(), user, fields)


@transaction.atomic
def mapping_delete(*, mapping: CollectionMapping | BudgetMapping, user=None) -> None:
    """Withdraw a mapping (configuration, not archival data); records are detached at the next transfer."""
    require(user, DELETE, type(mapping))
    history_user(mapping, user).delete()
