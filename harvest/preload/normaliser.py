"""Reading a large list with several processes: normalisation costs a few microseconds a line in
Python, the database takes the rows far faster, so a list of millions of lines is cut into byte
ranges, one per process, and the parent only forwards rows to ``COPY``.

Each part is read by ``python -m harvest.preload.normaliser`` (this module), which writes on its
standard output frames of one kind byte and a 4-byte length:

- ``R``: rows ``run<TAB>source<TAB>domain<TAB>seed`` in PostgreSQL's ``COPY`` text format;
- ``E``: at the end, the part's tally as JSON (lines, accepted, invalid, the first invalid kept).

:class:`PartsReader` starts the processes, hands over their rows as they come, and merges the
tallies, numbering each part's invalid lines after the lines of the parts before it.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from harvest.preload.sources import Tally, file_lines, normalised

BLOCK_ROWS = 4096
_HEADER = 5


def cut(size: int, parts: int) -> list[tuple[int, int]]:
    """Byte ranges of a file of ``size`` bytes for ``parts`` readers (each reads the lines that begin
    in its range)."""
    bounds = [size * index // parts for index in range(parts)] + [size]
    return [(bounds[index], bounds[index + 1]) for index in range(parts)]


def copy_text(run_id: int, source_id: int, name: str, seed: str) -> str:
    """One row in ``COPY`` text format. Domains are letters, digits, ``-``, ``_`` and dots; a seed
    is a normalised URL (no white space), so only the backslash needs escaping."""
    return f"{run_id}\t{source_id}\t{name}\t{seed.replace(chr(92), chr(92) * 2)}\n"


def rows_from_copy_text(block: bytes) -> list[tuple[int, int, str, str]]:
    """The rows of a block (for databases without ``COPY``)."""
    rows = []
    for line in block.decode("utf-8").splitlines():
        run_id, source_id, name, seed = line.split("\t")
        rows.append((int(run_id), int(source_id), name, seed.replace(chr(92) * 2, chr(92))))
    return rows


class PartsReader:
    """Read one list with ``processes`` processes: iterate for blocks of rows, then read ``tally``."""

    def __init__(self, path: str, *, run_id: int, source_id: int, processes: int, keep: int, language: str):
        self.path, self.keep = path, keep
        self.ranges = cut(Path(path).stat().st_size, max(1, processes))
        self.arguments = [str(run_id), str(source_id), str(keep), language or ""]
        self.tally = Tally()

    def __iter__(self) -> Iterator[bytes]:
        from django.conf import settings

        environment = {
            **os.environ,
            # (settings.SETTINGS_MODULE is None while a test overrides settings)
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE") or settings.SETTINGS_MODULE,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(settings.BASE_DIR), os.environ.get("PYTHONPATH")])
            ),
        }
        frames: queue.Queue = queue.Queue(maxsize=4 * len(self.ranges))
        processes, errors, threads = [], [], []
        try:
            for start, end in self.ranges:
                error = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
                errors.append(error)
                processes.append(
                    subprocess.Popen(  # noqa: S603 (our own module, arguments we built)
                        [sys.executable, "-m", __name__, self.path, str(start), str(end), *self.arguments],
                        stdout=subprocess.PIPE,
                        stderr=error,
                        cwd=settings.BASE_DIR,
                        env=environment,
                    )
                )
            for index, process in enumerate(processes):
                thread = threading.Thread(target=_pump, args=(index, process.stdout, frames), daemon=True)
                thread.start()
                threads.append(thread)
            tallies: dict[int, dict] = {}
            running = len(processes)
            while running:
                index, kind, payload = frames.get()
                if kind == b"R":
                    yield payload
                elif kind == b"E":
                    tallies[index] = json.loads(payload)
                else:  # the end of a part's output
                    running -= 1
            for index, process in enumerate(processes):
                if process.wait() != 0 or index not in tallies:
                    errors[index].seek(0)
                    detail = errors[index].read().decode("utf-8", "replace").strip().splitlines()
                    raise RuntimeError(
                        f"reading {self.path} (bytes {self.ranges[index][0]}-{self.ranges[index][1]}) failed:"
                        f" {detail[-1] if detail else f'exit status {process.returncode}'}"
                    )
            self.tally = self._merge([tallies[index] for index in range(len(processes))])
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                process.wait()
            while any(thread.is_alive() for thread in threads):  # let the pumps finish their last put
                with contextlib.suppress(queue.Empty):
                    frames.get(timeout=0.1)
            for error in errors:
                error.close()

    def _merge(self, parts: list[dict]) -> Tally:
        tally, offset = Tally(), 0
        for part in parts:
            tally.physical += part["physical"]
            tally.lines += part["lines"]
            tally.accepted += part["accepted"]
            tally.invalid += part["invalid"]
            tally.kept += [(number + offset, text, reason) for number, text, reason in part["kept"]]
            offset += part["physical"]
        tally.kept = tally.kept[: self.keep]
        return tally


def _pump(index: int, stream, frames: queue.Queue) -> None:
    try:
        while len(header := stream.read(_HEADER)) == _HEADER:
            frames.put((index, header[:1], stream.read(int.from_bytes(header[1:], "big"))))
    finally:
        frames.put((index, b"", b""))


def _frame(out, kind: bytes, payload: bytes) -> None:
    out.write(kind + len(payload).to_bytes(4, "big") + payload)


def main(argv: list[str]) -> int:
    """Normalise the lines that begin in bytes [START, END) of PATH; frames on standard output."""
    path, start, end, run_id, source_id, keep, language = argv
    # The frames keep standard output to themselves: anything printed goes to standard error.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    import django

    django.setup()
    from django.utils import translation

    translation.activate(language or "en")
    tally, block = Tally(), []
    lines = file_lines(path, start=int(start), end=int(end), tally=tally)
    for name, seed in normalised(lines, tally, keep=int(keep)):
        block.append(copy_text(int(run_id), int(source_id), name, seed))
        if len(block) == BLOCK_ROWS:
            _frame(out, b"R", "".join(block).encode())
            block = []
    if block:
        _frame(out, b"R", "".join(block).encode())
    _frame(out, b"E", json.dumps(asdict(tally)).encode())
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
