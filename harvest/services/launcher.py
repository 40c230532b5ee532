"""The launcher: due harvest definitions become runs, and runs become jobs (NetarchiveSuite's rules).

Splitting, for one run:

- candidates are the definition's configurations (selective) or every active,
  non-alias domain's default configuration (snapshot; or, when it continues an
  earlier snapshot, the configurations that snapshot stopped at its limits);
- each candidate's expected size comes from the domain's best earlier harvest
  (the most recent completed one, else the largest), HARVEST_DEFAULT_EXPECTED_OBJECTS
  when there is none, capped by its max objects;
- candidates stream from the database sorted by template, then expected size,
  largest first; a job holds one template, each domain once, at most
  HARVEST_JOB_MAX_DOMAINS_* domains and HARVEST_JOB_MAX_OBJECTS expected
  objects, and its largest expected size is at most HARVEST_JOB_MAX_SIZE_RATIO
  times its smallest. Because sizes only decrease along the stream, a job the
  ratio closes never reopens and is written at once: only the open jobs (a few
  hundred in a snapshot) are in memory, never a million-domain snapshot.

Two launchers at once cannot launch a run twice: the definition row is locked
and the run number is unique.
"""

from __future__ import annotations

import heapq
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from harvest.choices import EndKind, HarvestKind, JobStatus, StopReason
from harvest.models import (
    UNLIMITED,
    Domain,
    DomainConfiguration,
    GlobalCrawlerTrapList,
    HarvestDefinition,
    HarvestInfo,
    HarvestRun,
    HarvestTemplate,
    Job,
    JobConfiguration,
    SeedList,
)
from harvest.services.additions import next_run_additions_feed
from harvest.services.domains import job_entries_lock
from harvest.services.jobs import job_transition
from harvest.services.news import news_feed_run, news_template_settings
from harvest.services.transfer import transfer_for_definition
from harvest.validators import seed_list

logger = logging.getLogger(__name__)

CHUNK = 2000


def limit_min(*limits: int) -> int:
    """The strictest of several limits where -1 means unlimited."""
    real = [limit for limit in limits if limit != UNLIMITED]
    return min(real) if real else UNLIMITED


@dataclass(slots=True)
class Candidate:
    """A configuration about to go into a job, with its expected size."""

    configuration_id: int
    domain_id: int
    template_id: int
    expected: int
    max_objects: int
    max_bytes: int
    max_request_rate: int
    crawler_traps: str
    seeds: str = ""


@dataclass
class _OpenJob:
    largest: int
    total: int = 0
    open: bool = True
    domains: set[int] = field(default_factory=set)
    candidates: list[Candidate] = field(default_factory=list)


@dataclass(frozen=True)
class SplitRules:
    """The caps of one split (from settings, per kind of harvest)."""

    max_domains: int
    max_objects: int
    max_ratio: float

    @classmethod
    def for_kind(cls, kind: str) -> SplitRules:
        return cls(
            max_domains=(
                settings.HARVEST_JOB_MAX_DOMAINS_SNAPSHOT
                if kind == HarvestKind.SNAPSHOT
                else settings.HARVEST_JOB_MAX_DOMAINS_SELECTIVE
            ),
            max_objects=settings.HARVEST_JOB_MAX_OBJECTS,
            max_ratio=settings.HARVEST_JOB_MAX_SIZE_RATIO,
        )


