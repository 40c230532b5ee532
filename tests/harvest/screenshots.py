"""What browser capture leaves in a job's WARC files: screenshots and texts of rendered pages.

The records are written by the crawler's own WARC writer (``write_resource``, as
``harvest.crawler.rendering`` does) and indexed by the indexing service, so the capture index holds
the rows a real crawl gives, and the files are on disk where the Access views read them.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from django.conf import settings

from harvest.crawler.rendering import SCREENSHOT_PREFIX, TEXT_PREFIX
from harvest.crawler.warc import WarcWriter
from storage.models import WarcFile
from storage.services.indexing import warc_file_index


def png(width: int = 8, height: int = 5, rgb: tuple[int, int, int] = (200, 30, 60)) -> bytes:
    """A real PNG image of one colour (what a decoder, a browser's included, accepts)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    row = b"\x00" + bytes(rgb) * width  # filter type 0, then the pixels
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def screenshot(page_url: str, image: bytes | None = None) -> tuple[str, str, bytes]:
    return SCREENSHOT_PREFIX + page_url, "image/png", png() if image is None else image


def page_text(page_url: str, text: str = "Rendered text") -> tuple[str, str, bytes]:
    return TEXT_PREFIX + page_url, "text/plain; charset=utf-8", text.encode()


def write_renders(job, records: list[tuple[str, str, bytes]], *, directory: Path | None = None) -> WarcFile:
    """One WARC file of the job holding these resource records (target URI, content type, payload),
    written by the crawler's writer, indexed as the job's."""
    writer = WarcWriter(
        directory=directory or Path(settings.HARVEST_WARC_DIR),
        prefix="render",
        job_id=job.pk,
        host="tests",
        warcinfo={"operator": "tests"},
    )
    for target_uri, content_type, payload in records:
        writer.write_resource(target_uri=target_uri, content_type=content_type, payload=payload)
    writer.close()
    (written,) = writer.files
    return warc_file_index(path=written.path, job_id=job.pk).warc_file
