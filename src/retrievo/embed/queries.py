"""Embedding queries for the engine: a small LRU of query vectors (seed 003) and the embedder's health.

An agent repeating or paging a query pays for its embedding once. Concurrent searches share the model:
the queries waiting while the model is busy go together in its next call, and as many calls run side by
side as the embedder says (``parallel_queries``: one per core for the bundled model).
A failing embedder is remembered for ``retry_after_s`` so every query does not pay for the failure
(search degrades to keywords).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future

import numpy as np
import numpy.typing as npt

from retrievo.embed.base import Embedder
from retrievo.errors import EmbedderUnavailable

QUERY_CACHE_SIZE = 512
BATCH_MAX = 16  # queries in one model call: more only waits longer (a call grows with its longest query)


class QueryEmbedder:
    def __init__(self, embedder: Embedder | None, retry_after_s: float, size: int = QUERY_CACHE_SIZE) -> None:
        self.embedder = embedder
        self._retry_after_s = retry_after_s
        self._size = size
        self._cache: OrderedDict[tuple[str, str], npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        # Model calls under way at once: the embedder's ``parallel_queries`` (one per core for MiniLM).
        self._slots = threading.BoundedSemaphore(max(1, embedder.parallel_queries if embedder else 1))
        self._pending: dict[str, Future[npt.NDArray[np.float32]]] = {}
        self._failed_at: float | None = None
        self._reason: str | None = None

    def embed(self, query: str) -> tuple[str, npt.NDArray[np.float32]]:
        """(model id, vector) of a query; raises EmbedderUnavailable (and remembers it)."""
        embedder = self.embedder
        if embedder is None:
            raise EmbedderUnavailable("no embedder configured")
        key = (embedder.model_id, query)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return embedder.model_id, cached
        try:
            vector = self._batched(embedder, query)
        except EmbedderUnavailable as exc:
            self.failed(str(exc))
            raise
        with self._lock:
            self._failed_at = None
            self._cache[key] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return embedder.model_id, vector

    def _batched(self, embedder: Embedder, query: str) -> npt.NDArray[np.float32]:
        """This query's vector, computed in one model call with queries waiting at the same time.

        Whoever gets a slot takes the (up to) BATCH_MAX queries waiting longest, its own or others'; a
        caller whose query another call took waits for that call once no query is left waiting.
        """
        with self._lock:
            waiting = self._pending.get(query)
            if waiting is None:
                waiting = self._pending[query] = Future()
        while not waiting.done():
            with self._slots:
                if waiting.done():
                    break
                with self._lock:
                    taken = list(itertools.islice(self._pending, BATCH_MAX))
                    batch = {text: self._pending.pop(text) for text in taken}
                if not batch:
                    break  # ours is in a call under way
                try:
                    vectors = np.asarray(embedder.embed_queries(list(batch)), dtype=np.float32)
                except BaseException as exc:
                    for future in batch.values():
                        future.set_exception(exc)
                else:
                    for row, future in zip(vectors, batch.values(), strict=True):
                        row.setflags(write=False)  # shared by every caller of the same query
                        future.set_result(row)
        return waiting.result()

    def forget(self) -> None:
        with self._lock:
            self._cache.clear()

    def failed(self, reason: str) -> None:
        self._failed_at, self._reason = time.monotonic(), reason

    def cooling_down(self) -> str | None:
        """Why the embedder is being left alone for now (a recent failure), or None."""
        if self._failed_at is not None and time.monotonic() - self._failed_at < self._retry_after_s:
            return self._reason
        return None

    def warm_up(self) -> float:
        """Load the model now; the milliseconds it took (so a first search's time is the search's)."""
        started = time.perf_counter()
        if self.embedder is not None:
            try:
                self.embedder.embed_query("warm up")
            except EmbedderUnavailable as exc:
                self.failed(str(exc))
        return (time.perf_counter() - started) * 1000
