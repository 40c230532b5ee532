"""The transfer from selection to planning: validated records become configurations in definitions.

For each validated, active record of a collection, the mappings give a harvest
definition ((collection, frequency) → definition) and a template with limits
((budget, depth) → template). The record's registered domain gets a seed list
and a configuration named ``<collection>_<frequency>_<budget>_<depth>``,
holding the URLs of every record that shares those settings on that domain,
and the configuration is attached to the definition. The records whose site
needs a browser get the mapping's browser template instead, in a configuration
of their own (the same name with ``_browser`` at the end), so that one job
renders them and another fetches the others; without a browser template they
are skipped. Configurations the transfer made that no record backs any more
are detached.

Running it twice changes nothing the second time: each object is compared
with what it should be and written only when it differs. A write raises the
object's version without checking it (webarchive.versioning): the transfer
goes over what is stored, and an edit made on the version before is refused.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify
from django.utils.translation import gettext as _

from harvest.models import (
    BudgetMapping,
    CollectionMapping,
    Domain,
    DomainConfiguration,
    HarvestDefinition,
    SeedList,
    TransferReport,
)
from harvest.services.domains import domain_create
from harvest.validators import domain_name_normalise
from selection.choices import RecordStatus
from selection.models import Collection
from webarchive.dbstats import analyze_after
from webarchive.history import save_as
from webarchive.permissions import CHANGE, require
from webarchive.versioning import version_take


def configuration_name(
    collection: Collection, frequency: str, budget: str, depth: str, *, needs_browser: bool = False
) -> str:
    """The name of the configuration a transfer gives a record's settings."""
    name = f"{slugify(collection.name) or collection.pk}_{frequency}_{budget}_{depth}"
    return f"{name}_browser" if needs_browser else name


@dataclass
class _Target:
    """What one (domain, configuration) should look like after the transfer."""

    domain: str
    name: str
    mapping: BudgetMapping
    template_id: int
    definition: HarvestDefinition
    seeds: set[str] = field(default_factory=set)
    records: list[int] = field(default_factory=list)


def _targets(collection: Collection, skipped: list) -> dict[tuple[str, str], _Target]:
    definitions = {
        m.frequency: m.harvest_definition
        for m in CollectionMapping.objects.filter(collection=collection).select_related("harvest_definition")
    }
    budgets = {(m.budget, m.depth): m for m in BudgetMapping.objects.all()}
    records = collection.records.filter(status=RecordStatus.VALIDATED, is_active=True).order_by("url", "pk")
    targets: dict[tuple[str, str], _Target] = {}
    for record in records:
        definition = definitions.get(record.frequency)
        mapping = budgets.get((record.budget, record.depth))
        reason = None
        if definition is None:
            reason = _("no harvest definition is mapped to this collection for the frequency “%(f)s”") % {
                "f": record.get_frequency_display()
            }
        elif mapping is None:
            reason = _("no template is mapped to the budget “%(b)s” with the depth “%(d)s”") % {
                "b": record.get_budget_display(),
                "d": record.get_depth_display(),
            }
        elif record.needs_browser and mapping.browser_template_id is None:
            reason = _(
                "the site needs a browser, and no browser template is mapped to the budget “%(b)s” "
                "with the depth “%(d)s”"
            ) % {"b": record.get_budget_display(), "d": record.get_depth_display()}
        else:
            try:
                domain = domain_name_normalise(record.registered_domain)
            except ValidationError as error:
                reason = " ".join(error.messages)
        if reason:
            skipped.append({"record": record.pk, "url": record.url, "reason": reason})
            continue
        name = configuration_name(
            collection, record.frequency, record.budget, record.depth, needs_browser=record.needs_browser
        )
        template_id = mapping.browser_template_id if record.needs_browser else mapping.template_id
        target = targets.setdefault((domain, name), _Target(domain, name, mapping, template_id, definition))
        target.seeds.update([record.url, *record.supplementary_url_list])
        target.records.append(record.pk)
    return targets


