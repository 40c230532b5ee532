"""Stage 5, validation: each output file read again against its input, then every revisit resolved.

Record by record, in lockstep: the same record ids in the same order and
nothing missing or added; a record whose bytes changed must be a revisit
replacing a response, with the copy's WARC-Date, target URI and HTTP head.
For each such revisit the SHA-256 of the copy's payload (from the input) is
kept, and for each original the copies point to, the SHA-256 of its payload
as written in the output. The report then resolves every revisit to an
original in the output set, by WARC-Refers-To (else by target URI and date),
and checks that both payloads have the same bytes. An ARC input's conversion
(:func:`storage.dedup.convert.conversion_check`) adds its mismatches to the problems.
"""

from __future__ import annotations

import hashlib
from itertools import zip_longest
from pathlib import Path

from storage.dedup.records import Record, Source, payload_sha256
from storage.warcindex import WarcReadError

MAX_PROBLEMS = 20  # per file: past the first misalignment, the rest says nothing new


def validate_file(
    *, source_path: Path, output_path: Path, name: str, referenced: set[int], expected: dict
) -> dict:
    """Compare one output file with its input: counts, problems, revisits and referenced originals."""
    problems: list[str] = []
    originals: dict[str, list[str]] = {}
    revisits: list[list[str]] = []
    records_in = records_out = 0
    out_name = output_path.name
    if not output_path.is_file():
        return _result([f"{out_name}: missing"], 0, 0, revisits, originals)
    with output_path.open("rb") as stream:
        sha256 = hashlib.file_digest(stream, "sha256").hexdigest()
    if sha256 != expected["sha256"] or output_path.stat().st_size != expected["size"]:
        problems.append(f"{out_name}: changed since it was written (SHA-256 {sha256})")
    try:
        with Source(source_path, name) as before, Source(output_path) as after:
            pairs = zip_longest(before.records(complete=True), after.records(complete=True))
            for old, new in pairs:
                records_in += old is not None
                records_out += new is not None
                if len(problems) >= MAX_PROBLEMS:
                    continue
                if new is None:
                    problems.append(f"{out_name}: record {old.record_id} of {name} is missing")
                elif old is None:
                    problems.append(f"{out_name}: extra record {new.record_id} (byte {new.offset})")
                elif old.record_id != new.record_id:
                    problems.append(
                        f"{out_name}: record {new.record_id} at byte {new.offset} where {name} has"
                        f" {old.record_id}"
                    )
                elif _raw(before, old) == _raw(after, new):
                    if old.offset in referenced and new.record_type == "response":
                        originals[new.record_id] = [new.target_uri(), new.timestamp(), _hex(new)]
                else:
                    problem = _revisit_problem(old, new)
                    if problem:
                        problems.append(f"{out_name}: record {new.record_id}: {problem}")
                    else:
                        revisits.append(
                            [
                                new.record_id,
                                new.fields.get("warc-refers-to", ""),
                                new.fields.get("warc-refers-to-target-uri", ""),
                                _timestamp(new.fields.get("warc-refers-to-date", "")),
                                _hex(old),
                            ]
                        )
    except WarcReadError as error:
        problems.append(f"{out_name}: {error}")
    return _result(problems, records_in, records_out, revisits, originals)


def _result(problems, records_in, records_out, revisits, originals) -> dict:
    return {
        "problems": problems,
        "records_in": records_in,
        "records_out": records_out,
        "revisits": revisits,
        "originals": originals,
    }


def _raw(source: Source, record: Record) -> bytes:
    return source.data[record.offset : record.offset + record.length]


def _hex(record: Record) -> str:
    return payload_sha256(record).hex()


def _revisit_problem(old: Record, new: Record) -> str:
    """Why ``new`` is not a valid revisit replacing ``old`` ("" when it is)."""
    if old.record_type != "response" or new.record_type != "revisit":
        return f"changed ({old.record_type} written as {new.record_type})"
    for field in ("warc-date", "warc-target-uri"):
        if old.fields.get(field) != new.fields.get(field):
            return f"{field} changed"
    if bytes(new.content[new.block_start : new.block_end]) != old.http_head():
        return "the revisit's block is not the response's HTTP head"
    for field in ("warc-refers-to", "warc-profile", "warc-payload-digest"):
        if not new.fields.get(field):
            return f"revisit without {field}"
    return ""


def _timestamp(date: str) -> str:
    digits = "".join(character for character in date if character.isdigit())
    return digits[:14]


def validation_report(units: list[dict]) -> dict:
    """Resolve every revisit of every file against the originals of the whole output set."""
    problems: list[str] = []
    originals: dict[str, tuple[str, str, str]] = {}
    by_capture: dict[tuple[str, str], list[str]] = {}
    conversions: dict[str, dict] = {}
    for unit in units:
        problems += unit["problems"]
        if "conversion" in unit:
            conversion = unit["conversion"]
            conversions[conversion["file"]] = conversion
            problems += conversion["problems"]
            hidden = conversion["mismatches"] - len(conversion["problems"])
            if hidden > 0:
                problems.append(f"{conversion['file']}, conversion: {hidden} more mismatches")
        for record_id, (uri, date, sha) in unit["originals"].items():
            originals[record_id] = (uri, date, sha)
            by_capture.setdefault((uri, date), []).append(sha)
    revisits = 0
    for unit in units:
        for record_id, refers_to, uri, date, sha in unit["revisits"]:
            revisits += 1
            found = originals.get(refers_to)
            candidates = [found[2]] if found else by_capture.get((uri, date), [])
            if not candidates:
                problems.append(f"revisit {record_id}: no original {refers_to} ({uri} {date}) in the output")
            elif sha not in candidates:
                problems.append(f"revisit {record_id}: its original {refers_to} has another payload")
    return {
        "problems": problems,
        "records_in": sum(unit["records_in"] for unit in units),
        "records_out": sum(unit["records_out"] for unit in units),
        "revisits": revisits,
        "conversions": conversions,
    }
