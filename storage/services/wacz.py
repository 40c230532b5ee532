"""WACZ packages of jobs, runs and collections: what the archive holds, replayable elsewhere.

A WACZ (Webrecorder's Web Archive Collection Zipped, 1.1.1) is one zip file that ReplayWeb.page and
pywb replay as it is:

```
archive/<name>.warc.gz      the WARC files, stored (not compressed again) so that a reader seeks in them
indexes/index.cdx           the CDXJ lines of their captures, sorted, from the archive's own index
pages/pages.jsonl           the entry pages: every seed of the jobs with the time it was captured
datapackage.json            every file above with its size and SHA-256 (the profile of the format)
datapackage-digest.json     the SHA-256 of datapackage.json (what a signature would sign)
```

The files are the jobs' current ones, chosen as for a bag (storage.services.bags: not retired, not
replaced by deduplication; jobs that have ended and whose files are all ingested) and read from
their replicas as replay reads them, streamed into the zip a block at a time and hashed on the way:
a replica that does not read back as the file's SHA-256 and size is sent to the fixity audit and
the package is refused. The zip is written under a hidden name beside the target, read back whole
(every entry's CRC, every digest and size of datapackage.json), and only then given the target's
name, which must not exist.

The lines of indexes/index.cdx are those of :func:`storage.cdx.capture_cdxj`, byte for byte what
cdxj-indexer writes for each record. A revisit whose original lies in a file outside the package
(another job's, deduplicated at crawl time) replays only with that file: export the run or the
collection to carry both. Signing (the format's ``signedData``) is left out.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import uuid
import zipfile
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from harvest.models import HarvestRun, Job
from harvest.models.definitions import CollectionMapping
from selection.models import Collection
from storage.backends import CHUNK
from storage.cdx import capture_cdxj
from storage.models import Capture, WarcFile
from storage.services.bags import (
    BAGGABLE,
    _make_parents,
    _replicas_in_read_order,
    _send_to_audit,
    job_bag_files,
    job_bag_refusal,
)
from storage.urlkeys import url_key
from webarchive.tasks import enqueue

logger = logging.getLogger(__name__)

WACZ_VERSION = "1.1.1"
STAGING_SUFFIX = ".wacz-writing"
INDEX_PATH = "indexes/index.cdx"  # CDXJ lines; the name py-wacz, pywb and ReplayWeb.page look for
PAGES_PATH = "pages/pages.jsonl"
SOFTWARE = "webarchive storage.services.wacz"


@dataclass(frozen=True)
class WaczPackage:
    """A WACZ written: where, which jobs, how many WARC files, captures and pages, its size."""

    path: Path
    job_ids: tuple[int, ...]
    warc_files: int
    captures: int
    pages: int
    size: int


# What is packaged


def wacz_jobs(*, job_id: int | None = None, run_id: int | None = None, collection_id: int | None = None):
    """The jobs of a job, a harvest definition's run or a collection; ValidationError when there is none."""
    if sum(value is not None for value in (job_id, run_id, collection_id)) != 1:
        raise ValidationError(_("Give one job, one run or one collection."), code="source")
    if job_id is not None:
        job = Job.objects.filter(pk=job_id).first()
        if job is None:
            raise ValidationError(_("There is no job %(id)s.") % {"id": job_id}, code="no_job")
        return [job]
    if run_id is not None:
        run = HarvestRun.objects.filter(pk=run_id).first()
        if run is None:
            raise ValidationError(_("There is no harvest run %(id)s.") % {"id": run_id}, code="no_run")
        jobs = list(Job.objects.filter(run=run).order_by("pk"))
        if not jobs:
            raise ValidationError(_("Harvest run %(run)s has no job.") % {"run": run}, code="empty")
        return jobs
    collection = Collection.objects.filter(pk=collection_id).first()
    if collection is None:
        raise ValidationError(
            _("There is no collection %(id)s.") % {"id": collection_id}, code="no_collection"
        )
    definitions = CollectionMapping.objects.filter(collection=collection).values("harvest_definition")
    jobs = list(Job.objects.filter(harvest_definition__in=definitions).order_by("pk"))
    if not jobs:
        raise ValidationError(
            _("Collection %(name)s has no job: none of its harvest definitions has run.")
            % {"name": collection.name},
            code="empty",
        )
    return jobs


def wacz_refusal(jobs) -> str | None:
    """Why these jobs cannot be packaged now (as a bag: ended, with files, ingested); None if they can."""
    for job in jobs:
        if job.status not in BAGGABLE:
            return _(
                "Job %(id)s is %(status)s: only a job that has ended (done, stopped or failed) "
                "can be packaged."
            ) % {"id": job.pk, "status": str(job.get_status_display()).lower()}
        if not job_bag_files(job).exists():
            return _("Job %(id)s has no WARC file to package.") % {"id": job.pk}
        refusal = job_bag_refusal(job)  # files still on their ingest chain
        if refusal:
            return refusal
    return None


