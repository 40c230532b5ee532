"""Stage 0, conversion: an ARC file as a WARC file (one gzip member per record), by warcio.

The converted file is what the later stages read in place of the ARC file.
Record ids are derived from the ARC file's name and the record's place in it
(warcio would draw random ones), so that converting again gives the same bytes.
"""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.warcwriter import WARCWriter

from storage.dedup.workfiles import PipelineError, atomic

_NAMESPACE = uuid.UUID("5d1f3c1e-8f6e-4c59-9d55-6a2b4f0e7a01")  # ours: ids of converted ARC records


def convert_arc(*, path: Path, name: str, out: Path) -> int:
    """Write ``path`` (ARC, gzip or not) to ``out`` as gzip WARC; the number of records written."""
    written = 0
    with path.open("rb") as stream, atomic(out, "wb") as target:
        writer = WARCWriter(target, gzip=True)
        records = ArchiveIterator(stream, arc2warc=True)
        try:
            for number, record in enumerate(records):
                if not record.rec_type or record.length is None:
                    raise PipelineError(
                        f"{name}: cannot read at byte {records.get_record_offset()}: the file is torn"
                    )
                record_id = f"<urn:uuid:{uuid.uuid5(_NAMESPACE, f'{name}#{number}')}>"
                record.rec_headers.replace_header("WARC-Record-ID", record_id)
                writer.write_record(record)
                written += 1
        except (ArchiveLoadFailed, zlib.error, EOFError, OSError, ValueError) as error:
            offset = getattr(records, "offset", 0)
            reason = " ".join(str(error).split())
            raise PipelineError(f"{name}: cannot read at byte {offset}: {reason}") from None
    return written
