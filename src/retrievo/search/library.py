"""Seed 003's library search: documents, not passages, above a similarity the seed's default means.

A document is found through its passages, by both arms of the hybrid search (seed 003's "Stage 1"):
the vector arm ranks chunks by cosine similarity to the query, the keyword arm by BM25. Each passage
gets one similarity on [0, 1], the larger of two readings anyone can check:

- by meaning: the cosine put on [0, 1] the usual way, ``(1 + cosine) / 2``, with no fitted constant
  (0.7 is a cosine of 0.4). On SciFact the bundled model gives judged-relevant abstracts a median
  cosine of 0.61 (10th percentile 0.42);
- by words: the share of the query's words (common ones left out) the passage, its title or its
  section holds, the words the excerpt marks: a one-word query found in a title is 1.0, a question
  two thirds of whose words a passage holds is 0.67.

Documents come in the hybrid search's fused order (on SciFact nDCG@10 0.741, against 0.646 ranked by
cosine and 0.661 by this similarity), each with its best-ranked passage as the excerpt. So that the
scores fall down the list and ``min_similarity`` cuts it at one place, a document's
``similarity_score`` is the larger of its own (its passages' best) and the best of the documents
below it: the fusion put it above one that reaches the threshold. docs/benchmarks.md
("search_library") has what the default keeps on each judged set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from retrievo.models import Hit
from retrievo.search.highlight import word_share
from retrievo.search.hybrid import SEMANTIC


def similarity(cosine: float) -> float:
    """The seed's similarity score of a cosine: ``(1 + cosine) / 2``, in [0, 1]."""
    return round(min(1.0, max(0.0, (1.0 + cosine) / 2.0)), 4)


@dataclass(frozen=True)
class DocumentHit:
    """One document: its best passage, that passage's similarity, how many of its passages matched."""

    best: Hit
    similarity: float
    passages: int


def first_per_document(hits: Sequence[Hit], limit: int) -> list[Hit]:
    """Ranked hits cut to one per document (its best-ranked passage), at most ``limit`` documents."""
    seen: set[str] = set()
    kept: list[Hit] = []
    for hit in hits:
        if hit.chunk.document_id not in seen and len(kept) < limit:
            seen.add(hit.chunk.document_id)
            kept.append(hit)
    return kept


def by_document(hits: Sequence[Hit], query: str) -> list[DocumentHit]:
    """Hybrid hits (fused order, with ``explain``: the vector arm's raw score is the cosine) as one
    entry per document in fused order, each with its best-ranked passage; its similarity is the
    largest of its passages' and of every document's below it, so the scores never rise down the list."""
    first: dict[str, Hit] = {}
    own: dict[str, float] = {}
    counts: dict[str, int] = {}
    for hit in hits:
        document, chunk = hit.chunk.document_id, hit.chunk
        counts[document] = counts.get(document, 0) + 1
        first.setdefault(document, hit)
        vector = (hit.explain or {}).get(SEMANTIC)
        words = round(word_share(f"{chunk.title}\n{chunk.context}\n{chunk.text}", query), 4)
        own[document] = max(own.get(document, 0.0), similarity(vector.score) if vector else 0.0, words)
    found: list[DocumentHit] = []
    below = 0.0
    for document in reversed(first):
        below = max(below, own[document])
        found.append(DocumentHit(first[document], below, counts[document]))
    return found[::-1]
