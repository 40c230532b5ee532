"""harvest.crawler.warc: valid WARC/1.1 files, our digests, rolling, concurrent writers, crash recovery.

The files are read back three ways: with a small gzip/WARC reader written here (one member per
record, digests recomputed with hashlib), with the real ``warcio check`` and ``cdxj-indexer``
command lines, and with :func:`check_warc`.
"""

import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harvest.crawler import warc
from harvest.crawler.fetch import Exchange, Fetcher
from harvest.crawler.recovery import check_warc, recover_open_files
from harvest.crawler.warc import WarcWriter, Writes
from tests.crawler.test_fetch import CHUNKS, GZIPPED, PAGE, LocalServer, digest

BIN = Path(sys.executable).parent
PROJECT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"^TEST-42-(\d{14})-(\d{5})-worker_1\.warc\.gz$")


@dataclass
class Record:
    """One record as read here without warcio: where its gzip member is, its WARC headers and block."""

    offset: int
    length: int
    headers: dict[str, str]
    block: bytes

    @property
    def type(self) -> str:
        return self.headers["WARC-Type"]

    def http(self) -> tuple[bytes, bytes]:
        """The HTTP head (without its blank line) and the payload of a response or request block."""
        head, _, payload = self.block.partition(b"\r\n\r\n")
        return head, payload


def read_records(path: Path) -> list[Record]:
    """Every record of a file, checking that each gzip member holds exactly one whole record."""
    data = path.read_bytes()
    found, offset = [], 0
    while offset < len(data):
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        content = decompressor.decompress(data[offset:])
        assert decompressor.eof, f"incomplete gzip member at {offset}"
        length = len(data) - offset - len(decompressor.unused_data)
        head, _, rest = content.partition(b"\r\n\r\n")
        lines = head.decode("utf-8").split("\r\n")
        assert lines[0] == "WARC/1.1"
        fields = [line.split(": ", 1) for line in lines[1:]]
        headers = dict(fields)
        assert len(headers) == len(fields), "a WARC header written twice (digests added by warcio?)"
        size = int(headers["Content-Length"])
        assert rest[size:] == b"\r\n\r\n", "a member must end with its record"
        found.append(Record(offset, length, headers, rest[:size]))
        offset += length
    return found


def warcio_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "warcio"), "check", "-v", str(path)], capture_output=True, text=True)


def cdxj(path: Path) -> list[dict]:
    done = subprocess.run([str(BIN / "cdxj-indexer"), str(path)], capture_output=True, text=True, check=True)
    return [json.loads(line.split(" ", 2)[2]) for line in done.stdout.splitlines() if line.strip()]


def assert_valid(path: Path, *, named: bool = True) -> list[Record]:
    """The file passes warcio check and check_warc, its digests match ours; its records are returned."""
    check = warcio_check(path)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "digest pass" in check.stdout
    assert check_warc(path) == []
    records = read_records(path)
    assert records[0].type == "warcinfo"
    if named:  # the warcinfo record names its file
        assert records[0].headers["WARC-Filename"] == path.name.removesuffix(".open")
    for record in records:
        algorithm = record.headers["WARC-Block-Digest"].split(":")[0]
        assert record.headers["WARC-Block-Digest"] == digest(record.block, algorithm)
        if record.type == "response":
            assert record.headers["WARC-Payload-Digest"] == digest(record.http()[1], algorithm)
        if record.type != "warcinfo":
            assert record.headers["WARC-Warcinfo-ID"] == records[0].headers["WARC-Record-ID"]
    return records


def assert_pairs_adjacent(records: list[Record]) -> list[tuple[Record, Record]]:
    """Every response is followed by its request, each naming the other; the pairs are returned."""
    pairs = []
    for index, record in enumerate(records):
        if record.type == "response":
            request = records[index + 1]
            assert request.type == "request"
            assert request.headers["WARC-Concurrent-To"] == record.headers["WARC-Record-ID"]
            assert record.headers["WARC-Concurrent-To"] == request.headers["WARC-Record-ID"]
            assert request.headers["WARC-Target-URI"] == record.headers["WARC-Target-URI"]
            pairs.append((record, request))
    assert len(pairs) == sum(record.type == "request" for record in records)
    return pairs


