"""BagIt packages of jobs: a job's WARC files and metadata handed to a preservation system.

After the BnF's hand-off to SPAR (seed 004, section 4.3): once a job has ended and every one of its
WARC files has finished its ingest chain, the job can be written out as a bag (BagIt, RFC 8493)
that the preservation system takes in and checks on its side:

```
job-42/
  bagit.txt                    BagIt-Version 1.0, UTF-8
  bag-info.txt                 the archive, the job, its definition and run, dates, Payload-Oxum
  manifest-sha256.txt          every payload file's checksums (and sha512)
  tagmanifest-sha256.txt       the tag files' checksums (and sha512)
  data/warcs/<name>.warc.gz    the job's WARC files, crawled and metadata ones
  data/job.json                the job: definition, run, channel, frozen template settings and
                               traps, every site with its seeds, limits and outcome, the harvest
                               infos, the statistics, the list of WARC files with their checksums
```

The job's files are the archive's current ones: a file replaced by a deduplicated one, or retired,
is left out (its replacement holds its captures and belongs to the same job). Each file is read
from its replicas as replay reads them (online nodes first, the most recently verified first),
never from a path on disk that happens to exist: the bytes are hashed as they are copied, and a
replica that does not read back as the file's SHA-256 and size is skipped for the next one and sent
to the fixity audit (``storage.verify``), which records and repairs it. A file no replica of which
passes is a refusal, and nothing is left behind.

The bag is written under a hidden name beside its target, checked whole with the Library of
Congress's ``bagit`` (every checksum recomputed from the disk, as the replication reads back what it
writes), and only then renamed to the target, which must not exist or be an empty directory: a bag
is never written over anything, and a half-written bag never carries the target's name. The
manifests are written here rather than by ``bagit.make_bag``: make_bag changes the process's working
directory (unsafe in a worker running threads) and would hash every WARC file a second time.

bag-info.txt and job.json are in English whatever the language of the person or worker making
them: they are records for another system, not pages.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

import bagit
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import F, Model, Q
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.choices import JobStatus
from harvest.models import HarvestInfo, Job, JobStatistics
from harvest.services.jobs import ENDED
from storage.backends import CHUNK
from storage.models import IngestStep, StorageNode, WarcFile
from storage.services.nodes import send_verify
from storage.services.placement import good_replicas
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)

ALGORITHMS = ("sha256", "sha512")  # both in one pass over each file; sha512 costs about what sha256 does
BAGIT_VERSION = "1.0"
METADATA_NAME = "job.json"
WARC_FOLDER = "warcs"
METADATA_FORMAT = "webarchive-job-metadata/1"
STAGING_SUFFIX = ".bagging"
# A job that will crawl no more: ended, or resubmitted (its own files are final; its copy is a new job).
BAGGABLE = (*ENDED, JobStatus.RESUBMITTED)


@dataclass(frozen=True)
class JobBag:
    """A bag written: where, and what its payload holds (Payload-Oxum: ``payload_bytes.payload_files``)."""

    path: Path
    job_id: int
    warc_files: int
    payload_files: int
    payload_bytes: int

    @property
    def oxum(self) -> str:
        return f"{self.payload_bytes}.{self.payload_files}"


class _ReadError(OSError):
    """A replica could not be read (as opposed to the bag's own disk failing)."""


# What is bagged, and when


def job_bag_files(job: Job):
    """The job's WARC files as the archive holds them now: not retired, not replaced by deduplication."""
    return WarcFile.objects.filter(job=job, retired_at__isnull=True, replaced_by__isnull=True).order_by(
        "created_at", "name"
    )


def job_bag_refusal(job: Job) -> str | None:
    """Why the job cannot be bagged now (not ended, no file, files still ingesting); None when it can."""
    if job.status not in BAGGABLE:
        return _(
            "Job %(id)s is %(status)s: only a job that has ended (done, stopped or failed) can be bagged."
        ) % {"id": job.pk, "status": str(job.get_status_display()).lower()}
    files = job_bag_files(job)
    total = files.count()
    if not total:
        return _("Job %(id)s has no WARC file to bag.") % {"id": job.pk}
    waiting = files.filter(Q(closed_at__isnull=True) | ~Q(ingest_step=IngestStep.CLEANED) | Q(sha256=""))
    names = list(waiting.order_by("name").values_list("name", flat=True)[:6])
    if names:
        return _(
            "Job %(id)s is not ingested yet: %(count)d of its %(total)d WARC files have not finished "
            "their ingest chain (%(names)s)."
        ) % {
            "id": job.pk,
            "count": waiting.count(),
            "total": total,
            "names": ", ".join(names[:5]) + (", …" if len(names) > 5 else ""),
        }
    return None


def job_bag_name(job_id: int) -> str:
    """The directory name of a job's bag under ``STORAGE_BAG_DIR``."""
    return f"job-{job_id}"


# Writing a bag


def job_bag_write(*, job_id: int, target: str | Path) -> JobBag:
    """Write the bag of an ended, ingested job into ``target`` (absent or an empty directory).

    Raises ValidationError, with nothing written, for a job that is missing, not ended or not
    ingested, a target that exists and is not an empty directory, and a WARC file no replica of
    which passes its checksum (those replicas are sent to be verified and repaired).
    """
    job = (
        Job.objects.select_related("harvest_definition", "run", "channel", "template")
        .filter(pk=job_id)
        .first()
    )
    if job is None:
        raise ValidationError(_("There is no job %(id)s.") % {"id": job_id}, code="no_job")
    refusal = job_bag_refusal(job)
    if refusal:
        raise ValidationError(refusal, code="not_ready")
    target = Path(target).absolute()
    _check_target(target)
    created = _make_parents(target.parent)
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}{STAGING_SUFFIX}"
    staging.mkdir()
    try:
        bag = _write(job, staging)
        _validate(staging)
        _publish(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        for directory in created:  # the innermost first: the parents made for this bag only
            try:
                directory.rmdir()
            except OSError:
                break
        raise
    logger.info("job %s bagged in %s (Payload-Oxum %s)", job.pk, target, bag.oxum)
    return JobBag(target, job.pk, bag.warc_files, bag.payload_files, bag.payload_bytes)


def _check_target(target: Path) -> None:
    if not (target.exists() or target.is_symlink()):
        return
    if target.is_symlink() or not target.is_dir():
        raise ValidationError(
            _("%(path)s exists and is not a directory: a bag is never written over anything.")
            % {"path": target},
            code="target_exists",
        )
    if any(target.iterdir()):
        raise ValidationError(
            _("%(path)s already exists and is not empty: a bag is never written over anything.")
            % {"path": target},
            code="target_exists",
        )


def _make_parents(directory: Path) -> list[Path]:
    """Create the directory and its missing parents; the ones created, innermost first."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return missing


def _write(job: Job, staging: Path) -> JobBag:
    """The payload, the manifests and the tag files of the bag, in ``staging``."""
    warcs = staging / "data" / WARC_FOLDER
    warcs.mkdir(parents=True)
    files = job_bag_files(job)
    entries: dict[str, dict[str, str]] = {}
    payload_bytes = warc_count = 0
    for warc in files.iterator(chunk_size=500):
        if Path(warc.name).name != warc.name or warc.name in (".", ".."):
            raise ValidationError(
                _("%(name)s is not a plain file name: it cannot be put in a bag.") % {"name": warc.name}
            )
        entries[f"data/{WARC_FOLDER}/{warc.name}"] = _copy_from_replica(warc, warcs / warc.name)
        payload_bytes += warc.size
        warc_count += 1
    metadata = staging / "data" / METADATA_NAME
    with metadata.open("w", encoding="utf-8") as out:
        _write_json(out, job_metadata(job, files))
        out.flush()
        os.fsync(out.fileno())
    with metadata.open("rb") as stream:
        entries[f"data/{METADATA_NAME}"], size = _copy_hashed(stream, None)
    payload_bytes += size
    bag = JobBag(staging, job.pk, warc_count, len(entries), payload_bytes)

    tag_files = ["bagit.txt", "bag-info.txt"]
    for algorithm in ALGORITHMS:
        name = f"manifest-{algorithm}.txt"
        lines = (f"{entries[path][algorithm]}  {_manifest_path(path)}\n" for path in sorted(entries))
        _write_text(staging / name, "".join(lines))
        tag_files.append(name)
    bagit_txt = f"BagIt-Version: {BAGIT_VERSION}\nTag-File-Character-Encoding: UTF-8\n"
    _write_text(staging / "bagit.txt", bagit_txt)
    info = "".join(f"{label}: {_one_line(value)}\n" for label, value in bag_info(job, bag).items())
    _write_text(staging / "bag-info.txt", info)
    for algorithm in ALGORITHMS:
        lines = []
        for name in tag_files:
            with (staging / name).open("rb") as stream:
                digests, _size = _copy_hashed(stream, None, algorithms=(algorithm,))
            lines.append(f"{digests[algorithm]}  {name}\n")
        _write_text(staging / f"tagmanifest-{algorithm}.txt", "".join(lines))
    return bag


def _replicas_in_read_order(warc: WarcFile) -> list:
    """The file's good replicas as replay reads them: online nodes first, the most recently verified first."""
    replicas = good_replicas(warc).select_related("node").order_by(F("verified_at").desc(nulls_last=True))
    return sorted(replicas, key=lambda replica: replica.node.state != StorageNode.State.ONLINE)


def _copy_from_replica(warc: WarcFile, path: Path) -> dict[str, str]:
    """Copy a WARC file from the first replica that reads back as its SHA-256 and size; its digests."""
    failed: list[tuple[object, str]] = []
    for replica in _replicas_in_read_order(warc):
        try:
            stream = replica.node.backend_instance().open(replica.relative_path)
        except OSError as error:
            failed.append((replica, f"{replica.node.name}: {error}"))
            continue
        with stream:
            try:
                digests, size = _copy_hashed(stream, path)
            except _ReadError as error:  # an error writing the bag itself goes up: no other replica helps
                failed.append((replica, f"{replica.node.name}: {error}"))
                continue
        if digests["sha256"] == warc.sha256 and size == warc.size:
            _send_to_audit(warc, failed)
            return digests
        failed.append(
            (
                replica,
                _("%(node)s: SHA-256 %(found)s (%(size)d bytes), expected %(sha)s (%(expected)d bytes)")
                % {
                    "node": replica.node.name,
                    "found": digests["sha256"],
                    "size": size,
                    "sha": warc.sha256,
                    "expected": warc.size,
                },
            )
        )
    path.unlink(missing_ok=True)
    _send_to_audit(warc, failed)
    if not failed:
        raise ValidationError(
            _("%(name)s has no good replica on a reachable node: the bag is not written.")
            % {"name": warc.name},
            code="replica",
        )
    raise ValidationError(
        _(
            "No replica of %(name)s passes its checksum, so the bag is not written (%(details)s). "
            "Its replicas are sent to the fixity audit to be verified and repaired."
        )
        % {"name": warc.name, "details": "; ".join(detail for _replica, detail in failed)},
        code="replica",
    )


def _send_to_audit(warc: WarcFile, failed: list) -> None:
    """Replicas that did not read back as the file: the audit verifies them (and repairs, records)."""
    for replica, detail in failed:
        logger.warning("bagging %s: replica %s failed: %s", warc.name, replica, detail)
    send_verify([(replica.pk, replica.node.queue) for replica, _detail in failed])


def _copy_hashed(
    source: BinaryIO, path: Path | None, *, algorithms: Iterable[str] = ALGORITHMS
) -> tuple[dict[str, str], int]:
    """Hash a stream (and write it to ``path``, flushed to disk, when given): its digests and size."""
    hashes = {algorithm: hashlib.new(algorithm) for algorithm in algorithms}
    size = 0
    out = path.open("wb") if path is not None else None
    try:
        while True:
            try:
                chunk = source.read(CHUNK)
            except OSError as error:
                raise _ReadError(str(error)) from error
            if not chunk:
                break
            for digest in hashes.values():
                digest.update(chunk)
            size += len(chunk)
            if out is not None:
                out.write(chunk)
        if out is not None:
            out.flush()
            os.fsync(out.fileno())
    finally:
        if out is not None:
            out.close()
    return {algorithm: digest.hexdigest() for algorithm, digest in hashes.items()}, size


def _manifest_path(path: str) -> str:
    """A payload path as a manifest line writes it (RFC 8493, 2.1.3: CR, LF and % percent-encoded)."""
    return path.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _one_line(value) -> str:
    return " ".join(str(value).split())


def _write_text(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())


def _validate(staging: Path) -> None:
    """Check the bag as written with bagit: structure, Payload-Oxum and every checksum from the disk."""
    try:
        bagit.Bag(str(staging)).validate()
    except bagit.BagError as error:
        details = "; ".join(str(detail) for detail in getattr(error, "details", None) or [])
        raise ValidationError(
            _("The bag written does not validate (%(error)s): it is not kept.")
            % {"error": ": ".join(filter(None, [str(error), details]))},
            code="invalid",
        ) from error


def _publish(staging: Path, target: Path) -> None:
    """Give the finished bag its name (an atomic rename, onto an empty directory if there is one)."""
    try:
        os.rename(staging, target)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise ValidationError(
                _("%(path)s already exists and is not empty: a bag is never written over anything.")
                % {"path": target},
                code="target_exists",
            ) from error
        raise
    descriptor = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# What the bag says about the job


def bag_info(job: Job, bag: JobBag) -> dict[str, str]:
    """The labels of bag-info.txt: the archive, the job and where it came from, dates, the payload."""
    definition = job.harvest_definition
    return {
        "Source-Organization": settings.STORAGE_BAG_ORGANIZATION,
        "External-Identifier": f"{settings.HARVEST_WARC_PREFIX}-job-{job.pk}",
        "External-Description": (
            f"Web archive job {job.pk}: run {job.run_number} of the {definition.kind} harvest definition "
            f"{definition.name!r}, its {bag.warc_files} WARC files and its metadata (data/{METADATA_NAME})."
        ),
        "Internal-Sender-Identifier": f"job/{job.pk}",
        "Bagging-Date": timezone.localdate().isoformat(),
        "Bag-Software-Agent": f"webarchive storage.services.bags, checked with bagit-python {bagit.VERSION}",
        "Harvest-Definition": definition.name,
        "Harvest-Kind": definition.kind,
        "Harvest-Run": str(job.run_number),
        "Job-Identifier": str(job.pk),
        "Job-Status": job.status,
        "Job-Created": _iso(job.created_at),
        "Job-Started": _iso(job.started_at),
        "Job-Ended": _iso(job.ended_at),
        "WARC-File-Count": str(bag.warc_files),
        "Payload-Oxum": bag.oxum,
        "Bag-Size": _size(bag.payload_bytes),
    }


def job_metadata(job: Job, files) -> dict:
    """The job as data/job.json holds it; long lists (sites, infos, files) are iterators, streamed."""
    definition = job.harvest_definition
    return {
        "format": METADATA_FORMAT,
        "archive": settings.STORAGE_BAG_ORGANIZATION,
        "written_at": timezone.now(),
        "job": _fields(job, exclude=("template_settings", "crawler_traps")),
        "harvest_definition": {
            **_fields(definition),
            "schedule": str(definition.schedule) if definition.schedule_id else None,
            "channel": str(definition.channel) if definition.channel_id else None,
        },
        "run": _fields(job.run),
        "channel": _fields(job.channel),
        "template": {
            "id": job.template_id,
            "name": job.template.name,
            "version": job.template_version,
            "settings": job.template_settings,
        },
        "crawler_traps": job.crawler_traps,
        "sites": _sites(job),
        "harvest_infos": _harvest_infos(job),
        "statistics": _statistics(job),
        "warc_files": (
            _fields(warc, exclude=("path", "ingest_error", "replaced_by", "retired_by", "retired_at"))
            for warc in files.iterator(chunk_size=500)
        ),
    }


def _sites(job: Job) -> Iterator[dict]:
    entries = job.configurations.select_related("domain", "configuration").order_by("pk")
    for entry in entries.iterator(chunk_size=500):
        yield {
            **_fields(entry, exclude=("seeds", "worker", "current_url", "rate", "progress_at")),
            "domain": entry.domain.name,
            "configuration": entry.configuration.name,
            "seeds": entry.seed_urls,
        }


def _harvest_infos(job: Job) -> Iterator[dict]:
    infos = HarvestInfo.objects.filter(job=job).select_related("domain", "configuration").order_by("pk")
    for info in infos.iterator(chunk_size=500):
        yield {**_fields(info), "domain": info.domain.name, "configuration": info.configuration.name}


def _statistics(job: Job) -> Iterator[dict]:
    rows = JobStatistics.objects.filter(job=job).select_related("collection").order_by("pk")
    for row in rows.iterator(chunk_size=100):
        lines = row.lines.order_by("dimension", "key")
        yield {
            **_fields(row),
            "collection": row.collection.name if row.collection_id else None,
            "lines": [_fields(line, exclude=("statistics",)) for line in lines],
        }


def _fields(instance: Model, *, exclude: Iterable[str] = ()) -> dict:
    """A row's concrete fields by name (a foreign key as ``<name>_id``), as stored."""
    values = {}
    for field in instance._meta.concrete_fields:
        if field.name in exclude:
            continue
        values[field.attname] = field.value_from_object(instance)
    return values


def _write_json(out: TextIO, document: dict) -> None:
    """Write a JSON object whose iterator values are written as arrays, one item at a time."""
    out.write("{")
    for index, (key, value) in enumerate(document.items()):
        out.write(("," if index else "") + "\n " + json.dumps(key) + ": ")
        if isinstance(value, Iterator):
            out.write("[")
            for number, item in enumerate(value):
                out.write(("," if number else "") + "\n  " + _json(item))
            out.write("\n ]")
        else:
            out.write(_json(value))
    out.write("\n}\n")


def _json(value) -> str:
    return json.dumps(value, cls=DjangoJSONEncoder, sort_keys=True, ensure_ascii=False)


def _iso(moment) -> str:
    return moment.isoformat() if moment else ""


def _size(octets: int) -> str:
    """A size as people read it (decimal units), for Bag-Size."""
    if octets < 1000:
        return f"{octets} bytes"
    size = float(octets)
    for unit in ("KB", "MB", "GB", "TB"):
        size /= 1000
        if size < 1000 or unit == "TB":
            break
    return f"{size:.1f} {unit}"


# Bags made by the workers (STORAGE_BAG_DIR)


def job_bag_send_when_ingested(job_id: int) -> bool:
    """After a file's ingest chain: send the job's bag (``storage.bag_job``) when bags are made
    automatically and the job is ended and wholly ingested. True when it was sent."""
    if not settings.STORAGE_BAG_DIR:
        return False
    job = Job.objects.filter(pk=job_id).first()
    if job is None or job_bag_refusal(job) is not None:
        return False
    enqueue("storage.bag_job", job_id)
    return True


def job_bag_auto(job_id: int) -> JobBag | None:
    """Write the job's bag into ``STORAGE_BAG_DIR`` (the ``storage.bag_job`` task); None when bags
    are not made automatically or the job already has its bag there (a task sent twice)."""
    if not settings.STORAGE_BAG_DIR:
        return None
    target = Path(settings.STORAGE_BAG_DIR) / job_bag_name(job_id)
    if target.is_dir() and any(target.iterdir()):
        logger.info("job %s already has its bag in %s", job_id, target)
        return None
    try:
        return job_bag_write(job_id=job_id, target=target)
    except ValidationError as error:
        if error.code == "target_exists":  # another worker's bag got there first
            return None
        raise
