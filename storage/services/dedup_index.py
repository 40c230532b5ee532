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

from harvest.choices import DedupPolicy
from harvest.crawler.dedup import MemoryDedupIndex, Original, answer
from storage.models import Capture
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

    # -- what the crawler asks (any thread) ----------------------------------------------------

    def original(self, digest: str) -> Original | None:
        return self.memory.original(digest) or self._ask(self.original_in_index, digest)

    def previous(self, url: str) -> Original | None:
        return self.memory.previous(url) or self._ask(self.previous_in_index, url)

    def remember(self, original: Original) -> None:
        self.memory.remember(original)

    # -- the database side (the serving thread) -------------------------------------------------

    def original_in_index(self, digest: str) -> Original | None:
        """The earliest capture of the index whose payload has ``digest``."""
        captures = self._captures().filter(digest=digest)
        return _original(captures.order_by("timestamp", "pk").first())

    def previous_in_index(self, url: str) -> Original | None:
        """The latest 2xx response of ``url`` in the index."""
        captures = self._captures().filter(urlkey=url_key(url), url=url, status__gte=200, status__lt=300)
        return _original(captures.order_by("-timestamp", "-pk").first())

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

    def _captures(self):
        captures = Capture.objects.filter(record_type=Capture.RecordType.RESPONSE).select_related("warc_file")
        if self.policy == DedupPolicy.SAME_DEFINITION:
            captures = captures.filter(job__harvest_definition_id=self.harvest_definition_id)
        return captures


def _original(capture: Capture | None) -> Original | None:
    if capture is None:
        return None
    return Original(
        url=capture.url,
        date=capture.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        record_id=capture.record_id,
        digest=capture.digest,
        path=capture.warc_file.path,
        offset=capture.offset,
        opener=partial(warc_file_open, capture.warc_file),
    )
