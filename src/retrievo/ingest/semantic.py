"""The seed's ``semantic`` chunking strategy: boundaries where adjacent sentences' meanings diverge.

Sentences are embedded with the bundled model (only to find boundaries; the chunks are embedded later
with the collection's model like any other). A boundary falls between two sentences whose cosine
similarity is both low for this text (in its lowest ``BREAK_QUANTILE``) and low outright (under
``BREAK_SIMILARITY``); the sentences between boundaries are then packed into chunks of at most
``SEMANTIC_MAX_CHARS`` characters, never across a boundary.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

SEMANTIC_MAX_CHARS = 1000
BREAK_QUANTILE = 0.25
BREAK_SIMILARITY = 0.45

_model_lock = threading.Lock()
_model: list[object] = []


def _embed(texts: list[str]) -> np.ndarray:
    with _model_lock:
        if not _model:
            from retrievo.embed.local import MiniLMEmbedder

            _model.append(MiniLMEmbedder())
    embedder = _model[0]
    return np.asarray(embedder.embed_documents(texts), dtype=np.float32)  # type: ignore[attr-defined]


def semantic_groups(
    text: str,
    sentences: list[tuple[int, int]],
    embed: Callable[[list[str]], np.ndarray] = _embed,
) -> list[list[tuple[int, int]]]:
    """The sentences split into runs of one topic (boundaries where adjacent meaning diverges)."""
    if len(sentences) < 3:
        return [sentences] if sentences else []
    vectors = embed([text[s:e] for s, e in sentences])
    similarity = np.sum(vectors[:-1] * vectors[1:], axis=1)
    cut = min(float(np.quantile(similarity, BREAK_QUANTILE)), BREAK_SIMILARITY)
    groups: list[list[tuple[int, int]]] = [[sentences[0]]]
    for sentence, previous_similarity in zip(sentences[1:], similarity, strict=True):
        if previous_similarity <= cut and previous_similarity < BREAK_SIMILARITY:
            groups.append([])
        groups[-1].append(sentence)
    return groups