def split(candidates, rules: SplitRules):
    """Group candidates (sorted by template, then expected size, largest first) into jobs.

    A generator of lists of candidates; each list is one job. A candidate goes into the first
    job opened (of its template) that is still open, has room for its expected objects and does
    not hold its domain; else into a new job.

    Found in logarithmic time, not by walking the open jobs: a snapshot keeps hundreds of them
    open (full for the current size, not yet closed by the ratio), and walking them cost 50 µs a
    candidate. Two heaps of job numbers: those with room for the current size, and those waiting
    for a size they have room for, by their room. Sizes only go down, so a job with room stays
    with room until it takes a candidate, and jobs closed by the ratio are the first ones opened.
    """
    jobs: list[_OpenJob] = []  # the template's jobs, in the order they were opened
    fitting: list[int] = []  # numbers of open jobs with room for the current size
    waiting: list[tuple[int, int]] = []  # (-room, number) of open jobs without it
    first_open = 0  # jobs before it are closed by the ratio
    template_id = None
    for candidate in candidates:
        if candidate.template_id != template_id:
            yield from (job.candidates for job in jobs if job.open)
            jobs, fitting, waiting, first_open = [], [], [], 0
            template_id = candidate.template_id
        size = max(candidate.expected, 1)
        while first_open < len(jobs) and jobs[first_open].largest / size > rules.max_ratio:
            # Sizes only go down from here: this job is complete.
            job = jobs[first_open]
            first_open += 1
            if job.open:
                job.open = False
                yield job.candidates
        need = candidate.expected
        while waiting and -waiting[0][0] >= need:
            heapq.heappush(fitting, heapq.heappop(waiting)[1])
        number, holding = None, []  # holding: jobs with room that already hold the domain
        while fitting:
            if not jobs[fitting[0]].open:
                heapq.heappop(fitting)
            elif candidate.domain_id in jobs[fitting[0]].domains:
                holding.append(heapq.heappop(fitting))
            else:
                number = heapq.heappop(fitting)
                break
        for held in holding:
            heapq.heappush(fitting, held)
        if number is None:
            jobs.append(_OpenJob(largest=size))
            number = len(jobs) - 1
        job = jobs[number]
        job.candidates.append(candidate)
        job.domains.add(candidate.domain_id)
        job.total += candidate.expected
        if len(job.candidates) >= rules.max_domains:
            job.open = False
            yield job.candidates
            continue
        room = rules.max_objects - job.total
        if room >= need:
            heapq.heappush(fitting, number)
        else:
            heapq.heappush(waiting, (-room, number))
    yield from (job.candidates for job in jobs if job.open)


# Candidates ------------------------------------------------------------------------------------


def candidate_configurations(definition: HarvestDefinition, now=None):
    """The configurations one run of a definition harvests, as a queryset (not yet evaluated)."""
    if definition.is_selective:
        return DomainConfiguration.objects.filter(harvest_definitions=definition)
    if definition.continue_from_id:
        last_run = (
            HarvestRun.objects.filter(harvest_definition=definition.continue_from_id)
            .order_by("-number")
            .first()
        )
        return DomainConfiguration.objects.filter(
            harvest_infos__job__run=last_run, harvest_infos__stop_reason__in=StopReason.harvest_wide_limits()
        ).distinct()
    now = now or timezone.now()
    cutoff = now - timedelta(days=settings.HARVEST_ALIAS_TIMEOUT_DAYS)
    domains = Domain.objects.filter(is_active=True).exclude(
        Q(alias_of__isnull=False) & Q(alias_updated_at__gt=cutoff)
    )
    # By the domains' default configuration key alone: joined by domain and key at once, PostgreSQL
    # multiplied the two conditions' selectivities and expected one configuration out of 3,000,000.
    return DomainConfiguration.objects.filter(pk__in=domains.values("default_configuration_id"))


# One statement, set-based: the candidates with their domain, their domain's best earlier harvest
# (ranked once over the history of the chosen domains, not looked up row by row) and their seed
# lists' texts, sorted for the split. At 3,000,000 domains with a harvest history each, lookups per
# row were two index scans of the history and one of the seed lists for every candidate.
_CANDIDATES_SQL = """
WITH chosen AS {inlined}(
    SELECT c.id, c.domain_id, c.template_id, c.max_objects, c.max_bytes, c.max_request_rate
    FROM {configuration} c
    WHERE c.id IN ({chosen})
),
best AS {inlined}(
    SELECT ranked.domain_id, ranked.object_count
    FROM (
        SELECT h.domain_id, h.object_count, ROW_NUMBER() OVER (
            PARTITION BY h.domain_id
            ORDER BY
                CASE WHEN h.stop_reason = %s THEN 0 ELSE 1 END,
                CASE WHEN h.stop_reason = %s THEN h.created_at END DESC,
                CASE WHEN h.stop_reason = %s THEN NULL ELSE h.object_count END DESC,
                h.id DESC
        ) AS place
        FROM {harvest_info} h
        WHERE h.domain_id IN (SELECT domain_id FROM chosen)
    ) ranked
    WHERE ranked.place = 1
),
seeds AS {inlined}(
    SELECT t.domainconfiguration_id AS id, {seed_texts} AS texts
    FROM {through} t
    JOIN {seed_list} l ON l.id = t.seedlist_id
    WHERE t.domainconfiguration_id IN (SELECT id FROM chosen)
    GROUP BY t.domainconfiguration_id
)
SELECT c.id, c.domain_id, c.template_id,
       {least}(COALESCE(b.object_count, %s), CASE WHEN c.max_objects >= 0 THEN c.max_objects ELSE %s END)
           AS expected,
       c.max_objects, c.max_bytes, c.max_request_rate, d.crawler_traps, s.texts
FROM chosen c
JOIN {domain} d ON d.id = c.domain_id
LEFT JOIN best b ON b.domain_id = c.domain_id
LEFT JOIN seeds s ON s.id = c.id
ORDER BY c.template_id, expected DESC, c.domain_id, c.id
"""