def writer_for(directory: Path, **options) -> WarcWriter:
    return WarcWriter(
        directory=directory,
        prefix="TEST",
        job_id=42,
        host="worker 1",
        warcinfo={"software": "webarchive tests", "operator": "Test Library", "empty": ""},
        **options,
    )


@pytest.fixture(scope="module")
def server():
    with LocalServer() as running:
        yield running


@pytest.fixture(scope="module")
def fetcher():
    return Fetcher(user_agent="t/1", address_check=lambda ip: None, max_response_bytes=100_000)


def test_exchanges_make_a_valid_warc_file(server, fetcher, tmp_path):
    closed, announced = [], []
    exchanges = {}
    writer = writer_for(tmp_path, on_file_closed=closed.append, on_record=announced.append)
    with writer, fetcher.session() as session:
        for path in ("/page", "/chunked", "/gzip", "/big", "/cut", "/redirect", "/missing"):
            exchanges[path] = exchange = session.fetch(server.url(path))
            infos = writer.write_exchange(exchange)
            assert [info.record_type for info in infos] == ["response", "request"]
    [path] = tmp_path.iterdir()
    assert NAME.match(path.name)
    assert NAME.match(path.name).group(2) == "00000"
    records = assert_valid(path)
    pairs = assert_pairs_adjacent(records)
    assert [response.headers["WARC-Target-URI"] for response, _ in pairs] == [
        server.url(path) for path in exchanges
    ]
    for (response, request), exchange in zip(pairs, exchanges.values(), strict=True):
        assert response.headers["WARC-IP-Address"] == "127.0.0.1"
        assert response.headers["WARC-Payload-Digest"] == exchange.payload_digest
        assert response.headers["Content-Type"] == "application/http; msgtype=response"
        when = datetime.fromisoformat(response.headers["WARC-Date"].replace("Z", "+00:00"))
        assert when == exchange.started_at
        assert request.headers["WARC-Date"] == response.headers["WARC-Date"]
        assert request.block == exchange.request_head
        assert request.headers["Content-Type"] == "application/http; msgtype=request"
        assert "WARC-Payload-Digest" not in request.headers
        exchange.body.seek(0)
        assert response.http()[1] == exchange.body.read()
    truncated = {
        response.headers["WARC-Target-URI"]: response.headers.get("WARC-Truncated") for response, _ in pairs
    }
    assert truncated[server.url("/big")] == "length"
    assert truncated[server.url("/cut")] == "disconnect"
    assert truncated[server.url("/page")] is None
    digests = [value for record in records for name, value in record.headers.items() if "Digest" in name]
    assert len(digests) == 1 + 3 * len(pairs)  # warcinfo: block; response: block and payload; request: block
    assert all(value.startswith("sha256:") for value in digests)
    # The warcinfo record: our fields, empty ones left out.
    assert records[0].block.decode().split("\r\n")[2:4] == [
        "software: webarchive tests",
        "operator: Test Library",
    ]
    assert b"empty:" not in records[0].block
    # What the callbacks reported is where the records are.
    assert [(info.offset, info.length, info.record_id) for info in announced] == [
        (record.offset, record.length, record.headers["WARC-Record-ID"]) for record in records
    ]
    # The payload's Content-Type as the server sent it (indexes keep its case, cut at ";").
    assert announced[1].status == 200
    assert announced[1].content_type == exchanges["/page"].header("Content-Type")
    assert announced[1].content_type.startswith("text/html")
    assert announced[1].date == exchanges["/page"].started_at.strftime("%Y%m%d%H%M%S")
    [info] = closed
    assert (info.name, info.path, info.records) == (path.name, path, len(records))
    assert info.size == path.stat().st_size
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not info.recovered
    # A WARC index of the file lists every response with our digests.
    index = cdxj(path)
    assert [entry["url"] for entry in index] == [server.url(path) for path in exchanges]
    assert [entry["digest"] for entry in index] == [
        exchange.payload_digest for exchange in exchanges.values()
    ]
    assert [int(entry["offset"]) for entry in index] == [response.offset for response, _ in pairs]


