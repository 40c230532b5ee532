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

It is set-based work, a few statements per collection whatever its size (the
BnF's 50,000 records, 37,000 configurations): the records are read as values;
the domains, seed lists, configurations and their links that the targets name
are read in bulk (``IN`` lists of at most ``_chunk_size()`` values); the
differences are computed here; and only what differs is written, by bulk
inserts and updates, with one history row for each object created or changed
(simple_history's bulk writes, attributed to the user, the configuration's
seed lists in its history as a save would record them). The rows to change are
locked and read again just before they are written, so that an edit committed
meanwhile is kept in the fields the transfer does not own (comments). A
transfer that finds nothing changed reads and writes only its report.

New domains are created by ``domains_create_bulk`` (with their default seed
list and configuration), and given the history ``domain_create`` leaves: their
default seed list's and configuration's creation, and the domain's change to
its default configuration.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone
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
from harvest.services.domains import domains_create_bulk
from harvest.validators import domain_name_normalise
from selection.choices import RecordStatus
from selection.models import Collection, Record, supplementary_url_list
from webarchive.dbstats import analyze_after
from webarchive.lookups import AnyOf
from webarchive.permissions import CHANGE, require

LINKS = DomainConfiguration.seed_lists.through  # configuration → seed list
ATTACHMENTS = HarvestDefinition.configurations.through  # definition → configuration
_CONFIGURATION_FIELDS = ("template_id", "max_objects", "max_bytes", "source_collection_id")


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
    template_id: int
    max_objects: int
    max_bytes: int
    definition_id: int
    definition_name: str
    seeds: set[str] = field(default_factory=set)

    def wanted(self, collection_id: int) -> tuple:
        """The configuration's fields the transfer owns, in ``_CONFIGURATION_FIELDS``' order."""
        return (self.template_id, self.max_objects, self.max_bytes, collection_id)


def _chunk_size() -> int:
    """Values per ``IN`` list: within SQLite's limit of parameters per statement."""
    limit = connection.features.max_query_params
    return min(limit - 10, 5000) if limit else 5000


def _chunks(values: Iterable, size: int | None = None) -> Iterator[list]:
    values = list(values)
    size = size or _chunk_size()
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _labels(name: str) -> dict:
    return dict(Record._meta.get_field(name).flatchoices)


def _targets(collection: Collection, skipped: list) -> tuple[dict[tuple[str, str], _Target], dict[str, int]]:
    """The targets of the collection's validated, active records (read as values), and the ids of
    the domains already stored under their names; the records that give none go to ``skipped``
    with their reason."""
    definitions = {
        frequency: (pk, name)
        for frequency, pk, name in CollectionMapping.objects.filter(collection=collection).values_list(
            "frequency", "harvest_definition_id", "harvest_definition__name"
        )
    }
    budgets = {
        (m["budget"], m["depth"]): m
        for m in BudgetMapping.objects.values(
            "budget", "depth", "template_id", "browser_template_id", "max_objects", "max_bytes"
        )
    }
    frequencies, budget_labels, depths = _labels("frequency"), _labels("budget"), _labels("depth")
    records = (
        Record.objects.filter(collection=collection, status=RecordStatus.VALIDATED, is_active=True)
        .order_by("url", "pk")
        .values_list(
            "pk",
            "url",
            "supplementary_urls",
            "registered_domain",
            "frequency",
            "budget",
            "depth",
            "needs_browser",
        )
    )
    records = list(records)
    # A registered domain stored as a domain's name is in its normalised form (domains are stored
    # so): only the others are normalised, which takes seconds for tens of thousands of names.
    known = _read_domains(sorted({row[3] for row in records}))
    names: dict[tuple[str, str, str, bool], str] = {}
    # registered domain → normalised name, or its error messages
    domains: dict[str, str | list[str]] = {name: name for name in known}
    targets: dict[tuple[str, str], _Target] = {}
    for pk, url, supplementary, registered, frequency, budget, depth, needs_browser in records:
        definition = definitions.get(frequency)
        mapping = budgets.get((budget, depth))
        reason = None
        if definition is None:
            reason = _("no harvest definition is mapped to this collection for the frequency “%(f)s”") % {
                "f": frequencies.get(frequency, frequency)
            }
        elif mapping is None:
            reason = _("no template is mapped to the budget “%(b)s” with the depth “%(d)s”") % {
                "b": budget_labels.get(budget, budget),
                "d": depths.get(depth, depth),
            }
        elif needs_browser and mapping["browser_template_id"] is None:
            reason = _(
                "the site needs a browser, and no browser template is mapped to the budget “%(b)s” "
                "with the depth “%(d)s”"
            ) % {"b": budget_labels.get(budget, budget), "d": depths.get(depth, depth)}
        else:
            if registered not in domains:
                try:
                    domains[registered] = domain_name_normalise(registered)
                except ValidationError as error:
                    domains[registered] = list(error.messages)
            domain = domains[registered]
            if isinstance(domain, list):
                reason = " ".join(domain)
        if reason:
            skipped.append({"record": pk, "url": url, "reason": reason})
            continue
        settings = (frequency, budget, depth, needs_browser)
        if settings not in names:
            names[settings] = configuration_name(
                collection, frequency, budget, depth, needs_browser=needs_browser
            )
            DomainConfiguration._meta.get_field("name").clean(names[settings], None)  # its length
        name = names[settings]
        target = targets.get((domain, name))
        if target is None:
            target = targets[domain, name] = _Target(
                domain,
                name,
                mapping["browser_template_id"] if needs_browser else mapping["template_id"],
                mapping["max_objects"],
                mapping["max_bytes"],
                *definition,
            )
        target.seeds.add(url)
        target.seeds.update(supplementary_url_list(supplementary))
    return targets, known


# Reading what is stored ------------------------------------------------------------------------


@dataclass
class _Stored:
    """The rows the targets name, as they are stored, keyed by (domain id, name)."""

    domains: dict[str, int] = field(default_factory=dict)  # name → id
    seed_lists: dict[tuple[int, str], tuple[int, str]] = field(default_factory=dict)  # → (id, seeds)
    configurations: dict[tuple[int, str], tuple] = field(default_factory=dict)  # → (id, *fields)
    links: dict[int, dict[int, int]] = field(default_factory=dict)  # configuration → {seed list: link}
    attachments: dict[int, dict[int, int]] = field(default_factory=dict)  # configuration → {def.: link}


def _read_domains(names: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for chunk in _chunks(names):
        found.update(Domain.objects.filter(AnyOf(F("name"), chunk)).values_list("name", "pk"))
    return found


def _read(stored: _Stored, domain_ids: list[int], names: set[str], extra_configurations: Iterable[int]):
    """The seed lists and configurations of these names on these domains, the configurations'
    seed-list links, and the definition links of these and of ``extra_configurations``."""
    for chunk in _chunks(domain_ids):
        for pk, domain, name, seeds in SeedList.objects.filter(
            AnyOf(F("domain_id"), chunk), AnyOf(F("name"), names)
        ).values_list("pk", "domain_id", "name", "seeds"):
            stored.seed_lists[domain, name] = (pk, seeds)
        for row in DomainConfiguration.objects.filter(
            AnyOf(F("domain_id"), chunk), AnyOf(F("name"), names)
        ).values_list("pk", "domain_id", "name", *_CONFIGURATION_FIELDS):
            stored.configurations[row[1], row[2]] = (row[0], *row[3:])
    configurations = [row[0] for row in stored.configurations.values()]
    for chunk in _chunks(configurations):
        for link, configuration, seed_list in LINKS.objects.filter(
            AnyOf(F("domainconfiguration_id"), chunk)
        ).values_list("pk", "domainconfiguration_id", "seedlist_id"):
            stored.links.setdefault(configuration, {})[seed_list] = link
    for chunk in _chunks({*configurations, *extra_configurations}):
        for link, configuration, definition in ATTACHMENTS.objects.filter(
            AnyOf(F("domainconfiguration_id"), chunk)
        ).values_list("pk", "domainconfiguration_id", "harvestdefinition_id"):
            stored.attachments.setdefault(configuration, {})[definition] = link


# Writing ---------------------------------------------------------------------------------------


def _m2m_history_model():
    return apps.get_model("harvest", "HistoricalDomainConfiguration_seed_lists")


def _configuration_history(configurations: list, links: dict[int, list], *, user, now, update: bool):
    """History rows of these configurations as saved now, each with its seed-list links
    (``links``: configuration id → link rows) as a save records them."""
    if not configurations:
        return
    rows = DomainConfiguration.history.bulk_history_create(
        configurations, update=update, default_user=user, default_date=now
    )
    model = _m2m_history_model()
    model.objects.bulk_create(
        [
            model(
                history=row,
                id=link.pk,
                domainconfiguration_id=link.domainconfiguration_id,
                seedlist_id=link.seedlist_id,
            )
            for row in rows
            for link in links.get(row.id, ())
        ]
    )


def _create_domains(names: list[str], *, user, now) -> dict[str, int]:
    """Create new domains as ``domain_create`` does, in bulk; their ids by name."""
    domains_create_bulk(names=names, user=user)
    created = []
    for chunk in _chunks(names):
        created.extend(Domain.objects.filter(name__in=chunk))
    ids = [domain.pk for domain in created]
    seed_lists, configurations, links = [], [], defaultdict(list)
    for chunk in _chunks(ids):
        seed_lists.extend(SeedList.objects.filter(domain_id__in=chunk))
        configurations.extend(DomainConfiguration.objects.filter(domain_id__in=chunk))
        for link in LINKS.objects.filter(domainconfiguration__domain_id__in=chunk):
            links[link.domainconfiguration_id].append(link)
    # domains_create_bulk writes each domain's creation; domain_create also records the creation of
    # its default seed list and configuration, then the domain's change to that configuration.
    SeedList.history.bulk_history_create(seed_lists, default_user=user, default_date=now)
    _configuration_history(configurations, links, user=user, now=now, update=False)
    Domain.history.bulk_history_create(created, update=True, default_user=user, default_date=now)
    return {domain.name: domain.pk for domain in created}


def _locked(model, pks: list[int]) -> list:
    """The rows ``pks`` read again, locked to the end of the transaction (in id order: two
    transfers lock in the same order)."""
    rows = []
    for chunk in _chunks(sorted(pks)):
        rows.extend(model.objects.select_for_update().filter(pk__in=chunk).order_by("pk"))
    return rows


@dataclass
class _Plan:
    """What the transfer of one collection writes."""

    new_seed_lists: list[SeedList] = field(default_factory=list)
    seeds: dict[int, str] = field(default_factory=dict)  # seed list id → its new seeds
    new_configurations: list[tuple[DomainConfiguration, tuple[int, str]]] = field(default_factory=list)
    changed_configurations: dict[int, tuple] = field(default_factory=dict)  # id → wanted fields
    relinked: dict[int, tuple[int, str]] = field(default_factory=dict)  # configuration → its seed list
    detached: list[int] = field(default_factory=list)  # definition link ids
    attach: list[tuple[int, tuple[int, str]]] = field(default_factory=list)  # (definition, target key)


def _write(plan: _Plan, stored: _Stored, *, user, now) -> int:
    """Write the plan; return how many rows it wrote (for the statistics)."""
    written = 0
    # Seed lists: new ones, then the changed ones read again under a lock.
    for seed_list in plan.new_seed_lists:
        seed_list.updated_at = now
    SeedList.objects.bulk_create(plan.new_seed_lists)
    SeedList.history.bulk_history_create(plan.new_seed_lists, default_user=user, default_date=now)
    seed_list_ids = {(s.domain_id, s.name): s.pk for s in plan.new_seed_lists}
    seed_list_ids.update({key: pk for key, (pk, _seeds) in stored.seed_lists.items()})
    changed = _locked(SeedList, list(plan.seeds))
    for seed_list in changed:
        seed_list.seeds = plan.seeds[seed_list.pk]
        seed_list.version += 1
        seed_list.updated_at = now
    SeedList.objects.bulk_update(changed, ["seeds", "version", "updated_at"])
    SeedList.history.bulk_history_create(changed, update=True, default_user=user, default_date=now)
    written += len(plan.new_seed_lists) + len(changed)

    # Configurations: the new ones with their seed list.
    new = [configuration for configuration, _key in plan.new_configurations]
    for configuration in new:
        configuration.updated_at = now
    DomainConfiguration.objects.bulk_create(new)
    links = LINKS.objects.bulk_create(
        [
            LINKS(domainconfiguration_id=configuration.pk, seedlist_id=seed_list_ids[key])
            for configuration, key in plan.new_configurations
        ]
    )
    _configuration_history(
        new, {link.domainconfiguration_id: [link] for link in links}, user=user, now=now, update=False
    )
    # The changed ones, read again under a lock: their fields, their seed lists (one of their fields
    # too: changing them alone is a new version).
    changed = _locked(DomainConfiguration, list(plan.changed_configurations))
    for configuration in changed:
        for name, value in zip(
            _CONFIGURATION_FIELDS, plan.changed_configurations[configuration.pk], strict=True
        ):
            setattr(configuration, name, value)
        configuration.version += 1
        configuration.updated_at = now
    DomainConfiguration.objects.bulk_update(changed, [*_CONFIGURATION_FIELDS, "version", "updated_at"])
    relinked = list(plan.relinked)
    for chunk in _chunks(relinked):
        LINKS.objects.filter(domainconfiguration_id__in=chunk).delete()
    new_links = LINKS.objects.bulk_create(
        [
            LINKS(domainconfiguration_id=configuration, seedlist_id=seed_list_ids[key])
            for configuration, key in plan.relinked.items()
        ]
    )
    links = {link.domainconfiguration_id: [link] for link in new_links}
    for configuration in changed:
        if configuration.pk not in links:  # its link is unchanged: as stored
            seed_lists = stored.links.get(configuration.pk, {})
            links[configuration.pk] = [
                LINKS(pk=link, domainconfiguration_id=configuration.pk, seedlist_id=seed_list)
                for seed_list, link in seed_lists.items()
            ]
    _configuration_history(changed, links, user=user, now=now, update=True)
    written += len(new) + len(changed) + len(links)

    # Attachments to definitions (they have no history: the definition's does not follow them).
    for chunk in _chunks(plan.detached):
        ATTACHMENTS.objects.filter(pk__in=chunk).delete()
    configuration_ids = {key: c.pk for c, key in plan.new_configurations}
    configuration_ids.update({key: row[0] for key, row in stored.configurations.items()})
    ATTACHMENTS.objects.bulk_create(
        [
            ATTACHMENTS(harvestdefinition_id=definition, domainconfiguration_id=configuration_ids[key])
            for definition, key in plan.attach
        ]
    )
    return written + len(plan.detached) + len(plan.attach)


# The transfer ----------------------------------------------------------------------------------


def _compare(target: _Target, stored: _Stored, plan: _Plan, *, collection_id: int, mapped: set[int]) -> str:
    """Add to ``plan`` what makes the stored rows of ``target`` what they should be; return
    whether its configuration is created, updated or unchanged."""
    domain = stored.domains[target.domain]
    place = (domain, target.name)
    seeds = "\n".join(sorted(target.seeds))
    changed = False
    seed_list = stored.seed_lists.get(place)
    if seed_list is None or seed_list[1] != seeds:
        # What full_clean checks of it, without its queries (its name is unique by construction).
        SeedList._meta.get_field("seeds").clean(seeds, None)
        if seed_list is None:
            plan.new_seed_lists.append(SeedList(domain_id=domain, name=target.name, seeds=seeds))
        else:
            plan.seeds[seed_list[0]] = seeds
        changed = True
    wanted = target.wanted(collection_id)
    configuration = stored.configurations.get(place)
    if configuration is None:
        fields = dict(zip(_CONFIGURATION_FIELDS, wanted, strict=True))
        plan.new_configurations.append(
            (DomainConfiguration(domain_id=domain, name=target.name, **fields), place)
        )
        plan.attach.append((target.definition_id, place))
        return "created"
    pk = configuration[0]
    if seed_list is None or set(stored.links.get(pk, {})) != {seed_list[0]}:
        plan.relinked[pk] = place
    if pk in plan.relinked or configuration[1:] != wanted:
        plan.changed_configurations[pk] = wanted
        changed = True
    attached = stored.attachments.get(pk, {})
    stale = (set(attached) & mapped) - {target.definition_id}
    if stale:
        plan.detached.extend(attached[definition] for definition in sorted(stale))
        changed = True
    if target.definition_id not in attached:
        plan.attach.append((target.definition_id, place))
        changed = True
    return "updated" if changed else "unchanged"


def _detach(sourced: dict[int, tuple[str, str]], targets: dict, stored: _Stored, plan: _Plan) -> list[dict]:
    """Add to ``plan`` the detachment of the configurations the collection's transfers made that
    no record backs any more (``sourced``: id → (domain, name)); return what is detached."""
    unbacked = sorted(
        (place, pk) for pk, place in sourced.items() if place not in targets and stored.attachments.get(pk)
    )
    if not unbacked:
        return []
    definitions = {definition for _place, pk in unbacked for definition in stored.attachments[pk]}
    names = dict(HarvestDefinition.objects.filter(pk__in=definitions).values_list("pk", "name"))
    detached = []
    for (domain, name), pk in unbacked:
        for definition, link in sorted(stored.attachments[pk].items(), key=lambda item: names[item[0]]):
            detached.append({"domain": domain, "configuration": name, "definition": names[definition]})
            plan.detached.append(link)
    return detached


@transaction.atomic
def transfer_collection(*, collection: Collection, user=None, harvest_definition=None) -> TransferReport:
    """Bring the planning side in step with a collection's validated, active records; report what changed."""
    require(user, CHANGE, HarvestDefinition)
    now = timezone.now()
    skipped: list = []
    details: dict = {"created": [], "updated": [], "detached": [], "domains_created": [], "skipped": skipped}
    counts: dict = defaultdict(int)
    targets, known = _targets(collection, skipped)
    mapped = set(
        CollectionMapping.objects.filter(collection=collection).values_list("harvest_definition", flat=True)
    )
    # The configurations this collection's transfers made: those no record backs any more are detached.
    sourced = {
        pk: (domain, name)
        for pk, domain, name in DomainConfiguration.objects.filter(source_collection=collection).values_list(
            "pk", "domain__name", "name"
        )
    }
    stored = _Stored()
    names = sorted({domain for domain, _name in targets})
    stored.domains = known
    stored.domains.update(_read_domains([name for name in names if name not in known]))
    _read(stored, list(stored.domains.values()), {name for _domain, name in targets}, sourced)
    new_domains = [name for name in names if name not in stored.domains]
    written = 0
    if new_domains:
        stored.domains.update(_create_domains(new_domains, user=user, now=now))
        details["domains_created"] = new_domains
        written += 4 * len(new_domains)  # each with its seed list, configuration and their link

    plan = _Plan()
    for key in sorted(targets):
        target = targets[key]
        outcome = _compare(target, stored, plan, collection_id=collection.pk, mapped=mapped)
        counts[outcome] += 1
        if outcome != "unchanged":
            details[outcome].append(
                {"domain": target.domain, "configuration": target.name, "definition": target.definition_name}
            )
    details["detached"] = _detach(sourced, targets, stored, plan)
    counts["detached"] = len(details["detached"])
    written += _write(plan, stored, user=user, now=now)
    analyze_after(written, Domain, SeedList, DomainConfiguration, LINKS, ATTACHMENTS)
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