# What differs between PostgreSQL and SQLite in it.
_DIALECTS = {
    "postgresql": {
        "least": "LEAST",
        "seed_texts": "STRING_AGG(l.seeds, CHR(10))",
        "inlined": "NOT MATERIALIZED ",
    },
    "sqlite": {"least": "MIN", "seed_texts": "GROUP_CONCAT(l.seeds, CHAR(10))", "inlined": ""},
}


def _candidates_sql(definition: HarvestDefinition, now=None) -> tuple[str, list]:
    """The candidates statement of one run and its parameters."""
    chosen_query = candidate_configurations(definition, now).order_by().values("pk").query
    chosen, chosen_params = chosen_query.sql_with_params()
    sql = _CANDIDATES_SQL.format(
        configuration=DomainConfiguration._meta.db_table,
        harvest_info=HarvestInfo._meta.db_table,
        through=SeedList.configurations.through._meta.db_table,
        seed_list=SeedList._meta.db_table,
        domain=Domain._meta.db_table,
        chosen=chosen,
        **_DIALECTS[connection.vendor],
    )
    completed = [StopReason.COMPLETED.value] * 3  # the ranking's three mentions of it
    params = [*chosen_params, *completed, settings.HARVEST_DEFAULT_EXPECTED_OBJECTS, 2**62]
    return sql, params


def candidates(definition: HarvestDefinition, now=None):
    """Stream the run's candidates sorted by template, then expected size (largest first).

    A candidate's expected size is its domain's best earlier harvest (the most recent completed
    one, else the largest), else HARVEST_DEFAULT_EXPECTED_OBJECTS, capped by its max objects.
    """
    snapshot = definition.kind == HarvestKind.SNAPSHOT
    harvest_objects = definition.max_objects_per_domain if snapshot else UNLIMITED
    harvest_bytes = definition.max_bytes_per_domain if snapshot else UNLIMITED
    sql, params = _candidates_sql(definition, now)
    # A server-side cursor on PostgreSQL (unless disabled for a pooler): a million rows never in memory.
    server_side = not connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS")
    with connection.chunked_cursor() if server_side else connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            for pk, domain_id, template_id, size, max_objects, max_bytes, rate, traps, texts in rows:
                max_objects = limit_min(max_objects, harvest_objects)
                if harvest_objects != UNLIMITED:
                    size = min(size, harvest_objects)
                yield Candidate(
                    pk,
                    domain_id,
                    template_id,
                    size,
                    max_objects,
                    limit_min(max_bytes, harvest_bytes),
                    rate,
                    traps,
                    "\n".join(seed_list(texts or "")),
                )


# Writing jobs ----------------------------------------------------------------------------------


_COLUMNS = (
    "job_id",
    "configuration_id",
    "domain_id",
    "seeds",
    "max_objects",
    "max_bytes",
    "max_request_rate",
    "expected_objects",
    "crawler_traps",
)


