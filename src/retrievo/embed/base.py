"""The Embedder base class (template method: subclasses write ``embed_batch`` only)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]
ProgressCallback = Callable[[int], None]


class Embedder(ABC):
    """Turns texts into L2-normalised float32 vectors.

    Contract for subclasses: ``embed_batch`` receives at most ``batch_size`` texts (prefixes
    already applied) and returns one row per text, in order. It raises ``EmbedderUnavailable``
    when the model or provider cannot answer; the engine then degrades to keyword search.
    """

    model_id: str
    batch_size: int = 32
    query_prefix: str = ""
    document_prefix: str = ""

    @property
    @abstractmethod
    def dimensions(self) -> int: ...

    @abstractmethod
    def embed_batch(self, texts: Sequence[str]) -> Vectors: ...

    def embed_documents(self, texts: Sequence[str], progress: ProgressCallback | None = None) -> Vectors:
        """Embed many texts: batches of similar length (less padding), results in input order."""
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for begin in range(0, len(order), self.batch_size):
            batch_ids = order[begin : begin + self.batch_size]
            vectors = self.embed_batch([self.document_prefix + texts[i] for i in batch_ids])
            out[batch_ids] = _normalise(vectors)
            if progress:
                progress(len(batch_ids))
        return out

    def embed_query(self, text: str) -> Vectors:
        vectors = _normalise(self.embed_batch([self.query_prefix + text]))
        first: Vectors = vectors[0]
        return first

    def embed_queries(self, texts: Sequence[str]) -> Vectors:
        """Several queries in one batch (concurrent searches), one normalised row each."""
        if len(texts) == 1:
            return self.embed_query(texts[0])[None, :]
        return _normalise(self.embed_batch([self.query_prefix + text for text in texts]))


def _normalise(vectors: Vectors) -> Vectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = vectors / norms
    return normalised