def test_a_chunked_response_is_stored_dechunked_with_its_length(server, fetcher, tmp_path):
    with writer_for(tmp_path) as writer, fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url("/chunked")))
    [path] = tmp_path.iterdir()
    response = assert_valid(path)[1]
    head, payload = response.http()
    whole = b"".join(CHUNKS)
    assert payload == whole
    assert b"Transfer-Encoding" not in head
    assert f"Content-Length: {len(whole)}".encode() in head.split(b"\r\n")


@pytest.mark.parametrize("url_path", ["/gzip", "/gzip-chunked"])
def test_gzip_content_encoding_is_stored_byte_for_byte(server, fetcher, tmp_path, url_path):
    with writer_for(tmp_path) as writer, fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url(url_path)))
    [path] = tmp_path.iterdir()
    head, payload = assert_valid(path)[1].http()
    assert payload == GZIPPED
    assert b"Content-Encoding: gzip" in head.split(b"\r\n")
    assert cdxj(path)[0]["digest"] == digest(GZIPPED)


def test_the_http_head_keeps_the_bytes_the_server_sent(server, fetcher, tmp_path):
    with writer_for(tmp_path) as writer, fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url("/latin1")))
        writer.write_exchange(session.fetch(server.url("/page")))
    [path] = tmp_path.iterdir()
    records = assert_valid(path)
    assert records[1].http()[0] == b"HTTP/1.1 200 Fine\r\nX-Name: caf\xe9\r\nContent-Length: 2"
    head = records[3].http()[0].split(b"\r\n")
    assert head[-3:] == [b"X-Seen: 1", b"x-seen: 2", f"Content-Length: {len(PAGE)}".encode()]


def test_sha1_digests_throughout_when_chosen(server, tmp_path):
    fetcher = Fetcher(user_agent="t/1", address_check=lambda ip: None, digest_algorithm="sha1")
    with writer_for(tmp_path, digest_algorithm="sha1") as writer, fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url("/page")), digest_algorithm="sha1")
        writer.write_metadata(target_uri="metadata://test", content_type="text/plain", payload=b"notes")
    [path] = tmp_path.iterdir()
    records = assert_valid(path)
    digests = [value for record in records for name, value in record.headers.items() if "Digest" in name]
    assert len(digests) == 6
    assert all(value.startswith("sha1:") for value in digests)
    assert records[1].headers["WARC-Payload-Digest"] == digest(PAGE, "sha1")


def test_the_payload_digest_is_recomputed_when_another_algorithm_is_asked(server, fetcher, tmp_path):
    with writer_for(tmp_path) as writer, fetcher.session() as session:
        [info, _] = writer.write_exchange(session.fetch(server.url("/page")), digest_algorithm="sha1")
    assert info.payload_digest == digest(PAGE, "sha1")
    [path] = tmp_path.iterdir()
    assert assert_valid(path)[1].headers["WARC-Payload-Digest"] == digest(PAGE, "sha1")


def test_the_payload_digest_written_is_the_fetchers(tmp_path):
    # A wrong digest in the exchange is written as it is (the writer does not hide it), and found.
    exchange = Exchange(
        url="http://example.org/",
        request_head=b"GET / HTTP/1.1\r\nHost: example.org\r\n\r\n",
        status=200,
        reason="OK",
        http_version="HTTP/1.1",
        headers=[("Content-Length", "5")],
        body=io.BytesIO(b"hello"),
        body_length=5,
        payload_digest=digest(b"something else"),
    )
    with writer_for(tmp_path) as writer:
        writer.write_exchange(exchange)
    [path] = tmp_path.iterdir()
    assert warcio_check(path).returncode == 1
    [problem] = check_warc(path)
    assert "payload digest failed" in problem


