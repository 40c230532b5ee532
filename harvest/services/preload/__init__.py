"""Broad-crawl preparation (NAS_preload inside the application): domain lists into a snapshot harvest.

A :class:`~harvest.models.PreloadRun` goes through five stages, each resumable:

1. **ingest** — every source (a file of domains or URLs, a CSV column, the librarians' validated
   records) is read line by line; each line is normalised (harvest.preload.sources) to its
   registered domain (lower case, punycode, scheme, path and ``www.`` stripped; a URL is kept as
   a seed) or reported with its line number and reason. A large list is read by several
   processes (harvest.preload.normaliser). A source is read in one transaction: an interrupted
   one is read again.
2. **merge** — one SQL statement groups the accepted lines by domain, remembering every source
   (and seed), and marks which domains the database does not know yet.
3. **DNS check** — every domain is resolved (harvest.preload.dns) in batches; each batch's
   results are written before the next, so an interruption loses at most a batch.
4. **redirect discovery** — live domains are asked for ``http://domain/`` and
   ``http://www.domain/`` (harvest.preload.redirects); a redirect to a registered domain no source
   gave, and the database does not know, adds it, tagged "redirect from X".
5. **load** — new live domains are created in bulk with their seeds (``http(s)://(www.)domain/``
   and the URLs the sources gave) and default configuration, known live domains' default seed
   lists gain the URLs they lack (a history row each) (a range of domains and its "loaded" mark on
   the run in one transaction, several ranges side by side on PostgreSQL); existing domains
   without a DNS answer are
   made inactive (so the snapshot leaves them out), and those a preload made inactive that answer
   again are made active again.

Memory stays bounded: files and tables are streamed, batches are a few thousand rows. Every step
(created, stopped, resumed by an engineer; each stage done; each range loaded) is a row of the
run's audit trail, :class:`~harvest.models.PreloadStep`, naming who asked for it.

The package, by job:

- ``runs`` — a run's life: creating it (checked), running it stage by stage, stop, resume;
- ``ingest``, ``merge``, ``checks`` (DNS and redirects), ``load`` — the five stages;
- ``statistics`` — the run's statistics and their CSV;
- ``audit`` — the run's audit trail;
- ``progress`` (batches, progress, stopping) and ``bulk`` (the database's side of bulk work) —
  what the stages share.
"""

from harvest.services.preload.load import LOAD_BATCH
from harvest.services.preload.progress import Stopped
from harvest.services.preload.runs import (
    SELECTION_SOURCE,
    STAGE_FUNCTIONS,
    STAGES,
    SourceSpec,
    UploadedSource,
    preload_create,
    preload_create_from_uploads,
    preload_resume,
    preload_run,
    preload_send,
    preload_stop,
)
from harvest.services.preload.statistics import preload_statistics, statistics_rows

__all__ = [
    "LOAD_BATCH",
    "SELECTION_SOURCE",
    "STAGES",
    "STAGE_FUNCTIONS",
    "SourceSpec",
    "Stopped",
    "UploadedSource",
    "preload_create",
    "preload_create_from_uploads",
    "preload_resume",
    "preload_run",
    "preload_send",
    "preload_statistics",
    "preload_stop",
    "statistics_rows",
]
