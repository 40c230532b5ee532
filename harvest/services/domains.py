"""Writes on domains, their seed lists and configurations.

Domains are never deleted. A new domain always gets a default seed list and a
default configuration; the default configuration, and any configuration or
seed list something depends on, cannot be removed.

Changes are made over the version their writer read (``expected_version``, see
``harvest.services.versioned_save`` and webarchive.versioning).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _
from simple_history.utils import bulk_create_with_history

from harvest.models import Domain, DomainConfiguration, HarvestTemplate, SeedList
from harvest.models.domains import DEFAULT_CONFIGURATION, DEFAULT_SEED_LIST, UNLIMITED
from harvest.services import versioned_save
from harvest.validators import domain_name_normalise, is_address, meaningful_lines, seeds_normalise
from webarchive.history import history_user, save_as
from webarchive.permissions import ADD, CHANGE, DELETE, require
from webarchive.versioning import version_take


def default_seeds(name: str) -> str:
    """The seeds of a new domain: http and https, with and without www (an address has no www)."""
    if is_address(name):
        host = f"[{name}]" if ":" in name else name
        return f"http://{host}/\nhttps://{host}/"
    return "\n".join(f"{scheme}://{host}/" for host in (name, f"www.{name}") for scheme in ("http", "https"))


def default_template() -> HarvestTemplate:
    try:
        return HarvestTemplate.objects.get(name=settings.HARVEST_DEFAULT_TEMPLATE)
    except HarvestTemplate.DoesNotExist:
        raise ValidationError(
            _("The default template “%(name)s” does not exist; create it or set HARVEST_DEFAULT_TEMPLATE.")
            % {"name": settings.HARVEST_DEFAULT_TEMPLATE}
        ) from None


@transaction.atomic
def domain_create(
    *,
    name: str,
    user=None,
    comments: str = "",
    crawler_traps: str = "",
    seeds: str = "",
    is_active: bool = True,
) -> Domain:
    """Create a domain with its default seed list and default configuration."""
    require(user, ADD, Domain)
    try:
        name = domain_name_normalise(name)
    except ValidationError as error:
        raise ValidationError({"name": error.messages}) from None
    if Domain.objects.filter(name=name).exists():
        raise ValidationError({"name": _("The domain %(name)s already exists.") % {"name": name}})
    domain = Domain(name=name, comments=comments, crawler_traps=crawler_traps, is_active=is_active)
    domain.full_clean(exclude=["default_configuration"])
    save_as(domain, user)
    seed_list = SeedList(
        domain=domain, name=DEFAULT_SEED_LIST, seeds=seeds_normalise(seeds) or default_seeds(name)
    )
    seed_list.full_clean()
    save_as(seed_list, user)
    configuration = DomainConfiguration(
        domain=domain, name=DEFAULT_CONFIGURATION, template=default_template()
    )
    save_as(configuration, user)
    configuration.seed_lists.add(seed_list)
    domain.default_configuration = configuration
    save_as(domain, user)
    return domain


@transaction.atomic
def domain_update(*, domain: Domain, user=None, expected_version: int | None = None, **fields) -> Domain:
    """Change a domain's comments, traps, active flag or default configuration."""
    require(user, CHANGE, Domain)
    version_take(domain, expected=expected_version)
    allowed = {"comments", "crawler_traps", "is_active", "default_configuration"}
    if set(fields) - allowed:
        raise ValidationError(
            _("These fields cannot be changed here: %s.") % ", ".join(sorted(set(fields) - allowed))
        )
    configuration = fields.get("default_configuration")
    if configuration is not None and configuration.domain_id != domain.pk:
        raise ValidationError(
            {"default_configuration": _("The default configuration must be one of this domain's.")}
        )
    for name, value in fields.items():
        setattr(domain, name, value)
    domain.full_clean()
    save_as(domain, user)
    return domain


@transaction.atomic
def domain_set_alias(*, domain: Domain, alias_of: Domain | None, user=None) -> Domain:
    """Make a domain an alias of another (or no longer an alias); setting it again renews it."""
    require(user, CHANGE, Domain)
    domain = Domain.objects.select_for_update().get(pk=domain.pk)
    if alias_of is not None:
        alias_of = Domain.objects.select_for_update().get(pk=alias_of.pk)
        if alias_of.pk == domain.pk:
            raise ValidationError({"alias_of": _("A domain cannot be an alias of itself.")})
        if alias_of.alias_of_id is not None:
            raise ValidationError(
                {
                    "alias_of": _(
                        "%(target)s is itself an alias of %(its)s; aliases cannot form chains, "
                        "make %(domain)s an alias of %(its)s instead."
                    )
                    % {"target": alias_of, "its": alias_of.alias_of, "domain": domain}
                }
            )
        aliases = list(domain.aliases.values_list("name", flat=True)[:5])
        if aliases:
            raise ValidationError(
                {
                    "alias_of": _(
                        "%(aliases)s are aliases of %(domain)s; a domain that has aliases cannot become one."
                    )
                    % {"aliases": ", ".join(aliases), "domain": domain}
                }
            )
    domain.alias_of = alias_of
    domain.alias_updated_at = timezone.now() if alias_of is not None else None
    domain.version += 1  # the row is locked above
    domain.full_clean()
    save_as(domain, user)
    return domain


