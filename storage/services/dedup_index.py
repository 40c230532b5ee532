"""The crawl-time dedup index: earlier captures by payload digest and by URL, from the capture index.

A site crawl asks from the crawl engine's fetch threads, which never touch the
database themselves: each question is handed to the site's task thread (the
one that writes its progress), which answers it between two looks at the
crawl (:meth:`CaptureDedupIndex.serve`). What this process wrote and has not
indexed yet is answered from memory (``harvest.crawler.dedup.MemoryDedupIndex``).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import UTC
from functools import partial

from django.db import connection

from harvest.choices import DedupPolicy
from harvest.crawler.dedup import MemoryDedupIndex, Original, answer
from storage.models import Capture, WarcFile
from storage.services.replication import warc_file_open
from storage.warcindex import url_key

ANSWER_SECONDS = 30  # a question nobody answers in this time gets "no earlier capture"


class CaptureDedupIndex:
    """Earlier captures of the archive, as a template's dedup policy allows (all, or one definition)."""

    def __init__(
        self,
        *,
        policy: str,
        harvest_definition_id: int | None,
        memory: MemoryDedupIndex,
        questions: queue.SimpleQueue | None = None,
    ):
        """``questions``: where the database questions go (a queue shared by the indexes of a process,
        answered by threads of its own with :func:`answer`); by default a queue of this index's own,
        answered by whoever calls :meth:`serve`."""
        if policy not in (DedupPolicy.ALL, DedupPolicy.SAME_DEFINITION):
            raise ValueError(f"no dedup index for the policy {policy!r}")
        self.policy = policy
        self.harvest_definition_id = harvest_definition_id
        self.memory = memory
        self._questions: queue.SimpleQueue = questions if questions is not None else queue.SimpleQueue()
        self._server: threading.Thread | None = None
        self._hosts: dict[str, bool] = {}  # host key → whether the index had captures of it

    # -- what the crawler asks (any thread) ----------------------------------------------------

    def original(self, digest: str) -> Original | None:
        return self.memory.original(digest) or self._ask(self.original_in_index, digest)

    def previous(self, url: str) -> Original | None:
        found = self.memory.previous(url)
        if found is not None:
            return found
        # A host the index has never seen (most of a first broad crawl) is asked about once, not
        # once for each of its URLs.
        host = host_key(url_key(url))
        captured = self._hosts.get(host)
        if captured is None:
            captured = self._ask(self.host_in_index, host)
            if captured is None:  # no answer in time: asked again next time
                return None
            self._hosts[host] = captured
        return self._ask(self.previous_in_index, url) if captured else None

    def remember(self, original: Original) -> None:
        self.memory.remember(original)

    # -- the database side (the serving thread) -------------------------------------------------

    def original_in_index(self, digest: str) -> Original | None:
        """The earliest capture of the index whose payload has ``digest``."""
        return self._first(ORIGINAL, {DIGEST: digest})

    def host_in_index(self, host: str) -> bool:
        """Whether the index holds any capture of this host (its SURT key up to ``)``)."""
        return Capture.objects.filter(urlkey__gte=host, urlkey__lt=host[:-1] + "*").exists()

    def previous_in_index(self, url: str) -> Original | None:
        """The latest 2xx response of ``url`` in the index."""
        return self._first(PREVIOUS, {URLKEY: url_key(url), URL: url})

    def serve(self, timeout: float) -> int:
        """Answer the questions waiting, waiting up to ``timeout`` s for the first; returns how many."""
        self._server = threading.current_thread()
        answered = 0
        wait = timeout
        while True:
            try:
                question = self._questions.get(timeout=wait) if wait else self._questions.get_nowait()
            except queue.Empty:
                return answered
            answer(question)
            answered += 1
            wait = 0

    def _ask(self, function, argument):
        if threading.current_thread() is self._server:
            return function(argument)
        future: Future = Future()
        self._questions.put((function, argument, future))
        try:
            return future.result(timeout=ANSWER_SECONDS)
        except FutureTimeout:
            future.cancel()
            return None

    def _first(self, question: str, values: dict) -> Original | None:
        if self.policy == DedupPolicy.SAME_DEFINITION:
            values = {**values, DEFINITION: self.harvest_definition_id}
        sql, params = _statement(question, self.policy, values)
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            row = cursor.fetchone()
        return None if row is None else _original(*row)


# Each question's SQL is the ORM's, compiled once per process with placeholder values that are then
# swapped for the question's own: compiling the query cost several times more than answering it, and
# the dedup index is asked twice for every URL a crawl fetches.
DIGEST, URLKEY, URL, DEFINITION = "\x00digest", "\x00urlkey", "\x00url", -7_000_000_001
PLACEHOLDERS = (DIGEST, URLKEY, URL, DEFINITION)
ORIGINAL, PREVIOUS = "original", "previous"
COLUMNS = ("url", "timestamp", "record_id", "digest", "offset", "warc_file_id", "warc_file__path")
_compiled: dict[tuple[str, str, str], tuple[str, list, dict[int, object]]] = {}


def _query(question: str, policy: str):
    captures = Capture.objects.filter(record_type=Capture.RecordType.RESPONSE)
    if policy == DedupPolicy.SAME_DEFINITION:
        captures = captures.filter(job__harvest_definition_id=DEFINITION)
    if question == ORIGINAL:
        captures = captures.filter(digest=DIGEST).order_by("timestamp", "pk")
    else:
        captures = captures.filter(urlkey=URLKEY, url=URL, status__gte=200, status__lt=300)
        captures = captures.order_by("-timestamp", "-pk")
    return captures.values_list(*COLUMNS)[:1]


def _statement(question: str, policy: str, values: dict) -> tuple[str, list]:
    """The SQL and parameters of a question, for the connection in use."""
    key = (question, policy, connection.alias)
    if key not in _compiled:
        sql, params = _query(question, policy).query.sql_with_params()
        slots = {index: value for index, value in enumerate(params) if value in PLACEHOLDERS}
        if sorted(map(str, slots.values())) != sorted(map(str, _placeholders(question, policy))):
            raise RuntimeError(f"the dedup question {key} did not compile with its placeholders once each")
        _compiled[key] = (sql, list(params), slots)
    sql, params, slots = _compiled[key]
    params = list(params)
    for index, placeholder in slots.items():
        params[index] = values[placeholder]
    return sql, params


def _placeholders(question: str, policy: str) -> list:
    names = [DIGEST] if question == ORIGINAL else [URLKEY, URL]
    return names + ([DEFINITION] if policy == DedupPolicy.SAME_DEFINITION else [])


def host_key(urlkey: str) -> str:
    """The host part of a SURT key, ``)`` included (``fr,example)`` of ``fr,example)/page``)."""
    return urlkey[: urlkey.find(")") + 1] or urlkey


def _original(url, timestamp, record_id, digest, offset, warc_file_id, path) -> Original:
    if timestamp.tzinfo is None:  # SQLite's column converter gives UTC without its zone (the ORM adds it)
        timestamp = timestamp.replace(tzinfo=UTC)
    return Original(
        url=url,
        date=timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        record_id=record_id,
        digest=digest,
        path=path,
        offset=offset,
        opener=partial(_open_file, warc_file_id),
    )


def _open_file(warc_file_id: int):
    """The bytes of the original's WARC file, from its replicas (when it is not where it was written)."""
    warc = WarcFile.objects.filter(pk=warc_file_id).first()
    if warc is None:  # deleted since the question was answered: as unreadable as a lost file
        raise FileNotFoundError(f"WARC file {warc_file_id} is no longer in the archive")
    return warc_file_open(warc)
