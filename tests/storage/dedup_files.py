"""Small WARC files for the deduplication tests, and a way to run a DedupRun to its end without Celery."""

from __future__ import annotations

import io
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from storage.dedup.pipeline import Pipeline
from storage.models import DedupRun
from storage.services.dedup_runs import dedup_run_advance, dedup_run_unit, run_stages


def write_warc(path: Path, records: list[tuple[str, str, bytes, str]]) -> Path:
    """A gzip WARC of response records: (url, 14-digit date, body, content type) each."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, date, body, content_type in records:
            headers = StatusAndHeaders(
                "200 OK",
                [("Content-Type", content_type), ("Content-Length", str(len(body)))],
                protocol="HTTP/1.1",
            )
            iso = f"{date[0:4]}-{date[4:6]}-{date[6:8]}T{date[8:10]}:{date[10:12]}:{date[12:14]}Z"
            record = writer.create_warc_record(
                url,
                "response",
                payload=io.BytesIO(body),
                http_headers=headers,
                warc_headers_dict={"WARC-Date": iso},
            )
            writer.write_record(record)
    return path


LOGO = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def duplicate_warcs(directory: Path) -> list[Path]:
    """Two files: the same logo captured three times (across time and files), two distinct pages."""
    first = write_warc(
        directory / "first.warc.gz",
        [
            ("http://example.com/", "20240101000000", b"<html>home one</html>", "text/html"),
            ("http://example.com/logo.png", "20240101000001", LOGO, "image/png"),
        ],
    )
    second = write_warc(
        directory / "second.warc.gz",
        [
            ("http://example.com/", "20240201000000", b"<html>home two</html>", "text/html"),
            ("http://example.com/logo.png", "20240201000001", LOGO, "image/png"),
            ("http://example.com/logo-copy.png", "20240201000002", LOGO, "image/png"),
        ],
    )
    return [first, second]


def drive(run: DedupRun, *, max_rounds: int = 50) -> DedupRun:
    """What the workers do, in this process: advance, run the stage's pending units, until the run ends."""
    for _round in range(max_rounds):
        run = dedup_run_advance(run_id=run.pk)
        if run.state != DedupRun.State.RUNNING:
            return run
        pipeline = Pipeline.open(Path(run.out_dir))
        stage = pipeline.next_stage(run_stages(run))
        for unit in pipeline.pending_units(stage):
            dedup_run_unit(run_id=run.pk, stage=stage, unit=unit)
        run.refresh_from_db()
        if run.state != DedupRun.State.RUNNING:
            return run
    raise AssertionError(f"{run} did not end in {max_rounds} rounds (stage {run.stage})")