# Writing a package


def wacz_write(
    *,
    target: str | Path,
    job_id: int | None = None,
    run_id: int | None = None,
    collection_id: int | None = None,
) -> WaczPackage:
    """Write the WACZ of a job, a run or a collection to ``target`` (a file that must not exist).

    Raises ValidationError, with nothing written, for a source that is missing, empty, not ended or
    not ingested, a target that exists, and a WARC file whose replica does not pass its checksum.
    """
    jobs = wacz_jobs(job_id=job_id, run_id=run_id, collection_id=collection_id)
    refusal = wacz_refusal(jobs)
    if refusal:
        raise ValidationError(refusal, code="not_ready")
    target = Path(target).absolute()
    if target.exists() or target.is_symlink():
        raise ValidationError(
            _("%(path)s already exists: a package is never written over anything.") % {"path": target},
            code="target_exists",
        )
    created = _make_parents(target.parent)
    staging = target.parent / f".{target.name}.{uuid.uuid4().hex[:12]}{STAGING_SUFFIX}"
    try:
        package = _write(jobs, staging)
        _check(staging)
        _publish(staging, target)
    except BaseException:
        staging.unlink(missing_ok=True)
        for directory in created:  # the innermost first: the parents made for this package only
            try:
                directory.rmdir()
            except OSError:
                break
        raise
    size = target.stat().st_size
    logger.info("jobs %s packaged in %s (%d bytes)", package.job_ids, target, size)
    return WaczPackage(target, package.job_ids, package.warc_files, package.captures, package.pages, size)


def _write(jobs: list[Job], staging: Path) -> WaczPackage:
    resources: list[dict] = []
    warc_ids: list[int] = []
    with zipfile.ZipFile(staging, "x", compression=zipfile.ZIP_STORED, allowZip64=True) as zip_file:
        for job in jobs:
            for warc in job_bag_files(job).iterator(chunk_size=500):
                if Path(warc.name).name != warc.name or warc.name in (".", ".."):
                    raise ValidationError(
                        _("%(name)s is not a plain file name: it cannot be put in a package.")
                        % {"name": warc.name}
                    )
                path = f"archive/{warc.name}"
                resources.append(_resource(path, _copy_from_replica(warc, zip_file, path), warc.size))
                warc_ids.append(warc.pk)
        captures = Capture.objects.filter(warc_file_id__in=warc_ids).select_related("warc_file")
        lines = sorted(capture_cdxj(capture) for capture in captures.iterator(chunk_size=2000))
        resources.append(_write_member(zip_file, INDEX_PATH, "".join(f"{line}\n" for line in lines).encode()))
        pages = list(_pages(jobs, warc_ids))
        header = {"format": "json-pages-1.0", "id": "pages", "title": "Entry pages"}
        pages_text = "".join(json.dumps(item, ensure_ascii=False) + "\n" for item in [header, *pages])
        resources.append(_write_member(zip_file, PAGES_PATH, pages_text.encode()))
        package = json.dumps(_datapackage(jobs, resources, pages), indent=2, ensure_ascii=False).encode()
        _write_member(zip_file, "datapackage.json", package)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(package).hexdigest()}
        _write_member(zip_file, "datapackage-digest.json", json.dumps(digest, indent=2).encode())
    with staging.open("rb+") as stream:
        os.fsync(stream.fileno())
    return WaczPackage(staging, tuple(job.pk for job in jobs), len(warc_ids), len(lines), len(pages), 0)


def _copy_from_replica(warc: WarcFile, zip_file: zipfile.ZipFile, path: str) -> str:
    """Stream a WARC file into the zip from its first readable replica; its SHA-256, checked."""
    failed: list[tuple[object, str]] = []
    for replica in _replicas_in_read_order(warc):
        try:
            stream = replica.node.backend_instance().open(replica.relative_path)
        except OSError as error:
            failed.append((replica, f"{replica.node.name}: {error}"))
            continue
        digest = hashlib.sha256()
        size = 0
        with stream, zip_file.open(_info(path, deflate=False), "w", force_zip64=True) as member:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                size += len(chunk)
                member.write(chunk)
        if digest.hexdigest() == warc.sha256 and size == warc.size:
            _send_to_audit(warc, failed)
            return digest.hexdigest()
        failed.append(
            (
                replica,
                f"{replica.node.name}: SHA-256 {digest.hexdigest()} ({size} bytes), "
                f"expected {warc.sha256} ({warc.size} bytes)",
            )
        )
        break  # its bytes are in the zip already: the package is refused, the audit repairs the replica
    _send_to_audit(warc, failed)
    raise ValidationError(
        _(
            "%(name)s could not be read from a replica as its checksum says, so the package is not "
            "written (%(details)s). Its replicas are sent to the fixity audit to be verified and repaired."
        )
        % {"name": warc.name, "details": "; ".join(detail for _replica, detail in failed) or _("no replica")},
        code="replica",
    )