@transaction.atomic
def domain_alias_renew(*, domain: Domain, user=None) -> Domain:
    """Keep an alias for another period (HARVEST_ALIAS_TIMEOUT_DAYS from now)."""
    if domain.alias_of_id is None:
        raise ValidationError(_("%(domain)s is not an alias.") % {"domain": domain})
    return domain_set_alias(domain=domain, alias_of=domain.alias_of, user=user)


# Bulk creation ---------------------------------------------------------------------------------


@dataclass
class DomainListReport:
    """What a pasted or uploaded list of domains gives: names to create, known ones, refused lines."""

    new: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    errors: list[tuple[int, str, str]] = field(default_factory=list)  # (line, text, why)
    created: int = 0


def domain_list_check(text: str) -> DomainListReport:
    """Read one domain per line (``#`` comments allowed) and say what each line gives."""
    report = DomainListReport()
    names: dict[str, None] = {}
    for number, line in meaningful_lines(text):
        try:
            names.setdefault(domain_name_normalise(line))
        except ValidationError as error:
            report.errors.append((number, line, " ".join(error.messages)))
    known = set()
    ordered = list(names)
    for start in range(0, len(ordered), 1000):
        chunk = ordered[start : start + 1000]
        known.update(Domain.objects.filter(name__in=chunk).values_list("name", flat=True))
    report.new = [name for name in ordered if name not in known]
    report.existing = [name for name in ordered if name in known]
    return report


@transaction.atomic
def domains_create_from_list(*, text: str, user=None, skip_invalid: bool = False) -> DomainListReport:
    """Create the new domains of a list; with refused lines, nothing is created unless ``skip_invalid``."""
    require(user, ADD, Domain)
    report = domain_list_check(text)
    if report.errors and not skip_invalid:
        raise ValidationError(
            [
                _("Line %(line)d (%(text)s): %(why)s") % {"line": n, "text": t, "why": why}
                for n, t, why in report.errors
            ]
        )
    report.created = domains_create_bulk(names=report.new, user=user)
    return report