def test_an_exchange_without_a_response_writes_nothing(tmp_path):
    with writer_for(tmp_path) as writer:
        assert writer.write_exchange(Exchange(url="http://example.org/", error="connection refused")) == []
    assert list(tmp_path.iterdir()) == []


def test_a_body_shorter_than_announced_is_refused(tmp_path):
    exchange = Exchange(
        url="http://example.org/",
        request_head=b"GET / HTTP/1.1\r\n\r\n",
        status=200,
        http_version="HTTP/1.1",
        body=io.BytesIO(b"short"),
        body_length=50,
        payload_digest=digest(b"short"),
    )
    with writer_for(tmp_path) as writer, pytest.raises(ValueError):
        writer.write_exchange(exchange)


class FailingBody(io.BytesIO):
    """Reads fine for the digest, then fails half-way through being written (a disk, a bug…)."""

    def __init__(self, data: bytes):
        super().__init__(data)
        self.total = 0
        self.fail_at = len(data) + len(data) // 2

    def read(self, size=-1):
        chunk = super().read(size)
        self.total += len(chunk)
        if self.total > self.fail_at:
            raise OSError("the body went away")
        return chunk


def broken_exchange(size: int) -> Exchange:
    """An exchange whose body fails half way through being written."""
    data = os.urandom(size)  # incompressible: part of the member reaches the disk before the failure
    return Exchange(
        url="http://example.org/broken",
        request_head=b"GET /broken HTTP/1.1\r\n\r\n",
        status=200,
        http_version="HTTP/1.1",
        headers=[("Content-Length", str(len(data)))],
        body=FailingBody(data),
        body_length=len(data),
        payload_digest=digest(data),
    )


def test_a_record_that_fails_half_way_leaves_no_trace(server, fetcher, tmp_path):
    broken = broken_exchange(1_500_000)
    announced = []
    with writer_for(tmp_path, on_record=announced.append) as writer, fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url("/page")))
        [open_file] = tmp_path.iterdir()
        size_before = open_file.stat().st_size
        with pytest.raises(OSError, match="went away"):
            writer.write_exchange(broken)
        assert open_file.stat().st_size == size_before
        writer.write_exchange(session.fetch(server.url("/chunked")))
    [path] = tmp_path.iterdir()
    records = assert_valid(path)
    assert [record.type for record in records] == ["warcinfo", "response", "request", "response", "request"]
    assert len(announced) == 5
    assert announced[3].offset == size_before


def test_metadata_records_from_bytes_and_streams(tmp_path):
    class Unseekable:
        def __init__(self, data):
            self.stream = io.BytesIO(data)

        def read(self, size=-1):
            return self.stream.read(size)

    log = b"2026-01-01T00:00:00Z 200 1234 http://example.org/ - text/html\n" * 1000
    with writer_for(tmp_path) as writer:
        first = writer.write_metadata(
            target_uri="metadata://archive/crawl-log", content_type="text/plain", payload=Unseekable(log)
        )
        report = io.BytesIO(b"ignored prefix" + json.dumps({"example.org": 12}).encode())
        report.seek(len(b"ignored prefix"))  # a stream is written from where it stands
        second = writer.write_metadata(
            target_uri="metadata://archive/report",
            content_type="application/json; charset=utf-8",
            payload=report,
            concurrent_to=first.record_id,
        )
    assert (first.record_type, first.content_type, first.status) == ("metadata", "text/plain", None)
    assert second.content_type == "application/json; charset=utf-8"
    [path] = tmp_path.iterdir()
    records = assert_valid(path)
    assert records[1].block == log
    assert json.loads(records[2].block) == {"example.org": 12}
    assert records[2].headers["WARC-Concurrent-To"] == first.record_id
    assert records[2].headers["Content-Type"] == "application/json; charset=utf-8"
    assert records[2].headers["WARC-Payload-Digest"] == second.payload_digest == digest(records[2].block)