def _info(path: str, *, deflate: bool = True) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(path, date_time=timezone.now().timetuple()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    return info


def _write_member(zip_file: zipfile.ZipFile, path: str, data: bytes) -> dict:
    zip_file.writestr(_info(path), data)
    return _resource(path, hashlib.sha256(data).hexdigest(), len(data))


def _resource(path: str, sha256: str, size: int) -> dict:
    return {"name": Path(path).name, "path": path, "hash": f"sha256:{sha256}", "bytes": size}


def _pages(jobs: list[Job], warc_ids: list[int]):
    """The seeds of the jobs as entry pages, at the time of their first capture in the package."""
    seen = set()
    for job in jobs:
        for entry in job.configurations.order_by("pk"):
            for seed in entry.seed_urls:
                if seed in seen:
                    continue
                seen.add(seed)
                capture = (
                    Capture.objects.filter(
                        warc_file_id__in=warc_ids,
                        urlkey=url_key(seed),
                        record_type__in=(Capture.RecordType.RESPONSE, Capture.RecordType.REVISIT),
                    )
                    .order_by("timestamp")
                    .first()
                )
                if capture is None:  # a seed that was not captured is no page to open
                    continue
                yield {
                    "id": uuid.uuid5(uuid.NAMESPACE_URL, f"{capture.url} {capture.timestamp14}").hex,
                    "url": capture.url,
                    "ts": _iso(capture.timestamp),
                    "title": seed,
                }


def _datapackage(jobs: list[Job], resources: list[dict], pages: list[dict]) -> dict:
    ids = ", ".join(str(job.pk) for job in jobs)
    package = {
        "profile": "data-package",
        "wacz_version": WACZ_VERSION,
        "title": f"Web archive job{'s' if len(jobs) > 1 else ''} {ids}",
        "description": "; ".join(f"job {job.pk}: {job.harvest_definition}" for job in jobs[:50]),
        "created": _iso(timezone.now()),
        "software": SOFTWARE,
        "resources": resources,
    }
    if pages:
        package["mainPageURL"] = pages[0]["url"]
        package["mainPageDate"] = pages[0]["ts"]
    return package


def _iso(moment) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _check(staging: Path) -> None:
    """Read the package back: every entry's CRC, and every digest and size datapackage.json gives."""
    with zipfile.ZipFile(staging) as zip_file:
        bad = zip_file.testzip()
        if bad is not None:
            raise ValidationError(
                _("The package written is damaged (%(name)s): it is not kept.") % {"name": bad},
                code="invalid",
            )
        for resource in json.loads(zip_file.read("datapackage.json"))["resources"]:
            digest = hashlib.sha256()
            size = 0
            with zip_file.open(resource["path"]) as member:
                while chunk := member.read(CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
            if f"sha256:{digest.hexdigest()}" != resource["hash"] or size != resource["bytes"]:
                raise ValidationError(
                    _("%(path)s does not read back as written: the package is not kept.")
                    % {"path": resource["path"]},
                    code="invalid",
                )


def _publish(staging: Path, target: Path) -> None:
    """Give the finished package its name, never over a file that appeared meanwhile (a link)."""
    try:
        os.link(staging, target)
    except OSError as error:
        if error.errno == errno.EEXIST:
            raise ValidationError(
                _("%(path)s already exists: a package is never written over anything.") % {"path": target},
                code="target_exists",
            ) from error
        raise
    staging.unlink()
    descriptor = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# Packages made by the workers for the job page (STORAGE_WACZ_DIR)


def job_wacz_path(job_id: int) -> Path:
    """Where the worker writes a job's package, and where the job page's download reads it."""
    return Path(settings.STORAGE_WACZ_DIR) / f"job-{job_id}.wacz"


def job_wacz_request(*, job_id: int) -> bool:
    """Send the making of a job's package to a worker (``storage.wacz_job``); False when it is there already.

    Raises ValidationError for a job that is missing or cannot be packaged now, with nothing sent.
    """
    jobs = wacz_jobs(job_id=job_id)
    refusal = wacz_refusal(jobs)
    if refusal:
        raise ValidationError(refusal, code="not_ready")
    if job_wacz_path(job_id).exists():
        return False
    enqueue("storage.wacz_job", job_id)
    return True


def job_wacz_auto(job_id: int) -> WaczPackage | None:
    """Write a job's package into ``STORAGE_WACZ_DIR`` (the ``storage.wacz_job`` task); None when it
    is there already (a task sent twice)."""
    try:
        return wacz_write(job_id=job_id, target=job_wacz_path(job_id))
    except ValidationError as error:
        if error.code == "target_exists":
            return None
        raise