def batches(items: Iterable, size: int) -> Iterator[list]:
    """Lists of at most ``size`` items, read lazily from ``items``."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


@transaction.atomic
def domains_create_bulk(*, names: Iterable[str], user=None, batch_size: int = 5000) -> int:
    """Create many new domains (already normalised, not yet known) with their defaults, in bulk.

    A few statements per batch instead of several per domain: this is how
    lists of millions of domains are loaded. Each domain gets a history row.
    """
    require(user, ADD, Domain)
    template = default_template()
    created = 0
    for batch in batches(names, batch_size):
        domains = bulk_create_with_history(
            [Domain(name=name) for name in batch], Domain, batch_size=batch_size, default_user=user
        )
        if not domains or domains[0].pk is None:  # backends without RETURNING
            domains = list(Domain.objects.filter(name__in=batch))
        seed_lists = SeedList.objects.bulk_create(
            [SeedList(domain=d, name=DEFAULT_SEED_LIST, seeds=default_seeds(d.name)) for d in domains]
        )
        configurations = DomainConfiguration.objects.bulk_create(
            [DomainConfiguration(domain=d, name=DEFAULT_CONFIGURATION, template=template) for d in domains]
        )
        through = DomainConfiguration.seed_lists.through
        through.objects.bulk_create(
            [
                through(domainconfiguration_id=c.pk, seedlist_id=s.pk)
                for c, s in zip(configurations, seed_lists, strict=True)
            ]
        )
        Domain.objects.filter(pk__in=[d.pk for d in domains]).update(
            default_configuration=Subquery(
                DomainConfiguration.objects.filter(domain=OuterRef("pk"), name=DEFAULT_CONFIGURATION).values(
                    "pk"
                )[:1]
            )
        )
        created += len(domains)
    return created


# Seed lists ------------------------------------------------------------------------------------


@transaction.atomic
def seed_list_save(
    *,
    user=None,
    seed_list: SeedList | None = None,
    domain: Domain | None = None,
    expected_version: int | None = None,
    **fields,
) -> SeedList:
    """Create (with ``domain``) or change a seed list."""
    if "seeds" in fields:
        fields["seeds"] = seeds_normalise(fields["seeds"])
    return versioned_save(
        seed_list or SeedList(domain=domain), user, fields, expected_version=expected_version
    )


@transaction.atomic
def seed_list_delete(*, seed_list: SeedList, user=None) -> None:
    """Remove a seed list nothing depends on (not the domain's last, not used by a configuration)."""
    require(user, DELETE, SeedList)
    if seed_list.configurations.exists():
        names = ", ".join(seed_list.configurations.values_list("name", flat=True)[:5])
        raise ValidationError(
            _("The seed list %(name)s is used by the configurations %(configs)s.")
            % {"name": seed_list.name, "configs": names}
        )
    if not SeedList.objects.filter(domain=seed_list.domain_id).exclude(pk=seed_list.pk).exists():
        raise ValidationError(_("A domain keeps at least one seed list; this is the last one."))
    history_user(seed_list, user).delete()


# Configurations --------------------------------------------------------------------------------


def _check_configuration(configuration: DomainConfiguration, seed_lists) -> None:
    errors = {}
    if seed_lists is not None:
        if not seed_lists:
            errors["seed_lists"] = _("Choose at least one seed list.")
        elif any(s.domain_id != configuration.domain_id for s in seed_lists):
            errors["seed_lists"] = _("A configuration uses seed lists of its own domain only.")
    inactive = HarvestTemplate.objects.filter(pk=configuration.template_id, is_active=False).exists()
    if configuration.template_id and inactive:
        old = (
            DomainConfiguration.objects.filter(pk=configuration.pk)
            .values_list("template_id", flat=True)
            .first()
            if configuration.pk
            else None
        )
        if old != configuration.template_id:
            errors["template"] = _("The template %(name)s is inactive.") % {"name": configuration.template}
    if errors:
        raise ValidationError(errors)


@transaction.atomic
def configuration_save(
    *,
    user=None,
    configuration: DomainConfiguration | None = None,
    domain: Domain | None = None,
    seed_lists=None,
    expected_version: int | None = None,
    **fields,
) -> DomainConfiguration:
    """Create (with ``domain``) or change a domain configuration."""
    require(user, CHANGE if configuration else ADD, DomainConfiguration)
    if configuration is not None:
        version_take(configuration, expected=expected_version)
    else:
        configuration = DomainConfiguration(domain=domain)
        if seed_lists is None:
            seed_lists = []
    for name, value in fields.items():
        setattr(configuration, name, value)
    seed_lists = list(seed_lists) if seed_lists is not None else None
    configuration.full_clean()
    _check_configuration(configuration, seed_lists)
    save_as(configuration, user)
    if seed_lists is not None:
        configuration.seed_lists.set(seed_lists)
    return configuration


# The lock between the launches writing job entries and the deletion of configurations: any
# constant of the project's own (the ASCII of "JOBE").
JOB_ENTRIES_LOCK = 0x4A4F4245


def job_entries_lock(*, exclusive: bool = False) -> None:
    """Hold until the transaction ends the lock that launches share while they write job entries.

    The database does not check a job entry's configuration key (see JobConfiguration), so
    configuration_delete takes this lock alone before looking for job entries: it waits for the
    launches writing jobs, then sees their entries and refuses; a launch that starts meanwhile
    waits, then no longer finds the configuration. PostgreSQL only: SQLite lets one transaction
    write at a time, and the launch writes its run before it reads its candidates.
    """
    if connection.vendor != "postgresql":
        return
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [JOB_ENTRIES_LOCK])


@transaction.atomic
def configuration_delete(*, configuration: DomainConfiguration, user=None) -> None:
    """Remove a configuration nothing depends on (not a default, never harvested, in no definition)."""
    require(user, DELETE, DomainConfiguration)
    job_entries_lock(exclusive=True)  # before looking: no launch is writing entries for it
    if Domain.objects.filter(default_configuration=configuration).exists():
        raise ValidationError(_("This is the domain's default configuration; it cannot be removed."))
    definitions = list(configuration.harvest_definitions.values_list("name", flat=True)[:5])
    if definitions:
        raise ValidationError(
            _("This configuration is used by the harvest definitions %(names)s.")
            % {"names": ", ".join(definitions)}
        )
    if configuration.job_entries.exists():
        raise ValidationError(_("This configuration has been harvested; it is kept with its jobs."))
    history_user(configuration, user).seed_lists.clear()  # the seed lists' removal is theirs too
    configuration.delete()


@transaction.atomic
def configurations_set_limits(
    *,
    configurations: Iterable[DomainConfiguration],
    user=None,
    max_objects: int | None = None,
    max_bytes: int | None = None,
) -> int:
    """Change the budget (max objects and/or bytes) of many configurations at once; all or none."""
    require(user, CHANGE, DomainConfiguration)
    errors = {}
    for name, value in (("max_objects", max_objects), ("max_bytes", max_bytes)):
        if value is not None and value < UNLIMITED:
            errors[name] = _("A limit is a number of 0 or more, or -1 for no limit.")
    if max_objects is None and max_bytes is None:
        errors["__all__"] = _("Give a new max objects, a new max bytes, or both.")
    if errors:
        raise ValidationError(errors)
    count = 0
    for configuration in DomainConfiguration.objects.filter(
        pk__in=[c.pk for c in configurations]
    ).select_for_update():
        if max_objects is not None:
            configuration.max_objects = max_objects
        if max_bytes is not None:
            configuration.max_bytes = max_bytes
        configuration.version += 1  # the row is locked by the query
        save_as(configuration, user)
        count += 1
    return count