def test_files_are_rolled_at_the_size_limit(server, fetcher, tmp_path):
    closed = []
    with (
        writer_for(tmp_path, max_size=3000, on_file_closed=closed.append) as writer,
        fetcher.session() as session,
    ):
        for _ in range(12):
            writer.write_exchange(session.fetch(server.url("/page")))
    paths = sorted(tmp_path.iterdir())
    assert len(paths) >= 3
    assert [NAME.match(path.name).group(2) for path in paths] == [
        f"{serial:05d}" for serial in range(len(paths))
    ]
    assert [info.path for info in closed] == paths
    pairs = 0
    for path, info in zip(paths, closed, strict=True):
        records = assert_valid(path)
        pairs += len(assert_pairs_adjacent(records))
        assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
        assert info.size == path.stat().st_size
        assert info.records == len(records)
        # Checked before each pair: a file only exceeds the limit by its last pair.
        assert records[-2].offset < 3000
    assert pairs == 12


def test_a_file_is_open_and_locked_while_written(server, fetcher, tmp_path):
    writer = writer_for(tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing before the first record
    with fetcher.session() as session:
        writer.write_exchange(session.fetch(server.url("/page")))
    [open_path] = tmp_path.iterdir()
    assert open_path.name.endswith(".warc.gz.open")
    assert NAME.match(open_path.name.removesuffix(".open"))
    with open(open_path, "rb") as other, pytest.raises(BlockingIOError):
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    assert recover_open_files(tmp_path) == []  # its writer is alive
    assert open_path.exists()
    writer.close()
    writer.close()  # twice is harmless
    [path] = tmp_path.iterdir()
    assert path.name == open_path.name.removesuffix(".open")
    assert_valid(path)


def test_a_taken_name_makes_the_writer_take_the_next_serial(tmp_path):
    # Names for this second and the next two are taken (closed by one writer, open by another).
    start = datetime.now(UTC)
    taken = set()
    for delta in range(3):
        stamp = (start + timedelta(seconds=delta)).strftime("%Y%m%d%H%M%S")
        closed = f"TEST-42-{stamp}-00000-worker_1.warc.gz"
        (tmp_path / closed).write_bytes(b"someone else's")
        opened = f"TEST-42-{stamp}-00001-worker_1.warc.gz"
        (tmp_path / f"{opened}.open").write_bytes(b"someone else's")
        taken |= {closed, opened}
    with writer_for(tmp_path) as writer:
        info = writer.write_metadata(target_uri="metadata://x", content_type="text/plain", payload=b"x")
    assert info.filename not in taken
    if info.filename.replace("-00002-", "-00000-") in taken:  # the usual case: written within the 3 s
        assert NAME.match(info.filename).group(2) == "00002"
    assert_valid(tmp_path / info.filename)
    for name in taken:
        path = tmp_path / name if name.endswith("-00000-worker_1.warc.gz") else tmp_path / f"{name}.open"
        assert path.read_bytes() == b"someone else's"


def test_names_are_safe_for_a_file_system(tmp_path):
    writer = WarcWriter(
        directory=tmp_path / "new", prefix="My Crawl", job_id="7/8", host="../crawler-01/x", warcinfo={}
    )
    with writer:
        info = writer.write_metadata(target_uri="metadata://x", content_type="text/plain", payload=b"x")
    assert re.fullmatch(r"My_Crawl-7_8-\d{14}-00000-crawler-01_x\.warc\.gz", info.filename)
    assert [path.name for path in (tmp_path / "new").iterdir()] == [info.filename]


def test_eight_threads_share_one_writer(server, tmp_path):
    closed = []
    fetcher = Fetcher(user_agent="t/1", address_check=lambda ip: None)
    paths = ["/page", "/chunked", "/gzip", "/gzip-chunked", "/big", "/missing"]
    errors = []

    def crawl(number: int) -> None:
        try:
            with fetcher.session() as session:
                for index in range(18):
                    exchange = session.fetch(
                        server.url(f"{paths[(number + index) % len(paths)]}?t={number}&i={index}")
                    )
                    writer.write_exchange(exchange)
                    exchange.close()
        except Exception as error:  # reported to the test below
            errors.append(error)

    with writer_for(tmp_path, max_size=200_000, on_file_closed=closed.append) as writer:
        threads = [threading.Thread(target=crawl, args=(number,)) for number in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert len(closed) >= 2
    uris, ids = [], []
    for info in closed:
        records = assert_valid(info.path)
        pairs = assert_pairs_adjacent(records)
        uris += [response.headers["WARC-Target-URI"] for response, _ in pairs]
        ids += [record.headers["WARC-Record-ID"] for record in records]
    assert len(uris) == len(set(uris)) == 8 * 18
    assert len(ids) == len(set(ids))


# -- the writer's thread ---------------------------------------------------------------------


def test_exchanges_handed_to_the_writers_thread_are_written_in_order_then_closed(server, fetcher, tmp_path):
    writes = Writes()
    announced = []
    with writer_for(tmp_path, on_record=announced.append) as writer, fetcher.session() as session:
        exchanges = [session.fetch(server.url(path)) for path in ["/page", "/chunked", "/gzip", "/big"] * 5]
        for exchange in exchanges:
            writer.submit_exchange(exchange, writes=writes)
        assert writes.wait(30)
        assert writes.pending == 0
        assert writes.error is None
        assert all(exchange.body.closed for exchange in exchanges)
        assert len(announced) == 1 + 2 * len(exchanges)  # written (and announced) before close()
    [path] = tmp_path.iterdir()
    pairs = assert_pairs_adjacent(assert_valid(path))
    assert [response.headers["WARC-Target-URI"] for response, _ in pairs] == [e.url for e in exchanges]


def test_the_writers_thread_keeps_to_its_memory_budget(server, fetcher, tmp_path, monkeypatch):
    monkeypatch.setattr(warc, "QUEUE_BYTES", 20_000)
    blocked = threading.Event()
    writes = Writes()
    handed = []

    def on_record(info):
        blocked.wait(30)  # the disk is slow: the writer's thread is held

    with writer_for(tmp_path, on_record=on_record) as writer, fetcher.session() as session:
        exchanges = [session.fetch(server.url(f"/page?n={number}")) for number in range(20)]

        def hand():
            for exchange in exchanges:
                writer.submit_exchange(exchange, writes=writes)
                handed.append(exchange)

        producer = threading.Thread(target=hand)
        producer.start()
        time.sleep(0.5)
        assert 1 < len(handed) < len(exchanges)  # waiting for room, not holding them all
        assert writer._queued_bytes <= warc.QUEUE_BYTES
        blocked.set()
        producer.join(30)
        assert writes.wait(30)
    [path] = tmp_path.iterdir()
    assert len(assert_valid(path)) == 1 + 2 * len(exchanges)


def test_a_failed_write_is_kept_for_its_crawl_and_drops_only_what_that_crawl_handed_after(
    server, fetcher, tmp_path
):
    mine, other = Writes(), Writes()
    with writer_for(tmp_path) as writer, fetcher.session() as session:
        broken = broken_exchange(100_000)
        after = session.fetch(server.url("/page?mine"))
        theirs = session.fetch(server.url("/page?theirs"))
        writer.submit_exchange(broken, writes=mine)
        writer.submit_exchange(after, writes=mine)
        writer.submit_exchange(theirs, writes=other)
        assert mine.wait(30)
        assert other.wait(30)
        with pytest.raises(OSError, match="went away"):
            mine.check()
        other.check()
        assert after.body.closed  # dropped, and freed
    [path] = tmp_path.iterdir()
    uris = [record.headers.get("WARC-Target-URI") for record in assert_valid(path)]
    assert uris == [None, theirs.url, theirs.url]


def test_close_writes_what_was_handed_and_a_later_hand_off_starts_again(server, fetcher, tmp_path):
    writes = Writes()
    with fetcher.session() as session:
        writer = writer_for(tmp_path)
        writer.submit_exchange(session.fetch(server.url("/page?first")), writes=writes)
        writer.close()  # without waiting: close() writes it first
        assert writes.pending == 0
        writer.submit_exchange(session.fetch(server.url("/page?second")), writes=writes)
        writer.close()
    assert [info.records for info in writer.files] == [3, 3]
    for info in writer.files:
        assert_valid(info.path)


# -- recovery ----------------------------------------------------------------------------------


def write_sample(directory: Path, pairs: int = 3) -> Path:
    """A closed file with a warcinfo record and ``pairs`` metadata records, made by the writer."""
    with writer_for(directory) as writer:
        for number in range(pairs):
            writer.write_metadata(
                target_uri=f"metadata://sample/{number}", content_type="text/plain", payload=os.urandom(5000)
            )
    [path] = directory.iterdir()
    return path


def torn_copy(
    sample: Path, directory: Path, *, cut_into_last: int | None = None, append: bytes = b""
) -> Path:
    """An unlocked ``.open`` copy of ``sample``, its last record cut ``cut_into_last`` bytes in."""
    records = read_records(sample)
    data = sample.read_bytes()
    if cut_into_last is not None:
        data = data[: records[-1].offset + cut_into_last]
    directory.mkdir(exist_ok=True)
    torn = directory / f"{sample.name}.open"
    torn.write_bytes(data + append)
    return torn


def test_a_torn_file_is_cut_after_its_last_complete_record(tmp_path):
    sample = write_sample(tmp_path / "sample")
    last = read_records(sample)[-1]
    torn = torn_copy(sample, tmp_path / "crashed", cut_into_last=last.length // 2)
    messages, closed = [], []
    [info] = recover_open_files(tmp_path / "crashed", on_file_closed=closed.append, log=messages.append)
    assert closed == [info]
    assert not torn.exists()
    assert info.path == tmp_path / "crashed" / sample.name
    assert info.recovered
    assert info.cut_bytes == last.length // 2
    assert info.records == 3  # warcinfo and two metadata records: the third was torn
    assert info.path.read_bytes() == sample.read_bytes()[: last.offset]
    assert info.size == last.offset
    assert info.sha256 == hashlib.sha256(info.path.read_bytes()).hexdigest()
    assert info.created_at.strftime("%Y%m%d%H%M%S") == NAME.match(sample.name).group(1)
    assert any(f"cut {last.length // 2} bytes" in message for message in messages)
    assert len(assert_valid(info.path)) == 3
    assert recover_open_files(tmp_path / "crashed") == []  # nothing left to do


def test_garbage_after_the_last_record_is_cut(tmp_path):
    sample = write_sample(tmp_path / "sample")
    torn_copy(sample, tmp_path / "crashed", append=b"\x1f\x8b\x08\x00garbage")
    [info] = recover_open_files(tmp_path / "crashed")
    assert info.cut_bytes == len(b"\x1f\x8b\x08\x00garbage")
    assert info.path.read_bytes() == sample.read_bytes()
    assert info.records == 4


def test_a_complete_open_file_is_only_renamed(tmp_path):
    sample = write_sample(tmp_path / "sample")
    torn_copy(sample, tmp_path / "crashed")
    [info] = recover_open_files(tmp_path / "crashed")
    assert (info.cut_bytes, info.records) == (0, 4)
    assert info.path.read_bytes() == sample.read_bytes()


def test_a_file_without_a_complete_record_is_removed(tmp_path):
    sample = write_sample(tmp_path / "sample")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    (crashed / f"{sample.name}.open").write_bytes(sample.read_bytes()[:100])  # torn warcinfo
    messages = []
    assert recover_open_files(crashed, log=messages.append) == []
    assert list(crashed.iterdir()) == []
    assert any("removed" in message for message in messages)


def test_recovery_is_idempotent_and_safe_from_several_recoverers_at_once(tmp_path):
    sample = write_sample(tmp_path / "sample")
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    for number in range(6):
        name = sample.name.replace("-00000-", f"-{number:05d}-")
        (crashed / f"{name}.open").write_bytes(sample.read_bytes()[: -(number + 1) * 7])
    results = []
    barrier = threading.Barrier(4)

    def recover() -> None:
        barrier.wait()
        results.extend(recover_open_files(crashed))

    threads = [threading.Thread(target=recover) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(info.name for info in results) == sorted(path.name for path in crashed.iterdir())
    assert len(results) == 6
    for info in results:
        assert len(assert_valid(info.path, named=False)) == 3  # copies of one file under other names
    assert recover_open_files(crashed) == []


HOLD_LOCK = """
import fcntl, sys, time
with open(sys.argv[1], "rb") as held:
    fcntl.flock(held, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(120)
"""


def test_a_file_whose_writer_is_alive_in_another_process_is_left_alone(tmp_path):
    sample = write_sample(tmp_path / "sample")
    torn = torn_copy(sample, tmp_path / "live", cut_into_last=50)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(torn)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        content = torn.read_bytes()
        assert recover_open_files(tmp_path / "live") == []
        assert torn.read_bytes() == content
    finally:
        holder.kill()
        holder.wait()
    [info] = recover_open_files(tmp_path / "live")  # the holder is gone: now it is recovered
    assert info.cut_bytes == 50


KILLED_WRITER = """
import io, os, sys, time
from harvest.crawler import warc
from harvest.crawler.warc import WarcWriter, Writes

class Stalling(io.BytesIO):
    # Read whole for the digest, then stops for good half-way through being written.
    def __init__(self, data):
        super().__init__(data)
        self.total = 0
        self.stop_at = len(data) + len(data) // 2

    def read(self, size=-1):
        chunk = super().read(size)
        self.total += len(chunk)
        if self.total > self.stop_at:
            print("stalled", flush=True)
            time.sleep(120)
        return chunk

writer = WarcWriter(directory=sys.argv[1], prefix="TEST", job_id=42, host="worker 1", warcinfo={})
for number in range(3):
    writer.write_metadata(target_uri=f"metadata://done/{number}", content_type="text/plain", payload=b"ok")
torn = Stalling(os.urandom(2_000_000))
writer.write_metadata(target_uri="metadata://torn", content_type="application/octet-stream", payload=torn)
"""


def test_a_file_left_by_a_writer_killed_with_sigkill_is_recovered(tmp_path):
    environment = {**os.environ, "PYTHONPATH": str(PROJECT)}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )
    try:
        assert child.stdout.readline().strip() == "stalled"
        [open_path] = tmp_path.iterdir()
        assert open_path.name.endswith(".open")
        assert recover_open_files(tmp_path) == []  # still alive: left alone
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == -signal.SIGKILL
    size = open_path.stat().st_size
    messages = []
    [info] = recover_open_files(tmp_path, log=messages.append)
    assert info.recovered
    assert info.cut_bytes > 100_000  # part of the torn record had reached the disk
    assert info.size + info.cut_bytes == size
    assert info.records == 4
    records = assert_valid(info.path)
    assert [record.headers.get("WARC-Target-URI") for record in records[1:]] == [
        f"metadata://done/{number}" for number in range(3)
    ]
    assert messages


def test_check_warc_reports_unreadable_files(tmp_path):
    sample = write_sample(tmp_path / "sample")
    broken = tmp_path / "broken.warc.gz"
    shutil.copy(sample, broken)
    data = bytearray(broken.read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken.write_bytes(bytes(data))
    assert check_warc(broken) != []
    assert check_warc(tmp_path / "missing.warc.gz") != []