def _insert_entries(rows: list[tuple]) -> None:
    """Insert job configurations: COPY on PostgreSQL, bulk INSERT elsewhere."""
    if connection.vendor == "postgresql":
        table = JobConfiguration._meta.db_table
        with (
            connection.cursor() as cursor,
            cursor.copy(f"COPY {table} ({', '.join(_COLUMNS)}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
        return
    JobConfiguration.objects.bulk_create(
        [JobConfiguration(**dict(zip(_COLUMNS, row, strict=True))) for row in rows], batch_size=500
    )


class _JobWriter:
    """Writes the jobs of one run, with what each job freezes: template settings, traps, limits, seeds."""

    def __init__(self, definition: HarvestDefinition, run: HarvestRun):
        self.definition, self.run = definition, run
        self.templates: dict[int, HarvestTemplate] = {}
        global_traps = [
            trap for lst in GlobalCrawlerTrapList.objects.filter(is_active=True) for trap in lst.trap_list
        ]
        self.traps = list(dict.fromkeys(global_traps + definition.trap_list))
        self.jobs: list[Job] = []

    def write(self, group: list[Candidate]) -> Job:
        template = self.templates.get(group[0].template_id)
        if template is None:
            template = self.templates[group[0].template_id] = HarvestTemplate.objects.get(
                pk=group[0].template_id
            )
        job = Job.objects.create(
            harvest_definition=self.definition,
            run=self.run,
            run_number=self.run.number,
            channel=self.definition.channel,
            queue=self.definition.channel.queue,
            template=template,
            template_version=template.version,
            template_settings=news_template_settings(self.definition, template.crawler_settings()),
            crawler_traps=self.traps,
            max_seconds=self.definition.max_job_seconds if not self.definition.is_selective else 0,
            domain_count=len(group),
            expected_objects=sum(c.expected for c in group),
        )
        _insert_entries(
            [
                (
                    job.pk,
                    c.configuration_id,
                    c.domain_id,
                    c.seeds,
                    c.max_objects,
                    c.max_bytes,
                    c.max_request_rate,
                    c.expected,
                    c.crawler_traps,
                )
                for c in group
            ]
        )
        self.jobs.append(job)
        return job


def jobs_generate(*, definition: HarvestDefinition, run: HarvestRun, now=None) -> list[Job]:
    """Split one run of a definition into jobs and submit them; returns the jobs."""
    job_entries_lock()  # no configuration is deleted while its entries are written
    writer = _JobWriter(definition, run)
    for group in split(candidates(definition, now), SplitRules.for_kind(definition.kind)):
        writer.write(group)
    # The crawl itself is queued from the job's channel queue (Job.queue) by the harvesting side.
    return [job_transition(job=job, status=JobStatus.SUBMITTED) for job in writer.jobs]


# Runs ------------------------------------------------------------------------------------------


def _due_date(definition: HarvestDefinition, now) -> tuple[object, int]:
    """The run to launch now and how many earlier due runs are skipped (never piled up)."""
    if not definition.is_selective or definition.schedule is None:
        return definition.next_date, 0
    missed = definition.schedule.runs_between(definition.next_date, now)
    if len(missed) <= 1:
        return definition.next_date, 0
    return missed[-1], len(missed) - 1


def _following(definition: HarvestDefinition, now):
    """The next run after this one, or None when the schedule has ended."""
    if not definition.is_selective:
        return None  # a snapshot runs once each time an operator starts it
    schedule = definition.schedule
    if schedule.end_kind == EndKind.RUNS and definition.runs_done >= schedule.max_runs:
        return None
    return schedule.next_run(now, inclusive=False)


def definition_launch(*, definition_id: int, now=None) -> HarvestRun | None:
    """Launch one run of a definition if it is due; None if it is not (or another launcher did)."""
    now = now or timezone.now()
    with transaction.atomic():
        definition = (
            HarvestDefinition.objects.select_for_update(of=("self",))
            .select_related("schedule", "channel")
            .filter(pk=definition_id)
            .first()
        )
        if (
            definition is None
            or not definition.is_active
            or not definition.next_date
            or definition.next_date > now
        ):
            return None
        scheduled_for, missed = _due_date(definition, now)
        if missed:
            logger.warning(
                "%s: %d missed run(s) skipped since %s; launching the one due at %s",
                definition.name,
                missed,
                definition.next_date.isoformat(),
                scheduled_for.isoformat(),
            )
        try:
            with transaction.atomic():
                run = HarvestRun.objects.create(
                    harvest_definition=definition,
                    number=definition.runs_done + 1,
                    scheduled_for=scheduled_for,
                    missed=missed,
                )
        except IntegrityError:
            logger.info("%s: run %d already launched", definition.name, definition.runs_done + 1)
            return None
        definition.runs_done += 1
        definition.next_date = _following(definition, now)
        definition.save(update_fields=["runs_done", "next_date"])
        if definition.is_selective:
            transfer_for_definition(definition=definition)
        jobs = jobs_generate(definition=definition, run=run, now=now)
        news_feed_run(definition=definition, run=run)  # the articles its news definitions found
        next_run_additions_feed(definition=definition, run=run)  # URLs curators added (replay misses)
        logger.info("%s: run %d launched with %d job(s)", definition.name, run.number, len(jobs))
        return run


def launch_due(*, now=None) -> list[HarvestRun]:
    """Launch every due, active harvest definition (the launcher's beat task)."""
    now = now or timezone.now()
    due = HarvestDefinition.objects.filter(is_active=True, next_date__lte=now).order_by("next_date", "pk")
    runs = []
    for definition_id in due.values_list("pk", flat=True):
        run = definition_launch(definition_id=definition_id, now=now)
        if run is not None:
            runs.append(run)
    return runs
