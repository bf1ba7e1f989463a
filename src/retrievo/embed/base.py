"""The Embedder base class (template method: subclasses write ``embed_batch`` only)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
ProgressCallback = Callable[[int], None]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    Contract for subclasses: ``embed_batch`` receives at most ``batch_size`` texts (prefixes
    already applied) and returns one row per text, in order; it may be called from ``parallel_batches``
    threads at once (the base class runs that many batches side by side: a local model's cores, the
    requests in flight to a service). It raises ``EmbedderUnavailable``
    when the model or provider cannot answer; the engine then degrades to keyword search. Queries
    go through ``embed_query_batch``, which is ``embed_batch`` unless a model runs queries its own way
    (the bundled one: on a one-thread session; a subclass of it overrides both).
    """

    model_id: str
    batch_size: int = 32
    # How many query batches may run at once (concurrent searches, ``embed/queries.py``): a local model
    # says its cores; a remote one may say more.
    parallel_queries: int = 1
    # How many document batches ``embed_documents`` keeps in flight at once.
    parallel_batches: int = 1
    query_prefix: str = ""
    # A service asked over the network (billed, perhaps, per text), not a model run in this process.
    remote: bool = False
    document_prefix: str = ""

    @property
    @abstractmethod
    def dimensions(self) -> int: ...

    def ready(self) -> bool:
        """Whether a call answers without loading anything first (a local model loads its weights on its
        first call; one that has nothing to load is always ready)."""
        return True

    def load(self) -> None:
        """Load now what the first call would load (nothing here); EmbedderUnavailable when it cannot."""
        return None

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> Vectors: ...

    def describe(self) -> dict[str, Any]:
        """What serves this model here (``retrievo status``): its id; a subclass adds its size where known and
        how it runs. Loads nothing and asks no service (a provider's size is learnt from its first answer)."""
        return {"model_id": self.model_id, "dimensions": getattr(self, "_dimensions", None)}

    def plan_batches(self, texts: Sequence[str], order: Sequence[int]) -> list[list[int]]:
        """Indexes of ``texts`` (``order``: shortest first) cut into the batches ``embed_batch`` receives."""
        return [
            list(order[begin : begin + self.batch_size]) for begin in range(0, len(order), self.batch_size)
        ]

    def embed_documents(
        self, texts: Sequence[str], progress: ProgressCallback | None = None, in_flight: int | None = None
    ) -> Vectors:
        """Embed many texts: batches of similar length (less padding), ``parallel_batches`` of them in
        flight at once (never more: memory stays bounded; ``in_flight``: fewer, as a search's share of
        the cores), results in input order. The first failure is raised once the batches in flight have
        returned."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        batches = self.plan_batches(texts, order)

        def one(batch: list[int]) -> list[int]:
            out[batch] = _normalise(self.embed_batch([self.document_prefix + texts[i] for i in batch]))
            return batch

        flight = min(self.parallel_batches, in_flight or self.parallel_batches)
        if flight <= 1 or len(batches) == 1:
            for batch in batches:
                one(batch)
                if progress:
                    progress(len(batch))
            return out
        with ThreadPoolExecutor(flight, thread_name_prefix="retrievo-embed") as pool:
            pending: set[Future[list[int]]] = set()
            queue = iter(batches)
            try:
                while True:
                    for batch in queue:
                        pending.add(pool.submit(one, batch))
                        if len(pending) >= flight:
                            break
                    if not pending:
                        return out
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in finished:
                        done = future.result()
                        if progress:
                            progress(len(done))
            finally:
                for future in pending:
                    future.cancel()

    def embed_query(self, text: str) -> Vectors:
        vectors = _normalise(self.embed_query_batch([self.query_prefix + text]))
        first: Vectors = vectors[0]
        return first

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Several queries (concurrent searches), one normalised row each, in order.

        Model calls of similar lengths: padding a short query to a long one's length costs more than
        the batch saves (MiniLM on one core, SciFact's claims in batches of 18: 7.6 ms a query, against
        4.6 alone and 2.9 in batches of equal length).
        """
        if len(texts) == 1:
            return self.embed_query(texts[0])[None, :]
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for group in _similar_lengths(texts):
            out[group] = _normalise(self.embed_query_batch([self.query_prefix + texts[i] for i in group]))
        return out

    def embed_query_batch(self, texts: Sequence[str]) -> Vectors:
        """Queries (prefixed) to vectors; a model with a session tuned for short inputs overrides this."""
        return self.embed_batch(texts)


def _similar_lengths(texts: Sequence[str], slack: float = 1.25, room: int = 12) -> list[list[int]]:
    """Indexes of ``texts`` in groups whose longest is at most ``slack`` × the shortest + ``room`` chars."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    groups: list[list[int]] = []
    for i in order:
        if groups and len(texts[i]) <= len(texts[groups[-1][0]]) * slack + room:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _normalise(vectors: Vectors) -> Vectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = vectors / norms
    return normalised