def _apply(target: _Target, collection: Collection, user, mapped: set[int], details: dict) -> str:
    """Create or update one target's domain, seed list and configuration; return what happened."""
    domain = Domain.objects.filter(name=target.domain).first()
    if domain is None:
        domain = domain_create(name=target.domain, user=user)
        details["domains_created"].append(domain.name)
    seeds = "\n".join(sorted(target.seeds))
    changed = False
    seed_list = SeedList.objects.filter(domain=domain, name=target.name).first()
    if seed_list is None:
        seed_list = SeedList(domain=domain, name=target.name, seeds=seeds)
        changed = True
    elif seed_list.seeds != seeds:
        seed_list.seeds = seeds
        changed = True
    if changed:
        seed_list.full_clean()
        if seed_list.pk is not None:
            version_take(seed_list)  # over whatever is stored, and someone's edit open on it is refused
        save_as(seed_list, user)
    configuration = DomainConfiguration.objects.filter(domain=domain, name=target.name).first()
    created = configuration is None
    wanted = {
        "template_id": target.template_id,
        "max_objects": target.mapping.max_objects,
        "max_bytes": target.mapping.max_bytes,
        "source_collection_id": collection.pk,
    }
    if created:
        configuration = DomainConfiguration(domain=domain, name=target.name, **wanted)
    relinked = created or set(configuration.seed_lists.values_list("pk", flat=True)) != {seed_list.pk}
    if relinked or any(getattr(configuration, k) != v for k, v in wanted.items()):
        # Its seed lists are one of its fields too: changing them alone is a new version.
        for name, value in wanted.items():
            setattr(configuration, name, value)
        configuration.full_clean()
        if not created:
            version_take(configuration)
        save_as(configuration, user)
        changed = True
    if relinked:
        configuration.seed_lists.set([seed_list])
    attached_to = set(configuration.harvest_definitions.values_list("pk", flat=True))
    stale = (attached_to & mapped) - {target.definition.pk}
    if stale:
        configuration.harvest_definitions.remove(*stale)
        changed = True
    if target.definition.pk not in attached_to:
        target.definition.configurations.add(configuration)
        changed = True
    entry = {"domain": domain.name, "configuration": target.name, "definition": target.definition.name}
    if created:
        details["created"].append(entry)
        return "created"
    if changed:
        details["updated"].append(entry)
        return "updated"
    return "unchanged"


@transaction.atomic
def transfer_collection(*, collection: Collection, user=None, harvest_definition=None) -> TransferReport:
    """Bring the planning side in step with a collection's validated, active records; report what changed."""
    require(user, CHANGE, HarvestDefinition)
    skipped: list = []
    details: dict = {"created": [], "updated": [], "detached": [], "domains_created": [], "skipped": skipped}
    counts: dict = defaultdict(int)
    targets = _targets(collection, skipped)
    mapped = set(
        CollectionMapping.objects.filter(collection=collection).values_list("harvest_definition", flat=True)
    )
    kept = set()
    for key in sorted(targets):
        target = targets[key]
        counts[_apply(target, collection, user, mapped, details)] += 1
        kept.add(key)
    # Configurations this collection's transfers made that no record backs any more.
    through = HarvestDefinition.configurations.through
    for configuration in DomainConfiguration.objects.filter(source_collection=collection).select_related(
        "domain"
    ):
        if (configuration.domain.name, configuration.name) in kept:
            continue
        links = through.objects.filter(domainconfiguration=configuration).select_related("harvestdefinition")
        for link in links:
            details["detached"].append(
                {
                    "domain": configuration.domain.name,
                    "configuration": configuration.name,
                    "definition": link.harvestdefinition.name,
                }
            )
            counts["detached"] += 1
        links.delete()
    written = counts["created"] + counts["updated"]
    through = DomainConfiguration.seed_lists.through
    analyze_after(
        written, Domain, SeedList, DomainConfiguration, through, HarvestDefinition.configurations.through
    )
    return TransferReport.objects.create(
        user=user,
        collection=collection,
        harvest_definition=harvest_definition,
        created=counts["created"],
        updated=counts["updated"],
        unchanged=counts["unchanged"],
        detached=counts["detached"],
        skipped=len(skipped),
        details=details,
    )


def transfer_for_definition(*, definition: HarvestDefinition, user=None) -> list[TransferReport]:
    """Transfer every collection mapped to a harvest definition (before its run, or on demand)."""
    collections = Collection.objects.filter(
        pk__in=CollectionMapping.objects.filter(harvest_definition=definition).values("collection")
    ).order_by("pk")
    return [transfer_collection(collection=c, user=user, harvest_definition=definition) for c in collections]
